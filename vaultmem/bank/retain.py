"""`retain`: propose facts into an agent's bank, deduped, with every field through the secret
scanner first; a batch is written whole or not at all.
"""

from __future__ import annotations

import contextlib
import secrets
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from vaultmem.bank.dedupe import (
    Candidate,
    Planned,
    bank_candidates,
    classify,
    memory_candidates,
    rank_matches,
)
from vaultmem.bank.model import (
    EVIDENCE_HEADING,
    MAX_TEXT,
    Match,
    Proposal,
    RetainResult,
    as_int,
    as_list,
    derive_name,
)
from vaultmem.bank.review_page import refresh_review_page
from vaultmem.bank.similarity import signature
from vaultmem.bank.store import bank_files, bank_lock, memory_lock, read_quick
from vaultmem.core import clock, notes
from vaultmem.core.choices import choose
from vaultmem.core.errors import UsageError, VaultmemError
from vaultmem.core.fsio import atomic_write, read_text
from vaultmem.core.records import evolve
from vaultmem.core.secrets import Finding
from vaultmem.core.tags import clean_tags
from vaultmem.core.vault import Vault
from vaultmem.memory import facts
from vaultmem.memory.facts import FactType


def _validate(proposal: Proposal) -> Proposal:
    choose(FactType, proposal.type, "fact type")
    text = proposal.text.strip()
    if not text:
        raise UsageError("the fact text is empty", "pass the fact as TEXT, or '-' to read stdin")
    if len(text) > MAX_TEXT:
        raise UsageError(
            f"the fact is {len(text)} characters long (at most {MAX_TEXT})",
            "a bank fact is a few sentences; split it or keep the detail in a wiki note",
        )
    tags = clean_tags(proposal.tags)
    valid_until = clock.parse_date(proposal.valid_until) if proposal.valid_until else None
    source = " ".join(proposal.source.split()) if proposal.source else None
    return evolve(
        proposal,
        text=text,
        tags=tags,
        valid_until=valid_until,
        source=source or None,
    )


def _scrub(vault: Vault, proposal: Proposal) -> tuple[Proposal, tuple[Finding, ...]]:
    """Every field through the one secret policy (redact, or refuse: exit 8); a secret in the
    name (it becomes the file name) or in a tag is refused under every policy."""
    from vaultmem.core.secrets import scrub

    texts = {"fact": proposal.text}
    if proposal.quote:
        texts["fact's evidence"] = proposal.quote
    if proposal.source:
        texts["fact's source"] = proposal.source
    identifiers = {f"tag {n}": t for n, t in enumerate(proposal.tags, 1)}
    if proposal.name:
        identifiers["fact's name"] = proposal.name
    cleaned, found = scrub(vault.config.secrets.policy, texts, identifiers=identifiers, what="fact")
    scrubbed = evolve(
        proposal,
        text=cleaned["fact"],
        quote=cleaned.get("fact's evidence", ""),
        source=cleaned.get("fact's source"),
    )
    return scrubbed, tuple(found)


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
    from vaultmem.bank.dedupe import distinct_source

    sources = list(as_list(meta.get("source")))
    evidence = as_int(meta.get("evidence"))
    if source and distinct_source(sources, source):
        evidence += 1  # evidence counts distinct sources, not how often one was retained
    elif not source:
        evidence += 1  # a fact retained by hand, without a source: each time is evidence
    if source and source not in sources:
        sources.append(source)
    return {"evidence": evidence, "source": sources, "last_seen": stamp}


class _Writes:
    """Every file a batch changes, so a failure midway can put them all back."""

    def __init__(self) -> None:
        self.created: list[Path] = []
        self.replaced: list[tuple[Path, str]] = []

    def create(self, vault: Vault, folder_rel: str, base: str, content: str) -> Path:
        path = facts.create_note(vault, folder_rel, base, content)
        if path is not None:
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
        candidates = memory_candidates(vault, agent, include_inactive=True)
        candidates += bank_candidates(vault, agent)
        taken = {c.match.id for c in candidates} | {
            (read_quick(vault, p) or ({}, ""))[0].get("id", "") for p, _a in bank_files(vault)
        }
        stamp = clock.stamp()
        planned: list[Planned] = []
        raises: dict[Path, tuple[Candidate, dict[str, Any]]] = {}
        results: list[RetainResult] = []
        for proposal, redacted in scrubbed:
            sig = signature(proposal.text, vault.config.language)
            ranked = rank_matches(sig, candidates, floor)
            outcome, hit = classify(vault, proposal, ranked)
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
                        findings=redacted,
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
            item = Planned(
                path=folder / f"{stamp[:10]}-{facts.slugify(meta['name'])}", meta=meta, body=body
            )
            planned.append(item)
            candidates.append(
                Candidate(
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
                    findings=redacted,
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
            out.append(evolve(res, path=vault.rel(by_id[res.id])))
        elif res.outcome == "duplicate" and res.id is None and res.target in by_id:
            # duplicate of a fact written earlier in this batch
            out.append(evolve(res, path=vault.rel(by_id[res.target])))
        else:
            out.append(res)
    return out


def _current_meta(
    path: Path, raises: dict[Path, tuple[Candidate, dict[str, Any]]]
) -> dict[str, Any]:
    if path in raises:
        return raises[path][1]
    return dict(notes.require_ok(notes.read(path), path).meta)


def _write_batch(
    vault: Vault,
    agent: str,
    planned: list[Planned],
    raises: dict[Path, tuple[Candidate, dict[str, Any]]],
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
