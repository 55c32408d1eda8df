"""A remote is a stranger, round two (issue 35, items 1 and 3), from the attacker's side with real
git: a bare repository, a victim made with `init --git`, an honest second machine, and an
attacker's plain git clone with no key.

1. No code runs from the vault. The attacker pushes a `vaultmem/` package that writes a marker
   when imported; git runs the merge drivers in the vault's root and a hook's background sync
   keeps the hook's working folder (the project, here the vault). The sync refuses the commit
   (exit 8, naming the path) and the marker never appears; and even with such a package in the
   vault (a local writer put it there), nothing vaultmem starts imports it.
2. No merge rule below the root. `nexus/.gitattributes` with `live-context.md merge=binary`
   is refused; the honest machine's signed handoff survives and reaches the inbox once the
   attacker takes the rule away.

The victim runs `vaultmem` as people and runtimes do: the console script, in the vault."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests._proc import git, vm
from tests.integration.test_background_sync import payload, wait_for

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("git") is None, reason="needs git"),
]

CONSOLE = Path(sys.executable).parent / "vaultmem"  # what setup writes into a runtime's hooks


def console(
    root: Path, home: Path, *args: str, stdin: str = "", vault: bool = True
) -> subprocess.CompletedProcess[str]:
    """`vaultmem ARGS` typed in the vault (`cwd` = the vault, as a runtime's hook runs it)."""
    assert CONSOLE.is_file(), "the tests run from an install with its console script"
    return subprocess.run(
        [str(CONSOLE), *args, *(["--vault", str(root)] if vault else [])],
        cwd=root,
        env=dict(os.environ, VAULTMEM_HOME=str(home)),
        input=stdin,
        capture_output=True,
        text=True,
        timeout=180,
    )


def _evil(folder: Path, marker: Path) -> None:
    """A `vaultmem` package and a `sitecustomize.py` that write `marker` when imported."""
    code = f"import pathlib\npathlib.Path({str(marker)!r}).write_text(__file__)\n"
    (folder / "vaultmem").mkdir(parents=True, exist_ok=True)
    (folder / "vaultmem/__init__.py").write_text(code)
    (folder / "vaultmem/__main__.py").write_text(code)
    (folder / "sitecustomize.py").write_text(code)


def _memory_line(root: Path, name: str) -> str:
    line = f"- [[memory/{name}|{name}]] — {name}, written on one side"
    with (root / "MEMORY.md").open("a", encoding="utf-8") as fh:
        fh.write(line + "\n")
    return line


def _push(clone: Path, message: str) -> None:
    git(clone, "add", "-A", "--force")
    git(clone, "commit", "--quiet", "-m", message)
    git(clone, "push", "--quiet", "origin", "HEAD")


def _merged(root: Path, clone: Path) -> bool:
    """Is the clone's tip (the attacker's commit) part of `root`'s history?"""
    tip = git(clone, "rev-parse", "HEAD").strip()
    done = subprocess.run(
        ["git", "merge-base", "--is-ancestor", tip, "HEAD"], cwd=root, check=False
    )
    return done.returncode == 0


def _on_remote(bare: Path, path: str, text: str) -> bool:
    try:
        return text in git(bare, "show", f"HEAD:{path}")
    except subprocess.CalledProcessError:
        return False


@pytest.fixture
def world(tmp_path: Path) -> dict[str, Path]:
    """The victim (ella and lyra, reviewer chiara, a remote) and the attacker's plain clone."""
    root, home, bare = tmp_path / "victim", tmp_path / "home-victim", tmp_path / "origin.git"
    res = vm("init", str(root), "--agent", "ella", "--agent", "lyra", "--reviewer", "chiara",
             "--git", home=home)  # fmt: skip
    assert res.returncode == 0, res.stderr
    res = vm("keys", "create", "--reviewer", "chiara", "--vault", str(root), home=home)
    assert res.returncode == 0, res.stderr
    git(root, "add", "-A")
    git(root, "commit", "--quiet", "-m", "chiara's key")
    git(tmp_path, "init", "--quiet", "--bare", str(bare))
    git(root, "remote", "add", "origin", str(bare))
    git(root, "push", "--quiet", "-u", "origin", "HEAD")
    attacker = tmp_path / "attacker"
    git(tmp_path, "clone", "--quiet", str(bare), str(attacker))
    return {"root": root, "home": home, "bare": bare, "attacker": attacker, "tmp": tmp_path}


def _hook(w: dict[str, Path], event: str, data: str) -> subprocess.CompletedProcess[str]:
    return console(w["root"], w["home"], "hook", event, "--agent", "ella", stdin=data)


def test_a_vaultmem_package_from_the_remote_is_refused_and_never_runs(
    world: dict[str, Path],
) -> None:
    w, marker = world, world["tmp"] / "PWNED"
    git(w["attacker"], "pull", "--quiet", "origin", "HEAD")
    _evil(w["attacker"], marker)
    theirs = _memory_line(w["attacker"], "theirs")  # a merge driver would run for MEMORY.md
    _push(w["attacker"], "speed up vaultmem")
    ours = _memory_line(w["root"], "ours")
    res = console(w["root"], w["home"], "sync")
    assert res.returncode == 8, (res.stdout, res.stderr)
    assert "refused the remote's commit" in res.stderr and "speed up vaultmem" in res.stderr
    assert "sitecustomize.py" in res.stderr or "vaultmem/__init__.py" in res.stderr
    assert not marker.exists()
    assert not _merged(w["root"], w["attacker"])  # the victim's own work is committed, no more
    assert not (w["root"] / "vaultmem").exists() and not (w["root"] / "sitecustomize.py").exists()
    # a hook-started background sync, in the vault, is refused the same way and runs nothing
    started = _hook(w, "session-start", payload(w, "SessionStart", source="startup"))
    assert started.returncode == 0, started.stderr
    log = w["root"] / ".vaultmem/sync/background.log"
    wait_for(lambda: log.exists() and "refused the remote's commit" in log.read_text())
    assert not marker.exists()
    # a new machine cloning the remote is refused before anything is checked out
    fresh = w["tmp"] / "fresh"
    res = vm("clone", str(w["bare"]), str(fresh), home=w["tmp"] / "home-fresh")
    assert res.returncode == 8, (res.stdout, res.stderr)
    assert not marker.exists()
    # nothing is lost: once the attacker takes the package back, the next sync goes through
    git(w["attacker"], "rm", "--quiet", "-r", "vaultmem", "sitecustomize.py")
    _push(w["attacker"], "take it back")
    res = console(w["root"], w["home"], "sync")
    assert res.returncode == 0, (res.stdout, res.stderr)
    memory = (w["root"] / "MEMORY.md").read_text()
    assert ours in memory and theirs in memory
    assert _on_remote(w["bare"], "MEMORY.md", ours)
    assert not marker.exists()


def test_nothing_vaultmem_starts_imports_a_package_in_the_vault(world: dict[str, Path]) -> None:
    """The second wall: a `vaultmem/` package already in the vault (a local writer, a copy made
    by hand) is imported by neither the merge drivers git starts in the vault, nor the hook's
    background sync, nor the stop hook's detached child, all started with cwd = the vault."""
    w, marker = world, world["tmp"] / "PWNED"
    _evil(w["root"], marker)
    exclude = w["root"] / ".git/info/exclude"
    exclude.write_text(exclude.read_text() + "/vaultmem/\n/sitecustomize.py\n")
    for round_ in ("foreground", "background"):
        git(w["attacker"], "pull", "--quiet", "origin", "HEAD")
        theirs = _memory_line(w["attacker"], f"theirs-{round_}")
        _push(w["attacker"], f"a line from the other side ({round_})")
        ours = _memory_line(w["root"], f"ours-{round_}")
        if round_ == "foreground":
            res = console(w["root"], w["home"], "sync")
            assert res.returncode == 0, (res.stdout, res.stderr)
        else:
            res = _hook(w, "session-start", payload(w, "SessionStart", source="startup"))
            assert res.returncode == 0, res.stderr
            wait_for(lambda ours=ours: _on_remote(w["bare"], "MEMORY.md", ours))
        memory = (w["root"] / "MEMORY.md").read_text()
        assert ours in memory and theirs in memory, round_  # the index driver merged both
        assert not marker.exists(), (round_, marker.read_text())
    driver = git(w["root"], "config", "merge.vaultmem-index.driver")
    argv = shlex.split(driver)
    assert Path(argv[0]).is_absolute() and argv[1:3] == ["-I", "-c"], driver
    # the stop hook hands the checkpoint to a detached child
    res = _hook(w, "stop", payload(w, "Stop", stop_hook_active=False))
    assert (res.returncode, res.stderr) == (0, ""), res.stderr
    checkpoint = w["root"] / "agents/ella/checkpoint.md"
    wait_for(lambda: checkpoint.exists() and "vaultmem stop hook" in checkpoint.read_text())
    assert not marker.exists()


def test_a_merge_rule_in_a_subfolder_is_refused_and_the_handoff_survives(
    world: dict[str, Path],
) -> None:
    w = world
    honest, home_b = w["tmp"] / "honest", w["tmp"] / "home-honest"
    res = vm("clone", str(w["bare"]), str(honest), "--agent", "lyra", home=home_b)
    assert res.returncode == 0, res.stderr
    shutil.copytree(w["home"] / "keys/chiara", home_b / "keys/chiara")  # chiara approves here
    keys = json.loads(vm("keys", "list", "--json", "--vault", str(honest), home=home_b).stdout)
    for k in keys["keys"]:
        if not k["approved"]:
            res = vm("keys", "approve", k["key_id"], "--reviewer", "chiara", "--vault",
                     str(honest), home=home_b)  # fmt: skip
            assert res.returncode == 0, res.stderr
    handoff = "Rotate the webhook secret before Friday's deploy"
    res = vm("append", handoff, "--type", "handoff", "--to", "ella", "--agent", "lyra",
             "--vault", str(honest), home=home_b)  # fmt: skip
    assert res.returncode == 0, res.stderr
    res = vm("sync", "--vault", str(honest), home=home_b)
    assert res.returncode == 0, (res.stdout, res.stderr)
    # the attacker adds one line in a subfolder: live-context.md would merge as a binary
    git(w["attacker"], "pull", "--quiet", "origin", "HEAD")
    (w["attacker"] / "nexus/.gitattributes").write_text("live-context.md merge=binary\n")
    _push(w["attacker"], "faster merges for the log")
    res = vm("append", "ella's own work on the victim", "--agent", "ella", "--vault",
             str(w["root"]), home=w["home"])  # fmt: skip
    assert res.returncode == 0, res.stderr
    res = console(w["root"], w["home"], "sync")
    assert res.returncode == 8, (res.stdout, res.stderr)
    assert "nexus/.gitattributes" in res.stderr and "merge rule below" in res.stderr
    assert not _merged(w["root"], w["attacker"])
    assert not (w["root"] / "nexus/.gitattributes").exists()
    assert _on_remote(w["bare"], "nexus/live-context.md", handoff)  # not pushed away
    # the attacker takes the rule back (as the message asks): the handoff arrives, verified
    git(w["attacker"], "rm", "--quiet", "nexus/.gitattributes")
    _push(w["attacker"], "undo")
    res = console(w["root"], w["home"], "sync")
    assert res.returncode == 0, (res.stdout, res.stderr)
    live = (w["root"] / "nexus/live-context.md").read_text()
    assert handoff in live and "ella's own work on the victim" in live
    assert _on_remote(w["bare"], "nexus/live-context.md", "ella's own work on the victim")
    inbox = console(w["root"], w["home"], "inbox", "--agent", "ella")
    assert inbox.returncode == 0 and handoff in inbox.stdout, (inbox.stdout, inbox.stderr)
    res = console(w["root"], w["home"], "verify")
    assert res.returncode == 0, (res.stdout, res.stderr)
