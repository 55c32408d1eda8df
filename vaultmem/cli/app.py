"""Assemble the commands (importing a cmd module registers its commands) and run one."""

from __future__ import annotations

import sys

from vaultmem.cli import cmd_bank, cmd_core, cmd_log, cmd_memory, cmd_recall  # noqa: F401
from vaultmem.cli.base import app
from vaultmem.cli.boundary import guarded, split_flags
from vaultmem.cli.fast import HOT, save_spec

__all__ = ["app", "run"]


def run(argv: list[str] | None = None) -> None:
    args, debug, as_json = split_flags(list(sys.argv[1:] if argv is None else argv))
    guarded(
        lambda: app(args=args, prog_name="vaultmem", standalone_mode=False),
        as_json=as_json,
        debug=debug,
    )
    if args and args[0] in HOT:
        save_spec(app)  # so that the next call of a hot command can skip typer
