"""Is a new fact a repeat, an update of an older one, or new? Deterministic text similarity
(`core.similarity`) against the shared memories, the agent's own memories and its own pending
and rejected facts: the same answer on every machine, no index and no model.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from vaultmem.bank.model import LIVE, BankFact, Match, Proposal
from vaultmem.bank.similarity import Signature, signature, similarity
from vaultmem.bank.store import list_bank
from vaultmem.core.records import evolve, record
from vaultmem.core.vault import Vault
from vaultmem.memory import facts


@record(frozen=False)
class Candidate:
    """A fact retain compares against, with what it needs to raise its evidence."""

    match: Match
    sig: Signature
    path: Path
    planned: Planned | None = None  # set when it is a note of this same batch


@record(frozen=False)
class Planned:
    path: Path
    meta: dict[str, Any]
    body: str


def memory_candidates(
    vault: Vault, agent: str | None = None, *, include_inactive: bool = False
) -> list[Candidate]:
    """Shared memories plus `agent`'s own (never another agent's private ones).

    With `include_inactive`, retracted and superseded memories too: a person already decided
    about those, so a repeat is absorbed as a duplicate instead of being proposed again.
    """
    out = []
    for fact in facts.memories(vault, include_inactive=include_inactive):
        if fact.agent is not None and fact.agent != agent:
            continue
        out.append(_candidate(vault, "memory", fact, fact.text or fact.description))
    return out


def bank_candidates(vault: Vault, agent: str) -> list[Candidate]:
    out = []
    for fact in list_bank(vault, agent=agent, statuses=("pending", "rejected")):
        out.append(_candidate(vault, "bank", fact, fact.text))
    return out


def _candidate(vault: Vault, kind: str, fact: facts.Fact | BankFact, compare: str) -> Candidate:
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
    return Candidate(match, signature(compare, vault.config.language), vault.root / fact.path)


def rank_matches(
    sig: Signature, candidates: Sequence[Candidate], floor: float
) -> list[tuple[Match, Candidate]]:
    scored = []
    for cand in candidates:
        score, conflict = similarity(sig, cand.sig)
        if score >= floor:
            scored.append((evolve(cand.match, score=score, conflict=conflict), cand))
    scored.sort(key=lambda t: (-t[0].score, t[0].kind != "bank", t[0].id))
    return scored


def similar_memories(
    vault: Vault, text: str, agent: str | None = None, limit: int = 3, floor: float = 0.2
) -> list[Match]:
    """The active memories (shared, and `agent`'s own) most like `text`."""
    ranked = rank_matches(
        signature(text, vault.config.language), memory_candidates(vault, agent), floor
    )
    return [m for m, _c in ranked[:limit]]


def classify(
    vault: Vault, proposal: Proposal, ranked: list[tuple[Match, Candidate]]
) -> tuple[str, tuple[Match, Candidate] | None]:
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


def source_document(source: str) -> str:
    """The document a source cites: `session.jsonl#T3-T5` -> `session.jsonl`."""
    return source.split("#", 1)[0]


def distinct_source(known: Sequence[str], source: str) -> bool:
    """Is `source` evidence from a document none of `known` cites? Two runs over one
    session (a resume queues its later turns) are one source, whatever turns they cite."""
    doc = source_document(source)
    return all(source_document(k) != doc for k in known)
