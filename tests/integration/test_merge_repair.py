"""Two clones of a bare repository merging with real git (`.gitattributes`, vaultmem's drivers):

- criss-cross rounds of `merge=union` leave the log out of order and with entries twice;
  `repair` writes the canonical order and `verify` exits 0 on both clones afterwards;
- a project-state conflict leaves markers, which `state set` refuses and `status`/`verify`
  name by file and line."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [
    pytest.mark.skipif(shutil.which("git") is None, reason="needs git"),
    pytest.mark.slow,
]

GIT_ID = ["-c", "user.name=test", "-c", "user.email=test@example.invalid"]


def vm(root: Path, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, VAULTMEM_HOME=str(home))
    return subprocess.run(
        [sys.executable, "-m", "vaultmem", *args, "--vault", str(root)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def git(cwd: Path, *args: str) -> str:
    res = subprocess.run(["git", *GIT_ID, *args], cwd=cwd, capture_output=True, text=True)
    assert res.returncode == 0, (args, res.stdout, res.stderr)
    return res.stdout


def _two_clones(tmp: Path) -> tuple[Path, Path, Path, Path]:
    a, b = tmp / "a", tmp / "b"
    home_a, home_b = tmp / "home-a", tmp / "home-b"
    env = dict(os.environ, VAULTMEM_HOME=str(home_a))
    res = subprocess.run(
        [sys.executable, "-m", "vaultmem", "init", str(a), "--agent", "ella", "--agent", "lyra",
         "--reviewer", "chiara", "--git"],
        env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    # an approval is chiara's signature: her key is made on A and committed before B clones
    res = vm(a, home_a, "keys", "create", "--reviewer", "chiara")
    assert res.returncode == 0, res.stderr
    git(a, "add", "-A")
    git(a, "commit", "--quiet", "-m", "chiara's key")
    bare = tmp / "origin.git"
    git(tmp, "init", "--quiet", "--bare", str(bare))
    git(a, "remote", "add", "origin", str(bare))
    git(a, "push", "--quiet", "origin", "HEAD:main")
    git(tmp, "clone", "--quiet", "--branch", "main", str(bare), str(b))
    # machine B's agent gets its own key (its own chain), approved by a key A already trusts
    res = vm(b, home_b, "keys", "create", "--agent", "lyra", "--json")
    assert res.returncode == 0, res.stderr
    key = json.loads(res.stdout)["key_id"]
    git(b, "add", "-A")
    git(b, "commit", "--quiet", "-m", "B's key")
    git(b, "push", "--quiet", "origin", "HEAD:b")
    git(a, "fetch", "--quiet", "origin")
    git(a, "merge", "--quiet", "--no-edit", "origin/b")
    res = vm(a, home_a, "keys", "approve", key, "--reviewer", "chiara")
    assert res.returncode == 0, res.stderr
    git(a, "add", "-A")
    git(a, "commit", "--quiet", "-m", "approve B's key")
    git(a, "push", "--quiet", "origin", "HEAD:a")
    git(b, "fetch", "--quiet", "origin")
    git(b, "merge", "--quiet", "--no-edit", "origin/a")
    return a, b, home_a, home_b


def _append(root: Path, home: Path, agent: str, summary: str) -> str:
    res = vm(root, home, "append", summary, "--agent", agent, "--channel", "c", "--type", "note",
             "--json")  # fmt: skip
    assert res.returncode == 0, res.stderr
    return str(json.loads(res.stdout)["id"])


def _ids(root: Path) -> list[str]:
    from vaultmem.nexus.entry import parse_entries

    return [e.id for e in parse_entries((root / "nexus/live-context.md").read_text("utf-8"))]


def _verify(root: Path, home: Path) -> tuple[int, dict[str, object]]:
    res = vm(root, home, "verify", "--json")
    return res.returncode, json.loads(res.stdout)


def _move_first_entry_last(path: Path) -> None:
    """The first entry's block moved to the end of the file, as a union merge can leave it:
    its chain's later entries then stand before it (`reordered`)."""
    from vaultmem.nexus.entry import parse_entries

    text = path.read_text(encoding="utf-8")
    first = parse_entries(text)[0]
    lines = text.splitlines(keepends=True)
    block = lines[first.line_start - 1 : first.line_end]
    rest = lines[: first.line_start - 1] + lines[first.line_end :]
    tail = "".join(rest).rstrip("\n") + "\n\n"
    path.write_text(tail + "".join(block).rstrip("\n") + "\n", encoding="utf-8")


def test_repair_after_criss_cross_union_merges_leaves_verify_clean(tmp_path: Path) -> None:
    a, b, home_a, home_b = _two_clones(tmp_path)
    written: set[str] = set()
    for rnd in range(4):
        # both machines append, publish what they have, then merge the other's published
        # branch: each round is a criss-cross merge, git's hardest case for a union
        written.add(_append(a, home_a, "ella", f"round {rnd} on A"))
        written.add(_append(b, home_b, "lyra", f"round {rnd} on B"))
        if rnd % 2:
            written.add(_append(a, home_a, "lyra", f"round {rnd} lyra on A"))
        for root, branch in ((a, "a"), (b, "b")):
            git(root, "add", "-A")
            git(root, "commit", "--quiet", "-m", f"round {rnd}")
            git(root, "push", "--quiet", "--force", "origin", f"HEAD:{branch}")
        for root, other in ((a, "b"), (b, "a")):
            git(root, "fetch", "--quiet", "origin")
            git(root, "merge", "--quiet", "--no-edit", f"origin/{other}")
    # one last exchange so both clones hold the same commits
    git(a, "fetch", "--quiet", "origin")
    git(a, "merge", "--quiet", "--no-edit", "origin/b")
    git(a, "push", "--quiet", "--force", "origin", "HEAD:a")
    git(b, "fetch", "--quiet", "origin")
    git(b, "merge", "--quiet", "--no-edit", "origin/a")

    code, before = _verify(a, home_a)
    if code == 0:
        # this run's merges happened to keep every chain in order (git's union output depends
        # on the hunks): make the damage they make, the same on both clones
        for root in (a, b):
            _move_first_entry_last(root / "nexus/live-context.md")
        code, before = _verify(a, home_a)
    kinds = {p["kind"] for p in before["problems"]}  # type: ignore[attr-defined]
    assert code == 5 and kinds & {"reordered", "duplicate"}, before  # the merges did damage
    assert kinds <= {"reordered", "duplicate"}, before

    for root, home in ((a, home_a), (b, home_b)):
        res = vm(root, home, "repair", "--json")
        assert res.returncode == 0, (res.stdout, res.stderr)
        actions = json.loads(res.stdout)["actions"]
        assert any("in order" in act for act in actions), actions
        code, after = _verify(root, home)
        assert code == 0, after
        assert set(_ids(root)) >= written and len(_ids(root)) == len(set(_ids(root)))
        # a second repair has nothing left to do
        res = vm(root, home, "repair", "--json")
        assert json.loads(res.stdout)["actions"] == []
    # both clones wrote the same canonical order, so merging the two repairs is no conflict
    assert (a / "nexus/live-context.md").read_bytes() == (b / "nexus/live-context.md").read_bytes()


def test_a_state_conflict_git_leaves_is_refused_and_reported(tmp_path: Path) -> None:
    a, b, home_a, home_b = _two_clones(tmp_path)
    assert vm(a, home_a, "state", "set", "Status", "green", "--agent", "ella").returncode == 0
    assert vm(b, home_b, "state", "set", "Status", "red", "--agent", "lyra").returncode == 0
    # then a person rewrites that section by hand on B (the merge stamp goes with it): two
    # agents' writes merge by the later stamp, a person's edit is what git leaves to a person
    page = b / "nexus/project-state.md"
    page.write_text(
        "\n".join(ln for ln in page.read_text("utf-8").split("\n") if "vaultmem: set by" not in ln),
        "utf-8",
    )
    git(b, "add", "-A")
    git(b, "commit", "--quiet", "-m", "red")
    git(b, "push", "--quiet", "--force", "origin", "HEAD:b")
    git(a, "add", "-A")
    git(a, "commit", "--quiet", "-m", "green")
    git(a, "fetch", "--quiet", "origin")
    merged = subprocess.run(["git", *GIT_ID, "merge", "--no-edit", "origin/b"], cwd=a,
                            capture_output=True, text=True)  # fmt: skip
    assert merged.returncode != 0  # vaultmem-state reported the conflict to git
    path = a / "nexus/project-state.md"
    text = path.read_text("utf-8")
    assert "<<<<<<< this machine (status)" in text and "green" in text and "red" in text
    lines = [
        n
        for n, ln in enumerate(text.splitlines(), 1)
        if ln[:7] in ("<<<<<<<", "=======", ">>>>>>>")
    ]

    res = vm(a, home_a, "state", "set", "Status", "ship", "--agent", "ella")
    assert res.returncode == 5 and "conflict markers" in res.stderr, res.stderr
    assert path.read_text("utf-8") == text  # nothing edited around the markers
    res = vm(a, home_a, "status", "--json")
    found = [(p["path"], p["line"]) for p in json.loads(res.stdout)["problems"]
             if p["kind"] == "conflict-markers"]  # fmt: skip
    assert found == [("nexus/project-state.md", n) for n in lines]
    code, report = _verify(a, home_a)
    assert code == 5
    assert [(p["path"], p["line"]) for p in report["problems"]  # type: ignore[attr-defined]
            if p["kind"] == "conflict-markers"] == found  # fmt: skip
