"""The review gate: people approve, edit, merge or reject what agents retained.

Every action starts with `resolve_reviewer`, which refuses (exit 8) when an agent is acting
(`--agent` / VAULTMEM_AGENT), when the reviewer is an agent's name or is not listed under
`reviewers` in vaultmem.toml, and (per fact) when the reviewer is the fact's author.

This is a guard against mistakes and against an agent following its instructions literally; it is
not a security boundary. An agent that runs as the same OS user can edit the notes directly.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vaultmem.bank import dedupe, model, review_page, store
from vaultmem.core import clock, notes
from vaultmem.core.choices import choose
from vaultmem.core.errors import ReviewRefusedError, UsageError, VaultmemError
from vaultmem.core.fsio import atomic_write, read_text
from vaultmem.core.similarity import normalise, signature
from vaultmem.core.vault import Vault, resolve_reviewer
from vaultmem.memory import facts

REVIEWABLE = ("pending", "expired")


@dataclass(frozen=True)
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


@dataclass(frozen=True)
class ApplyProblem:
    path: str
    id: str
    message: str

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass(frozen=True)
class Planned:
    """One thing `promote apply` would do, with every field it acts on: each of them is in a
    file an agent can edit, so a person sees them all before anything happens."""

    action: str  # "approve" or "reject"
    id: str
    path: str
    author: str  # from the bank folder the note is in, never from its frontmatter
    type: str
    text: str
    scope: str = "shared"
    name: str | None = None
    supersedes: str | None = None
    supersedes_name: str | None = None  # the memory that would be retired
    reason: str | None = None
    claimed_author: str | None = None  # a frontmatter `author:` that is not the folder's

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)

    def describe(self) -> str:
        lines = [f"{self.action} {self.id} ({self.type} by {self.author}, {self.path})"]
        if self.action == "approve":
            lines.append(f"  as a {self.scope} memory named {self.name!r}")
            if self.supersedes:
                lines.append(
                    f"  SUPERSEDES {self.supersedes} ({self.supersedes_name or 'unknown'}),"
                    " which would be marked superseded"
                )
        else:
            lines.append(f"  reason: {self.reason}")
        if self.claimed_author:
            lines.append(
                f"  note: its frontmatter says author {self.claimed_author!r}; the author is "
                f"{self.author}, whose bank it is in"
            )
        lines += [f"  | {ln}" for ln in self.text.splitlines()]
        return "\n".join(lines)


@dataclass(frozen=True)
class ApplyReport:
    """What `promote apply` carried out, and what it could not (left as the person wrote it)."""

    done: tuple[Decision, ...]
    problems: tuple[ApplyProblem, ...]
    planned: tuple[Planned, ...] = ()  # under --dry-run: what would be done
    dry_run: bool = False
    skipped: tuple[Planned, ...] = ()  # what the person declined when asked

    def to_dict(self) -> dict[str, Any]:
        return {
            "done": [d.to_dict() for d in self.done],
            "problems": [p.to_dict() for p in self.problems],
            "planned": [p.to_dict() for p in self.planned],
            "skipped": [p.to_dict() for p in self.skipped],
            "dry_run": self.dry_run,
        }


@dataclass(frozen=True)
class QueueItem:
    fact: model.BankFact
    similar: tuple[model.Match, ...]

    def to_dict(self) -> dict[str, Any]:
        return {**self.fact.to_dict(), "similar": [m.to_dict() for m in self.similar]}


# --- the gate ----------------------------------------------------------------------------


def _not_self(fact: model.BankFact, reviewer: str) -> None:
    if fact.author == reviewer:
        raise ReviewRefusedError(
            f"refused: {reviewer} proposed {fact.id} and cannot approve it", "ask another reviewer"
        )


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


# --- queue -------------------------------------------------------------------------------


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
        ranked = dedupe.rank_matches(signature(fact.text), by_author[fact.author], 0.2)
        out.append(QueueItem(fact, tuple(m for m, _c in ranked[:similar])))
    return out


# --- actions -----------------------------------------------------------------------------


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


def _approve(
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
    _not_self(fact, reviewer)
    scope = choose(facts.Scope, scope, "scope")
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
    made = facts.remember(
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
        after = store.set_status(
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
    except BaseException:
        facts.forget(vault, made.id)  # never leave a memory whose bank note still says pending
        raise
    logged, warning = _decision_log(vault, after, reviewer, made)
    if logged:
        after = store.set_status(vault, path, {"decision_id": logged})
    return Decision("approved", after, reviewer, made, logged, (warning,) if warning else ())


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
        path, fact = _load(vault, ref)
        _reviewable(fact)
        decision = _approve(
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


def _reason(why: str | None) -> str:
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
    reason = _reason(why)
    with store.bank_lock(vault):
        path, fact = _load(vault, ref)
        _reviewable(fact)
        _not_self(fact, who)
        decision = _reject(vault, path, who, reason)
        review_page.refresh_review_page(vault)
    return decision


def _reject(vault: Vault, path: Path, reviewer: str, reason: str) -> Decision:
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
        _not_self(fact, who)
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
            target = facts.list_facts(vault)
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
        after = model.fact_from_note(vault, path, notes.read(path))
    return Decision("edited", after, who)


def _plan(vault: Vault, path: Path, note: notes.Note, who: str) -> Planned | None:
    """What applying one bank note would do, or None when it needs nothing."""
    meta = note.meta
    fact = model.fact_from_note(vault, path, note)
    claimed = str(meta.get("author") or "")
    common: dict[str, Any] = {
        "id": fact.id,
        "path": fact.path,
        "author": fact.author,
        "type": fact.type,
        "text": fact.text,
        "claimed_author": claimed if claimed and claimed != fact.author else None,
    }
    if fact.status == "approved" and not meta.get("memory") and not meta.get("memory_id"):
        _not_self(fact, who)
        sup = str(meta["supersedes"]) if meta.get("supersedes") else None
        sup_name = None
        if sup:
            try:
                _p, old = facts.find_fact(vault, sup)
                sup_name = str(old.meta.get("name") or "")
            except VaultmemError:
                sup_name = None
        return Planned(
            "approve",
            scope=choose(facts.Scope, str(meta.get("scope") or "shared"), "scope"),
            name=fact.name,
            supersedes=sup,
            supersedes_name=sup_name,
            **common,
        )
    if fact.status == "rejected" and not meta.get("rejected_at"):
        _not_self(fact, who)
        return Planned("reject", reason=_reason(str(meta.get("reason") or "")), **common)
    return None


def apply(
    vault: Vault,
    *,
    reviewer: str | None,
    acting_agent: str | None = None,
    dry_run: bool = False,
    confirm: Callable[[Planned], bool] | None = None,
) -> ApplyReport:
    """Carry out the `status: approved` / `status: rejected` a person set in Obsidian.

    Every field it acts on (status, scope, name, supersedes) is in a note an agent can edit
    too, so each planned action is shown in full and carried out only when `confirm` says
    yes (the CLI asks, or takes `--yes` after a `--dry-run`). With `dry_run` nothing changes.
    The author is the agent whose bank folder holds the note, never its frontmatter's claim.
    A note that cannot be carried out is reported and left as it is; the others still go.
    """
    who = resolve_reviewer(vault, reviewer, acting_agent=acting_agent)
    if confirm is None and not dry_run:
        raise UsageError(
            "promote apply needs each action confirmed",
            "look at: vaultmem promote apply --dry-run, then run it again with --yes (or in a "
            "terminal, to be asked one by one)",
        )
    done: list[Decision] = []
    problems: list[ApplyProblem] = []
    planned: list[Planned] = []
    skipped: list[Planned] = []
    with store.bank_lock(vault):
        for path, _owner in store.bank_files(vault):
            quick = store.read_quick(path)
            if quick is None or quick[0].get("status") not in ("approved", "rejected"):
                continue
            try:
                note = notes.require_ok(notes.read(path), path)
                plan = _plan(vault, path, note, who)
            except VaultmemError as exc:
                problems.append(ApplyProblem(vault.rel(path), quick[0].get("id", ""), str(exc)))
                continue
            if plan is None:
                continue
            if dry_run:
                planned.append(plan)
                continue
            assert confirm is not None
            if not confirm(plan):
                skipped.append(plan)
                continue
            try:
                fact = model.fact_from_note(vault, path, note)
                if plan.action == "approve":
                    done.append(
                        _approve(
                            vault,
                            path,
                            fact,
                            who,
                            scope=plan.scope,
                            name=None,
                            description=None,
                            supersedes=plan.supersedes,
                        )
                    )
                else:
                    done.append(_reject(vault, path, who, plan.reason or ""))
            except VaultmemError as exc:
                problems.append(ApplyProblem(plan.path, plan.id, str(exc)))
        if done:
            review_page.refresh_review_page(vault)
    return ApplyReport(tuple(done), tuple(problems), tuple(planned), dry_run, tuple(skipped))


def parse_age(text: str) -> int:
    """'60d', '8w', '60' → days."""
    raw = text.strip().lower()
    units = {"d": 1, "w": 7}
    mult = 1
    if raw and raw[-1] in units:
        mult = units[raw[-1]]
        raw = raw[:-1]
    if not raw.isdigit():
        raise UsageError(f"--older-than {text!r} is not an age", "use days or weeks: 60d, 8w")
    return int(raw) * mult
