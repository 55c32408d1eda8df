"""Layer 2: each agent's bank of proposed facts, pending until a person reviews them.

A bank note is `agents/<agent>/bank/<date>-<slug>.md`: frontmatter (id, type, status, author,
created, source, evidence, tags, ...) and the fact as the body. `retain` dedupes a new fact
against the active memories and the agent's own pending facts before writing it, with a plain,
deterministic text similarity (no index, no model): the same answer on every machine.

Reading the bank for `vaultmem read` (`pending_for_read`, `pending_count`) scans frontmatter with a
regular expression instead of YAML: it runs on every agent turn.

Review (approve, reject, merge, apply) lives in `vaultmem.bank.review`.
"""

from __future__ import annotations

import contextlib
import re
import secrets
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

from vaultmem.core import notes
from vaultmem.core.errors import IntegrityError, NotFoundError, UsageError, VaultmemError
from vaultmem.core.fsio import atomic_write, create_exclusive, read_text
from vaultmem.core.locking import exclusive, lock_path
from vaultmem.core.similarity import Signature, signature, similarity
from vaultmem.core.vault import Vault
from vaultmem.memory import facts as memory

BANK_TYPES = ("decision", "fact", "failure", "preference", "user", "project", "reference")
STATUSES = ("pending", "approved", "rejected", "expired")
OUTCOMES = ("inserted", "duplicate", "may_supersede")
LIVE = ("pending", "active")  # statuses a new fact may supersede
EVIDENCE_HEADING = "## Evidence"
MAX_TEXT = 4000
MAX_NAME = 60
REVIEW_PAGE = "Review.md"
REVIEW_START = "<!-- vaultmem:pending:start (vaultmem rewrites this list) -->"
REVIEW_END = "<!-- vaultmem:pending:end -->"
TAG_RE = re.compile(r"^[\w/-]+$")
_QUICK_KEY = re.compile(
    r"^(id|name|type|status|author|created|last_seen|evidence|valid_until)[ \t]*:[ \t]*(.*?)[ \t]*$",
    re.MULTILINE,
)

# --- model -------------------------------------------------------------------------------


@dataclass(frozen=True)
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

    def to_dict(self) -> dict[str, Any]:
        out = dict(self.__dict__)
        out["sources"] = list(self.sources)
        out["tags"] = list(self.tags)
        return out


@dataclass(frozen=True)
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


@dataclass(frozen=True)
class Proposal:
    """One fact to retain (from the command line or from a transcript)."""

    text: str
    type: str
    tags: tuple[str, ...] = ()
    source: str | None = None
    valid_until: str | None = None
    name: str | None = None
    quote: str = ""  # transcript lines the fact rests on, kept under "## Evidence"


@dataclass(frozen=True)
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
    redacted: tuple[str, ...] = ()
    similar: tuple[Match, ...] = ()
    dry_run: bool = False
    target_status: str | None = None  # e.g. "rejected" or "retracted" for a duplicate

    @property
    def message(self) -> str:
        if self.outcome == "duplicate":
            return f"duplicate {self.target}"
        if self.outcome == "may_supersede":
            return f"may supersede {self.target}"
        return "inserted"

    def to_dict(self) -> dict[str, Any]:
        out = dict(self.__dict__)
        out["redacted"] = list(self.redacted)
        out["similar"] = [m.to_dict() for m in self.similar]
        out["message"] = self.message
        return out


@dataclass(frozen=True)
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


@dataclass(frozen=True)
class PruneResult:
    expired: tuple[BankFact, ...]
    dry_run: bool

    def to_dict(self) -> dict[str, Any]:
        return {"expired": [f.to_dict() for f in self.expired], "dry_run": self.dry_run}


# --- helpers -----------------------------------------------------------------------------


def now_iso() -> str:
    return memory.now_iso()


def _parse_time(value: str) -> datetime | None:
    text = value.strip().strip("'\"")
    if not text:
        return None
    try:
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def parse_date(value: str, what: str = "--valid-until") -> str:
    try:
        return date.fromisoformat(value.strip()).isoformat()
    except ValueError:
        raise UsageError(f"{what} {value!r} is not a date", "use YYYY-MM-DD") from None


def is_past(valid_until: str | None, today: date) -> bool:
    if not valid_until:
        return False
    try:
        return date.fromisoformat(str(valid_until).strip().strip("'\"")[:10]) < today
    except ValueError:
        return False


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


def _as_list(value: Any) -> tuple[str, ...]:
    if value is None or value == "":
        return ()
    if isinstance(value, list):
        return tuple(str(v) for v in value if v is not None and str(v) != "")
    return (str(value),)


def _as_int(value: Any, default: int = 1) -> int:
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
        author=str(meta.get("author") or owner),
        text=text,
        path=vault.rel(path),
        created=str(meta.get("created") or ""),
        updated=str(meta.get("updated") or meta.get("created") or ""),
        sources=_as_list(meta.get("source")),
        evidence=_as_int(meta.get("evidence")),
        tags=_as_list(meta.get("tags")),
        valid_until=str(meta["valid_until"]) if meta.get("valid_until") else None,
        may_supersede=str(meta["may_supersede"]) if meta.get("may_supersede") else None,
        reason=str(meta["reason"]) if meta.get("reason") else None,
        memory=str(meta["memory"]) if meta.get("memory") else None,
        quote=quote,
    )


def bank_lock(vault: Vault) -> Any:
    return exclusive(lock_path(vault.state_dir, "bank"), vault.config.log.lock_timeout, what="bank")


def memory_lock(vault: Vault) -> Any:
    return exclusive(
        lock_path(vault.state_dir, "memory"), vault.config.log.lock_timeout, what="memory index"
    )


def bank_files(vault: Vault, agent: str | None = None) -> Iterator[tuple[Path, str]]:
    """Bank notes of one agent (or all), oldest file name first: names start with the date."""
    agents = (agent,) if agent else vault.known_agents()
    for name in agents:
        folder = vault.bank_dir(name)
        if folder.is_dir():
            for path in sorted(folder.glob("*.md")):
                if not path.name.startswith("."):
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


def _read_quick(path: Path) -> tuple[dict[str, str], str] | None:
    try:
        return quick_meta(read_text(path, what="bank note"))
    except (OSError, VaultmemError):
        return None


# --- reading -----------------------------------------------------------------------------


def list_bank(
    vault: Vault, *, agent: str | None = None, statuses: Sequence[str] | None = ("pending",)
) -> list[BankFact]:
    """Bank facts (all agents, or one), oldest first. Unreadable notes are skipped."""
    out = []
    for path, _owner in bank_files(vault, agent):
        try:
            note = notes.read(path)
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
        quick = _read_quick(path)
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
    return path, notes.require_ok(notes.read(path), path)


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
    day = today or datetime.now(UTC).date()
    q = signature(query).words if query else frozenset()
    found: list[tuple[float, str, int, PendingFact]] = []
    for order, (path, _owner) in enumerate(bank_files(vault, agent)):
        quick = _read_quick(path)
        if quick is None:
            continue
        meta, body = quick
        if meta.get("status", "pending") != "pending" or is_past(meta.get("valid_until"), day):
            continue
        text, _quote = split_body(body)
        score = 0.0
        if q:
            words = signature(f"{meta.get('name', '')} {text}").words
            score = round(len(q & words) / len(q), 3)
        fact = PendingFact(
            id=meta.get("id", path.stem),
            type=meta.get("type", ""),
            name=meta.get("name", path.stem),
            text=text,
            author=meta.get("author", agent),
            created=meta.get("created", ""),
            path=vault.rel(path),
            evidence=_as_int(meta.get("evidence")),
            score=score if q else None,
        )
        found.append((score, fact.created, order, fact))
    # newest by `created`, not by file name: names sort by slug within a day
    found.sort(key=lambda t: (t[0], t[1], t[2]), reverse=True)
    return [f for _s, _c, _o, f in found[: max(limit, 0)]], len(found)


def pending_count(vault: Vault, agent: str | None = None, *, today: date | None = None) -> int:
    """How many facts wait for review (one agent's, or all). No YAML."""
    day = today or datetime.now(UTC).date()
    count = 0
    for path, _owner in bank_files(vault, agent):
        quick = _read_quick(path)
        if quick is None:
            continue
        meta = quick[0]
        if meta.get("status", "pending") == "pending" and not is_past(meta.get("valid_until"), day):
            count += 1
    return count


@dataclass(frozen=True)
class PendingBlock:
    """The read pack's part for the agent's own unreviewed facts: prompt text and data."""

    text: str
    facts: tuple[PendingFact, ...]
    total: int  # all of the agent's pending facts, shown or not

    def to_dict(self) -> dict[str, Any]:
        return {"total": self.total, "facts": [f.to_dict() for f in self.facts]}


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


# --- dedupe ------------------------------------------------------------------------------


@dataclass
class _Candidate:
    """A fact retain compares against, with what it needs to raise its evidence."""

    match: Match
    sig: Signature
    path: Path
    planned: _Planned | None = None  # set when it is a note of this same batch


@dataclass
class _Planned:
    path: Path
    meta: dict[str, Any]
    body: str


def _memory_candidates(
    vault: Vault, agent: str | None = None, *, include_inactive: bool = False
) -> list[_Candidate]:
    """Shared memories plus `agent`'s own (never another agent's private ones).

    With `include_inactive`, retracted and superseded memories too: a person already decided
    about those, so a repeat is absorbed as a duplicate instead of being proposed again.
    """
    out = []
    for fact in memory.list_facts(vault, include_inactive=include_inactive):
        if fact.agent is not None and fact.agent != agent:
            continue
        out.append(_candidate(vault, "memory", fact, fact.text or fact.description))
    return out


def _bank_candidates(vault: Vault, agent: str) -> list[_Candidate]:
    out = []
    for fact in list_bank(vault, agent=agent, statuses=("pending", "rejected")):
        out.append(_candidate(vault, "bank", fact, fact.text))
    return out


def _candidate(vault: Vault, kind: str, fact: memory.Fact | BankFact, compare: str) -> _Candidate:
    """A memory or bank fact as something retain compares a new text against."""
    match = Match(
        id=fact.id or fact.path,
        kind=kind,
        path=fact.path,
        name=fact.name,
        type=fact.type,
        status=fact.status,
        score=0.0,
        conflict=False,
        text=fact.text,
    )
    return _Candidate(match, signature(compare), vault.root / fact.path)


def rank_matches(
    sig: Signature, candidates: Sequence[_Candidate], floor: float
) -> list[tuple[Match, _Candidate]]:
    scored = []
    for cand in candidates:
        score, conflict = similarity(sig, cand.sig)
        if score >= floor:
            scored.append((replace(cand.match, score=score, conflict=conflict), cand))
    scored.sort(key=lambda t: (-t[0].score, t[0].kind != "bank", t[0].id))
    return scored


def similar_memories(
    vault: Vault, text: str, agent: str | None = None, limit: int = 3, floor: float = 0.2
) -> list[Match]:
    """The active memories (shared, and `agent`'s own) most like `text`."""
    ranked = rank_matches(signature(text), _memory_candidates(vault, agent), floor)
    return [m for m, _c in ranked[:limit]]


def _classify(
    vault: Vault, proposal: Proposal, ranked: list[tuple[Match, _Candidate]]
) -> tuple[str, tuple[Match, _Candidate] | None]:
    settings = vault.config.bank
    for match, cand in ranked:
        # a rejected or retracted fact only absorbs repeats: it is never "superseded"
        if match.score >= settings.duplicate_threshold and not match.conflict:
            return "duplicate", (match, cand)
    for match, cand in ranked:
        if (
            match.score >= settings.related_threshold
            and match.type == proposal.type
            and match.status in LIVE
        ):
            return "may_supersede", (match, cand)
    return "inserted", None


# --- writing -----------------------------------------------------------------------------


def _validate(proposal: Proposal) -> Proposal:
    if proposal.type not in BANK_TYPES:
        raise UsageError(
            f"unknown fact type {proposal.type!r}", f"use one of: {', '.join(BANK_TYPES)}"
        )
    text = proposal.text.strip()
    if not text:
        raise UsageError("the fact text is empty", "pass the fact as TEXT, or '-' to read stdin")
    if len(text) > MAX_TEXT:
        raise UsageError(
            f"the fact is {len(text)} characters long (at most {MAX_TEXT})",
            "a bank fact is a few sentences; split it or keep the detail in a wiki note",
        )
    tags = []
    for tag in proposal.tags:
        clean = tag.strip().lstrip("#")
        if not clean or not TAG_RE.match(clean):
            raise UsageError(
                f"invalid tag {tag!r}", "tags are words joined by '-', '_' or '/', no spaces"
            )
        tags.append(clean)
    valid_until = parse_date(proposal.valid_until) if proposal.valid_until else None
    source = " ".join(proposal.source.split()) if proposal.source else None
    return replace(
        proposal,
        text=text,
        tags=tuple(dict.fromkeys(tags)),
        valid_until=valid_until,
        source=source or None,
    )


def _scrub(vault: Vault, proposal: Proposal) -> tuple[Proposal, tuple[str, ...]]:
    """Run every text field through the shared secret scanner (redact, or refuse: exit 8)."""
    from vaultmem.core.secrets import apply_policy

    policy = vault.config.secrets.policy
    kinds: list[str] = []

    def clean(value: str, what: str) -> str:
        text, findings = apply_policy(value, policy, what=what)
        kinds.extend(f.kind for f in findings)
        return text

    scrubbed = replace(
        proposal,
        text=clean(proposal.text, "fact"),
        quote=clean(proposal.quote, "fact's evidence") if proposal.quote else "",
        source=clean(proposal.source, "fact's source") if proposal.source else None,
        name=clean(proposal.name, "fact's name") if proposal.name else None,
    )
    return scrubbed, tuple(kinds)


def _render_new(
    agent: str, proposal: Proposal, fact_id: str, stamp: str, may_supersede: str | None
) -> tuple[dict[str, Any], str]:
    meta: dict[str, Any] = {
        "name": proposal.name or derive_name(proposal.text),
        "type": proposal.type,
        "status": "pending",
        "id": fact_id,
        "author": agent,
        "created": stamp,
        "updated": stamp,
        "evidence": 1,
    }
    if proposal.source:
        meta["source"] = [proposal.source]
    if proposal.tags:
        meta["tags"] = list(proposal.tags)
    if proposal.valid_until:
        meta["valid_until"] = proposal.valid_until
    if may_supersede:
        meta["may_supersede"] = may_supersede
    body = f"\n{proposal.text}\n"
    if proposal.quote:
        quoted = "\n".join(f"> {ln}" if ln.strip() else ">" for ln in proposal.quote.splitlines())
        body += f"\n{EVIDENCE_HEADING}\n\n{quoted}\n"
    return meta, body


def _new_bank_id(vault: Vault, taken: set[str]) -> str:
    while True:
        candidate = f"b-{secrets.token_hex(4)}"
        if candidate not in taken:
            taken.add(candidate)
            return candidate


def _raised(meta: dict[str, Any], source: str | None, stamp: str) -> dict[str, Any]:
    """Frontmatter updates for one more piece of evidence."""
    sources = list(_as_list(meta.get("source")))
    if source and source not in sources:
        sources.append(source)
    return {"evidence": _as_int(meta.get("evidence")) + 1, "source": sources, "last_seen": stamp}


class _Writes:
    """Every file a batch changes, so a failure midway can put them all back."""

    def __init__(self) -> None:
        self.created: list[Path] = []
        self.replaced: list[tuple[Path, str]] = []

    def create(self, vault: Vault, folder_rel: str, base: str, content: str) -> Path:
        for n in range(1, 1000):
            slug = base if n == 1 else f"{base}-{n}"
            path = vault.path(f"{folder_rel}/{slug}.md")
            if create_exclusive(path, content):
                self.created.append(path)
                return path
        raise VaultmemError(f"too many bank notes named {base!r}", "prune or review the bank")

    def replace_text(self, path: Path, old: str, new: str) -> None:
        atomic_write(path, new)
        self.replaced.append((path, old))

    def undo(self) -> None:
        for path in reversed(self.created):
            path.unlink(missing_ok=True)
        for path, old in reversed(self.replaced):
            with contextlib.suppress(VaultmemError):
                atomic_write(path, old)


def retain_many(
    vault: Vault,
    proposals: Sequence[Proposal],
    *,
    agent: str,
    dry_run: bool = False,
) -> list[RetainResult]:
    """Dedupe and write a batch of proposals: all of them or, on any error, none."""
    agent = vault.require_agent(agent)
    checked = [_validate(p) for p in proposals]
    # secrets first: with policy "refuse" one bad fact stops the batch before any write
    scrubbed = [_scrub(vault, p) for p in checked]
    settings = vault.config.bank
    floor = min(settings.related_threshold, settings.duplicate_threshold)
    with bank_lock(vault):
        candidates = _memory_candidates(vault, agent, include_inactive=True)
        candidates += _bank_candidates(vault, agent)
        taken = {c.match.id for c in candidates} | {
            (_read_quick(p) or ({}, ""))[0].get("id", "") for p, _a in bank_files(vault)
        }
        stamp = now_iso()
        planned: list[_Planned] = []
        raises: dict[Path, tuple[_Candidate, dict[str, Any]]] = {}
        results: list[RetainResult] = []
        for proposal, redacted in scrubbed:
            sig = signature(proposal.text)
            ranked = rank_matches(sig, candidates, floor)
            outcome, hit = _classify(vault, proposal, ranked)
            similar = tuple(m for m, _c in ranked[:3])
            if outcome == "duplicate" and hit is not None:
                match, cand = hit
                base_meta = cand.planned.meta if cand.planned else _current_meta(cand.path, raises)
                update = _raised(base_meta, proposal.source, stamp)
                if cand.planned:
                    cand.planned.meta.update(update)
                else:
                    raises[cand.path] = (cand, {**base_meta, **update})
                results.append(
                    RetainResult(
                        outcome="duplicate",
                        id=None,
                        target=match.id,
                        path=match.path,
                        score=match.score,
                        evidence=update["evidence"],
                        type=proposal.type,
                        text=proposal.text,
                        redacted=redacted,
                        similar=similar,
                        dry_run=dry_run,
                        target_status=match.status,
                    )
                )
                continue
            target = hit[0].id if hit else None
            fact_id = _new_bank_id(vault, taken)
            meta, body = _render_new(agent, proposal, fact_id, stamp, target)
            folder = vault.bank_dir(agent)
            item = _Planned(
                path=folder / f"{stamp[:10]}-{memory.slugify(meta['name'])}", meta=meta, body=body
            )
            planned.append(item)
            candidates.append(
                _Candidate(
                    Match(
                        fact_id,
                        "bank",
                        "",
                        meta["name"],
                        proposal.type,
                        "pending",
                        0.0,
                        False,
                        proposal.text,
                    ),
                    sig,
                    item.path,
                    planned=item,
                )
            )
            results.append(
                RetainResult(
                    outcome=outcome,
                    id=fact_id,
                    target=target,
                    path=None,
                    score=hit[0].score if hit else None,
                    evidence=None,
                    type=proposal.type,
                    text=proposal.text,
                    redacted=redacted,
                    similar=similar,
                    dry_run=dry_run,
                    target_status=hit[0].status if hit else None,
                )
            )
        if dry_run:
            return results
        paths = _write_batch(vault, agent, planned, raises, stamp)
        refresh_review_page(vault)
    by_id = {item.meta["id"]: paths[i] for i, item in enumerate(planned)}
    out = []
    for res in results:
        if res.id in by_id:
            out.append(replace(res, path=vault.rel(by_id[res.id])))
        elif res.outcome == "duplicate" and res.id is None and res.target in by_id:
            # duplicate of a fact written earlier in this batch
            out.append(replace(res, path=vault.rel(by_id[res.target])))
        else:
            out.append(res)
    return out


def _current_meta(
    path: Path, raises: dict[Path, tuple[_Candidate, dict[str, Any]]]
) -> dict[str, Any]:
    if path in raises:
        return raises[path][1]
    return dict(notes.require_ok(notes.read(path), path).meta)


def _write_batch(
    vault: Vault,
    agent: str,
    planned: list[_Planned],
    raises: dict[Path, tuple[_Candidate, dict[str, Any]]],
    stamp: str,
) -> list[Path]:
    writes = _Writes()
    folder_rel = vault.rel(vault.bank_dir(agent))
    paths: list[Path] = []
    try:
        for item in planned:
            item.meta["updated"] = stamp
            content = notes.render(item.meta, item.body)
            paths.append(writes.create(vault, folder_rel, item.path.name, content))
        bank_raises = [(p, m) for p, (c, m) in raises.items() if c.match.kind == "bank"]
        memory_raises = [(p, m) for p, (c, m) in raises.items() if c.match.kind == "memory"]
        for path, meta in bank_raises:
            _raise_note(writes, path, meta)
        if memory_raises:
            # memory notes are also edited by remember/retract: hold their lock too
            with memory_lock(vault):
                for path, meta in memory_raises:
                    _raise_note(writes, path, meta)
    except BaseException:
        writes.undo()
        raise
    return paths


def _raise_note(writes: _Writes, path: Path, meta: dict[str, Any]) -> None:
    old = read_text(path, what="note")
    keys = ("evidence", "source", "last_seen")
    new = notes.set_frontmatter(old, {k: meta[k] for k in keys}, path=path)
    writes.replace_text(path, old, new)


def retain(
    vault: Vault,
    text: str,
    *,
    agent: str,
    type_: str,
    tags: Sequence[str] = (),
    source: str | None = None,
    valid_until: str | None = None,
    name: str | None = None,
    dry_run: bool = False,
) -> RetainResult:
    """Propose one fact into the agent's bank: `inserted`, `duplicate <id>` or `may supersede <id>`."""
    proposal = Proposal(
        text=text, type=type_, tags=tuple(tags), source=source, valid_until=valid_until, name=name
    )
    return retain_many(vault, [proposal], agent=agent, dry_run=dry_run)[0]


# --- hygiene -----------------------------------------------------------------------------


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
    return fact_from_note(vault, path, notes.read(path))


def prune(
    vault: Vault,
    *,
    older_than_days: int | None = None,
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
    moment = now or datetime.now(UTC)
    cutoff = moment - timedelta(days=days)
    expired = []
    with bank_lock(vault):
        for path, _owner in bank_files(vault, agent):
            quick = _read_quick(path)
            if quick is None or quick[0].get("status", "pending") != "pending":
                continue
            meta = quick[0]
            seen = [_parse_time(meta.get(k, "")) for k in ("created", "last_seen")]
            latest = max((t for t in seen if t is not None), default=None)
            why = None
            if is_past(meta.get("valid_until"), moment.date()):
                why = f"valid_until {meta['valid_until']} has passed"
            elif latest is not None and latest < cutoff:
                why = f"pending for more than {days} days"
            if why is None:
                continue
            updates = {
                "status": "expired",
                "expired_at": now_iso(),
                "reason": why,
                "updated": now_iso(),
            }
            if dry_run:
                note = notes.read(path)
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


# --- the Review.md page ------------------------------------------------------------------


def review_page_text(items: Sequence[BankFact] = ()) -> str:
    """The page `init` creates: a list vaultmem keeps current, and a Dataview query."""
    return (
        "---\ntags:\n  - vaultmem/review\n---\n\n"
        "# Review\n\n"
        "Facts agents proposed with `vaultmem retain`, waiting for a person. Review them with\n"
        "`vaultmem promote` in a terminal, or here: open a fact, set its `status` property to\n"
        "`approved` or `rejected` (add a `reason:`), then run\n"
        "`vaultmem promote apply --reviewer YOUR-NAME`.\n\n"
        "## Pending\n\n"
        f"{_review_block(items)}\n\n"
        "## With Dataview\n\n"
        "For people who use the Dataview plugin; the list above works without it.\n\n"
        "```dataview\n"
        "TABLE type, author, evidence, created\n"
        'FROM "agents"\n'
        'WHERE status = "pending" AND contains(file.folder, "/bank")\n'
        "SORT created DESC\n"
        "```\n"
    )


def _review_block(items: Sequence[BankFact]) -> str:
    lines = [REVIEW_START]
    if not items:
        lines.append("_Nothing is waiting for review._")
    for fact in items:
        target = fact.path.removesuffix(".md")
        extra = f" · evidence {fact.evidence}" if fact.evidence > 1 else ""
        lines.append(
            f"- [[{target}|{fact.name}]] — {fact.type} · {fact.author}{extra} · `{fact.id}`"
        )
    lines.append(REVIEW_END)
    return "\n".join(lines)


def refresh_review_page(vault: Vault) -> bool:
    """Rewrite the pending list in Review.md (only between its markers). Caller holds the bank lock.

    A vault without Review.md is left alone (init creates it); markers a person deleted are
    added again at the end of the page.
    """
    path = vault.path(REVIEW_PAGE)
    if not path.is_file():
        return False
    try:
        text = read_text(path, what="review page")
    except VaultmemError:
        return False
    items = [f for f in list_bank(vault) if not is_past(f.valid_until, datetime.now(UTC).date())]
    items.sort(key=lambda f: f.created, reverse=True)
    block = _review_block(items)
    start, end = text.find(REVIEW_START), text.find(REVIEW_END)
    if start != -1 and end > start:
        new = text[:start] + block + text[end + len(REVIEW_END) :]
    else:
        new = text.rstrip("\n") + "\n\n## Pending\n\n" + block + "\n"
    if new != text:
        try:
            atomic_write(path, new)
        except VaultmemError:
            return False  # the facts are written; a read-only page must not turn that into an error
    return True
