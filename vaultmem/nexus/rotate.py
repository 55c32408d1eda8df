"""`log rotate`: move old live-log entries to monthly archives without breaking any chain.
Nothing is deleted; `verify` checks the chains across the live file and the archives.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime, timedelta
from typing import Any

from vaultmem.core import clock, intents
from vaultmem.core.fsio import append_durable, atomic_write
from vaultmem.core.locking import exclusive
from vaultmem.core.records import field, record
from vaultmem.core.vault import Vault
from vaultmem.nexus import entry, log


@record
class RotateResult:
    moved: int
    files: dict[str, int] = field(default_factory=dict)  # archive file -> entries moved there
    kept: int = 0

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def _archive_header(month: str) -> str:
    return (
        "---\ntags:\n  - vaultmem/log-archive\n---\n\n"
        f"# Live context, {month}\n\n"
        "Entries moved here from [[nexus/live-context|live-context]] by `vaultmem log rotate`. Append-only: never edit.\n"
    )


def recover(vault: Vault) -> list[str]:
    """Finish the rotations a killed process left half done: moving again is a no-op for what
    already moved, and cuts from the live file what the archives already hold."""
    done = []
    for record_path, data in intents.pending(vault, "rotate"):
        cut = str(data.get("cut") or "")
        try:
            moment = datetime.fromisoformat(cut.replace("Z", "+00:00"))
        except ValueError:
            intents.done(record_path)
            continue
        result = rotate(vault, keep_days=0, now=moment)
        intents.done(record_path)
        done.append(f"finished a log rotation cut short: {result.moved} entries left the live log")
    return done


def rotate(vault: Vault, *, keep_days: float = 30, now: datetime | None = None) -> RotateResult:
    """Move live-log entries older than `keep_days` (a fraction counts: 1.5 is 36 hours) to nexus/archive/live-context-YYYY-MM.md."""
    from vaultmem.core.errors import UsageError

    if keep_days < 0:
        raise UsageError("--keep-days must be 0 or more", "e.g. --keep-days 30")
    cutoff = (now or clock.now()) - timedelta(days=keep_days)
    cut = cutoff.isoformat(timespec="milliseconds").replace("+00:00", "Z")
    path = vault.live_context
    with exclusive(log.lock_for(vault, "live"), vault.config.log.lock_timeout, what=path.name):
        heads = log.current_heads(vault, "live")
        data = path.read_bytes()
        parsed = entry.parse_bytes(data)
        old = [e for e in parsed.entries if e.time < cut]
        if not old:
            return RotateResult(0, {}, len(parsed.entries))
        by_month: dict[str, list[entry.Entry]] = defaultdict(list)
        for e in old:
            by_month[e.time[:7]].append(e)
        files: dict[str, int] = {}
        # copied to the archives, then cut from the live file: a kill in between leaves the
        # entries in both, and this record, which the next rotate or `repair` finishes
        with intents.intent(vault, "rotate", {"cut": cut}):
            for month, entries in sorted(by_month.items()):
                dest = vault.path(f"nexus/archive/live-context-{month}.md")
                if not dest.exists():
                    dest.parent.mkdir(parents=True, exist_ok=True)
                    atomic_write(dest, _archive_header(month))
                already = {e.id for e in entry.read_file(dest).entries}
                chunk = b"".join(
                    b"\n" + data[e.byte_start : e.byte_end] for e in entries if e.id not in already
                )
                if chunk:
                    append_durable(dest, chunk)
                files[vault.rel(dest)] = len(entries)
            out = bytearray()
            pos = 0
            for e in old:
                start = (
                    e.byte_start - 1
                    if e.byte_start > 0
                    and data[e.byte_start - 1 : e.byte_start] == b"\n"
                    and data[e.byte_start - 2 : e.byte_start - 1] == b"\n"
                    else e.byte_start
                )
                out += data[pos:start]
                pos = e.byte_end
            out += data[pos:]
            atomic_write(path, bytes(out))
            log.save_heads(vault, "live", log.file_stamp(path), heads)
        for record_path, record in intents.pending(vault, "rotate"):
            if str(record.get("cut") or "") <= cut:  # a rotation cut short, finished by this one
                intents.done(record_path)
    from vaultmem.nexus.digest_links import relink

    relink(vault)  # the digests' links follow the entries to the archives
    return RotateResult(len(old), files, len(parsed.entries) - len(old))
