"""The review gate: people approve, edit, merge or reject what agents retained.

Every action starts with `resolve_reviewer`, which refuses (exit 8) when an agent is acting
(`--agent` / VAULTMEM_AGENT), when the reviewer is an agent's name or is not listed under
`reviewers` in vaultmem.toml, and (per fact) when the reviewer is the fact's author.

This is a guard against mistakes and against an agent following its instructions literally; it is
not a security boundary. An agent that runs as the same OS user can edit the notes directly.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from vaultmem.bank import dedupe, model, review_page, store
from vaultmem.bank.similarity import normalise, signature
from vaultmem.core import clock, intents, notes
from vaultmem.core.choices import choose
from vaultmem.core.errors import UsageError, VaultmemError
from vaultmem.core.fsio import atomic_write, read_text
from vaultmem.core.records import record
from vaultmem.core.vault import Vault, resolve_reviewer
from vaultmem.memory import facts

REVIEWABLE = ("pending", "expired")


@record
class Decision:
    """What one review action did."""

    action: str  # "approved", "merged", "rejected", "edited"
    fact: model.BankFact  # the bank fact after the action
    reviewer: str
    memory: facts.Fact | None = None  # the memory it became (or was merged into)
    decision_log: str | None = None  # id of the decision-log entry, when one was written
    warnings: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "action": self.action,
            "reviewer": self.reviewer,
            "fact": self.fact.to_dict(),
            "memory": self.memory.to_dict() if self.memory else None,
            "decision_log": self.decision_log,
            "warnings": list(self.warnings),
        }


@record
class ApplyProblem:
    path: str
    id: str
    message: str

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@record
class QueueItem:
    fact: model.BankFact
    similar: tuple[model.Match, ...]

    def to_dict(self) -> dict[str, Any]:
        return {**self.fact.to_dict(), "similar": [m.to_dict() for m in self.similar]}


def _load(vault: Vault, ref: str) -> tuple[Path, model.BankFact]:
    path, note = store.find_bank(vault, ref)
    return path, model.fact_from_note(vault, path, note)


def _reviewable(fact: model.BankFact, allowed: tuple[str, ...] = REVIEWABLE) -> None:
    if fact.status not in allowed:
        where = f" as {fact.memory}" if fact.memory else ""
        raise UsageError(
            f"{fact.id} is already {fact.status}{where}",
            "only pending (or expired) facts are reviewed; see: vaultmem promote list",
        )


def _link(vault: Vault, fact: facts.Fact) -> str:
    return f"[[{fact.path.removesuffix('.md')}|{fact.name}]]"


def review_queue(vault: Vault, *, agent: str | None = None, similar: int = 3) -> list[QueueItem]:
    """Pending facts, oldest first, each with the memories most like it."""
    if agent:
        vault.require_agent(agent)
    facts = store.list_bank(vault, agent=agent)
    if not facts or similar <= 0:
        return [QueueItem(f, ()) for f in facts]
    by_author: dict[str, list[Any]] = {}
    out = []
    for fact in sorted(facts, key=lambda f: (f.created, f.path)):
        if fact.author not in by_author:  # shared memories and the author's own
            by_author[fact.author] = dedupe.memory_candidates(vault, fact.author)
        ranked = dedupe.rank_matches(
            signature(fact.text, vault.config.language), by_author[fact.author], 0.2
        )
        out.append(QueueItem(fact, tuple(m for m, _c in ranked[:similar])))
    return out


def _decision_log(
    vault: Vault, fact: model.BankFact, reviewer: str, made: facts.Fact
) -> tuple[str | None, str | None]:
    """An approved `decision` also goes on the decision log: (entry id, warning).

    The entry is the proposing agent's (it is signed with that agent's key, on this machine). If
    it cannot be written (no key here, lock timeout) the approval stands and the reason is
    returned as a warning: `vaultmem decide` can add it later.
    """
    if fact.type != "decision":
        return None, None
    from vaultmem.nexus.decisions import decide

    limit = vault.config.log.max_summary
    single = " ".join(fact.text.split())
    summary = single if len(single) <= limit else fact.name
    why = f"Approved by {reviewer} from bank fact {fact.id}; memory {made.id}."
    if summary != single:
        why += f"\n\n{fact.text}"
    try:
        # bank tags and decision tags share one grammar (core.tags): none is dropped here
        result = decide(vault, fact.author, summary, why=why, tags=fact.tags)
    except VaultmemError as exc:
        return None, f"approved, but no decision-log entry was written: {exc}"
    return result.decision.id, None


def approve_one(
    vault: Vault,
    path: Path,
    fact: model.BankFact,
    reviewer: str,
    *,
    scope: str,
    name: str | None,
    description: str | None,
    supersedes: str | None = None,
) -> Decision:
    scope = choose(facts.Scope, scope, "scope")
    if fact.consolidates:
        # a consolidation keeps the scope of the memories it replaces, and replaces them all
        scope, supersedes = _consolidated_scope(vault, fact), fact.consolidates[0]
    stamp = clock.stamp()
    extra: dict[str, Any] = {
        "approved_by": reviewer,
        "approved_at": stamp,
        "source_bank_id": fact.id,
        "evidence": fact.evidence,
    }
    if fact.sources:
        extra["source"] = list(fact.sources)
    if fact.tags:
        extra["tags"] = list(fact.tags)
    if fact.valid_until:
        extra["valid_until"] = fact.valid_until
    if fact.consolidates:
        extra["consolidates"] = list(fact.consolidates)
    step = intents.intent(vault, "approval", {"bank": vault.rel(path), "bank_id": fact.id})
    with step:
        return _approve_in_step(
            vault, path, fact, reviewer, scope, name, description, supersedes, extra, stamp
        )


def _approve_in_step(
    vault: Vault,
    path: Path,
    fact: model.BankFact,
    reviewer: str,
    scope: str,
    name: str | None,
    description: str | None,
    supersedes: str | None,
    extra: dict[str, Any],
    stamp: str,
) -> Decision:
    made = facts.write(
        vault,
        fact.text,
        name=(name or fact.name).strip(),
        type_=fact.type,
        description=description,
        scope=scope,
        agent=fact.author if scope == "agent" else None,
        author=fact.author,
        supersedes=supersedes,
        extra=extra,
    )
    try:
        after = _mark_approved(vault, path, reviewer, stamp, made)
    except BaseException:
        facts.forget(vault, made.id)  # never leave a memory whose bank note still says pending
        raise
    for other in fact.consolidates[1:]:
        facts.mark_superseded(vault, other, made)
    logged, warning = _decision_log(vault, after, reviewer, made)
    if logged:
        after = store.set_status(vault, path, {"decision_id": logged})
    return Decision("approved", after, reviewer, made, logged, (warning,) if warning else ())


def _mark_approved(
    vault: Vault, path: Path, reviewer: str, stamp: str, made: facts.Fact
) -> model.BankFact:
    return store.set_status(
        vault,
        path,
        {
            "status": "approved",
            "approved_by": reviewer,
            "approved_at": stamp,
            "memory": _link(vault, made),
            "memory_id": made.id,
            "updated": stamp,
        },
    )


def recover(vault: Vault) -> list[str]:
    """Finish the approvals a killed process left half done (`core/intents.py`): a memory that
    landed (note and line) whose bank note was not marked gets its mark, so a retry does not
    write it twice; one that did not land leaves the bank note as it was. Caller holds the bank
    lock; the memory index's own half-done writes are recovered first."""
    steps = intents.pending(vault, "approval")
    if not steps:
        return []
    done: list[str] = []
    with facts.index_lock(vault):
        done += facts.recover(vault)
    made: dict[str, tuple[Path, notes.Note]] = {}
    for note_path, _owner in facts.fact_files(vault):
        note = vault.read_note(note_path)
        if note.meta.get("source_bank_id"):
            made[str(note.meta["source_bank_id"])] = (note_path, note)
    for record_path, data in steps:
        bank_id = str(data.get("bank_id") or "")
        try:
            path, fact = _load(vault, bank_id)
        except VaultmemError:
            path = None
        if bank_id in made and path is not None and not fact.memory:
            note_path, note = made[bank_id]
            memory = facts.fact_at(vault, note_path, note)
            meta = note.meta
            _mark_approved(vault, path, str(meta["approved_by"]), str(meta["approved_at"]), memory)
            done.append(f"finished an approval cut short: marked {fact.path} approved")
        intents.done(record_path)
    return done


def _consolidated_scope(vault: Vault, fact: model.BankFact) -> str:
    """`agent` when the memories a consolidation replaces are the author's own, else `shared`;
    every one of them must still be active (UsageError otherwise: reject the proposal)."""
    owners = set()
    for ref in fact.consolidates:
        path, note = facts.find_fact(vault, ref)
        notes.require_ok(note, path)
        status = str(note.meta.get("status") or "active")
        if status != "active":
            raise UsageError(
                f"{fact.id} consolidates {ref}, which is {status} now",
                f"reject it: vaultmem promote reject {fact.id} --why 'already changed'",
            )
        parts = vault.rel(path).split("/")
        owners.add(parts[1] if parts[0] == "agents" else None)
    if owners == {fact.author}:
        return "agent"
    if owners == {None}:
        return "shared"
    raise UsageError(
        f"{fact.id} consolidates memories of different scopes", "reject it and merge them by hand"
    )


def approve(
    vault: Vault,
    ref: str,
    *,
    reviewer: str | None,
    acting_agent: str | None = None,
    scope: str = "shared",
    name: str | None = None,
    description: str | None = None,
    supersedes: str | None = None,
) -> Decision:
    """Turn a bank fact into a memory note + its MEMORY.md line; mark the bank note approved.

    `supersedes` (a memory id, typically the fact's `may_supersede`) keeps that memory but marks
    it superseded by the new one.
    """
    who = resolve_reviewer(vault, reviewer, acting_agent=acting_agent)
    with store.bank_lock(vault):
        recover(vault)
        path, fact = _load(vault, ref)
        _reviewable(fact)
        decision = approve_one(
            vault,
            path,
            fact,
            who,
            scope=scope,
            name=name,
            description=description,
            supersedes=supersedes,
        )
        review_page.refresh_review_page(vault)
    return decision


def reason_text(why: str | None) -> str:
    reason = facts.one_line(why or "", 500, "reason")
    if not reason:
        raise UsageError("a rejection needs a reason", "pass --why 'what is wrong with it'")
    return reason


def reject(
    vault: Vault,
    ref: str,
    *,
    why: str,
    reviewer: str | None,
    acting_agent: str | None = None,
) -> Decision:
    """Keep the bank note, `status: rejected` with the reason: retain will not propose it again."""
    who = resolve_reviewer(vault, reviewer, acting_agent=acting_agent)
    reason = reason_text(why)
    with store.bank_lock(vault):
        path, fact = _load(vault, ref)
        _reviewable(fact)
        decision = reject_one(vault, path, who, reason)
        review_page.refresh_review_page(vault)
    return decision


def reject_one(vault: Vault, path: Path, reviewer: str, reason: str) -> Decision:
    stamp = clock.stamp()
    after = store.set_status(
        vault,
        path,
        {
            "status": "rejected",
            "reason": reason,
            "rejected_by": reviewer,
            "rejected_at": stamp,
            "updated": stamp,
        },
    )
    return Decision("rejected", after, reviewer)


def merge(
    vault: Vault,
    ref: str,
    into: str,
    *,
    reviewer: str | None,
    acting_agent: str | None = None,
) -> Decision:
    """Fold a bank fact into an existing memory: its text under the memory's body, evidence summed."""
    who = resolve_reviewer(vault, reviewer, acting_agent=acting_agent)
    with store.bank_lock(vault):
        path, fact = _load(vault, ref)
        _reviewable(fact)
        stamp = clock.stamp()
        with store.memory_lock(vault):
            mpath, mnote = facts.find_fact(vault, into)
            notes.require_ok(mnote, mpath)
            if str(mnote.meta.get("status") or "active") != "active":
                raise UsageError(
                    f"{into} is {mnote.meta.get('status')}; merge into an active memory",
                    "list them with: vaultmem memories",
                )
            old = mnote.text  # the text find_fact parsed: head and body must come from one read
            body = mnote.body
            if normalise(fact.text) not in normalise(body):
                body = body.rstrip("\n") + f"\n\n{fact.text}\n"
            head = old[: len(old) - len(mnote.body)] if mnote.body else old
            sources = list(model.as_list(mnote.meta.get("source")))
            sources += [s for s in fact.sources if s not in sources]
            merged_from = [*model.as_list(mnote.meta.get("merged_from")), fact.id]
            updates: dict[str, Any] = {
                "evidence": model.as_int(mnote.meta.get("evidence")) + fact.evidence,
                "merged_from": merged_from,
                "updated": stamp,
            }
            if sources:
                updates["source"] = sources
            new = notes.set_frontmatter(head + body, updates, path=mpath)
            atomic_write(mpath, new)
            target = facts.memories(vault)
            merged_fact = next(f for f in target if f.path == vault.rel(mpath))
        after = store.set_status(
            vault,
            path,
            {
                "status": "approved",
                "approved_by": who,
                "approved_at": stamp,
                "merged_into": merged_fact.id,
                "memory": _link(vault, merged_fact),
                "memory_id": merged_fact.id,
                "updated": stamp,
            },
        )
        review_page.refresh_review_page(vault)
    return Decision("merged", after, who, merged_fact)


def edit(
    vault: Vault,
    ref: str,
    text: str,
    *,
    reviewer: str | None,
    acting_agent: str | None = None,
) -> Decision:
    """Replace a pending fact's text (its evidence section stays); secrets are scanned again."""
    who = resolve_reviewer(vault, reviewer, acting_agent=acting_agent)
    clean = text.strip()
    if not clean:
        raise UsageError("the edited fact is empty", "nothing was changed")
    from vaultmem.core.secrets import apply_policy

    clean, _findings = apply_policy(clean, vault.config.secrets.policy, what="edited fact")
    with store.bank_lock(vault):
        path, fact = _load(vault, ref)
        _reviewable(fact)
        old = read_text(path, what="bank note")
        note = notes.require_ok(notes.parse(old), path)
        _text, quote = model.split_body(note.body)
        body = f"\n{clean}\n"
        if quote:
            body += f"\n{model.EVIDENCE_HEADING}\n\n{quote}\n"
        head = old[: len(old) - len(note.body)] if note.body else old
        new = notes.set_frontmatter(
            head + body, {"edited_by": who, "updated": clock.stamp()}, path=path
        )
        atomic_write(path, new)
        after = model.fact_from_note(vault, path, vault.read_note(path))
    return Decision("edited", after, who)
