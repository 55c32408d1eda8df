"""`vaultmem sync` with nothing to do (app/sync/quiet.py): two git calls, and the full sync
whenever there is anything at all to do; the merge drivers registered only when the clone's
config lacks them or changed."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests._imports import EVERYWHERE, NOT_SEARCH, YAML, check, loaded
from tests._proc import git
from tests._proc import vm as _vm
from vaultmem.app.sync.quiet import nothing_to_do
from vaultmem.core.vault import Vault

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")


def vm(*args: str, home: Path, trace: Path | None = None) -> subprocess.CompletedProcess[str]:
    """vaultmem with git's own trace (GIT_TRACE) sent to `trace`, none inherited."""
    return _vm(
        *args, home=home, drop=("GIT_TRACE",), env={"GIT_TRACE": str(trace)} if trace else None
    )


def git_commands(trace: Path) -> list[str]:
    """The git commands vaultmem ran (GIT_TRACE), without the remote side git itself runs."""
    out = []
    for line in trace.read_text(encoding="utf-8").splitlines():
        _, found, rest = line.partition("trace: built-in: git ")
        if found and not rest.startswith(("upload-pack", "rev-list", "maintenance")):
            out.append(rest)
    return out


def names(trace: Path) -> list[str]:
    return [c.split()[0] for c in git_commands(trace)]


def config_reads(trace: Path) -> list[str]:
    """The calls that check or register this clone's settings (not `config user.email`)."""
    return [c for c in git_commands(trace) if c.startswith(("config --local", "config merge."))]


@pytest.fixture
def synced(tmp_path: Path) -> tuple[Path, Path, Path]:
    """(vault, its home, the bare remote): a --git vault pushed, then synced once."""
    home = tmp_path / "home"
    root = tmp_path / "v"
    res = vm("init", str(root), "--agent", "ella", "--reviewer", "chiara", "--git", home=home)
    assert res.returncode == 0, res.stderr
    bare = tmp_path / "origin.git"
    git(tmp_path, "init", "--quiet", "--bare", str(bare))
    git(root, "remote", "add", "origin", str(bare))
    git(root, "push", "--quiet", "-u", "origin", "HEAD")
    res = vm("sync", "--vault", str(root), home=home)
    assert res.returncode == 0, res.stderr
    return root, home, bare


def test_nothing_to_do_is_two_git_calls_and_says_what_the_full_sync_says(
    synced: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    root, home, _bare = synced
    trace = tmp_path / "trace"
    quick = vm("sync", "--vault", str(root), "--json", home=home, trace=trace)
    assert quick.returncode == 0, quick.stderr
    # was 20: rev-parse x6, config --list, fetch, add -A, diff --cached x2, merge-base, ...
    assert names(trace) == ["status", "ls-remote"]
    full = vm("sync", "--vault", str(root), "--json", home=home, trace=None)
    env_full = subprocess.run(
        [sys.executable, "-m", "vaultmem", "sync", "--vault", str(root), "--json"],
        env={**os.environ, "VAULTMEM_HOME": str(home), "VAULTMEM_NO_FAST": "1"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert json.loads(quick.stdout) == json.loads(env_full.stdout) == json.loads(full.stdout)
    assert json.loads(quick.stdout)["outcome"] == "nothing"
    last = json.loads((root / ".vaultmem/sync/last.json").read_text(encoding="utf-8"))
    assert last["outcome"] == "nothing"
    text = vm("sync", "--vault", str(root), home=home)
    assert text.stdout == "nothing to do: in sync\n"


def test_anything_to_do_goes_to_the_full_sync(
    synced: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    root, home, bare = synced
    os.environ["VAULTMEM_HOME"] = str(home)  # the test's own VAULTMEM_HOME, as the CLI's
    assert nothing_to_do(Vault.open(root))
    note = root / "wiki-note.md"
    note.write_text("# A note a person wrote\n", encoding="utf-8")
    assert not nothing_to_do(Vault.open(root))  # an untracked file: commit it
    res = vm("sync", "--vault", str(root), home=home)
    assert res.returncode == 0 and "committed" in res.stdout, res.stdout + res.stderr
    assert nothing_to_do(Vault.open(root))
    # another machine pushed: the remote's branch is not HEAD any more
    other = tmp_path / "other"
    git(tmp_path, "clone", "--quiet", str(bare), str(other))
    (other / "from-elsewhere.md").write_text("# elsewhere\n", encoding="utf-8")
    git(other, "add", "-A")
    git(other, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "--quiet", "-m", "x")
    git(other, "push", "--quiet")
    assert not nothing_to_do(Vault.open(root))
    res = vm("sync", "--vault", str(root), home=home)
    assert res.returncode == 0 and "pulled 1 commit" in res.stdout, res.stdout + res.stderr
    assert (root / "from-elsewhere.md").exists()
    # a merge git left in the working tree, and a file with conflict markers: full sync
    assert nothing_to_do(Vault.open(root))
    (root / ".git" / "MERGE_HEAD").write_text(git(root, "rev-parse", "HEAD"), encoding="utf-8")
    assert not nothing_to_do(Vault.open(root))
    (root / ".git" / "MERGE_HEAD").unlink()
    (root / ".vaultmem/sync/conflicts.json").write_text('["x.md"]', encoding="utf-8")
    assert not nothing_to_do(Vault.open(root))


def test_merge_drivers_are_registered_only_when_the_config_lacks_them(
    synced: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    root, home, _bare = synced
    (root / "change.md").write_text("# something to commit\n", encoding="utf-8")
    trace = tmp_path / "trace"
    res = vm("sync", "--vault", str(root), home=home, trace=trace)
    assert res.returncode == 0, res.stderr
    # a full sync on an unchanged config does not read it with git (`config --local --list`)
    assert config_reads(trace) == [], git_commands(trace)
    # a person's or an older vaultmem's config without a driver: the next sync puts it back
    git(root, "config", "--unset", "merge.vaultmem-index.driver")
    trace.unlink()
    res = vm("sync", "--vault", str(root), home=home, trace=trace)
    assert res.returncode == 0, res.stderr
    assert config_reads(trace)[0] == "config --local --list"
    assert "merge-file index" in git(root, "config", "merge.vaultmem-index.driver")


def test_nothing_to_do_imports_only_what_it_uses(
    synced: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    root, home, _bare = synced
    mods = loaded(tmp_path, ["sync", "--vault", str(root)], env={"VAULTMEM_HOME": str(home)})
    assert "vaultmem.app.sync.quiet" in mods
    check(
        "sync (nothing to do)",
        mods,
        {
            **EVERYWHERE,
            **YAML,
            **NOT_SEARCH,
            "cryptography": "nothing arrived: nothing to verify",
            "vaultmem.nexus": "the logs: nothing arrived, nothing to check",
            "vaultmem.app.pack": "the read pack",
            "vaultmem.app.sync.pipeline": "the full sync: commit, merge, push, verify",
            "vaultmem.app.sync.objects": "merges: nothing to merge",
        },
    )
