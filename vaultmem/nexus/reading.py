"""Reading the live log for `vaultmem log`: the last N, everything since an id or a time, and
following new entries as they are appended. Everything reads from the end of the file."""

from __future__ import annotations

import re
import time as _time
from collections.abc import Iterator
from dataclasses import replace

from vaultmem.core.errors import EntryNotFoundError, UsageError
from vaultmem.core.vault import Vault
from vaultmem.nexus import log

DEFAULT_TAIL = 20
_TIME_RE = re.compile(r"^\d{4}-\d\d(?:-\d\d(?:[T ]\d\d(?::\d\d(?::\d\d(?:\.\d{1,6})?)?)?)?)?Z?$")


def read_log(
    vault: Vault,
    *,
    tail: int | None = None,
    since: str | None = None,
    agent: str | None = None,
    channel: str | None = None,
    type_: str | None = None,
) -> list[log.Entry]:
    """Matching entries, oldest first: the last `tail` (default 20), or all after `since`."""
    if tail is not None and tail < 0:
        raise UsageError("--tail must be 0 or more", "e.g. --tail 20")
    path = vault.live_context
    if since is None:
        return log.tail(
            path, DEFAULT_TAIL if tail is None else tail, agent=agent, channel=channel, type_=type_
        )
    out: list[log.Entry] = []
    if log.ID_RE.match(since):
        found = False
        for e in log.iter_reverse(path):
            if e.id == since:
                found = True
                break
            if log.matches(e, agent=agent, channel=channel, type_=type_):
                out.append(e)
        if not found:
            raise EntryNotFoundError(
                f"no entry {since!r} in {vault.rel(path)}",
                "use an id shown by `vaultmem log` (rotated entries are in nexus/archive/), or a time",
            )
    elif _TIME_RE.match(since):
        bound = since.rstrip("Z").replace(" ", "T")
        for e in log.iter_reverse(path):
            if e.time < bound:
                break
            if log.matches(e, agent=agent, channel=channel, type_=type_):
                out.append(e)
    else:
        raise UsageError(
            f"--since {since!r} is neither an entry id nor a time",
            "e.g. --since ella.12 or --since 2026-11-29T10:00 (UTC)",
        )
    out.reverse()
    if tail is not None:
        out = out[-tail:] if tail else []
    return out


def follow(
    vault: Vault,
    *,
    agent: str | None = None,
    channel: str | None = None,
    type_: str | None = None,
    poll: float = 0.25,
) -> Iterator[list[log.Entry]]:
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
        parsed = log.parse_bytes(data, base_offset=offset)
        if parsed.entries:
            offset = parsed.entries[-1].byte_end
            batch = [
                e
                for e in parsed.entries
                if log.matches(e, agent=agent, channel=channel, type_=type_)
            ]
            if batch:
                yield [replace(e, line_start=0, line_end=0) for e in batch]
