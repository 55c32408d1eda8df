"""The command-line adapter. `main` is the console-script entry point."""

from __future__ import annotations

import sys


def main() -> None:
    from vaultmem.cli.fast import try_fast

    if try_fast(sys.argv[1:]):
        return
    from vaultmem.cli.app import run

    if sys.argv[1:2] == ["hook"]:
        # a hook must never block the agent (exit 2 blocks a prompt in Claude Code): a usage
        # error on a hook's command line was printed on stderr; the exit status stays 0
        try:
            run()
        except SystemExit as exc:
            if exc.code not in (None, 0):
                raise SystemExit(0) from None
        return
    run()
