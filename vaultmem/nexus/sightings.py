"""An alert raised again: the repeat check `log.append` makes under the live log's lock, and
this machine's count of sightings (`.vaultmem/alerts/seen.json`, sealed: counts git wrote are
no counts). Raising an alert whose normalised text (`coord.alert_key`) matches an open one
writes nothing and counts a sighting; `alerts.py` shows the counts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from vaultmem.core import seal
from vaultmem.core.fsio import atomic_write
from vaultmem.core.records import record
from vaultmem.core.vault import Vault
from vaultmem.nexus import coord
from vaultmem.nexus.entry import Entry


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


def record_sighting(vault: Vault, alert_id: str, agent: str) -> int:
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
        return Repeat(open_item.entry, record_sighting(vault, open_item.id, agent), None)
    return Repeat(None, 0, resolved)
