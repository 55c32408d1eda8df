"""The command-line adapter. `main` is the console-script entry point."""

from __future__ import annotations

import sys


def _bad_argument(argv: list[str]) -> str | None:
    """An argument that is not valid UTF-8 (Python keeps its bytes as surrogates)."""
    for n, arg in enumerate(argv, 1):
        try:
            arg.encode("utf-8")
        except UnicodeEncodeError:
            shown = arg.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
            return f"argument {n} ({shown!r}) is not valid UTF-8 text"
    return None


def main() -> None:
    argv = sys.argv[1:]
    bad = _bad_argument(argv)
    if bad:
        from vaultmem.cli.boundary import fail
        from vaultmem.core.errors import EXIT_USAGE

        fail(EXIT_USAGE, "UsageError", bad, "pass text in UTF-8", "--json" in argv)
    from vaultmem.cli.fast import try_fast

    if try_fast(argv):
        return
    from vaultmem.cli.app import run

    run()
