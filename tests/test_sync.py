"""Several machines: git sync with a real bare repository and clones, and the merge drivers."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from vaultmem.app.merge import merge_checkpoint, merge_index, merge_state

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")


# --- merge drivers (pure) ----------------------------------------------------------------------

INDEX = "# Memory\n\n- [[memory/a|A]] — a\n- [[memory/b|B]] — b\n"


def test_index_merge_keeps_a_line_added_on_both_sides_once() -> None:
    ours = INDEX + "- [[memory/c|C]] — c\n"
    theirs = INDEX + "- [[memory/c|C]] — c\n- [[memory/d|D]] — d\n"
    merged, conflict = merge_index(INDEX, ours, theirs)
    assert not conflict
    assert merged.count("memory/c|C") == 1 and "memory/d|D" in merged


def test_index_merge_keeps_a_retraction_and_an_edit() -> None:
    ours = INDEX.replace("— b\n", "— b, better described\n")  # a person edits B
    theirs = (
        "# Memory\n\n- [[memory/a|A]] — a\n\n## Retracted\n\n- [[memory/b|B]] — b (retracted)\n"
    )
    merged, conflict = merge_index(INDEX, ours, theirs)
    assert not conflict
    assert "- [[memory/b|B]] — b, better described" in merged
    assert "- [[memory/b|B]] — b (retracted)" in merged
    assert merged.index("better described") < merged.index("## Retracted")


def test_index_merge_applies_a_removal_the_other_side_did_not_touch() -> None:
    theirs = "# Memory\n\n- [[memory/a|A]] — a\n"
    ours = INDEX + "- [[memory/c|C]] — c\n"
    merged, _ = merge_index(INDEX, ours, theirs)
    assert "memory/b" not in merged and "memory/c" in merged


STATE = "# Project state\n\n## Goal\n\nship\n\n## Status\n\nfine\n\n## Risks\n\nnone\n"


def test_state_merge_lands_two_different_sections() -> None:
    ours = STATE.replace("ship", "ship in April")
    theirs = STATE.replace("none", "the vendor")
    merged, conflict = merge_state(STATE, ours, theirs)
    assert not conflict
    assert "ship in April" in merged and "the vendor" in merged


def test_state_merge_of_the_same_section_is_a_conflict_with_both_versions() -> None:
    ours = STATE.replace("fine", "green")
    theirs = STATE.replace("fine", "red")
    merged, conflict = merge_state(STATE, ours, theirs)
    assert conflict
    assert "green" in merged and "red" in merged and "<<<<<<< this machine (status)" in merged
    assert "ship" in merged and "none" in merged


def test_state_merge_adds_a_new_section_from_either_side() -> None:
    merged, conflict = merge_state(STATE, STATE + "\n## Ours\n\nx\n", STATE + "\n## Theirs\n\ny\n")
    assert not conflict and "## Ours" in merged and "## Theirs" in merged


def test_checkpoint_merge_keeps_the_newer_whole() -> None:
    old = "---\nagent: ella\nupdated: 2026-11-29T10:00:00Z\n---\n\nold\n"
    new = "---\nagent: ella\nupdated: 2026-11-29T11:00:00Z\n---\n\nnew\n"
    assert merge_checkpoint(old, old, new) == (new, False)
    assert merge_checkpoint(old, new, old) == (new, False)


# --- real repositories ------------------------------------------------------------------------


def vm(
    *args: str, cwd: Path | None = None, home: Path | None = None
) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    if home is not None:
        env["VAULTMEM_HOME"] = str(home)
    return subprocess.run(
        [sys.executable, "-m", "vaultmem", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, capture_output=True, text=True, check=True
    ).stdout


@pytest.fixture
def machines(tmp_path: Path) -> dict[str, Path]:
    """A vault made on machine A with --git, a bare remote, and a clone on machine B."""
    a = tmp_path / "a"
    res = vm("init", str(a), "--agent", "ella", "--agent", "lyra", "--reviewer", "chiara",
             "--git", home=tmp_path / "home-a")  # fmt: skip
    assert res.returncode == 0, res.stderr
    bare = tmp_path / "origin.git"
    git(tmp_path, "init", "--quiet", "--bare", str(bare))
    git(a, "remote", "add", "origin", str(bare))
    git(a, "push", "--quiet", "-u", "origin", "HEAD")
    b = tmp_path / "b"
    res = vm("clone", str(bare), str(b), "--agent", "lyra", home=tmp_path / "home-b")
    assert res.returncode == 0, res.stderr
    return {
        "a": a,
        "b": b,
        "home-a": tmp_path / "home-a",
        "home-b": tmp_path / "home-b",
        "bare": bare,
    }


def _approve_b_keys(m: dict[str, Path]) -> None:
    keys = json.loads(vm("keys", "list", "--json", "--vault", str(m["b"]), home=m["home-b"]).stdout)
    for k in keys["keys"]:
        if not k["approved"]:
            res = vm("keys", "approve", k["key_id"], "--reviewer", "chiara", "--vault", str(m["b"]),
                     home=m["home-b"])  # fmt: skip
            assert res.returncode == 0, res.stderr


def test_two_machines_two_agents_sync_and_verify(machines: dict[str, Path]) -> None:
    m = machines
    _approve_b_keys(m)
    assert (
        vm(
            "append", "ella on A", "--agent", "ella", "--vault", str(m["a"]), home=m["home-a"]
        ).returncode
        == 0
    )
    assert (
        vm(
            "append", "lyra on B", "--agent", "lyra", "--vault", str(m["b"]), home=m["home-b"]
        ).returncode
        == 0
    )
    first = vm("sync", "--json", "--vault", str(m["a"]), home=m["home-a"])
    assert first.returncode == 0, first.stderr
    second = vm("sync", "--json", "--vault", str(m["b"]), home=m["home-b"])
    assert second.returncode == 0, second.stderr
    report = json.loads(second.stdout)
    assert report["entries_in"] == 1 and report["verify_ok"] is True
    third = vm("sync", "--json", "--vault", str(m["a"]), home=m["home-a"])
    assert third.returncode == 0, third.stderr
    for side in ("a", "b"):
        text = (m[side] / "nexus/live-context.md").read_text()
        assert "ella on A" in text and "lyra on B" in text
        assert vm("verify", "--vault", str(m[side]), home=m[f"home-{side}"]).returncode == 0
    again = vm("sync", "--vault", str(m["a"]), home=m["home-a"])
    assert again.returncode == 0 and "nothing to do" in again.stdout
    # recall on A finds what B wrote, without a rebuild in the agent's recall
    hits = json.loads(
        vm("recall", "lyra on B", "--json", "--vault", str(m["a"]), home=m["home-a"]).stdout
    )
    assert any("lyra on B" in (h["title"] or "") for h in hits["hits"])


def test_offline_keeps_the_work_committed(machines: dict[str, Path]) -> None:
    m = machines
    vm("append", "written offline", "--agent", "ella", "--vault", str(m["a"]), home=m["home-a"])
    m["bare"].rename(m["bare"].with_name("gone.git"))
    res = vm("sync", "--vault", str(m["a"]), home=m["home-a"])
    assert res.returncode == 6, (res.stdout, res.stderr)
    assert "committed here" in res.stderr
    assert "written offline" in git(m["a"], "show", "HEAD:nexus/live-context.md")
    m["bare"].with_name("gone.git").rename(m["bare"])
    assert vm("sync", "--vault", str(m["a"]), home=m["home-a"]).returncode == 0


def test_the_same_state_section_on_two_machines_is_a_conflict_for_a_person(
    machines: dict[str, Path],
) -> None:
    m = machines
    _approve_b_keys(m)
    assert (
        vm(
            "state",
            "set",
            "Status",
            "green",
            "--agent",
            "ella",
            "--vault",
            str(m["a"]),
            home=m["home-a"],
        ).returncode
        == 0
    )
    assert (
        vm(
            "state",
            "set",
            "Status",
            "red",
            "--agent",
            "lyra",
            "--vault",
            str(m["b"]),
            home=m["home-b"],
        ).returncode
        == 0
    )
    assert vm("sync", "--vault", str(m["a"]), home=m["home-a"]).returncode == 0
    res = vm("sync", "--vault", str(m["b"]), home=m["home-b"])
    assert res.returncode == 5, (res.stdout, res.stderr)
    assert "nexus/project-state.md" in res.stderr
    text = (m["b"] / "nexus/project-state.md").read_text()
    assert "green" in text and "red" in text
    # a second sync does not pretend: the merge is unfinished
    assert vm("sync", "--vault", str(m["b"]), home=m["home-b"]).returncode == 5


def test_sync_status(machines: dict[str, Path]) -> None:
    m = machines
    vm("append", "not yet synced", "--agent", "ella", "--vault", str(m["a"]), home=m["home-a"])
    res = vm("sync", "--status", "--json", "--vault", str(m["a"]), home=m["home-a"])
    assert res.returncode == 0, res.stderr
    st = json.loads(res.stdout)
    assert st["changed_files"] and st["behind"] == 0
