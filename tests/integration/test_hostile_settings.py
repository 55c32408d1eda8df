"""`vaultmem.toml` from git stops no machine (issue 35, item 5).

A remote pushes a broken `vaultmem.toml`: `[sync] interval = "0s"` (every command exited 3,
the sync that would pull a fix included), a TOML nesting bomb (RecursionError: every command
exited 1) and `[hooks] timeout = 120` (a hook held a turn 29 s). Through real git: the victim's
`sync`, `verify`, `trust` and hooks go on with the last settings this machine accepted and its
pins, say so once on stderr, and the next sync pulls the fix; other commands name the problem
(exit 3) until then.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests._proc import git, vm

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("git") is None, reason="needs git"),
]

BOMB = "\n[recall]\nmode = " + "[" * 50_000 + "]" * 50_000 + "\n"

CASES = {
    "zero-interval": '\n[sync]\ninterval = "0s"\n',
    "nesting-bomb": BOMB,
    "slow-hooks": "\n[hooks]\ntimeout = 120\n",
    "huge": "\n" + "# padding\n" * 40_000,
}


def _world(tmp_path: Path) -> tuple[Path, Path, Path]:
    home, vault, bare = tmp_path / "home", tmp_path / "victim", tmp_path / "origin.git"
    res = vm("init", str(vault), "--agent", "ella", "--agent", "lyra", "--git", home=home)
    assert res.returncode == 0, res.stderr
    git(tmp_path, "init", "--quiet", "--bare", str(bare))
    git(vault, "remote", "add", "origin", str(bare))
    git(vault, "push", "--quiet", "-u", "origin", "HEAD")
    assert (
        vm("append", "before", "--agent", "ella", "--vault", str(vault), home=home).returncode == 0
    )
    assert vm("sync", "--vault", str(vault), home=home).returncode == 0
    attacker = tmp_path / "attacker"
    git(tmp_path, "clone", "--quiet", str(bare), str(attacker))
    return home, vault, attacker


def _push(attacker: Path, text: str, message: str) -> None:
    (attacker / "vaultmem.toml").write_text(text, encoding="utf-8")
    git(attacker, "commit", "--quiet", "-am", message)
    git(attacker, "push", "--quiet", "origin", "HEAD")


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_broken_vaultmem_toml_from_the_remote_never_blocks_sync_verify_trust_or_hooks(
    tmp_path: Path, case: str
) -> None:
    home, vault, attacker = _world(tmp_path)
    at = ("--vault", str(vault))
    good = (attacker / "vaultmem.toml").read_text(encoding="utf-8")
    _push(attacker, good + CASES[case], "tune settings")

    pulled = vm("sync", *at, home=home)
    assert pulled.returncode in (0, 5), (pulled.stdout, pulled.stderr)
    assert CASES[case][:30] in (vault / "vaultmem.toml").read_text(encoding="utf-8")

    # the commands that must work say so once and go on under the pins
    for args in (("sync",), ("verify",), ("trust",)):
        res = vm(*args, *at, home=home)
        assert res.returncode in (0, 5), (args, res.stdout, res.stderr)
        assert res.stderr.count("going on with the last settings this machine accepted") == 1, (
            args,
            res.stderr,
        )
        assert "Traceback" not in res.stderr
    trust = json.loads(vm("trust", "--json", *at, home=home).stdout)
    assert any(c["path"] == "vaultmem.toml" for c in trust["changes"]), trust
    hook = vm("hook", "prompt", *at, "--agent", "lyra", home=home,
              stdin=json.dumps({"prompt": "anything new?"}), timeout=30)  # fmt: skip
    assert hook.returncode == 0, hook.stderr
    assert "going on with the last settings" in hook.stderr
    assert "before" in hook.stdout  # the hook still delivers what is new
    start = vm("hook", "session-start", *at, "--agent", "lyra", home=home,
               stdin=json.dumps({"session_id": "s1", "source": "startup"}), timeout=30)  # fmt: skip
    assert start.returncode == 0 and "memory not loaded" not in start.stdout, start.stdout
    # any other command names the problem with its exit code (3), never a traceback
    other = vm("log", *at, home=home)
    assert other.returncode == 3, (other.stdout, other.stderr)
    assert "vaultmem.toml" in other.stderr and "Traceback" not in other.stderr

    # the remote pushes the fix; the victim's next sync pulls it and every command works
    git(attacker, "pull", "--quiet", "origin", "HEAD")
    _push(attacker, good, "revert")
    fixed = vm("sync", *at, home=home)
    assert fixed.returncode == 0, (fixed.stdout, fixed.stderr)
    assert (vault / "vaultmem.toml").read_text(encoding="utf-8") == good
    again = vm("log", *at, home=home)
    assert again.returncode == 0 and "before" in again.stdout, again.stderr
    assert "going on with" not in vm("verify", *at, home=home).stderr
