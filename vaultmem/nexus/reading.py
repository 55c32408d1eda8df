"""Reading the live log from its end: the last N, everything since an id or a time, and
following new entries as they are appended. The cost is proportional to what is read, not to
the size of the file."""

from __future__ import annotations

import os
import re
import time as _time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

from vaultmem.core.errors import EntryNotFoundError, UsageError
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
                    yield replace(e, line_start=0, line_end=0)
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
_TIME_RE = re.compile(r"\d{4}-\d\d(?:-\d\d(?:[T ]\d\d(?::\d\d(?::\d\d(?:\.\d{1,6})?)?)?)?)?Z?")


def log(
    vault: Vault,
    *,
    tail: int | None = None,
    since: str | None = None,
    agent: str | None = None,
    channel: str | None = None,
    type_: str | None = None,
    to: str | None = None,
) -> list[Entry]:
    """Matching entries, oldest first by time: the newest `tail` (default 20), or all after
    `since` (an entry id: those after it in the file; a time: those from then on)."""
    if tail is not None and tail < 0:
        raise UsageError("--tail must be 0 or more", "e.g. --tail 20")
    path = vault.live_context
    if since is None:
        return last_entries(
            path,
            DEFAULT_TAIL if tail is None else tail,
            agent=agent,
            channel=channel,
            type_=type_,
            to=to,
        )
    out: list[Entry] = []
    if ID_RE.fullmatch(since):
        found = False
        for e in iter_reverse(path):
            if e.id == since:
                found = True
                break
            if matches(e, agent=agent, channel=channel, type_=type_, to=to):
                out.append(e)
        if not found:
            raise EntryNotFoundError(
                f"no entry {since!r} in {vault.rel(path)}",
                "use an id shown by `vaultmem log` (rotated entries are in nexus/archive/), or a time",
            )
    elif _TIME_RE.fullmatch(since):
        bound = since.rstrip("Z").replace(" ", "T")
        past = 0
        for e in iter_reverse(path):
            if e.time < bound:
                past += 1
                if past > LOOKBACK:
                    break
                continue
            if matches(e, agent=agent, channel=channel, type_=type_, to=to):
                out.append(e)
    else:
        raise UsageError(
            f"--since {since!r} is neither an entry id nor a time",
            "e.g. --since ella.12 or --since 2026-11-29T10:00 (UTC)",
        )
    out.sort(key=time_order)
    if tail is not None:
        out = out[-tail:] if tail else []
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
                yield [replace(e, line_start=0, line_end=0) for e in batch]
