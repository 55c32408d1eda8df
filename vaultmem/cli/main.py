"""The command-line adapter. `main` is the console-script entry point."""

from __future__ import annotations

import sys


def main() -> None:
    from vaultmem.cli.fast import try_fast

    if try_fast(sys.argv[1:]):
        return
    from vaultmem.cli.app import run

    run()
