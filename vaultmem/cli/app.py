"""Assemble the commands (importing a cmd module registers its commands) and run one."""

from __future__ import annotations

import copy
import sys

import typer

from vaultmem.cli import cmd_bank, cmd_core, cmd_log, cmd_memory, cmd_recall  # noqa: F401
from vaultmem.cli.base import app
from vaultmem.cli.boundary import guarded, split_flags
from vaultmem.cli.fast import HOT, save_spec

__all__ = ["app", "run"]


def _command_name(info: typer.models.CommandInfo) -> str:
    return info.name or (info.callback.__name__ if info.callback else "").lower().replace("_", "-")


def narrowed(args: list[str]) -> typer.Typer:
    """The app with only the command or group the line names.

    typer builds the click object of every registered command on each call (~18 ms for all
    of vaultmem's); one is enough to run one. Top-level help and unknown names (typer's
    suggestions) get the whole app.
    """
    if not args or args[0].startswith("-"):
        return app
    commands = [c for c in app.registered_commands if _command_name(c) == args[0]]
    groups = [g for g in app.registered_groups if g.name == args[0]]
    if not commands and not groups:
        return app
    one = copy.copy(app)
    one.registered_commands = commands
    one.registered_groups = groups
    return one


def run(argv: list[str] | None = None) -> None:
    args, debug, as_json = split_flags(list(sys.argv[1:] if argv is None else argv))
    guarded(
        lambda: narrowed(args)(args=args, prog_name="vaultmem", standalone_mode=False),
        as_json=as_json,
        debug=debug,
    )
    if args and args[0] in HOT:
        save_spec(app)  # so that the next call of a hot command can skip typer
