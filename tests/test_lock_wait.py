"""The lock wait (`core/locking.py`): in the main thread a blocking `flock` bounded by a one-shot
SIGALRM timer, elsewhere (another thread, a caller's timer pending) a helper thread. Either way
it gives up on time, never leaves the lock held, and leaves the caller's SIGALRM handler and
timer as they were. Plus the per-append shortcuts that must not weaken a check: remembered
`Vault.path` / `Vault.state` names still find a link planted since, and a torn journal line is
still ended before the next one.

flock locks belong to an open file, not to a process: a descriptor opened in the test conflicts
with the code's own the way another process does."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests._layer3_helpers import fresh_vault, make_keys
from vaultmem.core import locking
from vaultmem.core.errors import LockTimeoutError, PathOutsideVaultError
from vaultmem.core.locking import exclusive, lock_path
from vaultmem.core.vault import Vault
from vaultmem.nexus import log

pytestmark = pytest.mark.skipif(os.name != "posix", reason="flock and SIGALRM")

SHORT = 0.3  # seconds

HOLDER = r"""
import fcntl, sys, time
fh = open(sys.argv[1], "a+b")
fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
print("locked", flush=True)
time.sleep(float(sys.argv[2])) if len(sys.argv) > 2 else sys.stdin.readline()
"""


@pytest.fixture
def lock(tmp_path: Path) -> Path:
    path = tmp_path / "locks" / "live-context.lock"
    path.parent.mkdir()
    return path


@pytest.fixture
def held(lock: Path) -> Iterator[Path]:
    """`lock`, held by another process until the test ends."""
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(lock)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
    try:
        yield lock
    finally:
        assert holder.stdin is not None
        holder.stdin.close()  # the holder exits, its lock goes
        holder.wait()


def _free(path: Path) -> bool:
    """Whether nobody holds the lock (taken and dropped again through a fresh descriptor)."""
    fd = os.open(path, os.O_RDWR)
    try:
        if not locking._try_lock(fd):
            return False
        locking._unlock(fd)
        return True
    finally:
        os.close(fd)


def _times_out(path: Path) -> None:
    with (
        pytest.raises(LockTimeoutError, match=r"timed out after 0\.3s"),
        exclusive(path, SHORT, what="log", barrier=False),
    ):
        pass


def _alarm_state() -> tuple[Any, tuple[float, float]]:
    return signal.getsignal(signal.SIGALRM), signal.getitimer(signal.ITIMER_REAL)


def test_the_main_thread_waits_without_a_thread(
    held: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No helper thread is started, the wait gives up on time, and the default handler and
    the absence of a timer are as they were."""
    assert locking._alarm_usable()
    before = _alarm_state()
    monkeypatch.setattr(locking, "_block_thread", None)  # calling it would fail the test
    start = time.monotonic()
    _times_out(held)
    assert SHORT <= time.monotonic() - start < SHORT + 2
    assert _alarm_state() == before


def test_a_wait_that_timed_out_in_the_main_thread_leaves_the_lock_free(lock: Path) -> None:
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(lock), "1.0"], stdout=subprocess.PIPE, text=True
    )
    assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
    _times_out(lock)
    assert holder.wait() == 0
    assert _free(lock)
    with exclusive(lock, 5, what="log", barrier=False):  # and the next writer gets it at once
        assert lock.read_bytes()[:20].strip() == str(os.getpid()).encode()


def test_the_main_thread_is_woken_when_the_holder_lets_go(lock: Path) -> None:
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(lock), "0.3"], stdout=subprocess.PIPE, text=True
    )
    assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
    before = _alarm_state()
    start = time.monotonic()
    with exclusive(lock, 30, what="log", barrier=False):
        waited = time.monotonic() - start
        assert _alarm_state() == before  # no timer left running while the lock is held
    assert waited < 10
    holder.wait()


def test_the_callers_handler_is_restored(held: Path) -> None:
    seen: list[int] = []

    def mine(signum: int, frame: object) -> None:
        seen.append(signum)

    previous = signal.signal(signal.SIGALRM, mine)
    try:
        _times_out(held)
        assert signal.getsignal(signal.SIGALRM) is mine
        assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
        signal.setitimer(signal.ITIMER_REAL, 0.01)  # the caller's own alarms still reach it
        deadline = time.monotonic() + 5
        while not seen and time.monotonic() < deadline:
            time.sleep(0.01)
        assert seen == [signal.SIGALRM]  # ours never reached it, and never fired late
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def test_a_callers_pending_timer_is_left_alone(held: Path) -> None:
    """With a timer of the caller's pending, the wait takes the helper thread: the timer still
    runs (and fires into the caller's handler), the handler is untouched."""
    seen: list[int] = []
    previous = signal.signal(signal.SIGALRM, lambda signum, frame: seen.append(signum))
    try:
        signal.setitimer(signal.ITIMER_REAL, 30)
        assert not locking._alarm_usable()
        _times_out(held)
        left, _ = signal.getitimer(signal.ITIMER_REAL)
        assert 25 < left < 30
        assert not seen
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def test_a_wait_in_another_thread_times_out_and_leaves_the_lock_free(lock: Path) -> None:
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(lock), "1.0"], stdout=subprocess.PIPE, text=True
    )
    assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
    outcome: list[object] = []

    def wait() -> None:
        assert not locking._alarm_usable()
        try:
            with exclusive(lock, SHORT, what="log", barrier=False):
                outcome.append("got it")
        except LockTimeoutError as exc:
            outcome.append(exc)

    worker = threading.Thread(target=wait)
    worker.start()
    worker.join(10)
    assert len(outcome) == 1 and isinstance(outcome[0], LockTimeoutError)
    assert holder.wait() == 0
    deadline = time.monotonic() + 5  # the abandoned helper takes the lock and drops it
    while not _free(lock) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert _free(lock)


def test_an_alarm_just_after_the_lock_was_taken_does_not_leak_it(
    lock: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The race the alarm wait must survive: the timer fires after `flock` took the lock but
    before the wait returned. The kernel is asked, and the caller holds the lock (not lost)."""
    real = locking.fcntl

    class Late:
        LOCK_EX, LOCK_SH, LOCK_NB, LOCK_UN = real.LOCK_EX, real.LOCK_SH, real.LOCK_NB, real.LOCK_UN

        @staticmethod
        def flock(fd: int, kind: int) -> None:
            real.flock(fd, kind)
            if not kind & (real.LOCK_NB | real.LOCK_UN):
                raise locking._Expired  # the handler, run right after the call returned

    monkeypatch.setattr(locking, "fcntl", Late)
    fd = os.open(lock, os.O_RDWR | os.O_CREAT)
    try:
        assert locking._block_alarm(fd, False, time.monotonic() + 5)
        assert not _free(lock)  # held through `fd`
        locking._unlock(fd)
    finally:
        os.close(fd)
    assert _free(lock)
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)


def test_a_stray_sigalrm_does_not_end_the_wait_early(lock: Path) -> None:
    """A SIGALRM from elsewhere before the deadline is one more try, not a timeout."""
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(lock), "0.6"], stdout=subprocess.PIPE, text=True
    )
    assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
    kicker = threading.Timer(0.1, os.kill, (os.getpid(), signal.SIGALRM))
    kicker.start()
    try:
        fd = os.open(lock, os.O_RDWR)
        try:
            assert locking._block_alarm(fd, False, time.monotonic() + 20)
            locking._unlock(fd)
        finally:
            os.close(fd)
    finally:
        kicker.join()
        holder.wait()


# --- the per-append shortcuts keep their checks --------------------------------------------


@pytest.fixture
def v(tmp_path: Path) -> Vault:
    return make_keys(fresh_vault(tmp_path), "ella")


def test_a_state_folder_turned_into_a_link_is_refused_on_the_next_call(
    v: Vault, tmp_path: Path
) -> None:
    log.append(v, "ella", "before")  # every state path of an append asked for once
    locks = v.root / ".vaultmem" / "locks"
    elsewhere = tmp_path / "elsewhere"
    locks.rename(elsewhere)
    locks.symlink_to(elsewhere)
    with pytest.raises(PathOutsideVaultError, match="is a symlink"):
        lock_path(v, "live-context")
    with pytest.raises(PathOutsideVaultError):
        log.append(v, "ella", "through the link")
    assert not any(b"through the link" in p.read_bytes() for p in elsewhere.iterdir())


def test_a_vault_folder_turned_into_a_link_out_is_refused_on_the_next_call(
    v: Vault, tmp_path: Path
) -> None:
    assert v.path("nexus/live-context.md") == v.root / "nexus/live-context.md"
    nexus = v.root / "nexus"
    outside = tmp_path / "outside"
    nexus.rename(outside)
    nexus.symlink_to(outside)
    with pytest.raises(PathOutsideVaultError, match="leads outside the vault"):
        v.path("nexus/live-context.md")
    inside = v.root / "nexus-real"
    nexus.unlink()
    outside.rename(inside)
    nexus.symlink_to(inside)  # a link that stays inside the vault is fine, as before
    assert v.path("nexus/live-context.md") == v.root / "nexus/live-context.md"


def test_a_torn_journal_line_is_ended_before_the_next(v: Vault) -> None:
    log.append(v, "ella", "first")
    journal = log.journal_path(v, "live")
    with journal.open("ab") as fh:
        fh.write(b'{"seal":"torn')  # a power cut in the middle of a line
    log.append(v, "ella", "second")
    assert journal.read_bytes().split(b"\n")[-3:-1][0] == b'{"seal":"torn'
    assert [e.summary for e in log.read_journal(v, "live")] == ["first", "second"]


def test_a_shorter_heads_cache_is_cut_to_its_length(v: Vault) -> None:
    log.append(v, "ella", "one")
    heads = log.heads_path(v, "live")
    with heads.open("ab") as fh:
        fh.write(b" " * 500)  # longer than what the next append writes
    log.append(v, "ella", "two")
    assert not heads.read_bytes().endswith(b" ")
    last = log.read_journal(v, "live")[-1]
    cached = log._load_heads(v, "live", log.file_stamp(v.live_context))
    assert cached is not None and cached[log.chain_of(last.id)] == [2, last.hash]
