"""`vaultmem consolidate`: near-duplicate and contradicting memories become pending proposals
that go through `promote` and its gate; memory never changes by itself."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests._cli import run_cli
from vaultmem.bank import store
from vaultmem.core import notes
from vaultmem.core.vault import Vault
from vaultmem.memory import facts


def remember(vault: Path, text: str, name: str, type_: str = "project", **kw: str) -> str:
    return facts.remember(Vault.open(vault), text, name=name, type_=type_, **kw).id


def consolidate(vault: Path, *args: str) -> dict:  # type: ignore[type-arg]
    res = run_cli("consolidate", "--vault", str(vault), "--json", *args)
    assert res.exit_code == 0, res.stderr
    return json.loads(res.stdout)  # type: ignore[no-any-return]


def snapshot(vault: Path) -> dict[str, bytes]:
    files = [
        *vault.glob("memory/*.md"),
        *vault.glob("agents/*/memory/*.md"),
        *vault.glob("agents/*/MEMORY.md"),
    ]
    return {str(p.relative_to(vault)): p.read_bytes() for p in files}


@pytest.fixture
def dupes(vault: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, str, str]:
    monkeypatch.setenv("VAULTMEM_NOW", "2026-11-20T10:00:00Z")
    a = remember(vault, "Staging deploys need a green CI run first.", "Staging deploys")
    monkeypatch.setenv("VAULTMEM_NOW", "2026-11-21T10:00:00Z")
    b = remember(vault, "Staging deploys need a green CI run first, always.", "Staging rule")
    monkeypatch.delenv("VAULTMEM_NOW")
    return vault, a, b


def test_near_duplicates_become_one_proposal_and_memory_is_untouched(
    dupes: tuple[Path, str, str],
) -> None:
    vault, a, b = dupes
    before = snapshot(vault)
    dry = consolidate(vault, "--dry-run")
    (cluster,) = dry["clusters"]
    assert cluster["kind"] == "merge" and {m["id"] for m in cluster["members"]} == {a, b}
    assert cluster["status"] == "new" and cluster["proposal"] is None
    assert not list((vault / "agents" / "ella" / "bank").glob("*.md"))
    done = consolidate(vault, "--agent", "ella")
    (cluster,) = done["clusters"]
    assert cluster["status"] == "written" and cluster["scope"] == "shared"
    assert snapshot(vault) == before  # proposing changes no memory
    queue = json.loads(run_cli("promote", "list", "--vault", str(vault), "--json").stdout)
    item = next(f for f in queue["facts"] if f["id"] == cluster["proposal"])
    assert set(item["consolidates"]) == {a, b} and item["status"] == "pending"
    assert item["author"] == "ella" and item["evidence"] == 2
    assert "Staging deploys need a green CI run first" in item["text"]
    assert "Staging" in (vault / "Review.md").read_text()
    # the same cluster is not proposed twice
    again = consolidate(vault, "--agent", "ella")
    assert [c["status"] for c in again["clusters"]] == ["already proposed"]


def test_approval_through_the_gate_replaces_the_whole_cluster(
    dupes: tuple[Path, str, str],
) -> None:
    vault, a, b = dupes
    (cluster,) = consolidate(vault, "--agent", "ella")["clusters"]
    pid = cluster["proposal"]
    refused = run_cli(
        "promote", "approve", pid, "--reviewer", "chiara", "--agent", "ella", "--vault", str(vault)
    )
    assert refused.exit_code == 8  # an agent never approves
    res = run_cli(
        "promote", "approve", pid, "--reviewer", "chiara", "--vault", str(vault), "--json"
    )
    assert res.exit_code == 0, res.stderr
    made = json.loads(res.stdout)["memory"]
    assert made["scope"] == "shared"
    v = Vault.open(vault)
    by_id = {f.id: f for f in facts.memories(v)}
    assert by_id[a].status == "superseded" and by_id[b].status == "superseded"
    for old in (a, b):
        meta = notes.read(vault / by_id[old].path).meta
        assert meta["superseded_by"] == made["id"]
    new_meta = notes.read(vault / made["path"]).meta
    assert set(new_meta["consolidates"]) == {a, b}
    assert new_meta["approved_by"] == "chiara" and new_meta["evidence"] == 2
    index = (vault / "memory" / "MEMORY.md").read_text()
    active, retracted = index.split("## Retracted")
    assert made["path"].removesuffix(".md") in active
    assert (
        by_id[a].path.removesuffix(".md") in retracted
        and by_id[b].path.removesuffix(".md") in retracted
    )
    assert consolidate(vault, "--agent", "ella")["clusters"] == []  # nothing left to merge


def test_a_contradiction_keeps_the_newest_and_goes_through_apply(
    vault: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("VAULTMEM_NOW", "2026-10-01T10:00:00Z")
    old = remember(vault, "The launch is planned for March 2027 with 12 gyms.", "Launch plan")
    monkeypatch.setenv("VAULTMEM_NOW", "2026-11-01T10:00:00Z")
    new = remember(vault, "The launch is planned for March 2027 with 14 gyms.", "Launch plan v2")
    monkeypatch.delenv("VAULTMEM_NOW")
    (cluster,) = consolidate(vault, "--agent", "lyra")["clusters"]
    assert cluster["kind"] == "supersede"
    assert [m["id"] for m in cluster["members"]] == [new, old]  # the newest is kept
    pid = cluster["proposal"]
    path, _note = store.find_bank(Vault.open(vault), pid)
    assert "with 14 gyms" in path.read_text() and "contradict" in path.read_text()
    path.write_text(path.read_text().replace("status: pending", "status: approved"))
    dry = run_cli("promote", "apply", "--reviewer", "chiara", "--dry-run", "--vault", str(vault))
    assert f"CONSOLIDATES {new}, {old}" in dry.stdout
    plan = dry.stdout.split("--plan ")[-1].split()[0]
    res = run_cli(
        "promote", "apply", "--reviewer", "chiara", "--yes", "--plan", plan, "--vault",
        str(vault), "--json",
    )  # fmt: skip
    assert res.exit_code == 0, res.stderr
    active = [
        f
        for f in facts.memories(Vault.open(vault), include_inactive=False)
        if "launch is planned" in f.text
    ]
    assert [f.text for f in active] == ["The launch is planned for March 2027 with 14 gyms."]


def test_a_rejected_proposal_is_not_made_again(dupes: tuple[Path, str, str]) -> None:
    vault, _a, _b = dupes
    (cluster,) = consolidate(vault, "--agent", "ella")["clusters"]
    res = run_cli(
        "promote", "reject", cluster["proposal"], "--why", "two different rules",
        "--reviewer", "chiara", "--vault", str(vault),
    )  # fmt: skip
    assert res.exit_code == 0, res.stderr
    again = consolidate(vault, "--agent", "ella")
    assert [c["status"] for c in again["clusters"]] == ["already proposed"]
    assert len(list((vault / "agents" / "ella" / "bank").glob("*.md"))) == 1


def test_private_memories_stay_with_their_agent(vault: Path) -> None:
    for text in (
        "Lyra tests the okapi screen on Safari first.",
        "Lyra tests the okapi screen on Safari first!",
    ):
        remember(vault, text, f"Okapi {len(text)}", "preference", scope="agent", agent="lyra")
    assert consolidate(vault, "--agent", "ella")["clusters"] == []  # never another agent's
    (cluster,) = consolidate(vault, "--agent", "lyra")["clusters"]
    assert cluster["scope"] == "agent" and cluster["owner"] == "lyra"
    res = run_cli(
        "promote",
        "approve",
        cluster["proposal"],
        "--reviewer",
        "chiara",
        "--vault",
        str(vault),
        "--json",
    )
    assert res.exit_code == 0, res.stderr
    assert json.loads(res.stdout)["memory"]["path"].startswith("agents/lyra/memory/")


def test_a_proposal_on_a_memory_changed_since_is_refused(dupes: tuple[Path, str, str]) -> None:
    vault, a, _b = dupes
    (cluster,) = consolidate(vault, "--agent", "ella")["clusters"]
    facts.retract(Vault.open(vault), a, why="wrong")
    res = run_cli(
        "promote", "approve", cluster["proposal"], "--reviewer", "chiara", "--vault", str(vault)
    )
    assert res.exit_code == 2 and "retracted" in res.stderr


def test_embeddings_find_paraphrases_words_miss(vault: Path, tmp_path: Path) -> None:
    pytest.importorskip("numpy")
    pytest.importorskip("tokenizers")
    pytest.importorskip("safetensors")
    from tests._semantic import make_model, use_model

    remember(vault, "The car needs new tyres before winter", "Tyres", "fact")
    remember(vault, "The automobile needs new tyres before winter", "Winter tyres", "fact")
    assert consolidate(vault, "--dry-run") == {"clusters": [], "semantic": False, "dry_run": True}
    use_model(vault, make_model(tmp_path / "tiny-model"))
    found = consolidate(vault, "--dry-run")
    assert found["semantic"] is True
    # (the tiny test model knows a few words only, so it also pairs other memories)
    names = [{m["name"] for m in c["members"]} for c in found["clusters"]]
    assert {"Tyres", "Winter tyres"} in names
