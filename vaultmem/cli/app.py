"""Run one command line through typer (the fast path in cli/fast.py handles the hot ones)."""

from __future__ import annotations

import sys

from vaultmem.cli.base import app
from vaultmem.cli.boundary import guarded, split_flags

__all__ = ["app", "run"]


def run(argv: list[str] | None = None) -> None:
    args, debug, as_json = split_flags(list(sys.argv[1:] if argv is None else argv))
    guarded(
        lambda: app(args=args, prog_name="vaultmem", standalone_mode=False),
        as_json=as_json,
        debug=debug,
    )
