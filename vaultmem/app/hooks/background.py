"""Work a hook hands to a detached process: the turn never waits for it.

- `detach(event, args, payload)`: `hook stop` and `hook pre-compact` (the checkpoint from the
  transcript's tail) run after the runtime has its answer. The command line has what setup
  writes (`--vault`, `--agent`); the payload goes to the child through a file under
  `.vaultmem/spool/` that is unlinked as soon as the child has it open, and the child is
  `python -m vaultmem.app.hooks.detached EVENT --vault V --agent A` (started as `core/spawn`
  starts every vaultmem process: isolated, outside the vault), which runs the hook
  in-line (`app.hooks.run`) with that file as its stdin. Decided with `os` alone, before
  vaultmem loads, so the hook the runtime waits for costs about one Python start-up.
- `start_sync(vault)`: on a vault in a git repository with a remote, a detached
  `python -m vaultmem sync --vault ROOT` (by `core/spawn`, like the hook's child; stdin and stdout to /dev/null, stderr appended to
  `.vaultmem/sync/background.log`, a new session, never waited for), at most once per
  `[sync] interval` (the stamp `.vaultmem/sync/started`, its mtime on the wall clock) and
  never while a sync holds `.vaultmem/locks/sync.lock`. The session-start and stop hooks call
  it, and so may anything else that writes (it returns at once).
"""

# os.path, not pathlib, in the part that runs before vaultmem loads (see app/hooks/quick.py)
# ruff: noqa: PTH100, PTH103, PTH108, PTH110, PTH111, PTH112, PTH113, PTH114, PTH116, PTH117, PTH118, PTH120

from __future__ import annotations

import contextlib
import os
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from vaultmem.core.vault import Vault

DETACHED = ("stop", "pre-compact")  # the events whose work can wait for the turn to end
SYNC_DIR = "sync"
SYNC_STAMP = "started"
SYNC_LOG = "background.log"
LOG_MAX_BYTES = 1 << 20


# --- the detached hook ------------------------------------------------------------------------


def detach(event: str, args: list[str], payload: str) -> bool:
    """Hand `hook EVENT ARGS` with `payload` to a detached child; False when this cannot be
    done safely (then the hook runs in-line, as before). `args` must be exactly what setup
    writes: `--vault V --agent A` (either order, `=` or not), nothing else."""
    if event not in DETACHED:
        return False
    from vaultmem.app.hooks.quick import _options

    opts = _options(args)
    if opts is None or not _worth_it(payload):
        return False
    root = os.path.abspath(os.path.expanduser(opts["vault"]))
    if not os.path.isfile(os.path.join(root, "vaultmem.toml")):
        return False
    from vaultmem.core.names import AGENT_NAME_RE

    agent = opts["agent"]
    if not AGENT_NAME_RE.fullmatch(agent) or not os.path.isdir(os.path.join(root, "agents", agent)):
        return False  # an unknown agent: the hook fails here, where the runtime shows it
    spool = os.path.join(root, ".vaultmem", "spool")
    try:
        if os.path.islink(os.path.join(root, ".vaultmem")) or os.path.islink(spool):
            return False  # state never follows a link out of the vault
        os.makedirs(spool, mode=0o700, exist_ok=True)
        path = os.path.join(spool, f"{event}-{os.getpid()}-{time.monotonic_ns()}.json")
        fd = os.open(
            path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600
        )
        try:
            os.write(fd, payload.encode("utf-8", "replace"))
        finally:
            os.close(fd)
        stdin = os.open(path, os.O_RDONLY)
    except OSError:
        return False
    from vaultmem.core.spawn import detached, python_argv

    try:
        argv = python_argv(
            "vaultmem.app.hooks.detached", event, "--vault", root, "--agent", agent, vault=root
        )
        return detached(argv, stdin=stdin)
    finally:
        os.close(stdin)
        with contextlib.suppress(OSError):
            os.unlink(path)  # the child holds it open; nothing is left behind


def _worth_it(payload: str) -> bool:
    """A payload with a transcript to read: the work worth moving off the turn. Anything else
    (empty, malformed, no transcript) is quick and reports its problem in-line."""
    import json

    try:
        data = json.loads(payload)
    except (ValueError, RecursionError):  # RecursionError: '[' * 5000
        return False
    path = data.get("transcript_path") if isinstance(data, dict) else None
    if not isinstance(path, str):
        return False
    path = os.path.expanduser(path)
    # absolute only: the child starts outside the vault (core/spawn.WORKDIR), not in this folder
    return os.path.isabs(path) and os.path.isfile(path)


# --- the background sync ----------------------------------------------------------------------


def _git_remote(root: str) -> bool:
    """Is `root` inside a git repository that has a remote? Read from `.git/config`, no git
    process (a worktree's `.git` file, or anything unusual: no)."""
    here = root
    while True:
        dot = os.path.join(here, ".git")
        if os.path.isdir(dot):
            try:
                with open(os.path.join(dot, "config"), encoding="utf-8", errors="replace") as fh:
                    return '[remote "' in fh.read(1 << 20)
            except OSError:
                return False
        if os.path.exists(dot):
            return False
        parent = os.path.dirname(here)
        if parent == here:
            return False
        here = parent


def sync_due(vault: Vault) -> bool:
    """Would `start_sync` start one now (a git vault with a remote, the interval passed since
    the last start, no sync running)?"""
    from vaultmem.core.clock import parse_duration
    from vaultmem.core.errors import VaultmemError

    try:
        interval = parse_duration(vault.config.sync.interval, "[sync] interval", allow_never=True)
    except VaultmemError:
        return False
    if interval is None or not _git_remote(str(vault.root)):
        return False
    try:
        stamp = vault.state(SYNC_DIR, SYNC_STAMP)
    except VaultmemError:
        return False
    from vaultmem.core.fsio import fs_now_ns

    try:  # by the files' clock: a process clock ahead of it would call a fresh stamp old
        age = (fs_now_ns(stamp.parent) - os.stat(stamp).st_mtime_ns) / 1e9
    except OSError:
        age = None
    if age is not None and 0 <= age < interval.total_seconds():
        return False
    from vaultmem.core.locking import lock_path, release, try_exclusive

    try:
        held = try_exclusive(lock_path(vault, "sync"))
    except (OSError, VaultmemError):
        return False
    if held is None:
        return False  # a sync is running on this machine
    release(held)
    return True


def start_sync(vault: Vault) -> bool:
    """Start a detached `vaultmem sync` of this vault when one is due (see `sync_due`); True
    when one was started. Never raises, never waits."""
    from vaultmem.core.errors import VaultmemError

    try:
        if not sync_due(vault):
            return False
        stamp = vault.state(SYNC_DIR, SYNC_STAMP)
        log = vault.state(SYNC_DIR, SYNC_LOG)
        stamp.parent.mkdir(parents=True, exist_ok=True)
        stamp.touch()
        os.utime(stamp)  # the stamp first: a second hook in the same instant starts nothing
        if log.exists() and log.stat().st_size > LOG_MAX_BYTES:
            os.replace(log, log.with_name(SYNC_LOG + ".1"))
        err = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    except (OSError, VaultmemError):
        return False
    from vaultmem.core.spawn import detached, python_argv

    try:
        root = str(vault.root)
        return detached(python_argv("vaultmem", "sync", "--vault", root, vault=root), stderr=err)
    finally:
        os.close(err)
