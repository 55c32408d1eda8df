"""Layer 2's values: bank facts, proposals, what retain did, and the helpers that read a note.

A bank note is `agents/<agent>/bank/<date>-<slug>.md`: frontmatter (id, type, status, author,
created, source, evidence, tags, ...) and the fact as the body, with an optional `## Evidence`
section quoting the transcript lines it rests on.
"""

from __future__ import annotations

import re
from enum import StrEnum
from pathlib import Path
from typing import Any

from vaultmem.core import notes
from vaultmem.core.choices import values
from vaultmem.core.records import record
from vaultmem.core.secrets import Finding
from vaultmem.core.vault import Vault
from vaultmem.memory.facts import FACT_TYPES

BANK_TYPES = FACT_TYPES  # one vocabulary for facts, proposed or approved


class BankStatus(StrEnum):
    PENDING = "pending"
    APPROVED = "approved"
    REJECTED = "rejected"
    EXPIRED = "expired"


class Outcome(StrEnum):
    """What retain did with a proposal."""

    INSERTED = "inserted"
    DUPLICATE = "duplicate"
    MAY_SUPERSEDE = "may_supersede"


STATUSES = values(BankStatus)


OUTCOMES = values(Outcome)


LIVE = ("pending", "active")  # statuses a new fact may supersede


EVIDENCE_HEADING = "## Evidence"


MAX_TEXT = 4000


MAX_NAME = 60


@record
class BankFact:
    """One bank note as the review tools see it."""

    id: str
    name: str
    type: str
    status: str
    author: str
    text: str
    path: str  # relative to the vault
    created: str
    updated: str
    sources: tuple[str, ...] = ()
    evidence: int = 1
    tags: tuple[str, ...] = ()
    valid_until: str | None = None
    may_supersede: str | None = None
    reason: str | None = None
    memory: str | None = None  # wikilink to the memory it became
    quote: str = ""  # the evidence section (transcript lines), if any
    consolidates: tuple[str, ...] = ()  # memories a `vaultmem consolidate` proposal replaces
    consolidation: str | None = None  # "merge" (near-duplicates) or "supersede" (contradiction)

    def to_dict(self) -> dict[str, Any]:
        out = dict(self.__dict__)
        out["sources"] = list(self.sources)
        out["tags"] = list(self.tags)
        out["consolidates"] = list(self.consolidates)
        return out


@record
class Match:
    """An existing memory or bank fact that resembles a text."""

    id: str
    kind: str  # "memory" or "bank"
    path: str
    name: str
    type: str
    status: str
    score: float
    conflict: bool
    text: str

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@record
class Proposal:
    """One fact to retain (from the command line or from a transcript)."""

    text: str
    type: str
    tags: tuple[str, ...] = ()
    source: str | None = None
    valid_until: str | None = None
    name: str | None = None
    quote: str = ""  # transcript lines the fact rests on, kept under "## Evidence"


@record
class RetainResult:
    """What retain did with one proposal: `inserted`, `duplicate` or `may_supersede`."""

    outcome: str
    id: str | None  # the bank fact written (None for a duplicate)
    target: str | None  # the existing fact it duplicates or may supersede
    path: str | None  # the note written or raised
    score: float | None
    evidence: int | None  # the duplicate's evidence count after this one
    type: str
    text: str
    findings: tuple[Finding, ...] = ()  # credentials redacted before writing
    similar: tuple[Match, ...] = ()
    dry_run: bool = False
    target_status: str | None = None  # e.g. "rejected" or "retracted" for a duplicate

    @property
    def redacted(self) -> tuple[str, ...]:
        """The kinds of credentials redacted (the `redacted` list of `retain --json`)."""
        return tuple(f.kind for f in self.findings)

    @property
    def message(self) -> str:
        if self.outcome == "duplicate":
            return f"duplicate {self.target}"
        if self.outcome == "may_supersede":
            return f"may supersede {self.target}"
        return "inserted"

    def to_dict(self) -> dict[str, Any]:
        out = dict(self.__dict__)
        out.pop("findings", None)
        out["redacted"] = list(self.redacted)
        out["similar"] = [m.to_dict() for m in self.similar]
        out["message"] = self.message
        return out


@record
class PendingFact:
    """A pending fact as `vaultmem read` shows it: unreviewed, the agent's own."""

    id: str
    type: str
    name: str
    text: str
    author: str
    created: str
    path: str
    evidence: int
    score: float | None = None
    unreviewed: bool = True

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@record
class PendingBlock:
    """The read pack's part for the agent's own unreviewed facts: prompt text and data."""

    text: str
    facts: tuple[PendingFact, ...]
    total: int  # all of the agent's pending facts, shown or not

    def lines(self) -> list[str]:
        """The line of each fact in `text`, in the order of `facts`."""
        return [ln for ln in self.text.splitlines() if ln.startswith("- [unreviewed ")]

    def to_dict(self) -> dict[str, Any]:
        return {"total": self.total, "facts": [f.to_dict() for f in self.facts]}


@record
class PruneResult:
    expired: tuple[BankFact, ...]
    dry_run: bool

    def to_dict(self) -> dict[str, Any]:
        return {"expired": [f.to_dict() for f in self.expired], "dry_run": self.dry_run}


def derive_name(text: str) -> str:
    """A short title from the fact's first clause: becomes the file name and the memory's name."""
    first = next((ln for ln in text.splitlines() if ln.strip()), "")
    clause = re.split(r"(?<=[.;:!?])\s+|\s+[—–]\s+", first.strip())[0]
    if len(clause.rstrip(".;:!? ")) >= 12:
        first = clause
    clean = re.sub(r"[/\\\[\]|#^*_`>]+", " ", first)
    clean = " ".join("".join(c for c in clean if ord(c) >= 32 and c != "\x7f").split())
    clean = clean.lstrip(".- ")
    if len(clean) > MAX_NAME:
        cut = clean[:MAX_NAME].rsplit(" ", 1)[0]
        clean = cut if len(cut) > MAX_NAME // 2 else clean[:MAX_NAME]
    return clean.rstrip(" .,;:!?-") or "Fact"


def split_body(body: str) -> tuple[str, str]:
    """(fact text, evidence section) of a bank note body."""
    lines = body.splitlines()
    for i, line in enumerate(lines):
        if line.strip() == EVIDENCE_HEADING:
            return "\n".join(lines[:i]).strip(), "\n".join(lines[i + 1 :]).strip()
    return body.strip(), ""


def as_list(value: Any) -> tuple[str, ...]:
    if value is None or value == "":
        return ()
    if isinstance(value, list):
        return tuple(str(v) for v in value if v is not None and str(v) != "")
    return (str(value),)


def as_int(value: Any, default: int = 1) -> int:
    try:
        return max(int(str(value).strip().strip("'\"")), 0)
    except (TypeError, ValueError):
        return default


def fact_from_note(vault: Vault, path: Path, note: notes.Note) -> BankFact:
    meta = note.meta
    text, quote = split_body(note.body)
    parts = vault.rel(path).split("/")
    owner = parts[1] if len(parts) > 2 and parts[0] == "agents" else ""
    return BankFact(
        id=str(meta.get("id") or path.stem),
        name=str(meta.get("name") or path.stem),
        type=str(meta.get("type") or ""),
        status=str(meta.get("status") or "pending"),
        # the author is the agent whose bank folder holds the note: a frontmatter `author:`
        # is something any agent could write (review shows a mismatch)
        author=owner or str(meta.get("author") or ""),
        text=text,
        path=vault.rel(path),
        created=str(meta.get("created") or ""),
        updated=str(meta.get("updated") or meta.get("created") or ""),
        sources=as_list(meta.get("source")),
        evidence=as_int(meta.get("evidence")),
        tags=as_list(meta.get("tags")),
        valid_until=str(meta["valid_until"]) if meta.get("valid_until") else None,
        may_supersede=str(meta["may_supersede"]) if meta.get("may_supersede") else None,
        reason=str(meta["reason"]) if meta.get("reason") else None,
        memory=str(meta["memory"]) if meta.get("memory") else None,
        quote=quote,
        consolidates=as_list(meta.get("consolidates")),
        consolidation=str(meta["consolidation"]) if meta.get("consolidation") else None,
    )
