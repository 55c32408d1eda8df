"""Layer 2: each agent's bank of proposed facts, pending until a person reviews them.

Reading (list, find, what `vaultmem read` shows), status changes and pruning. Reading the bank
for `vaultmem read` (`pending_block`, `pending_count`) scans frontmatter with a regular
expression instead of YAML: it runs on every agent turn (bench/bank_speed.py measures it).

Writing new facts is `vaultmem.bank.retain`; review (approve, reject, merge, apply) is
`vaultmem.bank.review`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager
from datetime import date
from pathlib import Path
from typing import Any

from vaultmem.bank.model import (
    BankFact,
    PendingBlock,
    PendingFact,
    as_int,
    fact_from_note,
    split_body,
)
from vaultmem.bank.similarity import signature
from vaultmem.core import clock, notes
from vaultmem.core.errors import NotFoundError, UsageError, VaultmemError
from vaultmem.core.fsio import atomic_write, read_text
from vaultmem.core.locking import exclusive, lock_path
from vaultmem.core.vault import Vault

_QUICK_KEY = re.compile(
    r"^(id|name|type|status|author|created|last_seen|evidence|valid_until)[ \t]*:[ \t]*(.*?)[ \t]*$",
    re.MULTILINE,
)


def bank_lock(vault: Vault) -> AbstractContextManager[None]:
    return exclusive(lock_path(vault, "bank"), vault.config.log.lock_timeout, what="bank")


def memory_lock(vault: Vault) -> AbstractContextManager[None]:
    return exclusive(lock_path(vault, "memory"), vault.config.log.lock_timeout, what="memory index")


def bank_files(vault: Vault, agent: str | None = None) -> Iterator[tuple[Path, str]]:
    """Bank notes of one agent (or all), oldest file name first: names start with the date."""
    agents = (agent,) if agent else vault.known_agents()
    for name in agents:
        folder = vault.bank_dir(name)
        if folder.is_dir():
            for path in sorted(folder.glob("*.md")):
                # a link is never a bank note: its owner would be where it points
                if not path.name.startswith(".") and not path.is_symlink():
                    yield path, name


def quick_meta(text: str) -> tuple[dict[str, str], str] | None:
    """Scalar keys vaultmem filters on, read without YAML; plus the body. None if no frontmatter."""
    try:
        fm_lines, body, _ = notes.split_frontmatter(text)
    except ValueError:
        return None
    if fm_lines is None:
        return None
    found: dict[str, str] = {}
    for match in _QUICK_KEY.finditer("".join(fm_lines)):
        value = match.group(2)
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        found.setdefault(match.group(1), value)
    return found, body


def read_quick(vault: Vault, path: Path) -> tuple[dict[str, str], str] | None:
    try:
        return quick_meta(vault.read_text(path, what="bank note"))
    except (OSError, VaultmemError):
        return None


def list_bank(
    vault: Vault, *, agent: str | None = None, statuses: Sequence[str] | None = ("pending",)
) -> list[BankFact]:
    """Bank facts (all agents, or one), oldest first. Unreadable notes are skipped."""
    out = []
    for path, _owner in bank_files(vault, agent):
        try:
            note = vault.read_note(path)
        except VaultmemError:
            continue
        if not note.ok:
            continue
        fact = fact_from_note(vault, path, note)
        if statuses is None or fact.status in statuses:
            out.append(fact)
    return out


def find_bank(vault: Vault, ref: str) -> tuple[Path, notes.Note]:
    """A bank note by id, file name or vault-relative path. Exit 4 if none, 2 if ambiguous."""
    ref = ref.strip()
    hits: list[Path] = []
    for path, _owner in bank_files(vault):
        rel = vault.rel(path)
        if ref in (rel, rel.removesuffix(".md"), path.stem):
            hits.append(path)
            continue
        quick = read_quick(vault, path)
        if quick is not None and quick[0].get("id") == ref:
            hits.append(path)
    if not hits:
        raise NotFoundError(
            f"no bank fact with id or name {ref!r}", "list the queue with: vaultmem promote list"
        )
    if len(hits) > 1:
        listed = ", ".join(vault.rel(p) for p in hits)
        raise UsageError(f"{ref!r} matches several bank facts: {listed}", "pass the id instead")
    path = hits[0]
    return path, notes.require_ok(vault.read_note(path), path)


def pending_for_read(
    vault: Vault, agent: str, query: str | None, limit: int, *, today: date | None = None
) -> list[PendingFact]:
    """The agent's own pending facts for its session pack: most relevant to `query`, else newest.

    Never another agent's facts; never a fact whose `valid_until` has passed. No YAML: this runs
    on every `vaultmem read`.
    """
    return _scan_pending(vault, agent, query, limit, today)[0]


def _scan_pending(
    vault: Vault, agent: str, query: str | None, limit: int, today: date | None
) -> tuple[list[PendingFact], int]:
    """(the `limit` best pending facts, how many are pending in all), in one pass."""
    day = today or clock.today()
    q = signature(query, vault.config.language).words if query else frozenset()
    found: list[tuple[float, str, int, PendingFact]] = []
    for order, (path, _owner) in enumerate(bank_files(vault, agent)):
        quick = read_quick(vault, path)
        if quick is None:
            continue
        meta, body = quick
        if meta.get("status", "pending") != "pending" or clock.is_past(
            meta.get("valid_until"), day
        ):
            continue
        text, _quote = split_body(body)
        score = 0.0
        if q:
            words = signature(f"{meta.get('name', '')} {text}", vault.config.language).words
            score = round(len(q & words) / len(q), 3)
        fact = PendingFact(
            id=meta.get("id", path.stem),
            type=meta.get("type", ""),
            name=meta.get("name", path.stem),
            text=text,
            author=meta.get("author", agent),
            created=meta.get("created", ""),
            path=vault.rel(path),
            evidence=as_int(meta.get("evidence")),
            score=score if q else None,
        )
        found.append((score, fact.created, order, fact))
    # newest by `created`, not by file name: names sort by slug within a day
    found.sort(key=lambda t: (t[0], t[1], t[2]), reverse=True)
    return [f for _s, _c, _o, f in found[: max(limit, 0)]], len(found)


def pending_count(vault: Vault, agent: str | None = None, *, today: date | None = None) -> int:
    """How many facts wait for review (one agent's, or all). No YAML."""
    day = today or clock.today()
    count = 0
    for path, _owner in bank_files(vault, agent):
        quick = read_quick(vault, path)
        if quick is None:
            continue
        meta = quick[0]
        if meta.get("status", "pending") == "pending" and not clock.is_past(
            meta.get("valid_until"), day
        ):
            count += 1
    return count


def pending_block(
    vault: Vault, agent: str, query: str | None = None, limit: int | None = None
) -> PendingBlock | None:
    """What `vaultmem read` shows of the agent's pending facts; None when there are none."""
    n = vault.config.bank.read_limit if limit is None else limit
    facts, total = _scan_pending(vault, agent, query, n, None)
    if not facts:
        return None
    how = "most relevant to the query" if query else "newest"
    head = (
        f"Facts you proposed that no person has reviewed yet ({len(facts)} of {total}, {how}). "
        "Treat them as unconfirmed; do not present them as settled."
    )
    lines = [head, ""]
    lines += [f"- [unreviewed {f.type}] {' '.join(f.text.split())} (`{f.id}`)" for f in facts]
    return PendingBlock("\n".join(lines), tuple(facts), total)


def set_status(
    vault: Vault, path: Path, updates: dict[str, Any], *, expect: Sequence[str] | None = None
) -> BankFact:
    """Edit a bank note's frontmatter (keeping human edits); caller holds the bank lock."""
    old = read_text(path, what="bank note")
    note = notes.require_ok(notes.parse(old), path)
    status = str(note.meta.get("status") or "pending")
    if expect is not None and status not in expect:
        raise UsageError(
            f"{vault.rel(path)} is {status}, not {' or '.join(expect)}",
            "list the queue with: vaultmem promote list",
        )
    atomic_write(path, notes.set_frontmatter(old, updates, path=path))
    return fact_from_note(vault, path, vault.read_note(path))
