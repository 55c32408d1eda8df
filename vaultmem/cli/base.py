"""The options every command shares, and the helpers commands use.

Command modules import heavy parts of the core inside the command body, not at the top: every
module here is imported on every call (typer needs the signatures), and `append`/`read` run on
every agent turn.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from vaultmem.cli.io import emit, emit_json, open_vault, read_text_arg, warn
from vaultmem.cli.lazy import app, commands
from vaultmem.core.environment import ENV_AGENT, ENV_REVIEWER, ENV_VAULT

__all__ = [
    "COMMON",
    "AgentOpt",
    "JsonOpt",
    "VaultOpt",
    "app",
    "commands",
    "emit",
    "emit_json",
    "example",
    "open_vault",
    "read_text_arg",
    "warn",
]

COMMON = "Common options"

VaultOpt = Annotated[
    Path | None,
    typer.Option(
        "--vault",
        envvar=ENV_VAULT,
        help="Vault folder (default: the nearest folder up from here with a vaultmem.toml).",
        show_default=False,
        rich_help_panel=COMMON,
    ),
]
AgentOpt = Annotated[
    str | None,
    typer.Option(
        "--agent",
        envvar=ENV_AGENT,
        help="Acting agent.",
        show_default=False,
        rich_help_panel=COMMON,
    ),
]
JsonOpt = Annotated[
    bool,
    typer.Option("--json", help="Machine-readable output on stdout.", rich_help_panel=COMMON),
]
# the options several commands share, defined once (what each command does on a dry run is in
# its own help text)
DryRunOpt = Annotated[
    bool, typer.Option("--dry-run", help="Show what would change; change nothing.")
]
ReviewerOpt = Annotated[
    str | None,
    typer.Option(
        "--reviewer",
        "-r",
        envvar=ENV_REVIEWER,
        help="The person acting: a reviewer listed in vaultmem.toml "
        "(env VAULTMEM_REVIEWER, else default_reviewer).",
        show_default=False,
    ),
]


def _version(value: bool) -> None:
    if value:
        from vaultmem import __version__

        sys.stdout.write(f"vaultmem {__version__}\n")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version", "-V", callback=_version, is_eager=True, help="Print the version and exit."
        ),
    ] = False,
) -> None:
    """Durable, shared memory for AI agents, in a markdown vault people open in Obsidian.

    Agents: `read` before answering, `append` after each significant turn, `recall` to search.

    People: open the vault in Obsidian, review proposals with `promote`.
    """


def example(*lines: str) -> str:
    """Help epilog: every command's help ends with a runnable example."""
    return "Example:  " + "  ·  ".join(lines)
