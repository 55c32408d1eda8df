"""`bank prune`: stale pending facts (and those past `valid_until`) become `status: expired`.

Nothing is deleted: an expired fact can still be reviewed, and retain still dedupes against it.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from vaultmem.bank.model import (
    PruneResult,
    fact_from_note,
)
from vaultmem.bank.review_page import refresh_review_page
from vaultmem.bank.store import bank_files, bank_lock, read_quick, set_status
from vaultmem.core import clock
from vaultmem.core.errors import IntegrityError, UsageError
from vaultmem.core.vault import Vault


def prune(
    vault: Vault,
    *,
    older_than_days: float | None = None,
    agent: str | None = None,
    dry_run: bool = False,
    now: datetime | None = None,
) -> PruneResult:
    """Move stale pending facts (and those past `valid_until`) to `status: expired`. Deletes nothing."""
    days = vault.config.bank.prune_after_days if older_than_days is None else older_than_days
    if days < 0:
        raise UsageError("--older-than must not be negative", "e.g. --older-than 60d")
    if agent:
        vault.require_agent(agent)
    moment = now or clock.now()
    cutoff = moment - timedelta(days=days)
    expired = []
    with bank_lock(vault):
        for path, _owner in bank_files(vault, agent):
            quick = read_quick(vault, path)
            if quick is None or quick[0].get("status", "pending") != "pending":
                continue
            meta = quick[0]
            seen = [clock.parse_time(meta.get(k, "")) for k in ("created", "last_seen")]
            latest = max((t for t in seen if t is not None), default=None)
            why = None
            if clock.is_past(meta.get("valid_until"), moment.date()):
                why = f"valid_until {meta['valid_until']} has passed"
            elif latest is not None and latest < cutoff:
                why = f"pending for more than {days:g} days"
            if why is None:
                continue
            updates = {
                "status": "expired",
                "expired_at": clock.stamp(),
                "reason": why,
                "updated": clock.stamp(),
            }
            if dry_run:
                note = vault.read_note(path)
                if note.ok:
                    expired.append(fact_from_note(vault, path, note))
                continue
            try:
                expired.append(set_status(vault, path, updates, expect=("pending",)))
            except IntegrityError:
                continue  # broken frontmatter: `status` reports it; never rewrite it blindly
        if not dry_run and expired:
            refresh_review_page(vault)
    return PruneResult(expired=tuple(expired), dry_run=dry_run)
