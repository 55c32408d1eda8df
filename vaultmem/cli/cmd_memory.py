"""Layer 1 commands: remember, memories, forget, retract."""

from __future__ import annotations

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
)
from vaultmem.cli.hot import warn_redactions
from vaultmem.memory import facts as facts_mod
from vaultmem.memory.facts import FactType, Scope


@commands.command(
    epilog=example(
        'vaultmem remember "Chiara reviews on Fridays" --name "Review day" '
        '--description "When reviews happen" --type user'
    ),
)
def remember(
    text: Annotated[str, typer.Argument(help="The fact, in a few sentences ('-' reads stdin).")],
    name: Annotated[str, typer.Option("--name", "-n", help="Short title; becomes the file name.")],
    type_: Annotated[FactType, typer.Option("--type", "-t", help="What the fact is about.")],
    description: Annotated[
        str | None,
        typer.Option(
            "--description",
            "-d",
            help="One line for MEMORY.md (default: the first line).",
            show_default=False,
        ),
    ] = None,
    scope: Annotated[
        Scope, typer.Option(help="shared (memory/) or agent (agents/<agent>/memory/).")
    ] = Scope.SHARED,
    supersedes: Annotated[
        str | None,
        typer.Option(
            help="Id of a fact this one replaces (it is kept, marked superseded).",
            show_default=False,
        ),
    ] = None,
    vault: VaultOpt = None,
    agent: AgentOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Write one fact note and add its line to MEMORY.md."""
    from vaultmem.memory.facts import remember as do_remember

    fact = do_remember(
        open_vault(vault),
        read_text_arg(text),
        name=name,
        type_=type_,
        description=description,
        scope=scope,
        agent=agent,
        supersedes=supersedes,
    )
    warn_redactions(fact.findings)
    if as_json:
        emit_json(fact.to_dict())
    else:
        emit(f"{fact.id} {fact.path}")


@commands.command(epilog=example("vaultmem memories --type project", "vaultmem memories --json"))
def memories(
    type_: Annotated[
        FactType | None,
        typer.Option("--type", "-t", help="Only facts of this type.", show_default=False),
    ] = None,
    all_: Annotated[
        bool, typer.Option("--all", help="Include retracted and superseded facts.")
    ] = False,
    vault: VaultOpt = None,
    agent: AgentOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """List facts (shared and per agent), newest last."""

    facts = facts_mod.memories(open_vault(vault), type_=type_, include_inactive=all_)
    if agent:
        facts = [f for f in facts if f.agent in (None, agent)]
    if as_json:
        emit_json({"facts": [f.to_dict() for f in facts]})
        return
    from vaultmem.cli.output import render_facts

    render_facts(facts)


@commands.command(epilog=example("vaultmem forget m-1a2b3c4d"))
def forget(
    fact_id: Annotated[
        str, typer.Argument(metavar="ID", help="Fact id (or slug, or vault-relative path).")
    ],
    vault: VaultOpt = None,
    agent: AgentOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Delete a fact and every copy vaultmem made of it (the GDPR path). Exit 4 if unknown.

    Removes the note and its MEMORY.md line, the bank note it was proposed in, the profiles'
    lines (rebuilt), the search index's copy (rebuilt), receipts and queued sessions quoting
    it; prints each, and what it cannot remove (git history, signed log entries) with how.
    """
    from vaultmem.app.privacy.forget import forget as do_forget

    result = do_forget(open_vault(vault), fact_id, agent=agent)
    if as_json:
        emit_json(result.to_dict())
        return
    emit(f"forgot {result.fact.id} ({result.fact.path})")
    for line in result.removed:
        emit(f"  removed {line}")
    from vaultmem.cli.base import warn

    if not result.index_line_removed:
        warn("no MEMORY.md line linked to it")
    for line in result.kept:
        warn(f"not removed: {line}")


@commands.command(epilog=example('vaultmem retract m-1a2b3c4d --why "the deadline moved to May"'))
def retract(
    fact_id: Annotated[
        str, typer.Argument(metavar="ID", help="Fact id (or slug, or vault-relative path).")
    ],
    why: Annotated[str, typer.Option("--why", help="What was wrong; kept in the note.")],
    vault: VaultOpt = None,
    agent: AgentOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Mark a fact retracted (kept, with the reason) and move its line under 'Retracted'."""
    from vaultmem.memory.facts import retract as do_retract

    fact = do_retract(open_vault(vault), fact_id, why=why, agent=agent)
    if as_json:
        emit_json(fact.to_dict())
    else:
        emit(f"retracted {fact.id} ({fact.path})")
