"""`promote apply`: carry out what people set in Obsidian (`status: approved` / `rejected`).

Every field it acts on is in a note an agent can edit too, so each action is planned, shown in
full and carried out only when a person confirms it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from vaultmem.bank import model, review_page, store
from vaultmem.bank.review import (
    ApplyProblem,
    Decision,
    approve_one,
    reason_text,
    reject_one,
)
from vaultmem.core import notes
from vaultmem.core.choices import choose
from vaultmem.core.errors import RefusedError, UsageError, VaultmemError
from vaultmem.core.records import record
from vaultmem.core.vault import Vault, resolve_reviewer
from vaultmem.memory import facts


@record
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
    consolidates: tuple[str, ...] = ()  # memories a consolidation proposal replaces

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
            if self.consolidates:
                lines.append(
                    f"  CONSOLIDATES {', '.join(self.consolidates)}: each would be marked "
                    "superseded by the new memory"
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


@record
class ApplyReport:
    """What `promote apply` carried out, and what it could not (left as the person wrote it)."""

    done: tuple[Decision, ...]
    problems: tuple[ApplyProblem, ...]
    planned: tuple[Planned, ...] = ()  # under --dry-run: what would be done
    dry_run: bool = False
    skipped: tuple[Planned, ...] = ()  # what the person declined when asked
    plan: str | None = None  # the plan's id (`plan_id`): printed by --dry-run, passed to --yes

    def to_dict(self) -> dict[str, Any]:
        return {
            "plan": self.plan,
            "done": [d.to_dict() for d in self.done],
            "problems": [p.to_dict() for p in self.problems],
            "planned": [p.to_dict() for p in self.planned],
            "skipped": [p.to_dict() for p in self.skipped],
            "dry_run": self.dry_run,
        }


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
            consolidates=fact.consolidates,
            **common,
        )
    if fact.status == "rejected" and not meta.get("rejected_at"):
        return Planned("reject", reason=reason_text(str(meta.get("reason") or "")), **common)
    return None


def plan_id(planned: list[Planned] | tuple[Planned, ...]) -> str:
    """The id `--dry-run` prints: a hash of every field of every planned action, so `--yes
    --plan ID` carries out exactly what a person saw, or nothing."""
    canon = json.dumps([p.to_dict() for p in planned], sort_keys=True, ensure_ascii=False)
    return "p-" + hashlib.sha256(canon.encode("utf-8")).hexdigest()[:16]


def apply(
    vault: Vault,
    *,
    reviewer: str | None,
    acting_agent: str | None = None,
    dry_run: bool = False,
    confirm: Callable[[Planned], bool] | None = None,
    plan: str | None = None,
) -> ApplyReport:
    """Carry out the `status: approved` / `status: rejected` a person set in Obsidian.

    Every field it acts on (status, scope, name, supersedes) is in a note an agent can edit
    too, so each planned action is shown in full and carried out only when `confirm` says
    yes (the CLI asks), or when `plan` is the id a `--dry-run` printed for exactly the actions
    planned now (anything added or changed since makes it refuse, exit 8, with nothing done).
    With `dry_run` nothing changes. The author is the agent whose bank folder holds the note,
    never its frontmatter's claim. A note that cannot be carried out is reported and left as
    it is; the others still go.
    """
    who = resolve_reviewer(vault, reviewer, acting_agent=acting_agent)
    if confirm is None and plan is None and not dry_run:
        raise UsageError(
            "promote apply needs each action confirmed",
            "look at: vaultmem promote apply --dry-run, then run it again with --yes --plan ID "
            "(the id it printed), or in a terminal, to be asked one by one",
        )
    done: list[Decision] = []
    problems: list[ApplyProblem] = []
    planned: list[tuple[Path, notes.Note, Planned]] = []
    skipped: list[Planned] = []
    with store.bank_lock(vault):
        from vaultmem.bank.review import recover

        if not dry_run:
            recover(vault)
        for path, _owner in store.bank_files(vault):
            quick = store.read_quick(vault, path)
            if quick is None or quick[0].get("status") not in ("approved", "rejected"):
                continue
            try:
                note = notes.require_ok(vault.read_note(path), path)
                one = _plan(vault, path, note, who)
            except VaultmemError as exc:
                problems.append(ApplyProblem(vault.rel(path), quick[0].get("id", ""), str(exc)))
                continue
            if one is not None:
                planned.append((path, note, one))
        plans = tuple(p for _path, _note, p in planned)
        if dry_run:
            return ApplyReport((), tuple(problems), plans, True, (), plan_id(plans))
        if plan is not None and plan != plan_id(plans):
            raise RefusedError(
                f"refused: the notes changed since the dry run printed plan {plan}: "
                f"what would be carried out now is plan {plan_id(plans)}; nothing was done",
                "look again: vaultmem promote apply --dry-run (an agent can edit bank notes too)",
            )
        for path, note, one in planned:
            if plan is None and confirm is not None and not confirm(one):
                skipped.append(one)
                continue
            try:
                fact = model.fact_from_note(vault, path, note)
                if one.action == "approve":
                    done.append(
                        approve_one(
                            vault,
                            path,
                            fact,
                            who,
                            scope=one.scope,
                            name=None,
                            description=None,
                            supersedes=one.supersedes,
                        )
                    )
                else:
                    done.append(reject_one(vault, path, who, one.reason or ""))
            except VaultmemError as exc:
                problems.append(ApplyProblem(one.path, one.id, str(exc)))
        if done:
            review_page.refresh_review_page(vault)
    return ApplyReport(tuple(done), tuple(problems), (), False, tuple(skipped), plan)
