"""Layer 1: remember, forget, retract, supersede, and MEMORY.md edited line by line."""

from __future__ import annotations

from pathlib import Path

import pytest

from vaultmem.app.lifecycle.status import status
from vaultmem.core import notes
from vaultmem.core.errors import IntegrityError, NotFoundError, UsageError
from vaultmem.core.vault import Vault
from vaultmem.memory import facts


def open_v(path: Path) -> Vault:
    return Vault.open(path)


def test_remember_writes_note_and_index_line(vault: Path) -> None:
    v = open_v(vault)
    fact = facts.remember(
        v, "Deploys happen on Mondays.", name="Deploy day", type_="project", description="Mondays"
    )
    note = notes.read(vault / fact.path)
    assert note.meta["name"] == "Deploy day" and note.meta["type"] == "project"
    assert note.meta["id"] == fact.id and note.meta["author"] == "person"
    assert {"created", "updated", "description"} <= set(note.meta)
    assert note.body.strip() == "Deploys happen on Mondays."
    index = (vault / "memory/MEMORY.md").read_text()
    assert "- [[memory/deploy-day|Deploy day]] — Mondays" in index
    # the new line lands in the active list, above the Retracted heading
    assert index.index("deploy-day") < index.index("## Retracted")


def test_same_name_gets_new_slug(vault: Path) -> None:
    v = open_v(vault)
    a = facts.remember(v, "one", name="Same", type_="fact")
    b = facts.remember(v, "two", name="Same", type_="fact")
    assert a.path == "memory/same.md" and b.path == "memory/same-2.md"
    assert (vault / a.path).read_text().rstrip().endswith("one")


def test_agent_scope(vault: Path) -> None:
    v = open_v(vault)
    fact = facts.remember(v, "x", name="Private", type_="fact", scope="agent", agent="lyra")
    assert fact.path == "agents/lyra/memory/private.md" and fact.agent == "lyra"
    assert "[[agents/lyra/memory/private|Private]]" in (vault / "agents/lyra/MEMORY.md").read_text()
    with pytest.raises(UsageError, match="needs an agent"):
        facts.remember(v, "x", name="P2", type_="fact", scope="agent")


@pytest.mark.parametrize(
    "name", ["../escape", "a/b", "x\x00y", "x" * 300, "", "a|b", "[[x]]", ".hidden"]
)
def test_bad_fact_names_change_nothing(vault: Path, name: str) -> None:
    before = {p: p.read_bytes() for p in vault.rglob("*") if p.is_file()}
    with pytest.raises(UsageError):
        facts.remember(open_v(vault), "text", name=name, type_="fact")
    after = {
        p: p.read_bytes() for p in vault.rglob("*") if p.is_file() and ".vaultmem" not in p.parts
    }
    assert after == {p: b for p, b in before.items() if ".vaultmem" not in p.parts}


def test_unknown_type_and_empty_text(vault: Path) -> None:
    with pytest.raises(UsageError, match="unknown fact type"):
        facts.remember(open_v(vault), "t", name="n", type_="gossip")
    with pytest.raises(UsageError, match="empty"):
        facts.remember(open_v(vault), "  \n", name="n", type_="fact")


def test_human_edits_to_index_survive(vault: Path) -> None:
    index = vault / "memory/MEMORY.md"
    lines = index.read_text().splitlines()
    # a person reorders, adds a heading and a comment
    custom = "\n".join([lines[0], "", "## People", "<!-- keep this -->", *reversed(lines[4:8]), ""])
    index.write_text(custom + "\n")
    v = open_v(vault)
    fact = facts.remember(v, "t", name="New fact", type_="fact")
    text = index.read_text()
    assert text.startswith(custom.rstrip("\n") + "\n")
    assert text.rstrip().endswith(f"[[memory/{Path(fact.path).stem}|New fact]] — t")


def test_retract_keeps_note_and_moves_line(vault: Path) -> None:
    v = open_v(vault)
    fact = facts.remember(v, "Wrong", name="Bad fact", type_="fact")
    note_path = vault / fact.path
    # a person adds their own key and body text first
    note_path.write_text(
        notes.set_frontmatter(note_path.read_text(), {"reviewed_by": "chiara"}) + "\nMy note.\n"
    )
    facts.retract(v, fact.id, why="it was wrong")
    note = notes.read(note_path)
    assert note.meta["status"] == "retracted" and note.meta["retract_reason"] == "it was wrong"
    assert note.meta["reviewed_by"] == "chiara" and "My note." in note.body
    index = (vault / "memory/MEMORY.md").read_text()
    head, retracted = index.split("## Retracted")
    assert "bad-fact" not in head and "[[memory/bad-fact|Bad fact]]" in retracted
    assert "it was wrong" in retracted
    assert fact.id not in {f.id for f in facts.memories(v, include_inactive=False)}


def test_supersedes(vault: Path) -> None:
    v = open_v(vault)
    old = facts.remember(v, "Launch in March", name="Launch date", type_="project")
    new = facts.remember(
        v, "Launch in April", name="Launch date", type_="project", supersedes=old.id
    )
    assert notes.read(vault / old.path).meta["status"] == "superseded"
    assert notes.read(vault / old.path).meta["superseded_by"] == new.id
    assert notes.read(vault / new.path).meta["supersedes"] == old.id
    head, retracted = (vault / "memory/MEMORY.md").read_text().split("## Retracted")
    assert "launch-date|" in retracted and "launch-date-2|" in head


def test_supersedes_unknown_writes_nothing(vault: Path) -> None:
    before = (vault / "memory/MEMORY.md").read_text()
    with pytest.raises(NotFoundError):
        facts.remember(open_v(vault), "x", name="X", type_="fact", supersedes="m-nope")
    assert (vault / "memory/MEMORY.md").read_text() == before
    assert not (vault / "memory/x.md").exists()


def test_forget(vault: Path) -> None:
    v = open_v(vault)
    fact = facts.remember(v, "secret stuff", name="Gone soon", type_="user")
    result = facts.forget(v, fact.id)
    assert result.index_line_removed
    assert not (vault / fact.path).exists()
    assert "gone-soon" not in (vault / "memory/MEMORY.md").read_text()
    with pytest.raises(NotFoundError):
        facts.forget(v, fact.id)


def test_retract_broken_frontmatter_changes_nothing(vault: Path) -> None:
    path = vault / "memory/project-orbit.md"
    path.write_text("---\nname: [broken\n---\nbody\n")
    index_before = (vault / "memory/MEMORY.md").read_text()
    with pytest.raises(IntegrityError, match=r"project-orbit\.md"):
        facts.retract(open_v(vault), "project-orbit", why="x")
    assert path.read_text() == "---\nname: [broken\n---\nbody\n"
    assert (vault / "memory/MEMORY.md").read_text() == index_before


def test_mangled_index_is_refused(vault: Path) -> None:
    (vault / "memory/MEMORY.md").write_bytes(b"# Memory\n\xff\xfe garbage\n")
    with pytest.raises(IntegrityError, match=r"MEMORY\.md"):
        facts.remember(open_v(vault), "t", name="T", type_="fact")
    assert not (vault / "memory/t.md").exists()


def test_status_finds_problems(vault: Path) -> None:
    (vault / "memory/broken.md").write_text("---\nname: [x\n---\n")
    (vault / "memory/orphan.md").write_text("---\nname: Orphan\ntype: fact\nid: m-orphan\n---\nx\n")
    with (vault / "memory/MEMORY.md").open("a") as fh:
        fh.write("- [[memory/missing|Missing]] — gone\n")
    report = status(open_v(vault))
    kinds = {(p.path, p.kind) for p in report.problems}
    assert ("memory/broken.md", "broken-frontmatter") in kinds
    assert ("memory/orphan.md", "unindexed-fact") in kinds
    assert ("memory/MEMORY.md", "missing-target") in kinds
    assert report.facts_by_type["project"] >= 1
