"""Exclusive inter-process locks on sidecar files under `.vaultmem/locks/`, with a timeout.

Locks are taken on a sidecar file, never on a markdown file: an editor that saves by replacing
the file would otherwise silently drop the lock.

On POSIX this calls `fcntl.flock` directly, the same call portalocker makes there. Importing
portalocker costs ~45 ms per process (its `__about__` loads importlib.metadata to find its own
version), and `vaultmem append` runs on every agent turn; the lock semantics are identical.
Elsewhere (Windows) portalocker does the work. This module is the only portalocker importer.

Waiting never polls on POSIX: a free lock is taken at once; a held one is waited for by a
blocking `flock`, woken the moment the holder lets go (a polling loop slept up to 50 ms between
tries, which capped eight writers at ~50 appends/s). In the main thread a one-shot SIGALRM timer
bounds that `flock` (`_block_alarm`); elsewhere, or when the caller has a timer of its own
pending, a helper thread does the blocking `flock` and the caller waits for it with the timeout
(`_block_thread`; a thread start per wait cost ~0.1 ms of CPU, and eight writers wait twice per
append). Either way a timed-out wait never leaves the lock held.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from vaultmem.core.errors import LockTimeoutError
from vaultmem.core.fsio import NOFOLLOW, ensure_dir, write_error

if TYPE_CHECKING:
    from vaultmem.core.vault import Vault

_POLL_START = 0.001
_POLL_MAX = 0.05

HOLDER_WIDTH = 20  # bytes of the pid record at the start of a lock file (space-padded)

if os.name == "posix":
    import fcntl

    def _try_lock(fd: int, shared: bool = False) -> bool:
        try:
            fcntl.flock(fd, (fcntl.LOCK_SH if shared else fcntl.LOCK_EX) | fcntl.LOCK_NB)
        except (BlockingIOError, PermissionError):
            return False
        return True

    def _unlock(fd: int) -> None:
        fcntl.flock(fd, fcntl.LOCK_UN)

    def _block(fd: int, shared: bool, wait: float) -> bool:
        """Wait up to `wait` seconds for the lock, woken by the kernel when it is released."""
        if wait <= 0:
            return False
        if _alarm_usable():
            return _block_alarm(fd, shared, time.monotonic() + wait)
        return _block_thread(fd, shared, wait)

    class _Expired(Exception):
        """Raised by the SIGALRM handler into the blocking `flock` it interrupts."""

    def _alarm_usable() -> bool:
        """SIGALRM can bound the wait: this is the main thread (the only one that runs Python
        signal handlers), the handler in place can be put back (set from Python, or the
        default), and no timer is pending (ours would replace it). Off Linux, also no other
        thread: only Linux sends a process's SIGALRM to its main thread when that one waits.
        (`signal` is imported here, as `threading` is: only a wait needs them.)"""
        import signal
        import threading

        if threading.current_thread() is not threading.main_thread():
            return False
        if not sys.platform.startswith("linux") and threading.active_count() > 1:
            return False
        return signal.getsignal(signal.SIGALRM) is not None and signal.getitimer(
            signal.ITIMER_REAL
        ) == (0.0, 0.0)

    def _block_alarm(fd: int, shared: bool, deadline: float) -> bool:
        """A blocking `flock` that a one-shot timer interrupts at the deadline: no thread.

        The handler raises at most once, and only while `armed`; whether the lock was taken is
        then asked of the kernel (a non-blocking try on the same descriptor succeeds when this
        process holds it), so an alarm that fires just after `flock` returned never leaks the
        lock. The caller's handler is restored; a SIGALRM from elsewhere only means another try.
        """
        import signal

        armed = [True]

        def expire(signum: int, frame: object) -> None:
            if armed[0]:
                armed[0] = False
                raise _Expired

        kind = fcntl.LOCK_SH if shared else fcntl.LOCK_EX
        previous = signal.signal(signal.SIGALRM, expire)
        try:
            while True:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                armed[0] = True
                try:
                    try:
                        signal.setitimer(signal.ITIMER_REAL, left)
                        fcntl.flock(fd, kind)
                        return True
                    finally:
                        armed[0] = False  # from here on the handler never raises
                        signal.setitimer(signal.ITIMER_REAL, 0)
                except _Expired:
                    if _try_lock(fd, shared):  # taken just before the alarm, or free now
                        return True
        finally:
            armed[0] = False
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)  # runs a pending `expire` first (a no-op)
        return _try_lock(fd, shared)

    def _block_thread(fd: int, shared: bool, wait: float) -> bool:
        """The wait outside the main thread: a blocking `flock` in a helper thread, waited for
        with the timeout. A helper whose caller gave up takes the lock when it comes free and
        drops it at once, so a timed-out wait never leaves the lock held."""
        import threading

        # the thread locks through its own descriptor of the same open file: flock locks
        # belong to the open file, so the caller then holds the lock through `fd`
        mine = os.dup(fd)
        done = threading.Event()
        state: dict[str, Any] = {"abandoned": False, "error": None}
        mutex = threading.Lock()

        def take() -> None:
            try:
                fcntl.flock(mine, fcntl.LOCK_SH if shared else fcntl.LOCK_EX)
            except OSError as exc:
                state["error"] = exc
            with mutex:
                if state["abandoned"]:  # the caller timed out: let the next waiter in
                    if state["error"] is None:
                        fcntl.flock(mine, fcntl.LOCK_UN)
                    os.close(mine)
                    return
            done.set()

        threading.Thread(target=take, name="vaultmem-lock-wait", daemon=True).start()
        got = done.wait(wait)
        with mutex:
            if not got and not done.is_set():
                state["abandoned"] = True
                return False
        os.close(mine)
        return state["error"] is None

    def _note_holder(fd: int) -> None:
        # one fixed-width write in place: no truncate (on ext4 a truncate to zero makes the
        # next close start writeback of the file, ~3 ms per append under load)
        os.pwrite(fd, str(os.getpid()).ljust(HOLDER_WIDTH).encode(), 0)

else:  # pragma: no cover - exercised on Windows only

    def _handle(fd: int) -> IO[bytes]:
        return os.fdopen(fd, "r+b", closefd=False)

    def _try_lock(fd: int, shared: bool = False) -> bool:
        import portalocker

        kind = portalocker.LOCK_SH if shared else portalocker.LOCK_EX
        try:
            portalocker.lock(_handle(fd), kind | portalocker.LOCK_NB)
        except portalocker.exceptions.LockException:
            return False
        return True

    def _unlock(fd: int) -> None:
        import portalocker

        portalocker.unlock(_handle(fd))

    def _block(fd: int, shared: bool, wait: float) -> bool:
        """Poll with a growing back-off (portalocker has no blocking wait with a timeout)."""
        deadline = time.monotonic() + wait
        pause = _POLL_START
        while time.monotonic() < deadline:
            time.sleep(min(pause, max(0.0, deadline - time.monotonic())))
            if _try_lock(fd, shared):
                return True
            pause = min(pause * 2, _POLL_MAX)
        return False

    def _note_holder(fd: int) -> None:
        os.lseek(fd, 0, os.SEEK_SET)
        os.ftruncate(fd, 0)
        os.write(fd, str(os.getpid()).encode())


_FLAGS = os.O_RDWR | os.O_CREAT | NOFOLLOW


def _open(path: Path) -> int:
    """A descriptor of the lock file (a raw one: an `io` object costs ~6 system calls more),
    never through a symlink: a link planted in .vaultmem/locks must not be written to."""
    try:
        try:
            return os.open(path, _FLAGS, 0o644)
        except FileNotFoundError:
            ensure_dir(path.parent)
            return os.open(path, _FLAGS, 0o644)
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
    fd: int, path: Path, deadline: float, timeout: float, what: str, *, shared: bool = False
) -> None:
    if _try_lock(fd, shared) or _block(fd, shared, deadline - time.monotonic()):
        return
    holder = _holder(path)
    raise LockTimeoutError(
        f"timed out after {timeout:g}s waiting for the {what} lock ({path})"
        + (f", held by pid {holder}" if holder else ""),
        "another vaultmem process is writing; retry (safe), or raise the timeout",
    )


@contextmanager
def exclusive(
    path: Path, timeout: float, *, what: str, barrier: bool = True, note: bool = True
) -> Iterator[None]:
    """Hold an exclusive lock on `path` (created if missing) or raise LockTimeoutError (exit 6).

    Waits without polling (see the module's note) and never past the timeout, so a stuck
    holder can never hang us. A lock under `.vaultmem/locks/` also holds the sync barrier
    (shared) while it is held, unless `barrier` is False (a lock under which no vault file
    changes: the commit lock). `note`: record the holder's pid in the file (False for a file
    that holds other data).
    """
    deadline = time.monotonic() + timeout
    shared = None
    if barrier and path.parent.name == "locks" and path.name not in _OUTSIDE_BARRIER:
        shared = _open(path.with_name(BARRIER))
    try:
        if shared is not None:
            _wait_for(shared, path.with_name(BARRIER), deadline, timeout, "sync", shared=True)
        with _exclusive(path, deadline, timeout, what, note=note):
            yield
    finally:
        if shared is not None:
            os.close(shared)  # closing the descriptor releases its lock


@contextmanager
def barrier(path: Path, timeout: float) -> Iterator[None]:
    """Hold the sync barrier (`.vaultmem/locks/sync-barrier.lock`) exclusively: no vaultmem
    write runs meanwhile. Only `sync` takes it, and takes no other vaultmem lock inside it."""
    with _exclusive(path, time.monotonic() + timeout, timeout, "sync barrier"):
        yield


@contextmanager
def _exclusive(
    path: Path, deadline: float, timeout: float, what: str, *, note: bool = True
) -> Iterator[None]:
    fd = _open(path)
    try:
        with holding(fd, path, timeout, what=what, deadline=deadline, note=note):
            yield
    finally:
        os.close(fd)


@contextmanager
def holding(
    fd: int,
    path: Path,
    timeout: float,
    *,
    what: str,
    deadline: float | None = None,
    note: bool = True,
) -> Iterator[None]:
    """Hold an exclusive lock through `fd`, a descriptor of `path` the caller has open (and
    closes), or raise LockTimeoutError: `exclusive` without opening the file again, and
    without the sync barrier (for a lock under which no vault file changes)."""
    _wait_for(fd, path, time.monotonic() + timeout if deadline is None else deadline, timeout, what)
    try:
        if note:
            _note_holder(fd)  # who holds it, for the timeout message of the next waiter
        yield
    finally:
        _unlock(fd)


def try_exclusive(path: Path) -> IO[bytes] | None:
    """Take the lock without waiting; return the open handle (release with `release`) or None."""
    fd = _open(path)
    if _try_lock(fd):
        return os.fdopen(fd, "r+b")
    os.close(fd)
    return None


def release(fh: IO[bytes]) -> None:
    try:
        _unlock(fh.fileno())
    finally:
        fh.close()


def _holder(path: Path) -> str | None:
    try:
        with open(path, "rb") as fh:
            text = fh.read(HOLDER_WIDTH).decode("ascii", errors="replace").strip()
    except OSError:
        return None
    return text if text.isdigit() else None
