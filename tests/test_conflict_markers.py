"""Conflict markers a git merge leaves behind are a problem to report, never text to edit
around: `state set` refuses the file (exit 5), `status` and `verify` name file and line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests._cli import run_cli
from tests._layer3_helpers import make_keys
from vaultmem.app.lifecycle.status import status
from vaultmem.core.errors import IntegrityError, UsageError
from vaultmem.core.vault import Vault
from vaultmem.nexus import log, state, verify

CONFLICTED = (
    "# Project state\n\n## Goal\n\nship\n\n"
    "<<<<<<< this machine (status)\n## Status\n\ngreen\n=======\n## Status\n\nred\n"
    ">>>>>>> the other machine (status)\n"
)


def test_conflict_markers_are_found_by_line_outside_code_fences() -> None:
    assert state.conflict_markers(CONFLICTED) == [7, 11, 15]
    # a setext heading underline is not a marker; a fenced conflict is quoted text
    assert state.conflict_markers("Title\n=======\n\ntext\n") == []
    assert state.conflict_markers("```\n<<<<<<< HEAD\n=======\n>>>>>>> b\n```\n") == []
    assert state.conflict_markers("<<<<<<< HEAD\nx\n|||||||\ny\n=======\nz\n") == [1, 3, 5]
    assert state.conflict_markers("a\r\n>>>>>>> theirs\r\n") == [2]


def test_state_set_refuses_the_section_a_merge_left_in_conflict_and_writes_the_others(
    vault: Path,
) -> None:
    v = make_keys(vault)
    path = vault / "nexus/project-state.md"
    path.write_text(CONFLICTED)
    with pytest.raises(IntegrityError) as err:
        state.set_state(v, "ella", "Status", "amber")
    assert "conflict markers (lines 7, 11, 15)" in err.value.message
    assert "section 'Status'" in err.value.hint
    assert path.read_text() == CONFLICTED  # untouched, `=======` included
    assert not [e for e in log.read_journal(v, "live") if e.type == "state"]
    res = run_cli("state", "set", "--vault", str(vault), "--agent", "ella", "Status", "x")
    assert res.exit_code == 5 and "conflict markers" in res.stderr
    # every other section is written, and the kept versions stay byte for byte
    state.set_state(v, "ella", "Goal", "ship in May")
    text = path.read_text()
    assert "ship in May" in text and CONFLICTED[CONFLICTED.index("<<<<<<<") :] in text
    assert [e.extra["section"] for e in log.read_journal(v, "live") if e.type == "state"] == [
        "Goal"
    ]


def test_state_set_refuses_text_that_holds_markers(vault: Path) -> None:
    v = make_keys(vault)
    with pytest.raises(UsageError):
        state.set_state(v, "ella", "Status", "<<<<<<< HEAD\na\n=======\nb\n>>>>>>> x")
    state.set_state(v, "ella", "Status", "```\n<<<<<<< HEAD\n```")  # quoted: fine


def test_status_and_verify_name_every_file_and_line(vault: Path) -> None:
    v = make_keys(vault)
    (vault / "nexus/project-state.md").write_text(CONFLICTED)
    index = vault / "memory/MEMORY.md"
    index.write_text(index.read_text() + "<<<<<<< HEAD\n- a\n=======\n- b\n>>>>>>> origin\n")
    n_index = len(index.read_text().splitlines())
    checkpoint = vault / "agents/ella/checkpoint.md"
    checkpoint.parent.mkdir(parents=True, exist_ok=True)
    checkpoint.write_text("---\nagent: ella\n---\n\n>>>>>>> theirs\n")
    # in a log: an entry may quote a conflict in its body; a marker between entries counts
    log.append(v, "ella", "quoting git", channel="c", type_="note", body="<<<<<<< HEAD\n>>>>>>> b")
    live = vault / "nexus/live-context.md"
    live.write_text(live.read_text() + "<<<<<<< HEAD\n")
    n_live = len(live.read_text().splitlines())
    want = {
        ("nexus/project-state.md", 7),
        ("nexus/project-state.md", 11),
        ("nexus/project-state.md", 15),
        ("memory/MEMORY.md", n_index - 4),
        ("memory/MEMORY.md", n_index - 2),
        ("memory/MEMORY.md", n_index),
        ("agents/ella/checkpoint.md", 5),
        ("nexus/live-context.md", n_live),
    }
    found = {(m.path, m.line) for m in state.find_conflict_markers(Vault.open(vault))}
    assert found == want
    got = {(p.path, p.line) for p in status(v).problems if p.kind == "conflict-markers"}
    assert got == want
    report = verify.verify(v)
    assert {(p.path, p.line) for p in report.problems if p.kind == "conflict-markers"} == want
    res = run_cli("verify", "--vault", str(vault), "--json")
    assert res.exit_code == 5
    kinds = {p["kind"] for p in json.loads(res.stdout)["problems"]}
    assert "conflict-markers" in kinds
    res = run_cli("status", "--vault", str(vault))
    assert "nexus/project-state.md" in res.stdout + res.stderr and "conflict" in res.stdout


def test_state_set_on_a_heading_that_appears_twice_says_so(vault: Path) -> None:
    v = make_keys(vault)
    path = vault / "nexus/project-state.md"
    path.write_text("# Project state\n\n## Status\n\ngreen\n\n## Status\n\nred\n")
    change = state.set_state(v, "ella", "Status", "amber")
    assert any("appears 2 times" in w for w in change.warnings)
    assert state.state_sections(path.read_text()) == [("Status", "amber"), ("Status", "red")]
