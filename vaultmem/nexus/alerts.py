"""Alerts with a life cycle, and `resolve`, which closes what is open.

An alert (`append --type alert`) stays open until someone resolves it. Raising an alert whose
normalised text (`coord.alert_key`) matches an open alert writes nothing: the open one is *seen
again*, counted in `.vaultmem/alerts/seen.json` (this machine's count; a repeat leaves no entry
on the log, which is the point). Raising it after it was resolved writes a new alert that links
the old one (`extra.reraises`).

`resolve` writes a signed `resolve` entry naming what it closes (`extra.resolves`, also in
`acks`). An agent or a person (a reviewer with a signing key) may resolve an alert, a handoff, a
question or an addressed entry, whoever wrote it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from vaultmem.core import seal
from vaultmem.core.errors import EntryNotFoundError, RefusedError, UsageError
from vaultmem.core.fsio import atomic_write
from vaultmem.core.records import record
from vaultmem.core.vault import Vault, validate_name
from vaultmem.nexus import coord
from vaultmem.nexus.entry import WANTS_ACK, Entry, EntryType, is_decision, validate_id


@record
class Repeat:
    """What raising an alert with some text would repeat."""

    open: Entry | None  # the open alert with the same text: nothing is written
    count: int  # with `open`: times it was raised again, this one included
    resolved: str | None  # else the latest resolved alert with that text (linked)


@record
class Sighting:
    count: int = 0
    last: str | None = None
    by: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"seen_again": self.count, "last_seen": self.last, "last_seen_by": self.by}


def seen_path(vault: Vault) -> Path:
    return vault.state("alerts", "seen.json")


def sightings(vault: Vault) -> dict[str, Sighting]:
    data = seal.read(seen_path(vault))  # sealed: counts git wrote are no counts
    out: dict[str, Sighting] = {}
    if isinstance(data, dict):
        for key, value in data.items():
            if isinstance(value, dict) and isinstance(value.get("count"), int):
                out[key] = Sighting(value["count"], value.get("last"), value.get("by"))
    return out


def _record_sighting(vault: Vault, alert_id: str, agent: str) -> int:
    """Count one more sighting (the caller holds the live log's lock)."""
    from vaultmem.core import clock

    seen = sightings(vault)
    count = seen.get(alert_id, Sighting()).count + 1
    seen[alert_id] = Sighting(count, clock.stamp(), agent)
    data = {k: {"count": s.count, "last": s.last, "by": s.by} for k, s in seen.items()}
    sealed = seal.dumps(seen_path(vault), data)
    if sealed is not None:
        atomic_write(seen_path(vault), sealed)
    return count


def check_repeat(vault: Vault, agent: str, summary: str) -> Repeat:
    """Called by `log.write_entry` under the live log's lock, with the prepared summary."""
    key = coord.alert_key(summary)
    open_item: coord.Item | None = None
    resolved: str | None = None
    for item in coord.load(vault).alerts(include_resolved=True):
        if item.key != key:
            continue
        if item.resolved is None:
            open_item = open_item or item
        else:
            resolved = item.id  # oldest first: the last one is the latest
    if open_item is not None:
        return Repeat(open_item.entry, _record_sighting(vault, open_item.id, agent), None)
    return Repeat(None, 0, resolved)


@record
class AlertView:
    item: coord.Item
    sighting: Sighting
    agents: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return {**self.item.to_dict(self.agents), **self.sighting.to_dict()}


def alerts(vault: Vault, *, include_resolved: bool = False) -> list[AlertView]:
    """Open alerts, oldest first (`include_resolved`: every alert, resolved ones marked)."""
    index = coord.load(vault)
    seen = sightings(vault)
    return [
        AlertView(item, seen.get(item.id, Sighting()), index.agents)
        for item in index.alerts(include_resolved=include_resolved)
    ]


# --- resolve ---------------------------------------------------------------------------------


@record
class ResolveResult:
    target: str
    entry: Entry | None  # the resolve entry; None when it was resolved already
    already: dict[str, Any] | None = None  # the earlier resolution
    redactions: tuple[Any, ...] = ()
    warnings: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "resolved": self.target,
            "entry": self.entry.to_dict() if self.entry else None,
            "already": self.already,
        }


def require_person(vault: Vault, name: str | None) -> str:
    """A person who may sign a resolution: a reviewer listed in vaultmem.toml."""
    listed = ", ".join(vault.config.reviewers) or "none"
    if not name:
        raise UsageError(
            "resolve needs --agent NAME, or a person: --reviewer NAME",
            f"reviewers: {listed} (or set VAULTMEM_REVIEWER / default_reviewer)",
        )
    validate_name(name, "reviewer")
    if name not in vault.config.reviewers or name in vault.config.agents:
        raise RefusedError(
            f"refused: {name!r} is not a reviewer of this vault",
            f"reviewers: {listed}; add one with: vaultmem init --reviewer {name}",
        )
    return name


def _find(vault: Vault, entry_id: str) -> Entry | None:
    from vaultmem.nexus.reading import iter_reverse

    for e in iter_reverse(vault.live_context):
        if e.id == entry_id:
            return e
    return None


def resolve(
    vault: Vault, author: str, target: str, *, why: str = "", person: bool = False
) -> ResolveResult:
    """Close `target` for everyone with a signed `resolve` entry by `author` (an agent, or a
    reviewer when `person`)."""
    from vaultmem.nexus import log

    if person:
        require_person(vault, author)
    else:
        vault.require_agent(author)
    validate_id(target)
    if is_decision(target):
        raise UsageError(f"{target} is a decision", "a decision is replaced with --supersedes")
    item = coord.load(vault).get(target)
    if item is not None and item.resolved is not None:
        return ResolveResult(target, None, item.resolved)
    found = item.entry if item is not None else _find(vault, target)
    if found is None:
        raise EntryNotFoundError(
            f"no entry {target!r} in {vault.rel(vault.live_context)}",
            "use an id shown by `vaultmem alerts`, `vaultmem inbox` or `vaultmem log`",
        )
    if not found.to and found.type not in WANTS_ACK:
        raise UsageError(
            f"{target} is a {found.type}: nothing to resolve",
            "resolve alerts, handoffs, questions and addressed entries",
        )
    limit = vault.config.log.max_summary
    summary = f"Resolved {target}: {found.summary}"
    if len(summary) > limit:
        summary = summary[: limit - 1] + "…"
    result = log.append(
        vault,
        author,
        summary,
        channel=found.channel,
        type_=EntryType.RESOLVE,
        body=why,
        acks=[target],
        extra={"resolves": target},
        person=person,
    )
    return ResolveResult(target, result.entry, None, result.redactions, result.warnings)
