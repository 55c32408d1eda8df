"""Layer 3 commands: append, log (and log rotate), decide, decisions, checkpoint, state (and
state set). keys, verify and repair are in cmd_integrity.py.

`append` runs on every agent turn: this module imports nothing from the core at the top.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from vaultmem.cli.base import (
    AgentOpt,
    JsonOpt,
    VaultOpt,
    commands,
    emit,
    emit_json,
    example,
    open_vault,
    read_text_arg,
    warn,
)
from vaultmem.cli.hot import warn_redactions
from vaultmem.nexus import checkpoints
from vaultmem.nexus.entry import EntryType


@commands.command(
    epilog=example(
        'vaultmem append "Webhook retries are idempotent now" --channel backend --type fix '
        "--agent ella",
        'vaultmem append "Using it, thanks" --type ack --ack ella.3 --agent lyra',
        'vaultmem append "Checkout must send Idempotency-Key" --type handoff --to lyra --agent ella',
    ),
)
def append(
    summary: Annotated[str, typer.Argument(help="One line (newlines are folded; capped).")],
    channel: Annotated[str, typer.Option("--channel", "-c", help="A free word.")] = "general",
    type_: Annotated[
        EntryType, typer.Option("--type", "-t", help="What the entry is.")
    ] = EntryType.NOTE,
    body: Annotated[
        str | None,
        typer.Option(
            "--body", "-b", help="Longer text, markdown ('-' reads stdin).", show_default=False
        ),
    ] = None,
    acks: Annotated[
        list[str] | None,
        typer.Option("--ack", help="Id of an entry this one acknowledges (repeatable)."),
    ] = None,
    to: Annotated[
        list[str] | None,
        typer.Option(
            "--to", help="An agent it is addressed to (repeatable), or 'all'.", show_default=False
        ),
    ] = None,
    vault: VaultOpt = None,
    agent: AgentOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Append one signed entry to the live-context log and print its id.

    Append after every significant turn; --ack the entries you used. With --to the entry is
    in each recipient's inbox until that recipient acks it. An alert whose text matches an open
    alert is not raised again: it prints `duplicate ID`. Exit 6 when another writer holds the
    lock past the timeout (retry), 8 when the agent has no signing key or a credential is
    refused.
    """
    from vaultmem.cli import hot

    hot.append(
        summary=summary,
        channel=channel,
        type_=type_,
        body=body,
        acks=acks,
        to=to,
        vault=vault,
        agent=agent,
        as_json=as_json,
    )


log_app = typer.Typer(
    help="Read the live-context log (newest last). `log rotate` archives old entries.",
    invoke_without_command=True,
    no_args_is_help=False,
)
commands.add_typer(log_app, name="log")


@log_app.callback(
    epilog=example(
        "vaultmem log --tail 20",
        "vaultmem log --since ella.3 --channel backend --json",
        "vaultmem log --since 2h",
        "vaultmem log --since 2026-11-29 --until 2026-11-30T12:00",
        "vaultmem log --to lyra --json --reader lyra",
        "vaultmem log --follow",
    ),
)
def log_cmd(
    ctx: typer.Context,
    tail: Annotated[
        int | None,
        typer.Option(
            "--tail",
            "-n",
            help="The last N entries [default: 20 without --since].",
            show_default=False,
        ),
    ] = None,
    since: Annotated[
        str | None,
        typer.Option(
            "--since",
            help="Entries after this id (ella.12), or from this date or UTC time "
            "(2026-11-29, 2026-11-29T10:00) or duration before now (90m, 2h, 7d).",
            show_default=False,
        ),
    ] = None,
    until: Annotated[
        str | None,
        typer.Option(
            "--until",
            help="Entries up to this id (with it), or up to this date or UTC time "
            "(2026-11-30T12:00) or duration before now (1h).",
            show_default=False,
        ),
    ] = None,
    channel: Annotated[
        str | None, typer.Option("--channel", "-c", help="Only this channel.", show_default=False)
    ] = None,
    type_: Annotated[
        EntryType | None,
        typer.Option("--type", "-t", help="Only this type.", show_default=False),
    ] = None,
    to: Annotated[
        str | None,
        typer.Option(
            "--to", help="Only entries addressed to this agent (or to all).", show_default=False
        ),
    ] = None,
    reader: Annotated[
        str | None,
        typer.Option(
            "--reader",
            help="With --json: mark each entry `shown` if this agent was already shown it.",
            show_default=False,
        ),
    ] = None,
    follow: Annotated[
        bool, typer.Option("--follow", "-f", help="Keep printing new entries as they come.")
    ] = False,
    vault: VaultOpt = None,
    agent: Annotated[
        str | None,
        typer.Option(
            "--agent",
            help="Only entries by this agent (here a filter: VAULTMEM_AGENT is not applied).",
            show_default=False,
            rich_help_panel="Common options",
        ),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Read the live-context log, oldest first. Reads from the end: fast on any log size.

    With --follow, keeps printing new entries (one JSON object per line under --json).
    Exit 4 when --since or --until names an entry that is not in the log; exit 2 for a bound
    that is neither an entry id, a date or time, nor a duration.
    """
    if ctx.invoked_subcommand:
        return
    from vaultmem.cli.output_log import print_entries
    from vaultmem.nexus.reading import log

    v = open_vault(vault)
    entries = log(
        v, tail=tail, since=since, until=until, agent=agent, channel=channel, type_=type_, to=to
    )
    if as_json and not follow:
        rows = [e.to_dict() for e in entries]
        if reader is not None and entries:
            from vaultmem.app.pack.receipts import shown_ids

            seen = shown_ids(v, v.require_agent(reader), since=entries[0].time)
            for row in rows:
                row["shown"] = row["id"] in seen
        emit_json({"entries": rows})
        return
    print_entries(entries, as_json=as_json)
    if follow:
        from vaultmem.nexus.reading import follow as do_follow

        for batch in do_follow(v, agent=agent, channel=channel, type_=type_, to=to):
            print_entries(batch, as_json=as_json)


@log_app.command("rotate", epilog=example("vaultmem log rotate --keep-days 30"))
def log_rotate(
    keep_days: Annotated[
        str,
        typer.Option(
            "--keep-days",
            help="Keep this long in the live log: a number of days (30) or a duration (8w, 36h).",
        ),
    ] = "30",
    vault: VaultOpt = None,
    agent: AgentOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Move older entries to nexus/archive/live-context-YYYY-MM.md. Nothing is deleted;
    chains still verify across files."""
    from datetime import timedelta

    from vaultmem.core.clock import parse_duration
    from vaultmem.nexus.rotate import rotate

    keep = parse_duration(keep_days, "--keep-days", bare_days=True, allow_zero=True)
    assert keep is not None
    result = rotate(open_vault(vault), keep_days=keep / timedelta(days=1))
    if as_json:
        emit_json(result.to_dict())
        return
    if not result.moved:
        kept = f"{keep_days} days" if keep_days.strip().isdigit() else keep_days.strip()
        emit(f"nothing older than {kept}; {result.kept} entries stay")
        return
    for rel, n in result.files.items():
        emit(f"moved {n} entries to {rel}")
    emit(f"{result.kept} entries stay in the live log")


@commands.command(
    epilog=example(
        'vaultmem decide "Prices are stored in cents" --why "no float rounding in refunds" '
        "--tag payments --agent ella",
        'vaultmem decide "Prices in euro cents, VAT included" --why "gyms quote VAT-inclusive" '
        "--supersedes ella.d1 --agent ella",
    ),
)
def decide(
    text: Annotated[str, typer.Argument(help="The decision, one line ('-' reads stdin).")],
    why: Annotated[str, typer.Option("--why", help="The rationale ('-' reads stdin).")],
    supersedes: Annotated[
        str | None, typer.Option(help="Id of the decision this one replaces.", show_default=False)
    ] = None,
    tags: Annotated[list[str] | None, typer.Option("--tag", help="A tag (repeatable).")] = None,
    channel: Annotated[
        str, typer.Option("--channel", "-c", help="Channel of the log entry.")
    ] = "decisions",
    vault: VaultOpt = None,
    agent: AgentOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Record a decision in nexus/decisions.md (signed, never pruned) and announce it on the log."""
    from vaultmem.app.hooks.background import start_sync
    from vaultmem.nexus.decisions import decide as do_decide

    opened = open_vault(vault)
    result = do_decide(
        opened,
        agent or "",
        read_text_arg(text),
        why=read_text_arg(why),
        supersedes=supersedes,
        tags=tags or [],
        channel=channel,
    )
    warn_redactions(result.redactions)
    for w in result.warnings:
        warn(w)
    start_sync(opened)  # a decision leaves the machine soon, not at the next hook (issue 37)
    if as_json:
        emit_json(
            {"decision": result.decision.to_dict(), "log_entry": result.announcement.to_dict()}
        )
    else:
        emit(result.decision.id)


@commands.command(epilog=example("vaultmem decisions", "vaultmem decisions --all --json"))
def decisions(
    all_: Annotated[
        bool, typer.Option("--all", help="Include superseded decisions (marked).")
    ] = False,
    vault: VaultOpt = None,
    agent: AgentOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """List active decisions, oldest first."""
    from vaultmem.nexus import decisions as decisions_mod

    found = decisions_mod.decisions(open_vault(vault), include_superseded=all_)
    if as_json:
        emit_json({"decisions": [d.to_dict() for d in found]})
        return
    from vaultmem.cli.output_log import print_decisions

    print_decisions(found)


@commands.command(
    epilog=example(
        'vaultmem checkpoint "Retries done; idempotency key test still red" --task "Stripe webhooks" '
        '--next "fix the idempotency test" --agent ella',
        "vaultmem checkpoint --show --agent ella",
    ),
)
def checkpoint(
    text: Annotated[
        str | None,
        typer.Argument(help="Where you stopped ('-' reads stdin).", show_default=False),
    ] = None,
    task: Annotated[
        str | None, typer.Option("--task", help="The task at hand.", show_default=False)
    ] = None,
    next_steps: Annotated[
        list[str] | None, typer.Option("--next", help="A next step (repeatable).")
    ] = None,
    show: Annotated[bool, typer.Option("--show", help="Print the current checkpoint.")] = False,
    history: Annotated[bool, typer.Option("--history", help="List earlier versions.")] = False,
    vault: VaultOpt = None,
    agent: AgentOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Replace your working checkpoint (agents/<agent>/checkpoint.md) atomically.

    A crash mid-write leaves the old or the new checkpoint, never a mix; every version is
    kept in the journal (--history).
    """

    v = open_vault(vault)
    if history:
        versions = checkpoints.checkpoint_history(v, agent or "")
        if as_json:
            emit_json(
                {
                    "versions": [
                        {k: x.get(k) for k in ("time", "task", "text", "next")} for x in versions
                    ]
                }
            )
            return
        if not versions:
            emit("no earlier versions (they are kept from the first `vaultmem checkpoint` on)")
        for x in versions:
            first = (x.get("text") or x.get("raw") or "").strip().split("\n")[0][:80]
            emit(f"{x.get('time') or '(before vaultmem)'}  {x.get('task') or '-'}  {first}")
        return
    if show or (text is None and task is None and not next_steps):
        cp = checkpoints.show_checkpoint(v, agent or "")
        if as_json:
            emit_json(cp.to_dict())
            return
        if not cp.exists:
            from vaultmem.core.errors import NotFoundError

            raise NotFoundError(
                f"{cp.agent} has no checkpoint yet ({cp.path})",
                'write one with: vaultmem checkpoint "where I stopped" --task T --next STEP',
            )
        emit(Path(v.root / cp.path).read_text(encoding="utf-8"))
        return
    cp, found = checkpoints.checkpoint(
        v,
        agent or "",
        read_text_arg(text) if text is not None else "",
        task=task,
        next_steps=next_steps or [],
    )
    warn_redactions(found)
    if as_json:
        emit_json(cp.to_dict())
    else:
        emit(f"checkpoint saved: {cp.path}")


state_app = typer.Typer(
    help="Print nexus/project-state.md; `state set SECTION TEXT` replaces one section.",
    invoke_without_command=True,
)
commands.add_typer(state_app, name="state")


@state_app.callback(
    epilog=example("vaultmem state", "vaultmem state --json", "vaultmem state --history")
)
def state_cmd(
    ctx: typer.Context,
    history: Annotated[
        bool,
        typer.Option(
            "--history", help="List earlier versions (restore one with: vaultmem repair --state N)."
        ),
    ] = False,
    vault: VaultOpt = None,
    agent: AgentOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Print the project state."""
    if ctx.invoked_subcommand:
        return
    from vaultmem.nexus.state import read_state, state_history, state_sections

    v = open_vault(vault)
    if history:
        versions = state_history(v)
        if as_json:
            emit_json(
                {
                    "versions": [
                        {"version": n, **{k: x.get(k) for k in ("time", "agent", "section")}}
                        for n, x in enumerate(versions, 1)
                    ]
                }
            )
            return
        if not versions:
            emit("no earlier versions (they are kept from the first `vaultmem state set` on)")
        for n, x in enumerate(versions, 1):
            what = (
                f"before {x.get('agent')} set '{x.get('section')}'"
                if x.get("agent")
                else "before a restore"
            )
            emit(f"{n:>4}  {x.get('time') or '-'}  {what}")
        return
    text = read_state(v)
    if as_json:
        emit_json(
            {
                "path": v.rel(v.project_state),
                "sections": [{"title": t, "text": b} for t, b in state_sections(text)],
                "text": text,
            }
        )
    else:
        emit(text)


@state_app.command(
    "set",
    epilog=example('vaultmem state set Status "Payments done; checkout in review" --agent ella'),
)
def state_set(
    section: Annotated[str, typer.Argument(help="The `## SECTION` heading (created if missing).")],
    text: Annotated[str, typer.Argument(help="The new body of that section ('-' reads stdin).")],
    vault: VaultOpt = None,
    agent: AgentOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Replace one section of the project state atomically; every other line stays.

    Also appends a `state` entry to the live log saying who changed which section. Text that
    starts with '-' (a markdown list) goes after `--`, or on stdin with '-':
    vaultmem state set --agent ella -- Status "- done"
    """
    from vaultmem.nexus.state import set_state

    change = set_state(open_vault(vault), agent or "", section, read_text_arg(text))
    warn_redactions(change.redactions)
    for w in change.warnings:
        warn(w)
    if as_json:
        emit_json(
            {
                "section": change.section,
                "created": change.created,
                "path": change.path,
                "log_entry": change.entry.to_dict(),
            }
        )
    else:
        emit(
            f"{'added' if change.created else 'updated'} section '{change.section}' ({change.entry.id})"
        )
