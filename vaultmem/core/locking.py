"""Exclusive inter-process locks on sidecar files under `.vaultmem/locks/`, with a timeout.

Locks are taken on a sidecar file, never on a markdown file: an editor that saves by replacing
the file would otherwise silently drop the lock.

On POSIX this calls `fcntl.flock` directly, the same call portalocker makes there. Importing
portalocker costs ~45 ms per process (its `__about__` loads importlib.metadata to find its own
version), and `vaultmem append` runs on every agent turn; the lock semantics are identical.
Elsewhere (Windows) portalocker does the work. This module is the only portalocker importer.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, TYPE_CHECKING

from vaultmem.core.errors import LockTimeoutError
from vaultmem.core.fsio import NOFOLLOW, ensure_dir, write_error

if TYPE_CHECKING:
    from vaultmem.core.vault import Vault

_POLL_START = 0.001
_POLL_MAX = 0.05

if os.name == "posix":
    import fcntl

    def _try_lock(fh: IO[bytes], shared: bool = False) -> bool:
        try:
            fcntl.flock(fh.fileno(), (fcntl.LOCK_SH if shared else fcntl.LOCK_EX) | fcntl.LOCK_NB)
        except (BlockingIOError, PermissionError):
            return False
        return True

    def _unlock(fh: IO[bytes]) -> None:
        fcntl.flock(fh.fileno(), fcntl.LOCK_UN)

else:  # pragma: no cover - exercised on Windows only

    def _try_lock(fh: IO[bytes], shared: bool = False) -> bool:
        import portalocker

        kind = portalocker.LOCK_SH if shared else portalocker.LOCK_EX
        try:
            portalocker.lock(fh, kind | portalocker.LOCK_NB)
        except portalocker.exceptions.LockException:
            return False
        return True

    def _unlock(fh: IO[bytes]) -> None:
        import portalocker

        portalocker.unlock(fh)


def _open(path: Path) -> IO[bytes]:
    try:
        ensure_dir(path.parent)
        # never through a symlink: a link planted in .vaultmem/locks must not be truncated
        fd = os.open(path, os.O_RDWR | os.O_CREAT | NOFOLLOW, 0o644)
        return os.fdopen(fd, "r+b")
    except OSError as exc:
        raise write_error(path, exc) from exc


def lock_path(vault: Vault, name: str) -> Path:
    """The sidecar lock file `.vaultmem/locks/<name>.lock` (checked by `Vault.state`)."""
    return vault.state("locks", f"{name}.lock")


# The sync barrier: every vaultmem write lock is also a shared lock on this file, and `sync`
# takes it exclusively for the short window in which it commits the working tree and moves it
# to a merge result. A writer's read-modify-write therefore happens wholly before that window
# (and is committed) or wholly after it (on top of the merged files): it waits, it never loses.
BARRIER = "sync-barrier.lock"
_OUTSIDE_BARRIER = (BARRIER, "sync.lock")


def _wait_for(
    fh: IO[bytes], path: Path, deadline: float, timeout: float, what: str, *, shared: bool = False
) -> None:
    pause = _POLL_START
    while not _try_lock(fh, shared):
        if time.monotonic() >= deadline:
            holder = _holder(path)
            raise LockTimeoutError(
                f"timed out after {timeout:g}s waiting for the {what} lock ({path})"
                + (f", held by pid {holder}" if holder else ""),
                "another vaultmem process is writing; retry (safe), or raise the timeout",
            )
        time.sleep(pause)
        pause = min(pause * 2, _POLL_MAX)


@contextmanager
def exclusive(path: Path, timeout: float, *, what: str) -> Iterator[None]:
    """Hold an exclusive lock on `path` (created if missing) or raise LockTimeoutError (exit 6).

    Polls with a growing back-off instead of blocking, so a stuck holder can never hang us.
    A lock under `.vaultmem/locks/` also holds the sync barrier (shared) while it is held.
    """
    deadline = time.monotonic() + timeout
    barrier = None
    if path.parent.name == "locks" and path.name not in _OUTSIDE_BARRIER:
        barrier = _open(path.with_name(BARRIER))
    try:
        if barrier is not None:
            _wait_for(barrier, path.with_name(BARRIER), deadline, timeout, "sync", shared=True)
        with _exclusive(path, deadline, timeout, what):
            yield
    finally:
        if barrier is not None:
            barrier.close()  # closing the descriptor releases its lock


@contextmanager
def barrier(path: Path, timeout: float) -> Iterator[None]:
    """Hold the sync barrier (`.vaultmem/locks/sync-barrier.lock`) exclusively: no vaultmem
    write runs meanwhile. Only `sync` takes it, and takes no other vaultmem lock inside it."""
    with _exclusive(path, time.monotonic() + timeout, timeout, "sync barrier"):
        yield


@contextmanager
def _exclusive(path: Path, deadline: float, timeout: float, what: str) -> Iterator[None]:
    fh = _open(path)
    try:
        _wait_for(fh, path, deadline, timeout, what)
        try:
            # who holds it, for the timeout message of the next waiter
            fh.seek(0)
            fh.truncate()
            fh.write(str(os.getpid()).encode())
            fh.flush()
            yield
        finally:
            _unlock(fh)
    finally:
        fh.close()


def try_exclusive(path: Path) -> IO[bytes] | None:
    """Take the lock without waiting; return the open handle (release with `release`) or None."""
    fh = _open(path)
    if _try_lock(fh):
        return fh
    fh.close()
    return None


def release(fh: IO[bytes]) -> None:
    try:
        _unlock(fh)
    finally:
        fh.close()


def _holder(path: Path) -> str | None:
    try:
        text = path.read_text(encoding="ascii", errors="replace").strip()
    except OSError:
        return None
    return text if text.isdigit() else None
