"""The command-line adapter. `main` is the console-script entry point."""

from __future__ import annotations

import sys


def main() -> None:
    if sys.argv[1:3] == ["hook", "prompt"] and _quiet_prompt():
        return
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


def _quiet_prompt() -> bool:
    """`hook prompt` with nothing new: decided with os and json alone (app/hook_quick.py), so
    the hook that runs on every user turn costs little more than starting Python. Otherwise
    the payload is put back on stdin and the full hook runs."""
    import io

    from vaultmem.app.hook_quick import nothing_new, read_stdin

    payload = read_stdin(sys.stdin)
    if nothing_new(sys.argv[3:], payload):
        return True
    sys.stdin = io.StringIO(payload)
    return False
