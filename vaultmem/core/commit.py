"""Group commit: appends written under a log's lock, made durable by one fsync per batch.

An append writes its entry (and its journal line) under the log's lock without fsync, then
takes a *ticket*: the number of appends written so far, counted in a small state file next to
the lock (`.vaultmem/locks/<log>.commit`). It releases the log's lock and waits until its
ticket is *durable*, under that state file's own lock (the commit lock):

- if the durable count already covers its ticket, another writer's fsync made its bytes
  durable (they were in the files before that writer read the count): it returns;
- else it leads a batch: reads the ticket count (every append written so far), fsyncs the
  files, and records that count as durable.

While a leader fsyncs, the other writers keep writing under the log's lock and queue on the
commit lock; the next leader's one fsync covers all of them. No writer returns before an fsync
that started after its write ended, so an acknowledged entry survives a power cut; a leader
killed mid-batch recorded nothing, and the next waiter leads the batch again. The fsyncs go
through the files' paths, so they cover every byte any process wrote there.

The state file holds two fixed-width slots, each a number written twice (a reader that races
a write sees two different halves and does not trust it): the ticket count at 0 (written under
the log's lock), the durable count at `SLOT` (written under the commit lock). Deleting the file
resets both together, so a durable count never covers tickets it did not see.
"""

from __future__ import annotations

import os
from pathlib import Path

from vaultmem.core.fsio import NOFOLLOW, before_step, ensure_dir, write_error
from vaultmem.core.locking import holding

WIDTH = 20  # digits of one copy of a count
SLOT = 2 * WIDTH  # bytes of one slot: the count twice
TICKETS, DURABLE = 0, SLOT  # offsets of the two slots


def commit_path(lock: Path) -> Path:
    """The commit state (and commit lock) of the log whose lock file is `lock`."""
    return lock.with_name(lock.stem + ".commit")


def open_state(path: Path) -> int:
    """A descriptor of the commit state file, for `take_ticket` and `make_durable` (`fd`): one
    append then opens it once (the caller closes it)."""
    return _open(path)


def _open(path: Path) -> int:
    try:
        try:
            return os.open(path, os.O_RDWR | os.O_CREAT | NOFOLLOW, 0o644)
        except FileNotFoundError:
            ensure_dir(path.parent)
            return os.open(path, os.O_RDWR | os.O_CREAT | NOFOLLOW, 0o644)
    except OSError as exc:
        raise write_error(path, exc) from exc


def _read(fd: int, offset: int) -> int | None:
    """The count in the slot at `offset`: 0 when never written, None when torn or garbled."""
    raw = os.pread(fd, SLOT, offset)
    if not raw.strip(b"\x00"):
        return 0
    first, second = raw[:WIDTH], raw[WIDTH:]
    if len(raw) != SLOT or first != second or not first.isdigit():
        return None
    return int(first)


def _write(fd: int, offset: int, value: int) -> None:
    text = f"{value:0{WIDTH}d}".encode("ascii")
    os.pwrite(fd, text + text, offset)


def take_ticket(path: Path, fd: int | None = None) -> int:
    """Count one more append written (the caller holds the log's lock and has written it)."""
    own = fd is None
    fd = _open(path) if fd is None else fd
    try:
        # a garbled count (a hand edit) restarts from 0; the durable count is reset with it,
        # so it never claims the new tickets
        last = _read(fd, TICKETS)
        if last is None:
            _write(fd, DURABLE, 0)
            last = 0
        _write(fd, TICKETS, last + 1)
        return last + 1
    finally:
        if own:
            os.close(fd)


def make_durable(
    path: Path, ticket: int, files: list[Path], timeout: float, *, what: str, fd: int | None = None
) -> None:
    """Return once append number `ticket` (and every one before it) is fsynced in `files`:
    by another writer's fsync, or by leading the batch (see the module's note). The commit
    lock is taken through the state file's descriptor `fd` (opened here when not given)."""
    own = fd is None
    fd = _open(path) if fd is None else fd
    try:
        done = _read(fd, DURABLE)
        if done is not None and done >= ticket:
            return
        with holding(fd, path, timeout, what=f"{what} commit", note=False):
            done = _read(fd, DURABLE)
            if done is not None and done >= ticket:
                return  # a batch that started after this append's write covered it
            upto = _read(fd, TICKETS)
            # every ticket up to the count read was written before it was counted; a count
            # that does not read back (torn by a concurrent write, or reset) is this append's
            upto = ticket if upto is None or upto < ticket else upto
            before_step()  # the crash tests' hook: a leader killed before its batch's fsync
            for file in files:
                _fsync(file)
            _write(fd, DURABLE, upto)
    finally:
        if own:
            os.close(fd)


def _fsync(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY | NOFOLLOW)
    except FileNotFoundError:
        return  # replaced or removed meanwhile: whoever did it wrote its file durably
    except OSError as exc:
        raise write_error(path, exc) from exc
    try:
        os.fsync(fd)
    except OSError as exc:
        raise write_error(path, exc) from exc
    finally:
        os.close(fd)
