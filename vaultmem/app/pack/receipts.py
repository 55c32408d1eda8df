"""Receipts: what each agent was shown, so that "what had ella seen when she made that
decision?" has an answer.

Every `read`, `inbox` and `recall` (with an agent) that shows entries or facts appends one line
to `.vaultmem/receipts/<agent>.jsonl` — only after its output was written out, so a pack that
never reached the agent leaves no receipt. Lines are one O_APPEND write each (concurrent
readers never interleave) and are not fsynced. A file past `[receipts] max_bytes` is renamed
`<agent>.N.jsonl` and the oldest beyond `[receipts] keep` are deleted.

Each line is sealed (`core/seal.py`, bound to the file's name, so a line keeps its seal when
the file is rotated only through `_seal_name`): a line this machine did not write (git, an
agent editing `.vaultmem/`) is not read.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from vaultmem.core import clock, records, seal
from vaultmem.core.errors import EntryNotFoundError
from vaultmem.core.fsio import append_line
from vaultmem.core.locking import exclusive, lock_path
from vaultmem.core.names import AGENT_NAME
from vaultmem.core.patterns import later
from vaultmem.core.vault import Vault

_ROTATED = later(rf"(?P<agent>{AGENT_NAME})\.(?P<n>[0-9]{{1,9}})\.jsonl")
COMMANDS = ("read", "recall", "inbox")


@records.record
class Receipt:
    time: str
    command: str
    ids: tuple[str, ...]
    paths: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "time": self.time,
            "command": self.command,
            "ids": list(self.ids),
            "paths": list(self.paths),
        }


def receipts_dir(vault: Vault) -> Path:
    return vault.state("receipts")


def _current(vault: Vault, agent: str) -> Path:
    return vault.state("receipts", f"{agent}.jsonl")


def _rotated(vault: Vault, agent: str) -> list[tuple[int, Path]]:
    """(N, path) of the agent's rotated files, oldest (lowest N) first."""
    folder = receipts_dir(vault)
    if not folder.is_dir():
        return []
    found = []
    for path in folder.iterdir():
        m = _ROTATED.fullmatch(path.name)
        if m and m["agent"] == agent:
            found.append((int(m["n"]), path))
    return sorted(found)


def _rotate(vault: Vault, agent: str, incoming: int) -> None:
    path = _current(vault, agent)
    limit = vault.config.receipts.max_bytes
    try:
        if path.stat().st_size + incoming <= limit:
            return
    except FileNotFoundError:
        return
    with exclusive(
        lock_path(vault, f"receipts-{agent}"),
        vault.config.log.lock_timeout,
        what="receipts",
    ):
        try:
            if path.stat().st_size + incoming <= limit:
                return  # another process rotated it meanwhile
        except FileNotFoundError:
            return
        old = _rotated(vault, agent)
        n = old[-1][0] + 1 if old else 1
        os.replace(path, path.with_name(f"{agent}.{n}.jsonl"))
        old.append((n, path))
        for _n, stale in old[: max(0, len(old) - vault.config.receipts.keep)]:
            stale.unlink(missing_ok=True)


def record(
    vault: Vault, agent: str, command: str, ids: Iterable[str], paths: Iterable[str] = ()
) -> Receipt | None:
    """Append one receipt (None, and nothing written, when nothing was shown)."""
    receipt = Receipt(clock.stamp_ms(), command, tuple(dict.fromkeys(ids)), tuple(paths))
    if not receipt.ids and not receipt.paths:
        return None
    line = seal.line(_seal_name(agent), receipt.to_dict())
    if line is None:  # no secret to seal with: a receipt that would never be read
        return receipt
    _rotate(vault, agent, len(line))
    append_line(_current(vault, agent), line)
    return receipt


def _seal_name(agent: str) -> str:
    """What a receipt line's seal binds it to: the agent's receipts, whatever the file's
    rotation number."""
    return f"receipts/{agent}"


def _records(agent: str, path: Path, *, max_bytes: int | None = None) -> list[dict[str, Any]]:
    """The sealed lines of one receipts file (its last `max_bytes`); others are left out."""
    from vaultmem.core.jsonl import tail_lines

    data = tail_lines(path, max_bytes=max_bytes)
    return [x for x in seal.lines(_seal_name(agent), data) if isinstance(x, dict)]


def _read(vault: Vault, agent: str) -> Iterator[Receipt]:
    """Every receipt of the agent, oldest first (bad lines skipped)."""
    files = [p for _n, p in _rotated(vault, agent)] + [_current(vault, agent)]
    for path in files:
        for raw in _records(agent, path):
            ids, paths = raw.get("ids"), raw.get("paths") or []
            if not (
                isinstance(raw.get("time"), str)
                and isinstance(raw.get("command"), str)
                and isinstance(ids, list)
                and isinstance(paths, list)
            ):
                continue
            yield Receipt(raw["time"], raw["command"], tuple(map(str, ids)), tuple(map(str, paths)))


def recent_uses(
    vault: Vault, agent: str, command: str, *, max_bytes: int = 1 << 18
) -> list[Receipt]:
    """The agent's latest receipts of one command, from the last `max_bytes` of its current
    file only (the importance of pack items: cheap, and recent use is what counts)."""
    try:
        records = _records(agent, _current(vault, agent), max_bytes=max_bytes)
    except OSError:  # unreadable receipts cost the pack its use counts, nothing else
        return []
    out = []
    for raw in records:
        if raw.get("command") != command:
            continue
        ids, paths = raw.get("ids"), raw.get("paths") or []
        if isinstance(ids, list) and isinstance(paths, list):
            out.append(
                Receipt(str(raw.get("time")), command, tuple(map(str, ids)), tuple(map(str, paths)))
            )
    return out


def _entry_time(vault: Vault, entry_id: str) -> str | None:
    from vaultmem.nexus.entry import is_decision, read_file
    from vaultmem.nexus.reading import iter_reverse

    if is_decision(entry_id):
        return next((e.time for e in read_file(vault.decisions).entries if e.id == entry_id), None)
    return next((e.time for e in iter_reverse(vault.live_context) if e.id == entry_id), None)


def time_of(vault: Vault, value: str, what: str = "--since") -> str:
    """A bound for --since/--until (`clock.parse_point`): the time of an entry or decision id,
    or a date, a UTC time or a duration before now."""
    from vaultmem.nexus.entry import ID_RE

    point = clock.parse_point(value, what, ids=ID_RE)
    if isinstance(point, str):
        found = _entry_time(vault, point)
        if found is None:
            raise EntryNotFoundError(
                f"{what}: no entry {point!r}",
                "use an id shown by `vaultmem log` or `vaultmem decisions`",
            )
        return found
    return clock.stamp_ms(point)


def receipts(
    vault: Vault, agent: str, *, since: str | None = None, until: str | None = None
) -> list[Receipt]:
    """The agent's receipts, oldest first, from `since` up to `until` (times or entry ids)."""
    agent = vault.require_agent(agent)
    low = time_of(vault, since, "--since") if since is not None else None
    high = time_of(vault, until, "--until") if until is not None else None
    return [
        r
        for r in _read(vault, agent)
        if (low is None or r.time >= low) and (high is None or r.time <= high)
    ]


def shown_ids(vault: Vault, agent: str, *, since: str | None = None) -> set[str]:
    """Ids the agent was shown (in receipts written at `since` or later, a time)."""
    return {i for r in _read(vault, agent) if since is None or r.time >= since for i in r.ids}
