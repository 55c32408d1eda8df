"""Assemble the commands and run them inside the one error boundary.

The boundary maps every VaultmemError to its exit code (see vaultmem.errors) and prints one
`Error: …` line on stderr; under `--json` it also prints `{"error": {"type", "message"}}` on
stdout. `--debug` (anywhere on the line) or VAULTMEM_DEBUG=1 adds the traceback, never locals.
"""

from __future__ import annotations

import sys

import typer

from vaultmem.cli import cmd_bank, cmd_core, cmd_log, cmd_memory, cmd_recall  # noqa: F401  (registers commands)
from vaultmem.cli.base import app, emit_json
from vaultmem.config import env_debug
from vaultmem.errors import EXIT_UNEXPECTED, EXIT_USAGE, EXIT_VAULT, VaultmemError


def _print_traceback() -> None:
    import traceback  # only on the error path: it costs ~4 ms to import

    traceback.print_exc()


def _split_flags(argv: list[str]) -> tuple[list[str], bool, bool]:
    """Strip --debug from the command line (it may stand anywhere); note --json."""
    end = argv.index("--") if "--" in argv else len(argv)
    debug = "--debug" in argv[:end]
    as_json = "--json" in argv[:end]
    args = [a for i, a in enumerate(argv) if not (i < end and a == "--debug")]
    return args, debug, as_json


def _fail(code: int, kind: str, message: str, hint: str | None, as_json: bool) -> None:
    line = f"Error: {message}" + (f"\n  hint: {hint}" if hint else "")
    sys.stderr.write(line + "\n")
    if as_json:
        payload = {"type": kind, "message": message, "exit_code": code}
        if hint:
            payload["hint"] = hint
        emit_json({"error": payload})
    sys.stdout.flush()
    raise SystemExit(code)


def run(argv: list[str] | None = None) -> None:
    args, debug, as_json = _split_flags(list(sys.argv[1:] if argv is None else argv))
    debug = debug or env_debug()
    try:
        result = app(args=args, prog_name="vaultmem", standalone_mode=False)
    except VaultmemError as exc:
        if debug:
            _print_traceback()
        _fail(exc.exit_code, exc.kind, exc.message, exc.hint, as_json)
    except typer.TyperException as exc:  # usage errors from the command-line parser
        code = int(getattr(exc, "exit_code", EXIT_USAGE))
        if as_json:
            _fail(code, "UsageError", exc.format_message(), None, as_json)
        show = getattr(exc, "show", None)
        if callable(show):
            show()
        else:
            sys.stderr.write(f"Error: {exc}\n")
        raise SystemExit(code) from None
    except typer.Abort:
        sys.stderr.write("Aborted.\n")
        raise SystemExit(130) from None
    except KeyboardInterrupt:
        sys.stderr.write("Interrupted.\n")
        raise SystemExit(130) from None
    except BrokenPipeError:
        # the reader went away (`vaultmem log | head`): not an error worth a traceback
        sys.stderr.close()
        raise SystemExit(EXIT_UNEXPECTED) from None
    except PermissionError as exc:  # a write that no core function translated
        if debug:
            _print_traceback()
        _fail(
            EXIT_VAULT,
            "NotWritableError",
            f"cannot write {exc.filename}: {exc.strerror}",
            "the vault (or this file) is read-only; check its permissions",
            as_json,
        )
    except Exception as exc:
        if debug:
            _print_traceback()
        _fail(
            EXIT_UNEXPECTED,
            type(exc).__name__,
            f"unexpected {type(exc).__name__}: {exc}",
            "run again with --debug for the traceback, and report it",
            as_json,
        )
    if isinstance(result, int) and result:
        raise SystemExit(result)
