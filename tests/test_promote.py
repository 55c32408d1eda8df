"""The review gate, non-interactive: promote list / approve / reject / merge / apply, and refusals."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests._cli import run_cli, run_proc
from vaultmem.bank import apply, retain, review, store
from vaultmem.core import notes
from vaultmem.core.vault import Vault
from vaultmem.memory import facts


def _open(path: Path) -> Vault:
    return Vault.open(path)


def _retain(vault: Path, text: str, type_: str = "preference", agent: str = "ella") -> str:
    res = retain.retain(_open(vault), text, agent=agent, type_=type_, source="session-7")
    assert res.id
    return res.id


def _bank_meta(vault: Path, fact_id: str) -> dict[str, object]:
    _path, note = store.find_bank(_open(vault), fact_id)
    return note.meta


def promote(vault: Path, *args: str) -> object:
    return run_cli("promote", *args, "--vault", str(vault))


def test_list_shows_the_queue_with_similar_memories(vault: Path) -> None:
    fid = _retain(vault, "We store all times in UTC and convert only in the UI", "decision")
    _retain(vault, "Lyra prefers Tailwind for components", agent="lyra")
    res = run_cli("promote", "list", "--vault", str(vault), "--json")
    assert res.exit_code == 0, res.stderr
    facts = json.loads(res.stdout)["facts"]
    assert len(facts) == 2
    mine = next(f for f in facts if f["id"] == fid)
    assert mine["author"] == "ella" and mine["evidence"] == 1 and mine["sources"] == ["session-7"]
    assert mine["similar"][0]["id"] == "m-7f15c837"
    only = run_cli("promote", "list", "--agent", "lyra", "--vault", str(vault), "--json")
    assert [f["author"] for f in json.loads(only.stdout)["facts"]] == ["lyra"]
    plain = run_cli("promote", "list", "--vault", str(vault))
    assert plain.exit_code == 0 and fid in plain.stdout and "2 pending" in plain.stdout
    none = run_cli("promote", "list", "--status", "approved", "--vault", str(vault))
    assert none.exit_code == 0 and "No approved facts" in none.stdout
    bad = run_cli("promote", "list", "--status", "maybe", "--vault", str(vault))
    assert bad.exit_code == 2


def test_approve_turns_a_fact_into_memory(vault: Path) -> None:
    fid = _retain(vault, "Chiara wants migrations reviewed before Friday")
    res = run_cli(
        "promote", "approve", fid, "--reviewer", "chiara", "--name", "Migration review day",
        "--vault", str(vault), "--json",
    )  # fmt: skip
    assert res.exit_code == 0, res.stderr
    data = json.loads(res.stdout)
    mem = data["memory"]
    assert mem["path"] == "memory/migration-review-day.md" and mem["scope"] == "shared"
    meta = notes.read(vault / mem["path"]).meta
    assert meta["approved_by"] == "chiara" and meta["source_bank_id"] == fid
    assert meta["approved_at"] and meta["author"] == "ella" and meta["type"] == "preference"
    assert meta["source"] == ["session-7"]
    index = (vault / "memory/MEMORY.md").read_text()
    assert "[[memory/migration-review-day|Migration review day]]" in index
    assert index.index("migration-review-day") < index.index("## Retracted")
    bmeta = _bank_meta(vault, fid)
    assert bmeta["status"] == "approved" and bmeta["approved_by"] == "chiara"
    assert bmeta["memory"] == "[[memory/migration-review-day|Migration review day]]"
    assert bmeta["memory_id"] == mem["id"]
    again = promote(vault, "approve", fid, "--reviewer", "chiara")
    assert again.exit_code == 2 and "already approved" in again.stderr  # type: ignore[attr-defined]


def test_approve_agent_scope_and_supersede(vault: Path) -> None:
    fid = _retain(vault, "Every migration must be reversible and tested on staging too", "project")
    res = promote(vault, "approve", fid, "--reviewer", "chiara", "--scope", "agent")
    assert res.exit_code == 0, res.stderr  # type: ignore[attr-defined]
    found = [f for f in facts.memories(_open(vault)) if f.agent == "ella"]
    assert any(f.text.startswith("Every migration must be reversible") for f in found)
    assert "Every migration must be reversible" in (vault / "agents/ella/MEMORY.md").read_text()
    sup = _retain(
        vault, "Store all times in UTC and convert to Europe/Rome in the UI and emails", "decision"
    )
    assert _bank_meta(vault, sup)["may_supersede"] == "m-7f15c837"
    d = review.approve(_open(vault), sup, reviewer="chiara", supersedes="m-7f15c837")
    assert d.memory is not None
    old = notes.read(vault / "memory/times-are-utc-in-storage.md").meta
    assert old["status"] == "superseded" and old["superseded_by"] == d.memory.id


def test_reject_keeps_the_note_with_reason(vault: Path) -> None:
    fid = _retain(vault, "Deploys happen on Fridays", "project")
    res = promote(
        vault, "reject", fid, "--why", "we never deploy on Fridays", "--reviewer", "chiara"
    )
    assert res.exit_code == 0 and "rejected" in res.stdout  # type: ignore[attr-defined]
    meta = _bank_meta(vault, fid)
    assert meta["status"] == "rejected" and meta["reason"] == "we never deploy on Fridays"
    assert meta["rejected_by"] == "chiara"
    empty = promote(vault, "reject", fid, "--why", " ", "--reviewer", "chiara")
    assert empty.exit_code == 2  # type: ignore[attr-defined]
    assert store.pending_count(_open(vault)) == 0


def test_merge_appends_to_the_memory_and_keeps_human_edits(vault: Path) -> None:
    path = vault / "memory/stripe-webhook-race.md"
    path.write_text(path.read_text().replace("---\n", "---\nmy_key: kept # a comment\n", 1))
    fid = _retain(vault, "Stripe retries webhooks for up to three days", "failure")
    res = run_cli(
        "promote", "merge", fid, "--into", "stripe-webhook-race", "--reviewer", "chiara",
        "--vault", str(vault), "--json",
    )  # fmt: skip
    assert res.exit_code == 0, res.stderr
    text = path.read_text()
    assert "my_key: kept # a comment" in text
    assert text.rstrip().endswith("Stripe retries webhooks for up to three days")
    meta = notes.read(path).meta
    assert (
        meta["evidence"] == 2 and meta["merged_from"] == [fid] and meta["source"] == ["session-7"]
    )
    bmeta = _bank_meta(vault, fid)
    assert bmeta["status"] == "approved" and bmeta["merged_into"] == meta["id"]
    assert "[[memory/stripe-webhook-race|" in str(bmeta["memory"])
    missing = promote(
        vault, "merge", _retain(vault, "x y z w"), "--into", "nope", "--reviewer", "chiara"
    )
    assert missing.exit_code == 4  # type: ignore[attr-defined]


def test_edit_replaces_the_text_and_rescans_secrets(vault: Path) -> None:
    fid = _retain(vault, "Chiara wants migrations reviewed before Friday")
    key = "ghp_" + "A" * 36
    d = review.edit(
        _open(vault), fid, f"Chiara reviews migrations on Thursdays {key}", reviewer="chiara"
    )
    assert (
        d.fact.text.startswith("Chiara reviews migrations on Thursdays") and key not in d.fact.text
    )
    assert _bank_meta(vault, fid)["edited_by"] == "chiara"


# --- the gate ----------------------------------------------------------------------------------


@pytest.mark.parametrize("action", ["approve", "reject", "merge"])
def test_agent_in_environment_is_refused(
    vault: Path, action: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    fid = _retain(vault, "Chiara wants migrations reviewed before Friday")
    extra = {"approve": [], "reject": ["--why", "no"], "merge": ["--into", "m-bacc2cb0"]}[action]
    monkeypatch.setenv("VAULTMEM_AGENT", "lyra")
    res = run_cli(
        "promote", action, fid, *extra, "--reviewer", "chiara", "--vault", str(vault), "--json"
    )
    assert res.exit_code == 8, res.stderr
    assert json.loads(res.stdout)["error"]["type"] == "ReviewRefusedError"
    assert _bank_meta(vault, fid)["status"] == "pending"


def test_agent_flag_and_apply_refused(vault: Path) -> None:
    fid = _retain(vault, "Chiara wants migrations reviewed before Friday")
    res = promote(vault, "approve", fid, "--reviewer", "chiara", "--agent", "ella")
    assert res.exit_code == 8  # type: ignore[attr-defined]
    res = run_cli(
        "promote", "apply", "--reviewer", "chiara", "--agent", "ella", "--vault", str(vault)
    )
    assert res.exit_code == 8
    assert _bank_meta(vault, fid)["status"] == "pending"


@pytest.mark.slow
def test_gate_in_a_real_process(vault: Path) -> None:
    fid = _retain(vault, "Chiara wants migrations reviewed before Friday")
    proc = run_proc(
        "promote", "approve", fid, "--reviewer", "chiara", "--vault", str(vault),
        env={"VAULTMEM_AGENT": "ella"},
    )  # fmt: skip
    assert proc.returncode == 8 and "agent" in proc.stderr
    ok = run_proc(
        "promote", "approve", fid, "--vault", str(vault), env={"VAULTMEM_REVIEWER": "chiara"}
    )
    assert ok.returncode == 0, ok.stderr


@pytest.mark.parametrize(
    ("reviewer", "code"), [("ella", 8), ("lyra", 8), ("bob", 8), ("Bad Name", 2), (None, 2)]
)
def test_reviewer_must_be_a_listed_person(vault: Path, reviewer: str | None, code: int) -> None:
    fid = _retain(vault, "Chiara wants migrations reviewed before Friday")
    args = ["--reviewer", reviewer] if reviewer else []
    res = promote(vault, "approve", fid, *args)
    assert res.exit_code == code, res.stderr  # type: ignore[attr-defined]
    assert _bank_meta(vault, fid)["status"] == "pending"


def test_default_reviewer_from_config(vault: Path) -> None:
    toml = vault / "vaultmem.toml"
    toml.write_text('default_reviewer = "chiara"\n' + toml.read_text())
    fid = _retain(vault, "Chiara wants migrations reviewed before Friday")
    assert promote(vault, "approve", fid).exit_code == 0  # type: ignore[attr-defined]


def test_an_author_claim_in_frontmatter_changes_nothing(vault: Path) -> None:
    """The author is the agent whose bank holds the note: lyra's note claiming `author: ella`
    is lyra's, and an approved decision fact is signed by lyra, never with ella's key."""
    from tests._layer3_helpers import make_keys
    from vaultmem.nexus import decisions as decisions_mod

    make_keys(vault, "ella", "lyra")
    fid = _retain(vault, "Use Postgres advisory locks for the queue", "decision", agent="lyra")
    path, note = store.find_bank(_open(vault), fid)
    path.write_text(notes.set_frontmatter(note.text, {"author": "ella"}))
    done = review.approve(_open(vault), fid, reviewer="chiara")
    assert done.fact.author == "lyra" and done.memory is not None
    assert done.memory.author == "lyra"
    (decision,) = [
        d for d in decisions_mod.decisions(_open(vault)) if d.entry.id == done.decision_log
    ]
    assert decision.entry.agent == "lyra"


def test_unknown_fact_is_not_found(vault: Path) -> None:
    assert promote(vault, "approve", "b-00000000", "--reviewer", "chiara").exit_code == 4  # type: ignore[attr-defined]


# --- review from Obsidian -------------------------------------------------------------------


def _set(vault: Path, fid: str, **updates: object) -> None:
    path, note = store.find_bank(_open(vault), fid)
    path.write_text(notes.set_frontmatter(note.text, updates))


def test_apply_carries_out_obsidian_edits(vault: Path) -> None:
    approve_me = _retain(vault, "Chiara wants migrations reviewed before Friday")
    agent_scope = _retain(vault, "Ella runs the test suite before every push", "preference")
    reject_me = _retain(vault, "Deploys happen on Fridays", "project")
    no_reason = _retain(vault, "Lyra owns the database", "project", agent="lyra")
    untouched = _retain(vault, "Marta is away until January", "user")
    _set(vault, approve_me, status="approved", name="Migration review day")
    _set(vault, agent_scope, status="approved", scope="agent")
    _set(vault, reject_me, status="rejected", reason="we never deploy on Fridays")
    _set(vault, no_reason, status="rejected")
    dry = run_cli(
        "promote", "apply", "--reviewer", "chiara", "--dry-run", "--vault", str(vault), "--json"
    )
    assert dry.exit_code == 5  # the rejection without a reason is a problem
    planned = json.loads(dry.stdout)["planned"]
    assert {(p["action"], p["id"]) for p in planned} == {
        ("approve", approve_me), ("approve", agent_scope), ("reject", reject_me),
    }  # fmt: skip
    assert _bank_meta(vault, approve_me).get("memory") is None
    # nothing is carried out unconfirmed: without a terminal, --yes after the dry run
    unconfirmed = run_cli("promote", "apply", "--reviewer", "chiara", "--vault", str(vault))
    assert unconfirmed.exit_code == 2 and "--yes" in unconfirmed.stderr
    assert _bank_meta(vault, approve_me).get("memory") is None
    plan = json.loads(dry.stdout)["plan"]
    res = run_cli(
        "promote", "apply", "--reviewer", "chiara", "--yes", "--plan", plan, "--vault",
        str(vault), "--json",
    )  # fmt: skip
    assert res.exit_code == 5
    data = json.loads(res.stdout)
    assert {(d["action"], d["fact"]["id"]) for d in data["done"]} == {
        ("approved", approve_me), ("approved", agent_scope), ("rejected", reject_me),
    }  # fmt: skip
    assert [p["id"] for p in data["problems"]] == [no_reason]
    assert "reason" in data["problems"][0]["message"]
    assert (vault / "memory/migration-review-day.md").exists()
    assert notes.read(vault / "memory/migration-review-day.md").meta["approved_by"] == "chiara"
    assert "Ella runs the test suite" in (vault / "agents/ella/MEMORY.md").read_text()
    assert _bank_meta(vault, reject_me)["rejected_by"] == "chiara"
    assert _bank_meta(vault, untouched)["status"] == "pending"
    # a second run has nothing left to do but the unresolved problem
    _set(vault, no_reason, status="pending")
    again = run_cli("promote", "apply", "--reviewer", "chiara", "--dry-run", "--vault", str(vault))
    assert again.exit_code == 0 and "nothing to apply" in again.stdout


def test_apply_takes_the_author_from_the_folder_and_shows_a_false_claim(vault: Path) -> None:
    claimed = _retain(vault, "Chiara wants migrations reviewed before Friday")
    other = _retain(vault, "Marta is away until January", "user")
    _set(vault, claimed, status="approved", author="chiara")  # ella's note claims chiara
    _set(vault, other, status="approved")
    seen: list[apply.Planned] = []
    report = apply.apply(_open(vault), reviewer="chiara", confirm=lambda p: not seen.append(p))
    assert {d.fact.id for d in report.done} == {claimed, other}
    plan = next(p for p in seen if p.id == claimed)
    assert plan.author == "ella" and plan.claimed_author == "chiara"
    assert "frontmatter says author 'chiara'" in plan.describe()
    memory_id = _bank_meta(vault, claimed)["memory_id"]
    made = next(f for f in facts.memories(_open(vault)) if f.id == memory_id)
    assert made.author == "ella"


def test_apply_shows_what_a_supersedes_would_retire_and_skips_what_is_declined(
    vault: Path,
) -> None:
    """An agent sets status: approved and supersedes: on its own note; the person sees it."""
    person_fact = facts.remember(
        _open(vault), "Deploys need two approvals.", name="Deploy approvals", type_="project"
    )
    sneaky = _retain(vault, "Deploys need no approval", "project")
    _set(vault, sneaky, status="approved", supersedes=person_fact.id)
    dry = apply.apply(_open(vault), reviewer="chiara", dry_run=True)
    (plan,) = dry.planned
    assert plan.supersedes == person_fact.id and plan.supersedes_name == "Deploy approvals"
    assert "SUPERSEDES" in plan.describe() and "Deploys need no approval" in plan.describe()
    report = apply.apply(_open(vault), reviewer="chiara", confirm=lambda p: False)
    assert report.done == () and [p.id for p in report.skipped] == [sneaky]
    still = next(f for f in facts.memories(_open(vault)) if f.id == person_fact.id)
    assert still.status == "active"


def test_reviewing_updates_review_page(tmp_path: Path) -> None:
    from vaultmem.app.lifecycle.scaffold import init

    root = tmp_path / "v"
    init(root, agents=["ella"], reviewers=["chiara"])
    fid = _retain(root, "Marta is away until January", "user")
    assert fid in (root / "Review.md").read_text()
    review.reject(_open(root), fid, why="not durable", reviewer="chiara")
    assert fid not in (root / "Review.md").read_text()


def test_approved_decision_goes_on_the_decision_log(vault: Path) -> None:
    from tests._layer3_helpers import make_keys
    from vaultmem.nexus import decisions as decisions_mod

    make_keys(vault, "ella")
    fid = _retain(vault, "Use Stripe Checkout rather than Elements for payments", "decision")
    res = run_cli(
        "promote", "approve", fid, "--reviewer", "chiara", "--vault", str(vault), "--json"
    )
    assert res.exit_code == 0, res.stderr
    data = json.loads(res.stdout)
    assert data["decision_log"] and data["warnings"] == []
    (entry,) = [
        d.entry for d in decisions_mod.decisions(_open(vault)) if d.entry.id == data["decision_log"]
    ]
    assert entry.agent == "ella" and entry.summary.startswith("Use Stripe Checkout")
    assert _bank_meta(vault, fid)["decision_id"] == data["decision_log"]
    # a non-decision fact never touches the log
    other = _retain(vault, "Marta is away until January", "user")
    d = review.approve(_open(vault), other, reviewer="chiara")
    assert d.decision_log is None


def test_decision_without_a_key_here_is_approved_with_a_warning(vault: Path) -> None:
    fid = _retain(vault, "Use Stripe Checkout rather than Elements for payments", "decision")
    res = promote(vault, "approve", fid, "--reviewer", "chiara")
    assert res.exit_code == 0, res.stderr  # type: ignore[attr-defined]
    assert "no decision-log entry was written" in res.stderr  # type: ignore[attr-defined]
    assert _bank_meta(vault, fid)["status"] == "approved"


def test_yes_carries_out_exactly_the_plan_the_dry_run_printed(vault: Path) -> None:
    """An agent edits another bank note (approved + supersedes) between the person's dry run
    and `--yes`: the plan id no longer matches, nothing is carried out (exit 8)."""
    person = run_cli("remember", "Launch in March", "--name", "Launch", "--type", "project",
                     "--vault", str(vault), "--json")  # fmt: skip
    launch = json.loads(person.stdout)["id"]
    listed = _retain(vault, "Chiara wants migrations reviewed before Friday")
    sneaky = _retain(vault, "Launch is cancelled", "project")
    _set(vault, listed, status="approved")
    dry = run_cli(
        "promote", "apply", "--reviewer", "chiara", "--dry-run", "--vault", str(vault), "--json"
    )
    plan = json.loads(dry.stdout)["plan"]
    assert [p["id"] for p in json.loads(dry.stdout)["planned"]] == [listed]
    assert plan in run_cli("promote", "apply", "--reviewer", "chiara", "--dry-run",
                           "--vault", str(vault)).stdout  # fmt: skip
    _set(vault, sneaky, status="approved", supersedes=launch)  # the agent, after the dry run
    yes = ("promote", "apply", "--reviewer", "chiara", "--yes", "--vault", str(vault))
    assert run_cli(*yes).exit_code == 2  # --yes alone: which plan?
    res = run_cli(*yes, "--plan", plan)
    assert res.exit_code == 8 and "changed since the dry run" in res.stderr
    assert _bank_meta(vault, listed).get("memory") is None
    assert _bank_meta(vault, sneaky).get("memory") is None
    assert notes.read(next((vault / "memory").glob("launch.md"))).meta.get("status") is None
    # the same plan, unchanged, is carried out
    _set(vault, sneaky, status="pending")
    assert run_cli(*yes, "--plan", plan).exit_code == 0
    assert _bank_meta(vault, listed).get("memory")


def test_a_reviewer_who_is_also_an_agent_never_reviews_their_own_proposal(vault: Path) -> None:
    """The one rule of the gate (core.vault.resolve_reviewer): no agent's name reviews, so a
    fact's author — always the agent whose bank holds it — never reviews it, even when a person
    lists that name under `reviewers` too."""
    toml = vault / "vaultmem.toml"
    toml.write_text(
        toml.read_text().replace('reviewers = ["chiara"]', 'reviewers = ["chiara", "ella"]')
    )
    assert 'reviewers = ["chiara", "ella"]' in toml.read_text()
    fid = _retain(vault, "Chiara wants migrations reviewed before Friday", agent="ella")
    other = _retain(vault, "Chiara reviews migrations on Fridays", agent="lyra")
    for args in (("approve", fid), ("reject", fid, "--why", "no"), ("merge", fid, "--into", other)):
        res = promote(vault, *args, "--reviewer", "ella")
        assert res.exit_code == 8, res.stderr  # type: ignore[attr-defined]
        assert "'ella' is an agent" in res.stderr  # type: ignore[attr-defined]
    assert _bank_meta(vault, fid)["status"] == "pending"
    assert promote(vault, "approve", fid, "--reviewer", "chiara").exit_code == 0  # type: ignore[attr-defined]
