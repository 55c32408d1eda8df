"""The one error boundary: every command runs inside `guarded`.

It maps each VaultmemError to its exit code (see vaultmem.core.errors) and prints one `Error: …`
line (plus a hint) on stderr; under `--json` it also prints
`{"error": {"type", "message", "exit_code", "hint"}}` on stdout. `--debug` (anywhere on the
line) or VAULTMEM_DEBUG=1 adds the traceback, never locals. No typer import here: the fast
path uses this boundary too; typer's own exceptions are recognised only when typer is loaded.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import NoReturn

from vaultmem.cli.io import emit_json
from vaultmem.core.environment import env_debug
from vaultmem.core.errors import EXIT_UNEXPECTED, EXIT_USAGE, VaultmemError
from vaultmem.core.patterns import later


def split_flags(argv: list[str]) -> tuple[list[str], bool, bool]:
    """Strip --debug from the command line (it may stand anywhere); note --json."""
    end = argv.index("--") if "--" in argv else len(argv)
    debug = "--debug" in argv[:end] or env_debug()
    as_json = "--json" in argv[:end]
    args = [a for i, a in enumerate(argv) if not (i < end and a == "--debug")]
    return args, debug, as_json


def _print_traceback() -> None:
    import traceback  # only on the error path: it costs ~4 ms to import

    traceback.print_exc()


def fail(code: int, kind: str, message: str, hint: str | None, as_json: bool) -> None:
    line = f"Error: {message}" + (f"\n  hint: {hint}" if hint else "")
    sys.stderr.write(line + "\n")
    if as_json:
        payload = {"type": kind, "message": message, "exit_code": code}
        if hint:
            payload["hint"] = hint
        emit_json({"error": payload})
    sys.stdout.flush()
    raise SystemExit(code)


_OPTION_NAME = later(r"--[a-z][a-z0-9-]*")


def _dash_hint(exc: Exception) -> str | None:
    """For "No such option: -x": a value that starts with a dash reads as an option."""
    name = getattr(exc, "option_name", None)
    if type(exc).__name__ != "NoSuchOption" or not isinstance(name, str):
        return None
    ctx = getattr(exc, "ctx", None)
    command = getattr(ctx, "command_path", "")
    if " " not in command:  # an option of vaultmem itself, before any command
        return None
    if _OPTION_NAME.fullmatch(name):  # reads as a mistyped option, not as a value
        return f"`{command} --help` lists its options"
    return (
        f"if {name!r} starts a value, not an option, put the value last, after `--` "
        f"({command} --agent A -- '{name} ...'), or join it to its option (--body='{name} ...')"
    )


# pydantic's error types (typer converts values through it) -> what vaultmem says of the value
_NOT_A = {
    "int_parsing": "is not a whole number",
    "int_from_float": "is not a whole number",
    "float_parsing": "is not a number",
    "bool_parsing": "is not true or false",
}


def _our_words(exc: Exception) -> str:
    """A usage error's message without the wording of typer's validation layer (pydantic):
    "Value error, 'x' is not ...", "Input should be a valid integer, unable to parse ..."."""
    message = str(getattr(exc, "message", ""))
    errors = getattr(exc.__cause__, "errors", None)
    try:
        first = errors()[0] if callable(errors) else None
    except (IndexError, TypeError, ValueError):
        first = None
    if not isinstance(first, dict):
        return message.replace("Value error, ", "")
    value, kind = first.get("input"), str(first.get("type", ""))
    said = str(first.get("msg", message)).replace("Value error, ", "")
    if kind in _NOT_A:
        return f"{value!r} {_NOT_A[kind]}"
    if said.startswith("Input should be "):
        return f"{value!r} should be {said.removeprefix('Input should be ').split(',')[0]}"
    return said


def _typer_error(exc: Exception, as_json: bool) -> bool:
    """Usage errors and aborts raised by typer's parser; False if `exc` is not one."""
    typer = sys.modules.get("typer")
    if typer is None:
        return False
    if isinstance(exc, typer.TyperException):
        code = int(getattr(exc, "exit_code", EXIT_USAGE))
        if isinstance(getattr(exc, "message", None), str):
            exc.message = _our_words(exc)
        message = getattr(exc, "format_message", lambda: str(exc))()
        hint = _dash_hint(exc)
        if as_json:
            fail(code, "UsageError", message, hint, as_json)
        show = getattr(exc, "show", None)
        if callable(show):
            show()
        else:
            sys.stderr.write(f"Error: {message}\n")
        if hint:
            sys.stderr.write(f"  hint: {hint}\n")
        raise SystemExit(code) from None
    if isinstance(exc, typer.Abort):
        sys.stderr.write("Aborted.\n")
        raise SystemExit(130) from None
    return False


def reader_gone() -> NoReturn:
    """The reader of stdout went away (`vaultmem inbox | grep -q X`, `log | head`): a normal
    end, as for `git log | head`, so exit 0 and say nothing. stdout is pointed at /dev/null first,
    so the interpreter's last flush does not fail on the closed pipe a second time."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
    raise SystemExit(0)


def guarded(call: Callable[[], object], *, as_json: bool, debug: bool) -> None:
    """Run one command; turn every outcome into output and an exit code."""
    try:
        result = call()
    except VaultmemError as exc:
        if debug:
            _print_traceback()
        fail(exc.exit_code, exc.kind, exc.message, exc.hint, as_json)
    except KeyboardInterrupt:
        sys.stderr.write("Interrupted.\n")
        raise SystemExit(130) from None
    except BrokenPipeError:
        reader_gone()
    except OSError as exc:  # a write that no core function translated (the index's, a lock)
        if debug:
            _print_traceback()
        from vaultmem.core.fsio import write_error

        known = write_error(Path(exc.filename or "a file"), exc)
        if type(known) is VaultmemError and not isinstance(exc, PermissionError):
            fail(
                EXIT_UNEXPECTED,
                type(exc).__name__,
                f"unexpected {type(exc).__name__}: {exc}",
                "run again with --debug for the traceback, and report it",
                as_json,
            )
        fail(known.exit_code, known.kind, known.message, known.hint, as_json)
    except Exception as exc:
        if _typer_error(exc, as_json):
            return
        if debug:
            _print_traceback()
        fail(
            EXIT_UNEXPECTED,
            type(exc).__name__,
            f"unexpected {type(exc).__name__}: {exc}",
            "run again with --debug for the traceback, and report it",
            as_json,
        )
    if isinstance(result, int) and result:
        raise SystemExit(result)
