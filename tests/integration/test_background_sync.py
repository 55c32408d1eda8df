"""Sync without anyone typing it: the runtime hooks start a background `vaultmem sync`.

A vault made with `init --git`, a real bare repository as its remote. A hook call on that
machine (session start, or a turn's Stop) makes an entry appended there reach the bare
repository, and nobody runs `vaultmem sync`. The sync is rate-limited (`[sync] interval`), never
starts while one runs, never on a vault without a remote, and never keeps the hook waiting.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from tests._proc import git, vm

pytestmark = pytest.mark.slow

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def on_remote(bare: Path, text: str) -> bool:
    try:
        return text in git(bare, "show", "HEAD:nexus/live-context.md")
    except subprocess.CalledProcessError:
        return False


def wait_for(check: Any, seconds: float = 60.0) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, "timed out waiting for the background sync"
        time.sleep(0.1)


@pytest.fixture
def machine(tmp_path: Path) -> dict[str, Path]:
    root, home, bare = tmp_path / "a", tmp_path / "home-a", tmp_path / "origin.git"
    res = vm("init", str(root), "--agent", "ella", "--agent", "lyra", "--reviewer", "chiara",
             "--git", home=home)  # fmt: skip
    assert res.returncode == 0, res.stderr
    git(tmp_path, "init", "--quiet", "--bare", str(bare))
    git(root, "remote", "add", "origin", str(bare))
    git(root, "push", "--quiet", "-u", "origin", "HEAD")
    return {"root": root, "home": home, "bare": bare, "tmp": tmp_path}


def payload(m: dict[str, Path], event: str, **extra: Any) -> str:
    # where Claude Code keeps it (~/.claude/projects/), one of the folders hooks read from
    transcript = Path(os.environ["HOME"]) / ".claude" / "projects" / "a" / "session.jsonl"
    if not transcript.exists():
        transcript.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(FIXTURES / "transcripts" / "claude-code-session.jsonl", transcript)
    return json.dumps(
        {
            "session_id": "abc123",
            "transcript_path": str(transcript),
            "cwd": str(m["root"]),
            "hook_event_name": event,
            **extra,
        }
    )


def hook(m: dict[str, Path], event: str, data: str) -> subprocess.CompletedProcess[str]:
    return vm("hook", event, "--vault", str(m["root"]), "--agent", "ella", home=m["home"],
              stdin=data)  # fmt: skip


def test_a_hook_call_brings_an_entry_to_the_remote(machine: dict[str, Path]) -> None:
    m = machine
    res = vm("append", "Webhook retries are idempotent", "--type", "fix", "--vault",
             str(m["root"]), "--agent", "ella", home=m["home"])  # fmt: skip
    assert res.returncode == 0, res.stderr
    assert not on_remote(m["bare"], "Webhook retries are idempotent")
    started = time.monotonic()
    proc = hook(m, "session-start", payload(m, "SessionStart", source="startup"))
    took = time.monotonic() - started
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    assert json.loads(proc.stdout)["hookSpecificOutput"]["additionalContext"]
    wait_for(lambda: on_remote(m["bare"], "Webhook retries are idempotent"))
    assert took < 10  # the hook never waited for the sync
    state = m["root"] / ".vaultmem" / "sync"
    assert (state / "started").exists()
    # a second hook within the interval starts nothing: the stamp is not touched
    stamp = (state / "started").stat().st_mtime_ns
    res = vm("append", "Refunds too", "--type", "fix", "--vault", str(m["root"]), "--agent",
             "ella", home=m["home"])  # fmt: skip
    assert hook(m, "session-start", payload(m, "SessionStart", source="startup")).returncode == 0
    time.sleep(1.0)
    assert (state / "started").stat().st_mtime_ns == stamp
    assert not on_remote(m["bare"], "Refunds too")


def test_stop_syncs_after_the_turn(machine: dict[str, Path]) -> None:
    """The turn's Stop: the checkpoint and then the sync, both after the hook returned."""
    m = machine
    res = vm("append", "Checkout validates cards", "--type", "fix", "--vault", str(m["root"]),
             "--agent", "ella", home=m["home"])  # fmt: skip
    assert res.returncode == 0, res.stderr
    proc = hook(m, "stop", payload(m, "Stop", stop_hook_active=False))
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "", "")
    wait_for(lambda: on_remote(m["bare"], "Checkout validates cards"))
    cp = git(m["bare"], "show", "HEAD:agents/ella/checkpoint.md")
    assert "Written by the vaultmem stop hook" in cp  # the checkpoint went with it


def test_no_sync_while_one_runs_never_without_a_remote_or_with_never(
    machine: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    from vaultmem.app.hooks.background import start_sync, sync_due
    from vaultmem.core.locking import lock_path, release, try_exclusive
    from vaultmem.core.vault import Vault

    monkeypatch.setenv("VAULTMEM_HOME", str(machine["home"]))
    vault = Vault.open(machine["root"])
    assert sync_due(vault)
    held = try_exclusive(lock_path(vault, "sync"))
    assert held is not None
    try:
        assert not sync_due(vault) and not start_sync(vault)  # a sync is running here
    finally:
        release(held)
    toml = machine["root"] / "vaultmem.toml"
    toml.write_text(toml.read_text() + '\n[sync]\ninterval = "never"\n')
    assert not sync_due(Vault.open(machine["root"]))
    git(machine["root"], "remote", "remove", "origin")
    toml.write_text(toml.read_text().replace('interval = "never"', 'interval = "1s"'))
    assert not sync_due(Vault.open(machine["root"]))  # no remote: nothing to sync with
    assert not (machine["root"] / ".vaultmem" / "sync" / "started").exists()


def test_an_addressed_entry_leaves_the_machine_without_a_later_hook(
    machine: dict[str, Path],
) -> None:
    """Issue 37: a handoff written in a one-shot session, with no hook after it, reaches the
    remote soon; a plain entry waits for the next hook (the interval and lock still hold)."""
    m = machine
    root = str(m["root"])
    res = vm("append", "Webhook retries are idempotent", "--type", "fix", "--vault", root,
             "--agent", "ella", home=m["home"])  # fmt: skip
    assert res.returncode == 0, res.stderr
    assert not (m["root"] / ".vaultmem" / "sync" / "started").exists()  # no sync for a note
    res = vm("append", "Refunds need a reason code", "--type", "handoff", "--to", "lyra",
             "--vault", root, "--agent", "ella", home=m["home"])  # fmt: skip
    assert res.returncode == 0, res.stderr
    wait_for(lambda: on_remote(m["bare"], "Refunds need a reason code"))
    assert on_remote(m["bare"], "Webhook retries are idempotent")  # what came before went too
