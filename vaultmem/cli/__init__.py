"""The command-line adapter. `main` is the console-script entry point."""

from __future__ import annotations


def main() -> None:
    from vaultmem.cli.app import run

    run()


__all__ = ["main"]
