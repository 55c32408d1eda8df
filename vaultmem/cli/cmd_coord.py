"""Coordination commands: inbox, alerts, resolve, wm (set, get, list, del, push), receipts.

`inbox` and `wm` run on agent turns: their bodies are in cli/hot.py, which the fast path calls
without typer.
"""

from __future__ import annotations

from typing import Annotated

import typer

from vaultmem.cli.base import (
    AgentOpt,
    JsonOpt,
    ReviewerOpt,
    VaultOpt,
    commands,
    emit,
    emit_json,
    example,
    open_vault,
    read_text_arg,
)
from vaultmem.cli.hot import warn_redactions

ThreadOpt = Annotated[
    str | None,
    typer.Option(
        "--thread",
        help="A thread of the agent's work (default: the agent's own).",
        show_default=False,
    ),
]
TtlOpt = Annotated[
    str | None,
    typer.Option(
        "--ttl",
        help="Time to live: a duration (90m, 2h, 7d, 8w, 1h30m) or never "
        "[default: [working] ttl, 24h].",
        show_default=False,
    ),
]


@commands.command(
    epilog=example("vaultmem inbox --agent ella", "vaultmem inbox --agent ella --json"),
)
def inbox(vault: VaultOpt = None, agent: AgentOpt = None, as_json: JsonOpt = False) -> None:
    """What is open for you: entries addressed to you (or to all) that you have not acked and
    nobody resolved, however old, oldest first. `vaultmem read` shows it first too.

    Ack one with `vaultmem append "..." --type ack --ack ID` (or answer it with --ack ID).
    """
    from vaultmem.cli import hot

    hot.inbox(vault=vault, agent=agent, as_json=as_json)


@commands.command(epilog=example("vaultmem alerts", "vaultmem alerts --all --json"))
def alerts(
    all_: Annotated[
        bool, typer.Option("--all", help="Resolved alerts too (marked with who resolved them).")
    ] = False,
    vault: VaultOpt = None,
    agent: AgentOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Open alerts, oldest first, with how often each was raised again.

    Raise one with `vaultmem append TEXT --type alert`; close it with `vaultmem resolve ID`.
    """
    from vaultmem.app.pack.inbox import entry_head, status_note
    from vaultmem.nexus import alerts as alerts_mod

    found = alerts_mod.alerts(open_vault(vault), include_resolved=all_)
    if as_json:
        emit_json({"alerts": [a.to_dict() for a in found]})
        return
    if not found:
        emit("no open alerts" if not all_ else "no alerts")
    for a in found:
        again = (
            f" (seen again {a.sighting.count}×, last {a.sighting.last} by {a.sighting.by})"
            if a.sighting.count
            else ""
        )
        emit(f"{entry_head(a.item.entry)}{again}{status_note(a.item, a.agents)}")


@commands.command(
    epilog=example(
        'vaultmem resolve ella.12 --why "disk cleaned, 40% free" --agent lyra',
        'vaultmem resolve ella.12 --why "fixed by hand" --reviewer chiara',
    ),
)
def resolve(
    entry_id: Annotated[
        str, typer.Argument(metavar="ID", help="The alert (or handoff, question, addressed entry).")
    ],
    why: Annotated[
        str, typer.Option("--why", help="What was done ('-' reads stdin).", show_default=False)
    ] = "",
    reviewer: ReviewerOpt = None,
    vault: VaultOpt = None,
    agent: AgentOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Close an alert (or a handoff, question or addressed entry) for everyone, with a signed
    `resolve` entry. Any agent may, or a person with --reviewer (after `vaultmem keys create
    --reviewer NAME`). A resolved alert leaves `alerts` and every pack.

    Exit 4 for an unknown id, 8 without a signing key.
    """
    from vaultmem.nexus.alerts import resolve as do_resolve

    v = open_vault(vault)
    person = agent is None
    author = agent if agent is not None else (reviewer or v.config.default_reviewer)
    result = do_resolve(
        v, author or "", entry_id, why=read_text_arg(why) if why else "", person=person
    )
    warn_redactions(result.redactions)
    if as_json:
        emit_json(result.to_dict())
    elif result.entry is None:
        done = result.already or {}
        emit(f"{entry_id} was already resolved by {done.get('by')} ({done.get('id')})")
    else:
        emit(f"{result.entry.id} resolves {entry_id}")


wm_app = typer.Typer(
    help="Working memory with a time to live: `wm set/get/list/del/push` "
    "(agents/<agent>/working.md).",
    no_args_is_help=True,
    epilog=example(
        'vaultmem wm set current-task "refunds in cents" --ttl 2h --agent ella',
        "vaultmem wm list --agent ella",
    ),
)
commands.add_typer(wm_app, name="wm")


@wm_app.command(
    "set",
    epilog=example(
        'vaultmem wm set current-task "refunds in cents" --ttl 2h --agent ella',
        "vaultmem wm set branch feat/checkout --thread checkout --agent ella",
    ),
)
def wm_set(
    key: Annotated[str, typer.Argument(help="A name: letters, digits, _ . : / -")],
    value: Annotated[str, typer.Argument(help="What to hold ('-' reads stdin).")],
    thread: ThreadOpt = None,
    ttl: TtlOpt = None,
    vault: VaultOpt = None,
    agent: AgentOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Hold a value under a key until it expires (replaces the key's value).

    Only you see it (in your `read` pack); it never reaches recall or other agents.
    """
    from vaultmem.cli import hot

    hot.wm_set(
        key=key, value=value, thread=thread, ttl=ttl, vault=vault, agent=agent, as_json=as_json
    )


@wm_app.command("get", epilog=example("vaultmem wm get current-task --agent ella"))
def wm_get(
    key: Annotated[str, typer.Argument(help="The key.")],
    thread: ThreadOpt = None,
    vault: VaultOpt = None,
    agent: AgentOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Print a held value. Exit 4 when it was never set, was deleted or has expired."""
    from vaultmem.cli import hot

    hot.wm_get(key=key, thread=thread, vault=vault, agent=agent, as_json=as_json)


@wm_app.command(
    "list",
    epilog=example("vaultmem wm list --agent ella", "vaultmem wm list --thread checkout --json"),
)
def wm_list(
    thread: ThreadOpt = None,
    vault: VaultOpt = None,
    agent: AgentOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Everything you hold that has not expired (all threads, or one)."""
    from vaultmem.cli import hot

    hot.wm_list(thread=thread, vault=vault, agent=agent, as_json=as_json)


@wm_app.command("del", epilog=example("vaultmem wm del current-task --agent ella"))
def wm_del(
    key: Annotated[str, typer.Argument(help="The key.")],
    thread: ThreadOpt = None,
    vault: VaultOpt = None,
    agent: AgentOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Drop a held value. Exit 4 when there is none."""
    from vaultmem.cli import hot

    hot.wm_del(key=key, thread=thread, vault=vault, agent=agent, as_json=as_json)


@wm_app.command(
    "push",
    epilog=example(
        'vaultmem wm push "user wants refunds in cents" --thread checkout --keep 10 --agent ella'
    ),
)
def wm_push(
    value: Annotated[str, typer.Argument(help="The turn to remember ('-' reads stdin).")],
    thread: ThreadOpt = None,
    keep: Annotated[
        int | None,
        typer.Option(
            "--keep",
            help="Keep the last N turns [default: [working] keep, 20].",
            show_default=False,
        ),
    ] = None,
    ttl: TtlOpt = None,
    vault: VaultOpt = None,
    agent: AgentOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Add a turn to a thread's recent turns; only the last N are kept (a sliding window)."""
    from vaultmem.cli import hot

    hot.wm_push(
        value=value,
        thread=thread,
        keep=keep,
        ttl=ttl,
        vault=vault,
        agent=agent,
        as_json=as_json,
    )


@commands.command(
    epilog=example(
        "vaultmem receipts --agent ella --until ella.d1",
        "vaultmem receipts --agent ella --since 2026-11-29T09:00 --json",
        "vaultmem receipts --agent ella --since 1d",
    ),
)
def receipts(
    since: Annotated[
        str | None,
        typer.Option(
            "--since",
            help="From this entry id (ella.12), date or UTC time (2026-11-29T09:00) or "
            "duration before now (2h).",
            show_default=False,
        ),
    ] = None,
    until: Annotated[
        str | None,
        typer.Option(
            "--until",
            help="Up to this entry id (a decision: ella.d1), date or UTC time or duration "
            "before now.",
            show_default=False,
        ),
    ] = None,
    vault: VaultOpt = None,
    agent: AgentOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """What an agent was shown, and when: every read, inbox and recall that showed it entries
    or facts. `--until ella.d1` answers "what had ella seen when she made that decision?".
    """
    from vaultmem.app.pack.receipts import receipts as do_receipts

    v = open_vault(vault)
    found = do_receipts(v, agent or "", since=since, until=until)
    ids = list(dict.fromkeys(i for r in found for i in r.ids))
    if as_json:
        emit_json({"agent": agent, "receipts": [r.to_dict() for r in found], "ids": ids})
        return
    if not found:
        emit("no receipts")
    for r in found:
        shown = ", ".join([*r.ids, *r.paths])
        emit(f"{r.time}  {r.command:<7} {shown}")
