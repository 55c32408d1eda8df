"""`vaultmem show`: print the lines a recall hit points at."""

from __future__ import annotations

from typing import Annotated

import typer

from vaultmem.cli.base import AgentOpt, JsonOpt, VaultOpt, commands, example
from vaultmem.cli.io import emit, emit_json, open_vault, warn


@commands.command(
    epilog=example(
        "vaultmem show wiki/stripe.md:12-30",
        "vaultmem show memory/review-days.md",
        "vaultmem show nexus/live-context.md:40 --lines 10 --agent ella --json",
    ),
)
def show(
    spec: Annotated[
        str,
        typer.Argument(
            metavar="PATH[:LINE[-LINE]]",
            help="A note relative to the vault, and the lines to print (as recall shows them).",
        ),
    ],
    lines: Annotated[
        int,
        typer.Option("--lines", "-l", help="How many lines from LINE, when no last line is given."),
    ] = 40,
    vault: VaultOpt = None,
    agent: AgentOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Print the lines of a note a recall hit points at, scoped like recall: with --agent, the
    shared notes and that agent's own, nothing private to another agent (exit 4, as for a note
    that does not exist). Exit 8 for a path out of the vault or into its local state."""
    from vaultmem.search.show import show as do_show

    shown = do_show(open_vault(vault), spec, agent=agent, lines=lines)
    if as_json:
        emit_json(shown.to_dict())
        return
    if shown.problem:
        warn(shown.problem)
    emit(f"{shown.path}:{shown.line_start}-{shown.line_end} (of {shown.total_lines} lines)")
    emit(shown.text)
    if shown.cut:
        nxt = shown.line_end + 1
        emit(
            f"… {shown.total_lines - shown.line_end} more lines: vaultmem show {shown.path}:{nxt}-"
        )
