"""Group commit (`core/commit.py`) and the lock wait it relies on (`core/locking.py`): tickets,
the durable count, and a wait that gives up on time without leaving the lock taken.

flock locks belong to an open file, not to a process, so a handle opened in the test conflicts
with the code's own the way another process does."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests._layer3_helpers import fresh_vault, make_keys
from vaultmem.core import commit
from vaultmem.core.errors import LockTimeoutError
from vaultmem.core.locking import exclusive, lock_path, release, try_exclusive
from vaultmem.nexus import log

SHORT = 0.3  # seconds


def _slots(path: Path) -> tuple[int | None, int | None]:
    fd = os.open(path, os.O_RDONLY)
    try:
        return commit._read(fd, commit.TICKETS), commit._read(fd, commit.DURABLE)
    finally:
        os.close(fd)


def test_each_append_takes_a_ticket_and_returns_once_it_is_durable(tmp_path: Path) -> None:
    v = make_keys(fresh_vault(tmp_path), "ella")
    for i in range(3):
        log.append(v, "ella", f"entry {i}")
    state = commit.commit_path(log.lock_for(v, "live"))
    assert state.name == "live-context.commit"
    assert _slots(state) == (3, 3)


def test_a_covered_ticket_returns_without_the_commit_lock(tmp_path: Path) -> None:
    """A writer whose append another writer's fsync already covered does not wait for the
    commit lock; one that is not covered waits for it, and no longer than the timeout."""
    state = tmp_path / "locks" / "live-context.commit"
    files = [tmp_path / "log.md"]
    files[0].write_text("x\n")
    assert commit.take_ticket(state) == 1
    commit.make_durable(state, 1, files, SHORT, what="log")
    assert commit.take_ticket(state) == 2
    held = try_exclusive(state)  # a leader fsyncing a batch
    assert held is not None
    try:
        commit.make_durable(state, 1, files, SHORT, what="log")  # covered: no wait
        with pytest.raises(LockTimeoutError, match="log commit lock"):
            commit.make_durable(state, 2, files, SHORT, what="log")
    finally:
        release(held)
    commit.make_durable(state, 2, files, SHORT, what="log")
    assert _slots(state) == (2, 2)


def test_a_garbled_count_restarts_both_counts(tmp_path: Path) -> None:
    """A hand-edited state file never makes a new ticket look durable: the durable count is
    reset with the ticket count."""
    state = tmp_path / "live-context.commit"
    state.write_bytes(b"hello" + b"9" * 75)
    assert commit.take_ticket(state) == 1
    assert _slots(state) == (1, 0)
    state.unlink()  # deleted: both start again together
    assert commit.take_ticket(state) == 1
    assert _slots(state) == (1, 0)


HOLDER = r"""
import fcntl, sys, time
fh = open(sys.argv[1], "a+b")
fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
print("locked", flush=True)
sys.stdin.readline()
"""


@pytest.mark.skipif(os.name != "posix", reason="flock")
def test_a_wait_that_timed_out_leaves_the_lock_free(tmp_path: Path) -> None:
    """The blocking wait runs in a helper thread; when its caller gives up, the thread takes
    the lock once the holder lets go and drops it at once: the next writer gets it."""
    v = make_keys(fresh_vault(tmp_path), "ella")
    path = lock_path(v, "live-context")
    path.parent.mkdir(parents=True, exist_ok=True)
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        with (
            pytest.raises(LockTimeoutError, match=r"timed out after 0\.3s"),
            exclusive(path, SHORT, what="log"),
        ):
            pass
    finally:
        assert holder.stdin is not None
        holder.stdin.close()  # the holder exits, its lock goes
        holder.wait()
    with exclusive(path, 30, what="log"):  # the abandoned wait did not keep it
        assert path.read_bytes()[:20].strip() == str(os.getpid()).encode()
