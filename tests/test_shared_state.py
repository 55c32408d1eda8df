"""Decisions, checkpoints and project state through the library."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests._layer3_helpers import fresh_vault, make_keys
from vaultmem.core.errors import EntryNotFoundError, UsageError
from vaultmem.nexus import checkpoints, decisions, log, state, verify


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    """Empty logs (example-vault may ship example entries): ids start at 1."""
    return fresh_vault(tmp_path)


def test_decisions_are_signed_and_verify(vault: Path) -> None:
    v = make_keys(vault)
    r = decisions.decide(
        v, "ella", "Store prices in cents", why="no float rounding", tags=["payments"]
    )
    assert r.decision.log == "decisions" and r.decision.id == "ella.d1"
    assert r.announcement.extra == {"decision": "ella.d1"}
    d = decisions.decisions(v)[0].to_dict()
    assert (d["why"], d["tags"], d["active"]) == ("no float rounding", ["payments"], True)
    text = (vault / "nexus/decisions.md").read_text()
    assert "**Why:** no float rounding" in text and "#payments" in text
    assert verify.verify(v).ok


def test_decide_needs_a_reason_and_a_real_superseded_id(vault: Path) -> None:
    v = make_keys(vault)
    with pytest.raises(UsageError):
        decisions.decide(v, "ella", "x", why="  ")
    with pytest.raises(EntryNotFoundError):
        decisions.decide(v, "ella", "x", why="y", supersedes="ella.d4")
    with pytest.raises(UsageError):
        decisions.decide(v, "ella", "x", why="y", tags=["two words"])


def test_superseding_twice_warns(vault: Path) -> None:
    v = make_keys(vault)
    decisions.decide(v, "ella", "A", why="a")
    decisions.decide(v, "ella", "B", why="b", supersedes="ella.d1")
    r = decisions.decide(v, "lyra", "C", why="c", supersedes="ella.d1")
    assert r.warnings and "already superseded by ella.d2" in r.warnings[0]


def test_secret_in_the_rationale_is_redacted(vault: Path) -> None:
    v = make_keys(vault)
    r = decisions.decide(v, "ella", "Use the staging key", why="it is AKIAIOSFODNN7EXAMPLE")
    assert r.decision.extra["why"] == "it is [redacted:aws-access-key]"
    assert "AKIAIOSFODNN7EXAMPLE" not in (vault / "nexus/decisions.md").read_text()


def test_checkpoint_is_replaced_atomically_and_history_kept(vault: Path) -> None:
    v = make_keys(vault, "ella")
    path = vault / "agents/ella/checkpoint.md"
    path.write_text("hand-written notes before vaultmem\n")
    checkpoints.checkpoint(v, "ella", "v1", task="t1", next_steps=["a", "b"])
    checkpoints.checkpoint(v, "ella", "v2", task="t2")
    cp = checkpoints.show_checkpoint(v, "ella")
    assert (cp.text, cp.task, cp.next) == ("v2", "t2", ())
    history = checkpoints.checkpoint_history(v, "ella")
    assert history[0]["raw"] == "hand-written notes before vaultmem\n"
    assert [h.get("text") for h in history[1:]] == ["v1", "v2"]
    # no temp files left next to it (atomic replace)
    assert [p.name for p in path.parent.iterdir() if p.name.startswith(".")] == []
    with pytest.raises(UsageError):
        checkpoints.checkpoint(v, "ella", "  ")


def test_checkpoint_crash_mid_write_leaves_old_or_new(vault: Path) -> None:
    """A process killed at any point of checkpoint: the file is one whole version."""
    import signal
    import subprocess
    import sys
    import time

    make_keys(vault, "ella")
    script = (
        "import sys\nfrom vaultmem.core.vault import Vault\nfrom vaultmem.nexus.checkpoints import checkpoint\n"
        "v = Vault.open(sys.argv[1])\ni = 0\n"
        "while True:\n    i += 1\n    checkpoint(v, 'ella', ('version %d ' % i) * 2000, task='t%d' % i)\n"
    )
    p = subprocess.Popen([sys.executable, "-c", script, str(vault)])
    history = vault / ".vaultmem/journal/checkpoints/ella.jsonl"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and (
        not history.exists() or history.read_bytes().count(b"\n") < 3
    ):
        time.sleep(0.05)  # until it has replaced the checkpoint a few times
    p.send_signal(signal.SIGKILL)
    p.wait()
    text = (vault / "agents/ella/checkpoint.md").read_text()
    assert text.startswith("---\n") and text.endswith("(none)\n")
    cp = checkpoints.show_checkpoint(make_keys(vault, "lyra"), "ella")
    n = cp.task[1:]  # type: ignore[index]
    assert cp.text == (f"version {n} " * 2000).strip()


def test_state_set_keeps_human_text_and_demotes_headings(vault: Path) -> None:
    v = make_keys(vault)
    path = vault / "nexus/project-state.md"
    path.write_text(path.read_text() + "\nA line Chiara wrote at the end.\n")
    ch = state.set_state(v, "ella", "Goal", "New goal\n## Sneaky heading\n```\n## in code\n```")
    text = path.read_text()
    assert "### Sneaky heading" in text and "## in code" in text
    assert ch.warnings and "demoted" in ch.warnings[0]
    assert [t for t, _ in state.state_sections(text)] == ["Goal", "Status", "Next", "Risks"]
    assert "A line Chiara wrote at the end." in text
    assert ch.entry.type == "state" and ch.entry.extra == {"section": "Goal"}


def test_state_lines_inside_fences_are_not_sections(vault: Path) -> None:
    text = "---\ntags: [x]\n---\n# T\n\n## A\n\n```\n## not a section\n```\n\n## B\nb\n"
    assert [t for t, _ in state.state_sections(text)] == ["A", "B"]


def test_journal_lines_are_json(vault: Path) -> None:
    v = make_keys(vault, "ella")
    log.append(v, "ella", "x")
    line = (vault / ".vaultmem/journal/live.jsonl").read_text().splitlines()[0]
    data = json.loads(line)["line"]  # sealed: {"seal", "line"}
    assert data["hash"].startswith("sha256:") and data["sig"]


def test_a_long_decision_points_to_why(vault: Path) -> None:
    v = make_keys(vault)
    with pytest.raises(UsageError) as info:
        decisions.decide(v, "ella", "x" * 300, why="y")
    assert "--why" in str(info.value)
