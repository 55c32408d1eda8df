"""Layer 2 commands: retain (agents propose), promote (people review), bank prune."""

from __future__ import annotations

from typing import Annotated

import typer

from vaultmem.cli.base import (
    AgentOpt,
    DryRunOpt,
    JsonOpt,
    ReviewerOpt,
    VaultOpt,
    commands,
    emit,
    emit_json,
    example,
    open_vault,
    read_text_arg,
    warn,
)
from vaultmem.cli.retain_from import retain_line, warn_redactions_of
from vaultmem.memory.facts import FactType, Scope


@commands.command(
    epilog=example(
        'vaultmem retain "Chiara wants migrations reviewed before Friday" --type preference '
        "--agent ella --source session-2026-11-29",
        "vaultmem retain --from session.txt --agent ella --dry-run",
        "vaultmem retain --queued --agent ella",
    ),
)
def retain(
    text: Annotated[
        str | None,
        typer.Argument(
            help="The fact, one to three sentences ('-' reads stdin).", show_default=False
        ),
    ] = None,
    type_: Annotated[
        FactType | None,
        typer.Option(
            "--type",
            "-t",
            help="What the fact is about.",
            show_default=False,
        ),
    ] = None,
    tags: Annotated[
        list[str] | None, typer.Option("--tag", help="A tag (repeatable).", show_default=False)
    ] = None,
    source: Annotated[
        str | None,
        typer.Option(help="Where it comes from (session, ticket, file).", show_default=False),
    ] = None,
    valid_until: Annotated[
        str | None,
        typer.Option(
            "--valid-until", help="YYYY-MM-DD after which it no longer holds.", show_default=False
        ),
    ] = None,
    name: Annotated[
        str | None,
        typer.Option(help="Short title (default: from the first line).", show_default=False),
    ] = None,
    from_: Annotated[
        str | None,
        typer.Option(
            "--from",
            help="A session transcript (Claude Code or Codex JSONL, or plain text; a file, or "
            "'-' for stdin): Claude proposes the facts.",
            show_default=False,
        ),
    ] = None,
    queued: Annotated[
        bool,
        typer.Option(
            "--queued", help="Retain the sessions the session-end hook queued (needs a key)."
        ),
    ] = False,
    dry_run: DryRunOpt = False,
    vault: VaultOpt = None,
    agent: AgentOpt = None,
    as_json: JsonOpt = False,
) -> int | None:
    """Propose facts into the agent's bank, pending review: inserted, duplicate ID or may supersede ID.

    A duplicate of an existing memory or pending fact is not written again: the existing one gets
    its evidence count raised and the source appended. Secrets are redacted (or refused, exit 8).
    --from reads Claude Code and Codex session files (dialogue and one line per tool call are
    sent, after redaction) or plain text, chunks long sessions, needs ANTHROPIC_API_KEY (exit 7
    without it) and writes all facts or none. --queued does the same for every session the
    session-end hook queued. With --dry-run, --from and --queued show what would be sent and how
    it is chunked, with no request (no key needed).
    """
    from vaultmem.core.errors import UsageError

    v = open_vault(vault)
    if queued:
        if text is not None or from_ is not None:
            raise UsageError(
                "pass TEXT, --from TRANSCRIPT or --queued, one of them",
                "see: vaultmem retain --help",
            )
        from vaultmem.cli.retain_from import retain_queued

        return retain_queued(v, v.require_agent(agent) if agent else None, dry_run, as_json)
    who = v.require_agent(agent)
    if from_ is not None:
        if text is not None:
            raise UsageError(
                "pass TEXT or --from TRANSCRIPT, not both", "see: vaultmem retain --help"
            )
        from vaultmem.cli.retain_from import retain_from

        retain_from(v, who, from_, source, tags or [], dry_run, as_json)
        return None
    if text is None:
        raise UsageError(
            "nothing to retain", "pass the fact as TEXT, '-' for stdin, or --from FILE"
        )
    if not type_:
        raise UsageError(
            "retain needs --type",
            "one of: decision, fact, failure, preference, user, project, reference",
        )
    from vaultmem.bank.retain import retain as do_retain

    res = do_retain(
        v,
        read_text_arg(text),
        agent=who,
        type_=type_,
        tags=tags or [],
        source=source,
        valid_until=valid_until,
        name=name,
        dry_run=dry_run,
    )
    warn_redactions_of([res])
    if as_json:
        emit_json(res.to_dict())
    else:
        emit(retain_line(res))
    return None


# --- promote -----------------------------------------------------------------------------

promote_app = typer.Typer(
    help="The human review gate: approve, edit, merge or reject what agents retained.",
    invoke_without_command=True,
    no_args_is_help=False,
)
commands.add_typer(promote_app, name="promote")


@promote_app.callback(
    epilog=example("vaultmem promote --reviewer chiara", "vaultmem promote list --json"),
)
def promote(
    ctx: typer.Context,
    reviewer: ReviewerOpt = None,
    vault: VaultOpt = None,
    agent: AgentOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Review pending facts one at a time (interactive; needs a terminal).

    Keys: a approve, e edit ($EDITOR), m merge into a memory, r reject, s skip, q quit. Refused
    (exit 8) when an agent is acting (--agent / VAULTMEM_AGENT) or the reviewer is not listed.
    """
    if ctx.invoked_subcommand is not None:
        return
    import sys

    from vaultmem.core.errors import UsageError
    from vaultmem.core.vault import resolve_reviewer

    v = open_vault(vault)
    who = resolve_reviewer(v, reviewer, acting_agent=agent)
    if not sys.stdin.isatty():
        raise UsageError(
            "interactive promote needs a terminal",
            "in scripts use: vaultmem promote list / approve ID / reject ID --why TEXT / apply",
        )
    from vaultmem.cli.output_bank import interactive_review

    decisions = interactive_review(v, who, to_stderr=as_json)
    if as_json:
        emit_json({"decisions": [d.to_dict() for d in decisions]})


@promote_app.command(
    "list", epilog=example("vaultmem promote list", "vaultmem promote list --agent ella --json")
)
def list_(
    status: Annotated[
        str, typer.Option(help="pending, approved, rejected, expired or all.")
    ] = "pending",
    vault: VaultOpt = None,
    agent: AgentOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """List bank facts (default: the review queue), with the memories most like each."""
    from vaultmem.bank.model import STATUSES
    from vaultmem.bank.review import QueueItem, review_queue
    from vaultmem.bank.store import list_bank
    from vaultmem.core.errors import UsageError

    v = open_vault(vault)
    if status == "pending":
        items = review_queue(v, agent=agent)
    elif status == "all" or status in STATUSES:
        if agent:
            v.require_agent(agent)
        statuses = None if status == "all" else (status,)
        items = [QueueItem(f, ()) for f in list_bank(v, agent=agent, statuses=statuses)]
    else:
        raise UsageError(f"unknown status {status!r}", f"use one of: {', '.join(STATUSES)}, all")
    if as_json:
        emit_json({"facts": [i.to_dict() for i in items]})
        return
    from vaultmem.cli.output_bank import render_queue

    render_queue(items, status)


@promote_app.command(
    epilog=example("vaultmem promote approve b-1a2b3c4d --reviewer chiara --scope shared"),
)
def approve(
    fact_id: Annotated[str, typer.Argument(metavar="ID", help="Bank fact id (or file name).")],
    scope: Annotated[
        Scope, typer.Option(help="shared (memory/) or agent (the author's own memory).")
    ] = Scope.SHARED,
    name: Annotated[
        str | None,
        typer.Option(
            "--name",
            "-n",
            help="Name of the memory (default: the fact's name).",
            show_default=False,
        ),
    ] = None,
    description: Annotated[
        str | None,
        typer.Option(help="Its MEMORY.md line (default: the first line).", show_default=False),
    ] = None,
    supersedes: Annotated[
        str | None,
        typer.Option(
            help="Id of a memory the new one replaces (kept, marked superseded).",
            show_default=False,
        ),
    ] = None,
    reviewer: ReviewerOpt = None,
    vault: VaultOpt = None,
    agent: AgentOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Turn a bank fact into a memory (note + MEMORY.md line). Exit 8 if an agent tries."""
    from vaultmem.bank.review import approve as do_approve

    decision = do_approve(
        open_vault(vault),
        fact_id,
        reviewer=reviewer,
        acting_agent=agent,
        scope=scope,
        name=name,
        description=description,
        supersedes=supersedes,
    )
    for message in decision.warnings:
        warn(message)
    if as_json:
        emit_json(decision.to_dict())
        return
    assert decision.memory is not None
    emit(f"approved {decision.fact.id} -> {decision.memory.id} {decision.memory.path}")


@promote_app.command(
    epilog=example(
        'vaultmem promote reject b-1a2b3c4d --why "only true for staging" --reviewer chiara'
    ),
)
def reject(
    fact_id: Annotated[str, typer.Argument(metavar="ID", help="Bank fact id (or file name).")],
    why: Annotated[str, typer.Option("--why", help="What is wrong with it; kept in the note.")],
    reviewer: ReviewerOpt = None,
    vault: VaultOpt = None,
    agent: AgentOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Reject a bank fact with a reason (kept as status: rejected). Exit 8 if an agent tries."""
    from vaultmem.bank.review import reject as do_reject

    decision = do_reject(open_vault(vault), fact_id, why=why, reviewer=reviewer, acting_agent=agent)
    if as_json:
        emit_json(decision.to_dict())
    else:
        emit(f"rejected {decision.fact.id} ({decision.fact.path})")


@promote_app.command(
    epilog=example("vaultmem promote merge b-1a2b3c4d --into m-bacc2cb0 --reviewer chiara"),
)
def merge(
    fact_id: Annotated[str, typer.Argument(metavar="ID", help="Bank fact id (or file name).")],
    into: Annotated[
        str,
        typer.Option(
            "--into", help="The memory to merge it into: its id, file name or vault path."
        ),
    ],
    reviewer: ReviewerOpt = None,
    vault: VaultOpt = None,
    agent: AgentOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Fold a bank fact into an existing memory (text appended, evidence summed)."""
    from vaultmem.bank.review import merge as do_merge

    decision = do_merge(open_vault(vault), fact_id, into, reviewer=reviewer, acting_agent=agent)
    if as_json:
        emit_json(decision.to_dict())
        return
    assert decision.memory is not None
    emit(f"merged {decision.fact.id} into {decision.memory.id} {decision.memory.path}")


@promote_app.command(
    "apply",
    epilog=example(
        "vaultmem promote apply --reviewer chiara --dry-run",
        "vaultmem promote apply --reviewer chiara --yes --plan p-3f9a2c1d4e5b6a70",
    ),
)
def apply_(
    dry_run: DryRunOpt = False,
    yes: Annotated[
        bool,
        typer.Option(
            "--yes", "-y", help="Carry out the plan --dry-run listed (with --plan), without asking."
        ),
    ] = False,
    plan: Annotated[
        str | None,
        typer.Option(
            "--plan",
            help="The plan id --dry-run printed: carry out exactly that, or nothing.",
            show_default=False,
        ),
    ] = None,
    reviewer: ReviewerOpt = None,
    vault: VaultOpt = None,
    agent: AgentOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Carry out the status: approved / rejected (with reason:) people set in Obsidian.

    Each action is shown in full first (scope, name, what it supersedes, the text): an agent
    can edit those notes too. In a terminal you are asked one by one; elsewhere pass --yes
    after checking --dry-run. Exits 0 when everything was carried out, 5 when some notes could
    not be (listed, untouched).
    """
    import sys

    from vaultmem.bank.apply import Planned
    from vaultmem.bank.apply import apply as do_apply

    def ask(plan: Planned) -> bool:
        sys.stderr.write(plan.describe() + "\n")
        if yes:
            return True
        sys.stderr.write("carry this out? [y/N] ")
        sys.stderr.flush()
        return sys.stdin.readline().strip().lower() in ("y", "yes")

    if yes and plan is None and not dry_run:
        from vaultmem.core.errors import UsageError

        raise UsageError(
            "--yes carries out a plan you looked at: pass --plan ID",
            "run vaultmem promote apply --dry-run and pass the plan id it prints",
        )
    interactive = sys.stdin.isatty() and not as_json
    confirm = ask if (yes or interactive) else None
    report = do_apply(
        open_vault(vault),
        reviewer=reviewer,
        acting_agent=agent,
        dry_run=dry_run,
        confirm=confirm,
        plan=plan if yes else None,
    )
    if as_json:
        emit_json(report.to_dict())
    else:
        for planned in report.planned:
            emit("would " + planned.describe())
        if report.dry_run and report.planned:
            emit(
                f"plan {report.plan}: carry it out with vaultmem promote apply --yes --plan {report.plan}"
            )
        for planned in report.skipped:
            emit(f"skipped {planned.id} (not confirmed)")
        for d in report.done:
            for message in d.warnings:
                warn(f"{d.fact.id}: {message}")
            target = f" -> {d.memory.id} {d.memory.path}" if d.memory else ""
            emit(f"{d.action} {d.fact.id}{target}")
        for p in report.problems:
            warn(f"{p.path}: {p.message}")
        if not (report.planned or report.done or report.problems):
            emit("nothing to apply")
    if report.problems:
        raise typer.Exit(5)


# --- bank --------------------------------------------------------------------------------

bank_app = typer.Typer(
    help="Bank upkeep: expire stale pending facts.",
    no_args_is_help=True,
    epilog=example("vaultmem bank prune --older-than 60d"),
)
commands.add_typer(bank_app, name="bank")


@bank_app.command(epilog=example("vaultmem bank prune --older-than 60d --dry-run"))
def prune(
    older_than: Annotated[
        str | None,
        typer.Option(
            "--older-than",
            help="Age after which a pending fact expires: a duration (60d, 8w) or a number of "
            "days (default: [bank] prune_after_days).",
            show_default=False,
        ),
    ] = None,
    dry_run: DryRunOpt = False,
    vault: VaultOpt = None,
    agent: AgentOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Move stale pending facts (and those past valid_until) to status: expired. Deletes nothing."""
    from datetime import timedelta

    from vaultmem.bank.prune import prune as do_prune
    from vaultmem.core.clock import parse_duration

    age = None if older_than is None else parse_duration(older_than, "--older-than", bare_days=True)
    days = None if age is None else age / timedelta(days=1)
    result = do_prune(open_vault(vault), older_than_days=days, agent=agent, dry_run=dry_run)
    if as_json:
        emit_json(result.to_dict())
        return
    verb = "would expire" if dry_run else "expired"
    for fact in result.expired:
        emit(f"{verb} {fact.id} {fact.path}")
    if not result.expired:
        emit("nothing to expire")
