"""init, read, status: the commands that open (or create) a vault and report on it."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from vaultmem.cli.base import (
    AgentOpt,
    DryRunOpt,
    JsonOpt,
    VaultOpt,
    commands,
    emit,
    emit_json,
    example,
    open_vault,
)


@commands.command(
    epilog=example(
        "vaultmem init my-vault --agent ella --agent lyra --reviewer chiara",
        "vaultmem init my-vault --agent ella --reviewer chiara --git",
    ),
)
def init(
    path: Annotated[
        Path | None,
        typer.Argument(help="Folder for the vault (default: --vault or here).", show_default=False),
    ] = None,
    agents: Annotated[
        list[str] | None, typer.Option("--agent", help="An agent of this vault (repeatable).")
    ] = None,
    reviewers: Annotated[
        list[str] | None,
        typer.Option("--reviewer", help="A person who reviews facts (repeatable)."),
    ] = None,
    language: Annotated[
        str | None, typer.Option(help="Language of the notes (en, it, ...).", show_default=False)
    ] = None,
    with_git: Annotated[
        bool,
        typer.Option("--git", help="Also make it a git repository, ready for vaultmem sync."),
    ] = False,
    vault: VaultOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Create a vault (or adopt a folder of notes); never overwrites a file.

    Run it again to add an agent or a reviewer. The --agent option here names the agents to
    create (it may be repeated), unlike elsewhere where it names the acting agent.
    """
    from vaultmem.app.lifecycle import scaffold as scaffold_mod

    target = path or vault or Path.cwd()
    result = scaffold_mod.init(
        target, agents=agents or [], reviewers=reviewers or [], language=language, git=with_git
    )
    if as_json:
        emit_json(result.__dict__)
        return
    verb = "Updated" if result.existed else "Created"
    emit(f"{verb} vault at {result.root}")
    for rel in result.created:
        emit(f"  + {rel}")
    if result.existed and not result.created:
        emit("  (nothing was missing)")
    if result.adopted_notes and not result.existed:
        emit(f"  adopted {result.adopted_notes} existing note(s); vaultmem leaves them as they are")
    if result.git:
        emit(f"  git: {result.git}")


@commands.command(
    epilog=example(
        "vaultmem read --agent ella",
        "vaultmem read --agent ella --budget 2000 --json",
        "vaultmem read --agent ella --peek",
    ),
)
def read(
    budget: Annotated[
        int | None,
        typer.Option(
            "--budget",
            help="Keep the pack under about this many tokens, dropping the lowest-priority "
            "sections first (identity never) [default: [read] budget in vaultmem.toml].",
            show_default=False,
        ),
    ] = None,
    peek: Annotated[
        bool, typer.Option("--peek", help="Do not mark the log entries shown as read.")
    ] = False,
    query: Annotated[
        str | None,
        typer.Option(
            "--query", "-q", help="What this session is about (recall hits).", show_default=False
        ),
    ] = None,
    vault: VaultOpt = None,
    agent: AgentOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Print the session-start pack for an agent, most important first.

    Identity, active decisions, your checkpoint, log entries from other agents since your last
    read (flagged when they wait for an ack), your recent entries, project state, memory
    indexes. Load it before answering. Plain output is markdown meant for a prompt; --json gives
    the same sections as data. The entries shown count as read once the pack is printed
    (--peek leaves them unread).
    """
    from vaultmem.cli import hot

    hot.read(budget=budget, peek=peek, query=query, vault=vault, agent=agent, as_json=as_json)


@commands.command(epilog=example("vaultmem status", "vaultmem status --json"))
def status(vault: VaultOpt = None, agent: AgentOpt = None, as_json: JsonOpt = False) -> None:
    """Vault path, agents, facts by type and status, and every problem found.

    Exits 0 even when problems are listed: status reports, `verify` judges.
    """
    from vaultmem.app.lifecycle.status import status as vault_status

    report = vault_status(open_vault(vault))
    if as_json:
        emit_json(report.to_dict())
        return
    from vaultmem.cli.output import render_status

    render_status(report)


@commands.command(epilog=example("vaultmem upgrade --dry-run", "vaultmem upgrade"))
def upgrade(
    dry_run: DryRunOpt = False,
    vault: VaultOpt = None,
    agent: AgentOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Bring the vault's files to the format this vaultmem writes (numbered migrations).

    Runs only the migrations the vault has not seen, records the new `format` in
    vaultmem.toml, and keeps every line a person wrote. Safe to run again.
    """
    from vaultmem.app.lifecycle.upgrade import upgrade as do_upgrade

    report = do_upgrade(open_vault(vault), dry_run=dry_run)
    if as_json:
        emit_json(report.to_dict())
        return
    if not report.steps:
        emit(f"format {report.from_format}: up to date")
        return
    verb = "would upgrade" if dry_run else "upgraded"
    emit(f"{verb} format {report.from_format} -> {report.to_format}")
    for step in report.steps:
        emit(f"  {step.name}: {len(step.changes)} change(s)")
        for change in step.changes:
            emit(f"    {change}")


@commands.command(epilog=example("vaultmem mcp --agent ella --vault ~/notes/orbit"))
def mcp(vault: VaultOpt = None, agent: AgentOpt = None, as_json: JsonOpt = False) -> None:
    """Serve this vault to one agent over MCP (stdio): read, append, recall, retain, ...

    There is no tool to approve, forget or write shared memory directly: agents propose,
    people decide. Nothing to install beyond vaultmem: the protocol is its own.
    """
    from vaultmem.mcp.server import serve

    serve(vault, agent or "")
