"""Sudden death, from the crash's side: real `vaultmem` processes SIGKILLed just before each
step that changes a file (a rename, a link or a durable append: VAULTMEM_CRASH_AT=step:N,
runs 1..20), then what a person or an agent does next.

After every kill: `verify` says 0 only when everything landed and otherwise reports the
half-done step (exit 5); the retry of the same command (or `repair`) completes or undoes it;
afterwards `verify` is 0 and the fact exists exactly once, the bank note is marked, the state
section has its `state` entry (issue 22, "Sudden death").
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests._cli import copy_example
from tests._layer3_helpers import make_keys
from vaultmem.nexus import entry

RUNS = 20


class World:
    """A vault and the VAULTMEM_HOME holding its agents' keys, copied fresh for each run."""

    def __init__(self, root: Path, home: Path) -> None:
        self.root, self.home = root, home

    def vm(self, *args: str, crash_at: int | None = None) -> subprocess.CompletedProcess[str]:
        env = {**os.environ, "VAULTMEM_HOME": str(self.home)}
        env.pop("VAULTMEM_CRASH_AT", None)
        if crash_at is not None:
            env["VAULTMEM_CRASH_AT"] = f"step:{crash_at}"
        return subprocess.run(
            [sys.executable, "-m", "vaultmem", *args, "--vault", str(self.root)],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )

    def copy(self, dest: Path) -> World:
        shutil.copytree(self.root, dest / "vault", symlinks=True)
        shutil.copytree(self.home, dest / "home", symlinks=True)
        return World(dest / "vault", dest / "home")


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> World:
    root = tmp_path_factory.mktemp("base")
    home = root / "home"
    os.environ["VAULTMEM_HOME"] = str(home)  # make_keys writes the private keys here
    vault = copy_example(root / "vault")
    make_keys(vault)
    return World(vault, home)


def fact_notes(world: World, text: str) -> list[Path]:
    """The fact notes (not index lines, not bank notes) holding `text`."""
    return [p for p in world.root.rglob("*.md") if text in p.read_text(encoding="utf-8")
            and "memory" in p.parts and p.name not in ("MEMORY.md", "PROFILE.md")]  # fmt: skip


def crash_runs(
    base: World,
    tmp_path: Path,
    setup: Callable[[World], list[str]],
    check: Callable[[World, list[str]], None],
    landed: str | None = None,
) -> int:
    """Run the command of `setup` killed at step 1..RUNS; check the world after each retry.
    Returns how many runs were killed (at least one per step the command has). `landed`: what
    a retry may answer (exit 2) when the killed run had already done everything that counts."""
    killed = 0
    for n in range(1, RUNS + 1):
        world = base.copy(tmp_path / f"run-{n}")
        args = setup(world)
        first = world.vm(*args, crash_at=n)
        if first.returncode == 0:
            assert world.vm("verify").returncode == 0
            check(world, args)
            continue
        assert first.returncode == -9, first.stderr  # SIGKILL, nothing else
        killed += 1
        after = world.vm("verify")
        if after.returncode != 0:
            assert after.returncode == 5 and "half-done" in after.stdout + after.stderr, (
                n, after.stdout, after.stderr,
            )  # fmt: skip
        retry = world.vm(*args)
        done_before = landed is not None and retry.returncode == 2 and landed in retry.stderr
        assert retry.returncode == 0 or done_before, (n, retry.stderr)
        assert world.vm("verify").returncode == 0, n
        check(world, args)
    return killed


def test_remember_killed_at_each_step(base: World, tmp_path: Path) -> None:
    def setup(world: World) -> list[str]:
        return ["remember", "Reviews happen on Fridays", "--name", "Review day", "--type",
                "project"]  # fmt: skip

    def check(world: World, args: list[str]) -> None:
        notes_ = fact_notes(world, "Reviews happen on Fridays")
        assert len(notes_) == 1, notes_
        index = (world.root / "memory" / "MEMORY.md").read_text(encoding="utf-8")
        assert index.count("Reviews happen on Fridays") == 1

    assert crash_runs(base, tmp_path, setup, check) >= 3


def test_promote_approve_killed_at_each_step(base: World, tmp_path: Path) -> None:
    def setup(world: World) -> list[str]:
        res = world.vm("retain", "Chiara wants migrations reviewed before Friday", "--type",
                       "preference", "--agent", "ella", "--json")  # fmt: skip
        assert res.returncode == 0, res.stderr
        return ["promote", "approve", json.loads(res.stdout)["id"], "--reviewer", "chiara"]

    def check(world: World, args: list[str]) -> None:
        made = fact_notes(world, "migrations reviewed before Friday")
        assert len(made) == 1, made
        bank = next((world.root / "agents" / "ella" / "bank").glob("*migrations*.md"))
        assert "memory_id:" in bank.read_text(encoding="utf-8")

    assert crash_runs(base, tmp_path, setup, check, landed="is already approved") >= 4


def test_state_set_killed_at_each_step(base: World, tmp_path: Path) -> None:
    def setup(world: World) -> list[str]:
        return ["state", "set", "Release", "Ships on the 3rd", "--agent", "ella"]

    def check(world: World, args: list[str]) -> None:
        text = (world.root / "nexus" / "project-state.md").read_text(encoding="utf-8")
        assert "## Release" in text and "Ships on the 3rd" in text
        log = world.vm("log", "--channel", "state", "--json")
        entries = json.loads(log.stdout)["entries"]
        assert [e["summary"] for e in entries if "Release" in e["summary"]]

    assert crash_runs(base, tmp_path, setup, check) >= 3


def test_log_rotate_killed_at_each_step_is_finished_by_repair(base: World, tmp_path: Path) -> None:
    """Entries copied to the archive but still in the live log: `repair` finishes the move
    (it exited 5 before, while re-running rotate fixed it without anything saying so)."""
    everything = [e.id for e in entry.read_file(base.root / "nexus" / "live-context.md").entries]
    killed = 0
    for n in range(1, RUNS + 1):
        world = base.copy(tmp_path / f"run-{n}")
        first = world.vm("log", "rotate", "--keep-days", "0", crash_at=n)
        if first.returncode == 0:
            break
        assert first.returncode == -9, first.stderr
        killed += 1
        after = world.vm("verify")
        assert after.returncode == 0 or "half-done" in after.stdout + after.stderr, (
            n,
            after.stdout,
        )
        fixed = world.vm("repair")
        assert fixed.returncode == 0, (n, fixed.stdout, fixed.stderr)
        assert world.vm("verify").returncode == 0, n
        live = [e.id for e in entry.read_file(world.root / "nexus" / "live-context.md").entries]
        archived = [e.id for p in sorted((world.root / "nexus" / "archive").glob("*.md"))
                    for e in entry.read_file(p).entries]  # fmt: skip
        assert not set(live) & set(archived), n  # never in both
        assert sorted(live + archived) == sorted(everything), n  # and none lost
    assert killed >= 2
