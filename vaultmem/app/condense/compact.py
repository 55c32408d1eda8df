"""`vaultmem compact --older-than 30d`: old entries leave the live file once a digest covers them.

The entries move to the monthly archives exactly as `log rotate` moves them (`nexus.rotate`:
same bytes, chains intact, nothing deleted), but only when every one of them lies in a period
(a week or a month) whose digest was made from the period's current entries. Otherwise nothing
moves and the command is refused (exit 8) naming each period that needs `vaultmem digest`. The
read pack then shows the digests of the periods it no longer shows verbatim.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from vaultmem.app.condense.digest import by_period, log_entries
from vaultmem.core import clock
from vaultmem.core.errors import RefusedError
from vaultmem.core.records import field, record
from vaultmem.core.vault import Vault
from vaultmem.nexus import digests
from vaultmem.nexus.entry import read_file


@record
class CompactResult:
    cutoff: str
    moved: int
    kept: int
    files: dict[str, int] = field(default_factory=dict)  # archive -> entries moved there
    digests: tuple[str, ...] = ()  # the digests that cover what moved
    dry_run: bool = False

    def to_dict(self) -> dict[str, Any]:
        out = dict(self.__dict__)
        out["digests"] = list(self.digests)
        return out


def current_digests(vault: Vault, entries: list[Any]) -> dict[str, str]:
    """Periods whose digest was made from their current entries (and is intact): period ->
    the digest's path."""
    notes = {p.stem: digests.read_digest(vault, p) for p in digests.digest_files(vault)}
    out: dict[str, str] = {}
    for kind in digests.KINDS:
        for period, group in by_period(entries, kind).items():
            note = notes.get(period)
            meta = note.meta if note else None
            if (
                note is not None
                and meta is not None
                and meta.source == digests.source_hash(group)
                and meta.compute_hash(note.body) == meta.hash
            ):
                out[period] = note.path
    return out


def compact(
    vault: Vault, older_than: str, *, dry_run: bool = False, now: datetime | None = None
) -> CompactResult:
    delta = clock.parse_duration(older_than, "--older-than", bare_days=True)
    assert delta is not None
    moment = now or clock.now()
    cutoff = moment - delta
    cut = clock.stamp_ms(cutoff)
    live = read_file(vault.live_context).entries
    old = [e for e in live if e.time < cut]
    if not old:
        return CompactResult(cut, 0, len(live), dry_run=dry_run)
    covered = current_digests(vault, log_entries(vault))
    used: dict[str, str] = {}
    missing: dict[str, str] = {}
    for e in old:
        hit = next(
            (p for k in digests.KINDS if (p := digests.period_of(e.time, k)) in covered), None
        )
        if hit is not None:
            used[hit] = covered[hit]
            continue
        period = digests.period_of(e.time, vault.config.digest.period)
        if digests.bounds(period)[2] > moment:
            missing[period] = "not closed yet"
        elif digests.digest_path(vault, period).exists():
            missing[period] = "its digest is out of date: the period changed since"
        else:
            missing[period] = "no digest"
    if missing:
        listed = "; ".join(f"{p} ({why})" for p, why in sorted(missing.items()))
        open_only = all(why == "not closed yet" for why in missing.values())
        raise RefusedError(
            f"compact refused: {len(missing)} period(s) older than {older_than} have no "
            f"up-to-date digest: {listed}; nothing was moved",
            "give a longer --older-than (a period must be over before it has a digest)"
            if open_only
            else "make them first: vaultmem digest --agent NAME, then run compact again",
        )
    if dry_run:
        files: dict[str, int] = {}
        for e in old:
            rel = f"nexus/archive/live-context-{e.time[:7]}.md"
            files[rel] = files.get(rel, 0) + 1
        return CompactResult(
            cut, len(old), len(live) - len(old), files, tuple(sorted(used.values())), True
        )
    from vaultmem.nexus.rotate import rotate

    done = rotate(vault, keep_days=0, now=cutoff)
    return CompactResult(cut, done.moved, done.kept, done.files, tuple(sorted(used.values())))
