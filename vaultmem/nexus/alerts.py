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

from typing import Any

from vaultmem.core.errors import EntryNotFoundError, UsageError
from vaultmem.core.records import record
from vaultmem.core.vault import Vault
from vaultmem.nexus import coord
from vaultmem.nexus.entry import WANTS_ACK, Entry, EntryType, is_decision, validate_id
from vaultmem.nexus.sightings import Sighting, sightings


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
        vault.require_reviewer(author)
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
