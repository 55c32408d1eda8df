"""Layer 2 bank: retain and its three outcomes, dedupe, secrets, read helpers, prune, Review.md."""

from __future__ import annotations

import json
import multiprocessing
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests._cli import run_cli
from tests._readonly import read_only
from vaultmem.app.lifecycle.scaffold import init
from vaultmem.bank import model, prune, retain, store
from vaultmem.bank.similarity import normalise, signature, similarity
from vaultmem.core import clock, notes
from vaultmem.core.errors import SecretRefusedError, UnknownAgentError, UsageError
from vaultmem.core.vault import Vault


def _open(path: Path) -> Vault:
    return Vault.open(path)


def _meta(vault: Path, rel: str) -> dict[str, object]:
    return notes.read(vault / rel).meta


# --- similarity ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("new", "old", "low", "high"),
    [
        ("Store times in UTC.", "store   TIMES in utc", 1.0, 1.0),
        ("Store times in UTC", "Store all times in UTC", 0.85, 1.0),
        ("Chiara wants database migrations reviewed before Friday noon",
         "Chiara wants migrations reviewed before Friday", 0.5, 0.84),
        ("Lyra owns the front end", "Backups run nightly to object storage", 0.0, 0.1),
    ],
)  # fmt: skip
def test_similarity_scores(new: str, old: str, low: float, high: float) -> None:
    score, _conflict = similarity(signature(new), signature(old))
    assert low <= score <= high


def test_numbers_and_negation_conflict() -> None:
    a = signature("Capacity is per 30-minute slot")
    b = signature("Capacity is per 15-minute slot")
    assert similarity(a, b)[1] is True
    c = signature("Deploy on Fridays after 15:00")
    d = signature("Don't deploy on Fridays after 15:00")
    assert similarity(c, d)[1] is True
    assert normalise("Don’t  Déploy!") == "dont deploy"


def test_derive_name() -> None:
    assert (
        model.derive_name("Store all times in UTC; convert in the UI") == "Store all times in UTC"
    )
    assert model.derive_name("[[x]] a/b #t") == "x a b t"
    assert len(model.derive_name("word " * 40)) <= model.MAX_NAME


# --- retain -------------------------------------------------------------------------------


def test_retain_inserts_a_pending_note(vault: Path, cli: object, now0: datetime) -> None:
    res = run_cli(
        "retain", "Chiara wants migrations reviewed before Friday", "--type", "preference",
        "--tag", "review", "--source", "session-42", "--valid-until", "2099-01-31",
        "--vault", str(vault), "--agent", "ella", "--json",
    )  # fmt: skip
    assert res.exit_code == 0, res.stderr
    data = json.loads(res.stdout)
    assert data["outcome"] == "inserted" and data["message"] == "inserted"
    assert data["id"].startswith("b-")
    path = data["path"]
    assert path.startswith(f"agents/ella/bank/{now0.date().isoformat()}-chiara-wants-migrations")
    meta = _meta(vault, path)
    assert meta["status"] == "pending" and meta["type"] == "preference"
    assert meta["author"] == "ella" and meta["id"] == data["id"]
    assert meta["source"] == ["session-42"] and meta["tags"] == ["review"]
    assert meta["evidence"] == 1 and meta["valid_until"] == "2099-01-31"
    assert notes.read(vault / path).body.strip() == "Chiara wants migrations reviewed before Friday"
    plain = run_cli(
        "retain", "Lyra uses Tailwind for new components", "--type", "decision",
        "--vault", str(vault), "--agent", "lyra",
    )  # fmt: skip
    assert plain.exit_code == 0 and plain.stdout.startswith("inserted b-")


def test_duplicate_of_pending_fact_raises_evidence(vault: Path) -> None:
    v = _open(vault)
    first = retain.retain(v, "Marta is away until January", agent="ella", type_="user", source="s1")
    again = retain.retain(
        v, "marta is AWAY until January!", agent="ella", type_="user", source="s2"
    )
    assert again.outcome == "duplicate" and again.target == first.id and again.id is None
    assert again.message == f"duplicate {first.id}"
    # evidence counts distinct sources: the same source again (a resumed session retained
    # once more) is no new evidence
    third = retain.retain(v, "Marta is away until January", agent="ella", type_="user", source="s2")
    assert third.evidence == 2
    same_doc = retain.retain(
        v, "Marta is away until January", agent="ella", type_="user", source="s2#T9-T12"
    )
    assert same_doc.evidence == 2
    fourth = retain.retain(
        v, "Marta is away until January", agent="ella", type_="user", source="s3"
    )
    assert fourth.evidence == 3
    meta = _meta(vault, first.path or "")
    assert meta["evidence"] == 3 and meta["source"] == ["s1", "s2", "s2#T9-T12", "s3"]
    assert len(list((vault / "agents/ella/bank").glob("*.md"))) == 1


def test_duplicate_of_a_memory_raises_the_memory(vault: Path) -> None:
    v = _open(vault)
    res = retain.retain(
        v,
        "Production runs on a single Hetzner CX32 in Falkenstein behind Caddy. PostgreSQL 16 "
        "with nightly pg_dump to object storage; restores are tested monthly.",
        agent="ella",
        type_="reference",
        source="s9",
    )
    assert (res.outcome, res.target) == ("duplicate", "m-bacc2cb0")
    meta = _meta(vault, "memory/production-setup.md")
    assert meta["evidence"] == 2 and meta["source"] == ["s9"]
    text = (vault / "memory/production-setup.md").read_text()
    assert "Production runs on a single Hetzner" in text  # body untouched
    assert not (vault / "agents/ella/bank").exists()


def test_may_supersede_same_type_only(vault: Path) -> None:
    v = _open(vault)
    text = "Store all times in UTC and convert to Europe/Rome in the UI and in emails"
    res = retain.retain(v, text, agent="ella", type_="decision")
    assert (res.outcome, res.target) == ("may_supersede", "m-7f15c837")
    assert res.message == "may supersede m-7f15c837" and res.id and res.path
    assert _meta(vault, res.path)["may_supersede"] == "m-7f15c837"
    other = retain.retain(v, text + " too", agent="lyra", type_="fact")
    assert other.outcome == "inserted"  # related, but a different type


def test_other_agents_pending_facts_are_not_duplicates(vault: Path) -> None:
    v = _open(vault)
    retain.retain(v, "Marta is away until January", agent="ella", type_="user")
    res = retain.retain(v, "Marta is away until January", agent="lyra", type_="user")
    assert res.outcome == "inserted"


def test_changed_number_is_never_a_duplicate(vault: Path) -> None:
    v = _open(vault)
    first = retain.retain(
        v, "The walk-in reserve is 10% of each slot", agent="ella", type_="project"
    )
    res = retain.retain(v, "The walk-in reserve is 15% of each slot", agent="ella", type_="project")
    assert (res.outcome, res.target) == ("may_supersede", first.id)


def test_rejected_fact_absorbs_repeats(vault: Path) -> None:
    v = _open(vault)
    first = retain.retain(v, "Deploys happen on Fridays", agent="ella", type_="project")
    store.set_status(v, vault / (first.path or ""), {"status": "rejected", "reason": "wrong"})
    again = retain.retain(v, "Deploys happen on Fridays", agent="ella", type_="project")
    assert (again.outcome, again.target) == ("duplicate", first.id)
    assert _meta(vault, first.path or "")["status"] == "rejected"


def test_batch_dedupes_within_itself(vault: Path) -> None:
    v = _open(vault)
    out = retain.retain_many(
        v,
        [
            model.Proposal("Marta is away until January", "user", source="a"),
            model.Proposal("Marta is away until January.", "user", source="b"),
        ],
        agent="ella",
    )
    assert [r.outcome for r in out] == ["inserted", "duplicate"]
    assert out[1].target == out[0].id and out[1].path == out[0].path
    assert _meta(vault, out[0].path or "")["evidence"] == 2


def test_dry_run_writes_nothing(vault: Path) -> None:
    res = retain.retain(_open(vault), "Marta is away", agent="ella", type_="user", dry_run=True)
    assert res.outcome == "inserted" and res.dry_run and res.path is None
    assert not (vault / "agents/ella/bank").exists()


@pytest.mark.parametrize(
    ("args", "code"),
    [
        (["x", "--type", "gossip"], 2),
        (["", "--type", "fact"], 2),
        (["x"], 2),
        (["x", "--type", "fact", "--valid-until", "soon"], 2),
        (["x", "--type", "fact", "--tag", "two words"], 2),
        ([], 2),
    ],
)
def test_retain_usage_errors(vault: Path, args: list[str], code: int) -> None:
    res = run_cli("retain", *args, "--vault", str(vault), "--agent", "ella")
    assert res.exit_code == code, res.stderr
    assert not (vault / "agents/ella/bank").exists()


def test_retain_needs_a_known_agent(vault: Path) -> None:
    with pytest.raises(UnknownAgentError):
        retain.retain(_open(vault), "x y z", agent="zed", type_="fact")
    assert run_cli("retain", "x", "--type", "fact", "--vault", str(vault)).exit_code == 2


def test_retain_reads_stdin(vault: Path) -> None:
    res = run_cli(
        "retain", "-", "--type", "fact", "--vault", str(vault), "--agent", "ella",
        stdin="Backups are encrypted with age\n",
    )  # fmt: skip
    assert res.exit_code == 0 and res.stdout.startswith("inserted")


# --- secrets -------------------------------------------------------------------------------

KEY = "sk-ant-api03-" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8s9T0"


def test_secret_is_redacted(vault: Path) -> None:
    res = run_cli(
        "retain", f"The staging key is {KEY}", "--type", "reference", "--source", f"paste {KEY}",
        "--vault", str(vault), "--agent", "ella", "--json",
    )  # fmt: skip
    assert res.exit_code == 0, res.stderr
    data = json.loads(res.stdout)
    assert data["redacted"] and "redacted" in res.stderr
    text = (vault / data["path"]).read_text()
    assert KEY not in text and "[redacted:" in text


def test_secret_is_refused_under_policy_refuse(vault: Path) -> None:
    toml = vault / "vaultmem.toml"
    toml.write_text(toml.read_text().replace('policy = "redact"', 'policy = "refuse"'))
    with pytest.raises(SecretRefusedError):
        retain.retain_many(
            _open(vault),
            [model.Proposal("a clean fact here", "fact"), model.Proposal(f"key {KEY}", "fact")],
            agent="ella",
        )
    assert not (vault / "agents/ella/bank").exists()  # not even the clean one
    res = run_cli(
        "retain", f"key {KEY}", "--type", "fact", "--vault", str(vault), "--agent", "ella"
    )
    assert res.exit_code == 8 and KEY not in res.stderr


# --- read helpers ---------------------------------------------------------------------------


def test_pending_for_read_own_agent_query_and_expiry(vault: Path) -> None:
    v = _open(vault)
    a = retain.retain(v, "Stripe webhooks need an idempotency key", agent="ella", type_="failure")
    b = retain.retain(v, "Marta is away until January", agent="ella", type_="user")
    retain.retain(v, "Lyra prefers Tailwind for components", agent="lyra", type_="preference")
    old = retain.retain(
        v, "The freeze lasts until Monday", agent="ella", type_="project", valid_until="2000-01-01"
    )
    newest = store.pending_for_read(v, "ella", None, 10)
    ids = [p.id for p in newest]
    assert set(ids) == {a.id, b.id}  # not lyra's, not the expired one
    assert old.id not in ids
    assert all(p.unreviewed and p.author == "ella" for p in newest)
    ranked = store.pending_for_read(v, "ella", "stripe idempotency", 1)
    assert [p.id for p in ranked] == [a.id] and ranked[0].score == 1.0
    assert ranked[0].to_dict()["unreviewed"] is True
    assert store.pending_for_read(v, "ella", None, 0) == []
    assert store.pending_count(v, "ella") == 2
    assert store.pending_count(v) == 3
    assert (
        store.pending_for_read(v, "lyra", None, 5)[0].text == "Lyra prefers Tailwind for components"
    )


def test_quick_meta_reads_quoted_values() -> None:
    meta, body = store.quick_meta("---\nstatus: 'pending'\nid: \"b-1\"\n---\nhello\n") or ({}, "")
    assert meta == {"status": "pending", "id": "b-1"} and body == "hello\n"
    assert store.quick_meta("no frontmatter") is None


# --- prune ----------------------------------------------------------------------------------


def test_prune_expires_old_and_past_valid_until(vault: Path) -> None:
    v = _open(vault)
    old = retain.retain(v, "An old guess about caching", agent="ella", type_="fact")
    fresh = retain.retain(v, "Marta is away until January", agent="ella", type_="user")
    past = retain.retain(
        v, "Freeze until Monday", agent="lyra", type_="project", valid_until="2001-01-01"
    )
    later = clock.now() + timedelta(days=61)
    # `fresh` was seen again "recently": last_seen keeps it alive
    store.set_status(v, vault / (fresh.path or ""), {"last_seen": later.isoformat()})
    dry = prune.prune(v, older_than_days=60, now=later, dry_run=True)
    assert {f.id for f in dry.expired} == {old.id, past.id}
    assert _meta(vault, old.path or "")["status"] == "pending"
    res = prune.prune(v, older_than_days=60, now=later)
    assert {f.id for f in res.expired} == {old.id, past.id}
    meta = _meta(vault, old.path or "")
    assert meta["status"] == "expired" and "60 days" in str(meta["reason"])
    assert (vault / (old.path or "")).exists()  # nothing deleted
    assert _meta(vault, fresh.path or "")["status"] == "pending"


def test_prune_cli(vault: Path) -> None:
    v = _open(vault)
    f = retain.retain(
        v, "Freeze until Monday", agent="ella", type_="project", valid_until="2001-01-01"
    )
    res = run_cli("bank", "prune", "--older-than", "60d", "--vault", str(vault), "--json")
    assert res.exit_code == 0, res.stderr
    assert [x["id"] for x in json.loads(res.stdout)["expired"]] == [f.id]
    res = run_cli("bank", "prune", "--vault", str(vault))
    assert res.exit_code == 0 and "nothing to expire" in res.stdout
    bad = run_cli("bank", "prune", "--older-than", "soon", "--vault", str(vault))
    assert bad.exit_code == 2


# --- Review.md --------------------------------------------------------------------------------


def test_init_creates_review_page_and_retain_keeps_it_current(tmp_path: Path) -> None:
    root = tmp_path / "v"
    init(root, agents=["ella"], reviewers=["chiara"])
    page = root / "Review.md"
    assert "```dataview" in page.read_text() and "Nothing is waiting" in page.read_text()
    page.write_text(page.read_text() + "\nMy own notes stay here.\n")
    v = _open(root)
    res = retain.retain(v, "Marta is away until January", agent="ella", type_="user")
    text = page.read_text()
    assert f"`{res.id}`" in text and "[[agents/ella/bank/" in text
    assert "My own notes stay here." in text and "Nothing is waiting" not in text
    init(root, agents=["ella"], reviewers=["chiara"])  # never overwrites
    assert page.read_text() == text


def test_vault_without_review_page_is_left_alone(vault: Path) -> None:
    (vault / "Review.md").unlink()  # a person deleted it: vaultmem does not bring it back
    retain.retain(_open(vault), "Marta is away", agent="ella", type_="user")
    assert not (vault / "Review.md").exists()


def test_example_vault_review_page_lists_new_pending_facts(vault: Path) -> None:
    res = retain.retain(_open(vault), "Marta is away until January", agent="ella", type_="user")
    assert f"`{res.id}`" in (vault / "Review.md").read_text()


# --- concurrency -------------------------------------------------------------------------------


def _retain_worker(root: str, n: int) -> str:
    v = Vault.open(root)
    return retain.retain(
        v, "Marta is away until January", agent="ella", type_="user", source=f"p{n}"
    ).outcome


@pytest.mark.slow
def test_concurrent_retains_of_one_fact_write_one_note(vault: Path) -> None:
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(4) as pool:
        outcomes = pool.starmap(_retain_worker, [(str(vault), n) for n in range(8)])
    assert sorted(outcomes) == ["duplicate"] * 7 + ["inserted"]
    (note,) = (vault / "agents/ella/bank").glob("*.md")
    meta = notes.read(note).meta
    assert meta["evidence"] == 8 and len(meta["source"]) == 8


def test_usage_error_class() -> None:
    with pytest.raises(UsageError):
        clock.parse_date("31/01/2026")


def test_pending_block_for_the_read_pack(vault: Path) -> None:
    v = _open(vault)
    assert store.pending_block(v, "ella") is None
    for n in range(7):
        retain.retain(v, f"Fact number {n} about topic{n} stays", agent="ella", type_="fact")
    retain.retain(v, "Lyra likes Tailwind", agent="lyra", type_="preference")
    block = store.pending_block(v, "ella")
    assert block is not None and block.total == 7 and len(block.facts) == 5  # [bank] read_limit
    assert block.text.count("- [unreviewed fact]") == 5 and "Tailwind" not in block.text
    assert "(5 of 7, newest)" in block.text
    hit = store.pending_block(v, "ella", "topic3", 1)
    assert hit is not None and "topic3" in hit.text and hit.to_dict()["total"] == 7


def test_newest_is_by_created_not_by_file_name(vault: Path) -> None:
    v = _open(vault)
    z = retain.retain(v, "Zebra crossings are painted yearly", agent="ella", type_="fact")
    a = retain.retain(v, "Apples are stocked on Mondays", agent="ella", type_="fact")
    store.set_status(v, vault / (z.path or ""), {"created": "2026-01-01T00:00:00Z"})
    assert [p.id for p in store.pending_for_read(v, "ella", None, 2)] == [a.id, z.id]
    store.set_status(v, vault / (a.path or ""), {"created": "2025-01-01T00:00:00Z"})
    assert [p.id for p in store.pending_for_read(v, "ella", None, 2)] == [z.id, a.id]


def test_read_helpers_stay_light(vault: Path) -> None:
    """`vaultmem read` calls these on every turn: no YAML parse, no whoosh, no anthropic."""
    import subprocess
    import sys

    retain.retain(_open(vault), "Marta is away until January", agent="ella", type_="user")
    code = (
        "import sys\n"
        "from vaultmem.core.vault import Vault\n"
        "from vaultmem.bank import store\n"
        f"v = Vault.open({str(vault)!r})\n"
        "b = store.pending_block(v, 'ella', 'marta')\n"
        "assert b is not None and b.total == 1, b\n"
        "heavy = [m for m in ('yaml', 'whoosh', 'anthropic', 'rich', 'typer') if m in sys.modules]\n"
        "assert not heavy, heavy\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr


def test_retracted_memory_absorbs_repeats_and_private_memories_stay_private(vault: Path) -> None:
    v = _open(vault)
    res = run_cli(
        "retain", "Bookings were first modelled per day; that was wrong for capacity.",
        "--type", "fact", "--vault", str(vault), "--agent", "ella",
    )  # fmt: skip
    capacity = notes.read(vault / "memory/capacity-per-day.md").meta
    assert capacity["status"] == "retracted"
    assert res.stdout.startswith(f"duplicate {capacity['id']} (retracted; evidence 2")
    # lyra's private memory is neither a duplicate target for ella nor shown as similar
    lyra_note = next((vault / "agents/lyra/memory").glob("*.md"))
    lyra_text = notes.read(lyra_note).body.strip()
    out = retain.retain(v, lyra_text, agent="ella", type_="preference")
    assert out.outcome == "inserted"
    assert all(m.path != v.rel(lyra_note) for m in out.similar)
    mine = retain.retain(v, lyra_text, agent="lyra", type_="preference")
    assert mine.outcome == "duplicate" and mine.path == v.rel(lyra_note)


def test_read_only_review_page_does_not_fail_retain(tmp_path: Path) -> None:
    root = tmp_path / "v"
    init(root, agents=["ella"], reviewers=["chiara"])
    page = root / "Review.md"
    before = page.read_text()
    with read_only(page, recursive=False), read_only(root, recursive=False):
        res = retain.retain(_open(root), "Marta is away until January", agent="ella", type_="user")
    assert res.outcome == "inserted"
    assert page.read_text() == before


# --- properties ---------------------------------------------------------------------------------


@given(st.text(max_size=200), st.text(max_size=200))
def test_similarity_is_bounded_and_reflexive(a: str, b: str) -> None:
    sa, sb = signature(a), signature(b)
    score, _conflict = similarity(sa, sb)
    assert 0.0 <= score <= 1.0
    if sa.norm:
        assert similarity(sa, sa) == (1.0, False)
    assert normalise(normalise(a)) == normalise(a)


@given(st.text(min_size=1, max_size=300))
def test_derive_name_is_always_a_valid_fact_name(text: str) -> None:
    from vaultmem.memory.facts import validate_fact_name

    name = model.derive_name(text)
    assert validate_fact_name(name) == name
