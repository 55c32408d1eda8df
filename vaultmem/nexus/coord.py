"""The coordination index: every live-log entry that can be *open* (addressed entries and
alerts), who acked it and what resolved it, in `.vaultmem/coord/live.json`.

The inbox must hold a handoff however many entries came after it, and reading it must not cost
more on a long log: so what can be open is kept here and brought up to date incrementally. The
cache remembers the byte offset of the live log it has read up to and the last entry it read
there; each call checks that entry is still in its place (a few hundred bytes) and parses only
what was appended since. When the check fails (rotation, an editor, a git merge) the index is
rebuilt from the archives and the live file: a cost proportional to the log, paid once.

The rules (docs/FORMAT.md, "Coordination"):

- an addressed entry is open for each recipient until an entry *by that recipient* acks it;
- anything tracked here closes for everyone when a `resolve` entry names it;
- an alert stays open until resolved, whoever acked it;
- an ack or a resolve counts only when its entry passes its own checks (`shown.entry_problem`,
  what `verify` and every pack run: hash, id, signature, an approved key): a forged, unsigned
  or edited entry acks and resolves nothing, in this index and so in every reader of it (the
  inbox, the pack, alerts, MCP, status). The index records what trust it was built under
  (`_trust_stamp`: the signature setting and every keys file's stat); when that changes (a key
  approved, a keys file pulled) it is rebuilt, so an ack refused yesterday counts once its key
  is approved.

Items closed for every recipient are dropped; alerts stay (`alerts --all`, re-raise links).
This module reads the log and writes only its cache.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

from vaultmem.core import seal
from vaultmem.core.errors import VaultmemError
from vaultmem.core.fsio import replace_cache
from vaultmem.core.patterns import later
from vaultmem.core.records import evolve, record
from vaultmem.core.vault import Vault
from vaultmem.nexus.entry import (
    ALL,
    WANTS_ACK,
    Entry,
    EntryType,
    entry_from_dict,
    parse_bytes,
    read_file,
)
from vaultmem.nexus.shown import Counts

INDEX_VERSION = 3  # 2: each item keeps its entry's hash and signature; 3: verified acks only
BODY_CHARS = 1200  # body kept per item (the log keeps it whole)
_PUNCT = later(r"^[\s.!:]+|[\s.!:]+$")


def alert_key(summary: str) -> str:
    """The text two alerts must share to be the same alert: case folded, whitespace runs as
    one space, surrounding whitespace and `.`, `!`, `:` removed. Digits stay: `disk 91% full`
    and `disk 92% full` are different alerts."""
    return _PUNCT.sub("", " ".join(summary.casefold().split()))


@record
class Item:
    """One entry that can be open, with its acks and resolution."""

    entry: Entry
    acked_by: dict[str, str]  # agent -> the id of its entry that acked this one
    resolved: dict[str, Any] | None  # {"id", "by", "time", "why"} of the resolve entry
    key: str  # alert_key of an alert, "" otherwise
    hash_ok: bool = True  # the entry's hash matched its text when indexed (its body may be cut)

    @property
    def id(self) -> str:
        return self.entry.id

    def recipients(self, agents: tuple[str, ...]) -> tuple[str, ...]:
        return recipients(self.entry.agent, self.entry.to, agents)

    def waiting_for(self, agents: tuple[str, ...]) -> tuple[str, ...]:
        """Recipients that have not acked it (none once it is resolved)."""
        return waiting_for(self.entry.agent, self.entry.to, self.acked_by, self.resolved, agents)

    def open_for(self, agent: str, agents: tuple[str, ...]) -> bool:
        return agent in self.waiting_for(agents)

    def status(self, agents: tuple[str, ...]) -> dict[str, Any]:
        """What the pack, `inbox` and `alerts` show about it, as JSON."""
        return {
            "to": list(self.entry.to),
            "acked_by": dict(self.acked_by),
            "waiting_for": list(self.waiting_for(agents)),
            "resolved": self.resolved,
        }

    def to_dict(self, agents: tuple[str, ...]) -> dict[str, Any]:
        return {**self.entry.to_dict(), **self.status(agents)}


@record
class Index:
    items: dict[str, dict[str, Any]]  # the cache's raw items, oldest first
    agents: tuple[str, ...]

    def get(self, entry_id: str) -> Item | None:
        raw = self.items.get(entry_id)
        return None if raw is None else _item(raw)

    def all(self) -> list[Item]:
        return [_item(raw) for raw in self.items.values()]

    def inbox(self, agent: str) -> list[Item]:
        """Open for `agent`: addressed to it (or to all), not acked by it, not resolved."""
        out = []
        for raw in self.items.values():
            args = raw["agent"], raw["to"], raw["acked_by"], raw["resolved"], self.agents
            if agent in waiting_for(*args):
                out.append(_item(raw))
        out.sort(key=lambda i: (i.entry.time, i.id))
        return out

    def alerts(self, *, include_resolved: bool = False) -> list[Item]:
        out = [
            _item(raw)
            for raw in self.items.values()
            if raw["type"] == EntryType.ALERT and (include_resolved or raw["resolved"] is None)
        ]
        out.sort(key=lambda i: (i.entry.time, i.id))
        return out


def index_path(vault: Vault) -> Path:
    return vault.state("coord", "live.json")


def _item(raw: dict[str, Any]) -> Item:
    # the signature's fields, so a pack can check the entry before showing it (issue 20)
    sign = raw.get("signed") or {}
    e = entry_from_dict({**raw, "hash": sign.get("hash", ""), "key": sign.get("key")})
    e = evolve(e, sig=sign.get("sig"))
    return Item(e, dict(raw["acked_by"]), raw["resolved"], raw["key"], bool(sign.get("ok")))


# --- the one open/acked rule (docs/FORMAT.md, "Coordination") ----------------------------------


def recipients(author: str, to: Any, agents: tuple[str, ...]) -> tuple[str, ...]:
    """Who an entry is addressed to: `to` (all known agents for "all"), never its author."""
    return tuple(a for a in (agents if ALL in to else to) if a != author)


def waiting_for(
    author: str, to: Any, acked_by: Any, resolved: Any, agents: tuple[str, ...]
) -> tuple[str, ...]:
    """The recipients an addressed entry still waits for: each until an entry by that
    recipient acks it; nobody once a `resolve` names it."""
    if resolved is not None:
        return ()
    return tuple(a for a in recipients(author, to, agents) if a not in acked_by)


def awaits_ack(e: Entry, agent: str, acked: set[str]) -> bool:
    """Does an entry the index does not track (an unaddressed handoff, question or alert by
    another agent) wait for `agent`? Until the first other agent acks it (`acked`: the ids
    acked by someone other than their author)."""
    return e.agent != agent and e.type in WANTS_ACK and e.id not in acked


def _tracked(e: Entry) -> bool:
    return bool(e.to) or e.type == EntryType.ALERT


def _raw(e: Entry) -> dict[str, Any]:
    body = e.body if len(e.body) <= BODY_CHARS else e.body[:BODY_CHARS] + " …(cut)"
    return {
        **e.contract_dict(),
        "body": body,
        "extra": e.extra,
        "acked_by": {},
        "resolved": None,
        "key": alert_key(e.summary) if e.type == EntryType.ALERT else "",
        "signed": {"hash": e.hash, "key": e.key, "sig": e.sig, "ok": e.compute_hash() == e.hash},
    }


def apply(items: dict[str, dict[str, Any]], e: Entry, counts: Counts | None = None) -> None:
    """Bring `items` up to date with one more entry, in log order. With `counts`, an ack or a
    resolve whose entry fails its checks changes nothing (the entry itself is still tracked
    when addressed: the inbox leaves it out when it fails, and says so)."""
    if counts is not None and Counts.acts(e) and not counts(e):
        if _tracked(e) and e.id not in items:
            items[e.id] = _raw(e)
        return
    for acked in e.acks:
        raw = items.get(acked)
        if raw is not None and raw["agent"] != e.agent:
            raw["acked_by"].setdefault(e.agent, e.id)
    if e.type == EntryType.RESOLVE:
        target = e.extra.get("resolves")
        raw = items.get(target) if isinstance(target, str) else None
        if raw is not None and raw["resolved"] is None:
            raw["resolved"] = {"id": e.id, "by": e.agent, "time": e.time, "why": e.body}
            if raw["type"] == EntryType.ALERT:
                raw["body"] = raw["body"][:200]  # kept for `alerts --all`; keep it small
    if _tracked(e) and e.id not in items:
        items[e.id] = _raw(e)


def prune(items: dict[str, dict[str, Any]], agents: tuple[str, ...]) -> None:
    """Drop what is closed for every recipient (alerts stay)."""
    for key in [k for k, raw in items.items() if raw["type"] != EntryType.ALERT]:
        raw = items[key]
        if not waiting_for(raw["agent"], raw["to"], raw["acked_by"], raw["resolved"], agents):
            del items[key]


def _load_cache(vault: Vault) -> dict[str, Any] | None:
    # sealed (core/seal.py): a live.json that git wrote (an item marked acked, an inbox
    # emptied) fails its seal and the index is rebuilt from the log
    data = seal.read(index_path(vault))
    ok = (
        isinstance(data, dict)
        and data.get("v") == INDEX_VERSION
        and isinstance(data.get("offset"), int)
        and isinstance(data.get("items"), dict)
        and (data.get("tail") is None or isinstance(data.get("tail"), dict))
    )
    return data if ok and data.get("trust") == _trust_stamp(vault) else None


def _trust_stamp(vault: Vault) -> list[Any]:
    """What decides whether an entry verifies, cheaply: the signature setting, this machine's
    trust pins and each keys file (size, mtime and inode: a key added, approved or revoked
    changes its file)."""
    from vaultmem.core.pins import pins_path

    out: list[Any] = [bool(vault.config.log.require_signatures)]
    with contextlib.suppress(OSError):
        st = pins_path(vault.root).stat()
        out.append(["pins", st.st_size, st.st_mtime_ns, st.st_ino])
    for top in ("agents", "people"):
        try:
            folders = sorted((vault.root / top).iterdir())
        except OSError:
            continue
        for folder in folders:
            try:
                st = (folder / "keys.md").stat()
            except OSError:
                continue
            out.append([f"{top}/{folder.name}", st.st_size, st.st_mtime_ns, st.st_ino])
    return out


def _tail_in_place(path: Path, offset: int, tail: dict[str, Any] | None) -> bool:
    """Is the last entry the cache read still where it was (so everything before it is too)?"""
    if tail is None:
        return offset == 0
    start = tail.get("start")
    if not isinstance(start, int) or not 0 <= start < offset:
        return False
    try:
        with open(path, "rb") as fh:
            fh.seek(start)
            data = fh.read(offset - start)
    except OSError:
        return False
    entries = parse_bytes(data, base_offset=start).entries
    return (
        len(entries) == 1
        and entries[0].id == tail.get("id")
        and entries[0].hash == tail.get("hash")
        and entries[0].byte_end == offset
    )


def load(vault: Vault, *, save: bool = True) -> Index:
    """The index, brought up to date with the live log (parses only what is new)."""
    live = vault.live_context
    try:
        size = live.stat().st_size
    except FileNotFoundError:
        size = 0
    agents = vault.known_agents()
    cache = _load_cache(vault)
    counts = Counts(vault)
    changed = False
    if (
        cache is not None
        and cache["offset"] <= size
        and _tail_in_place(live, cache["offset"], cache["tail"])
    ):
        items: dict[str, dict[str, Any]] = cache["items"]
        offset: int = cache["offset"]
        tail: dict[str, Any] | None = cache["tail"]
    else:
        items, offset, tail, changed = {}, 0, None, True
        for path in vault.live_archives():
            for e in read_file(path).entries:
                apply(items, e, counts)
    if size > offset:
        with open(live, "rb") as fh:
            fh.seek(offset)
            data = fh.read(size - offset)
        entries = parse_bytes(data, base_offset=offset).entries
        for e in entries:
            apply(items, e, counts)
        if entries:
            last = entries[-1]
            offset = last.byte_end
            tail = {"id": last.id, "hash": last.hash, "start": last.byte_start}
            changed = True
    if changed:
        prune(items, agents)
        if save:
            data_out = {
                "v": INDEX_VERSION,
                "offset": offset,
                "tail": tail,
                "items": items,
                "trust": _trust_stamp(vault),
            }
            counts.save()
            sealed = seal.dumps(index_path(vault), data_out)
            # a read-only vault still gets its answer; the next call redoes the work
            if sealed is not None:
                with contextlib.suppress(VaultmemError):
                    replace_cache(index_path(vault), sealed)
    return Index(items, agents)
