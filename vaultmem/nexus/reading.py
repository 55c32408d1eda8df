"""Reading the live log from its end: the last N, everything since an id or a time, and
following new entries as they are appended. The cost is proportional to what is read, not to
the size of the file."""

from __future__ import annotations

import os
import time as _time
from collections.abc import Iterator
from pathlib import Path

from vaultmem.core import clock
from vaultmem.core.errors import EntryNotFoundError, UsageError
from vaultmem.core.records import evolve
from vaultmem.core.vault import Vault
from vaultmem.nexus.entry import ALL, HEADER_START, ID_RE, Entry, parse_bytes, time_order


def iter_reverse(path: Path, *, chunk: int = 1 << 16) -> Iterator[Entry]:
    """Entries from the newest to the oldest, reading the file backwards in chunks.

    The cost is proportional to how many entries the caller consumes, not to the file size.
    Entries carry byte offsets; their line numbers are 0 (unknown without reading from the top).
    """
    try:
        fh = open(path, "rb")  # noqa: SIM115 - closed in finally
    except FileNotFoundError:
        return
    try:
        size = os.fstat(fh.fileno()).st_size
        pos = size  # file offset where `buf` starts
        buf = b""
        end = size  # the end of the not-yet-consumed region
        while True:
            # the last header start inside buf: either "\n### " or "### " at the file start
            idx = buf.rfind(HEADER_START, 0, end - pos)
            if idx >= 0:
                start = pos + idx + 1
            elif pos == 0 and buf.startswith(b"### "):
                start = 0
            else:
                start = -1
            if start >= 0 and (start > pos or pos == 0):
                block = buf[start - pos : end - pos]
                parsed = parse_bytes(block, base_offset=start, first_line=1)
                for e in reversed(parsed.entries):
                    yield evolve(e, line_start=0, line_end=0)
                end = start
                if start == 0:
                    return
                continue
            if pos == 0:
                return
            step = min(chunk, pos)
            fh.seek(pos - step)
            buf = fh.read(step) + buf[: end - pos]
            pos -= step
            chunk = min(chunk * 2, 1 << 22)
    finally:
        fh.close()


def last_entries(
    path: Path,
    n: int,
    *,
    agent: str | None = None,
    channel: str | None = None,
    type_: str | None = None,
    to: str | None = None,
) -> list[Entry]:
    """The newest `n` matching entries, oldest first by time (`time_order`), read from the end
    of the file: `LOOKBACK` entries past the n-th match are read too, so that entries a sync
    merged out of file order still take their place in time."""
    out: list[Entry] = []
    if n <= 0:
        return out
    past = 0
    for e in iter_reverse(path):
        if len(out) >= n:
            past += 1
            if past > LOOKBACK:
                break
        if matches(e, agent=agent, channel=channel, type_=type_, to=to):
            out.append(e)
    return sorted(out, key=time_order)[-n:]


def matches(
    e: Entry,
    *,
    agent: str | None = None,
    channel: str | None = None,
    type_: str | None = None,
    to: str | None = None,
) -> bool:
    """`to`: entries addressed to that agent (by name or to all); `to="all"`: to all only."""
    return (
        (agent is None or e.agent == agent)
        and (channel is None or e.channel == channel)
        and (type_ is None or e.type == type_)
        and (to is None or to in e.to or (ALL in e.to and e.agent != to))
    )


DEFAULT_TAIL = 20
# entries read beyond the point where a reader from the end could stop: a sync puts one
# machine's new entries after the other's, so the newest by time need not be the last in the file
LOOKBACK = 1000


def log(
    vault: Vault,
    *,
    tail: int | None = None,
    since: str | None = None,
    until: str | None = None,
    agent: str | None = None,
    channel: str | None = None,
    type_: str | None = None,
    to: str | None = None,
) -> list[Entry]:
    """Matching entries, oldest first by time: the newest `tail` (default 20 without `since`),
    those after `since` and those up to `until` (each a point of `clock.parse_point`: an entry
    id, for the entries after it / up to and with it in the file; a time, a date or a
    duration before now, for the entries from / up to then)."""
    if tail is not None and tail < 0:
        raise UsageError("--tail must be 0 or more", "e.g. --tail 20")
    path = vault.live_context
    low = None if since is None else clock.parse_point(since, "--since", ids=ID_RE)
    high = None if until is None else clock.parse_point(until, "--until", ids=ID_RE)
    if low is None and high is None:
        return last_entries(
            path,
            DEFAULT_TAIL if tail is None else tail,
            agent=agent,
            channel=channel,
            type_=type_,
            to=to,
        )
    wanted = DEFAULT_TAIL if tail is None and low is None else tail
    from datetime import datetime  # here: an append imports this module, and needs no dates

    low_time = clock.stamp_ms(low) if isinstance(low, datetime) else None
    high_time = clock.stamp_ms(high) if isinstance(high, datetime) else None
    waiting = isinstance(high, str)  # the --until entry is not reached yet
    reached = False  # the --since entry
    out: list[Entry] = []
    past = 0
    for e in iter_reverse(path):
        if isinstance(low, str) and e.id == low:
            reached = True
            break
        if waiting:
            if e.id != high:
                continue
            waiting = False
        if low_time is not None and e.time < low_time:
            past += 1
            if past > LOOKBACK:
                break
            continue
        if low is None and wanted is not None and len(out) >= wanted:
            past += 1  # enough: read LOOKBACK more, as last_entries does
            if past > LOOKBACK:
                break
        if high_time is not None and e.time > high_time:
            continue
        if matches(e, agent=agent, channel=channel, type_=type_, to=to):
            out.append(e)
    for bound, option, missing in ((high, "--until", waiting), (low, "--since", not reached)):
        if isinstance(bound, str) and missing:
            raise EntryNotFoundError(
                f"no entry {bound!r} in {vault.rel(path)} ({option})",
                "use an id shown by `vaultmem log` (rotated entries are in nexus/archive/), or a time",
            )
    out.sort(key=time_order)
    if wanted is not None:
        out = out[-wanted:] if wanted else []
    return out


def follow(
    vault: Vault,
    *,
    agent: str | None = None,
    channel: str | None = None,
    type_: str | None = None,
    to: str | None = None,
    poll: float = 0.25,
) -> Iterator[list[Entry]]:
    """Yield batches of entries appended from now on. Only whole entries: a block still being
    written is read again on the next poll. If the file shrinks (rotation, an editor), following
    resumes at its new end."""
    path = vault.live_context
    try:
        offset = path.stat().st_size
    except FileNotFoundError:
        offset = 0
    while True:
        _time.sleep(poll)
        try:
            size = path.stat().st_size
        except FileNotFoundError:
            continue
        if size < offset:
            offset = size
            continue
        if size == offset:
            continue
        with open(path, "rb") as fh:
            fh.seek(offset)
            data = fh.read(size - offset)
        parsed = parse_bytes(data, base_offset=offset)
        if parsed.entries:
            offset = parsed.entries[-1].byte_end
            batch = [
                e
                for e in parsed.entries
                if matches(e, agent=agent, channel=channel, type_=type_, to=to)
            ]
            if batch:
                yield [evolve(e, line_start=0, line_end=0) for e in batch]
