"""The command-line adapter. `main` is the console-script entry point."""

from __future__ import annotations

import sys

from vaultmem.cli import startup


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
    startup.collector(sys.argv[1:])
    try:
        _main()
        sys.stdout.flush()  # inside the guard: a reader that left early is a normal end
        startup.before_exit()
    except BrokenPipeError:
        from vaultmem.cli.boundary import reader_gone

        reader_gone()


def _main() -> None:
    argv = sys.argv[1:]
    hook = argv[:1] == ["hook"]
    bad = _bad_argument(argv)
    if bad:
        if hook:  # a hook never blocks the agent: say it, exit 0
            sys.stderr.write(f"vaultmem hook: {bad}\n")
            return
        from vaultmem.cli.boundary import fail
        from vaultmem.core.errors import EXIT_USAGE

        fail(EXIT_USAGE, "UsageError", bad, "pass text in UTF-8", "--json" in argv)
    if argv[:2] == ["hook", "prompt"] and _quiet_prompt():
        return
    if argv[:2] in (["hook", "stop"], ["hook", "pre-compact"]) and _detached(argv[1]):
        return
    startup.lean_pathlib()  # after the hooks' quick paths, which need no pathlib at all
    if argv[:1] == ["mcp"] and _serve_mcp(argv[1:]):
        return
    if argv[:1] == ["sync"] and _quiet_sync(argv[1:]):
        return
    from vaultmem.cli.fast import try_fast

    if try_fast(argv):
        return
    from vaultmem.cli.app import run

    if hook:
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
    """`hook prompt` with nothing new: decided with os and json alone (app/hooks/quick.py), so
    the hook that runs on every user turn costs little more than starting Python. Otherwise
    the payload is put back on stdin and the full hook runs."""
    import io

    from vaultmem.app.hooks.quick import nothing_new, read_stdin

    payload = read_stdin(sys.stdin)
    if nothing_new(sys.argv[3:], payload):
        return True
    sys.stdin = io.StringIO(payload)
    return False


def _detached(event: str) -> bool:
    """`hook stop` / `hook pre-compact`: the checkpoint can wait for the turn to end, so it is
    handed to a detached process (app/hooks/background.py) and this one exits at once.
    Otherwise the payload is put back on stdin and the hook runs here."""
    import io

    from vaultmem.app.hooks.background import detach
    from vaultmem.app.hooks.quick import read_stdin

    payload = read_stdin(sys.stdin)
    if detach(event, sys.argv[3:], payload):
        return True
    sys.stdin = io.StringIO(payload)
    return False


def _vault_and_agent(
    args: list[str], switches: tuple[str, ...] = ()
) -> tuple[dict[str, str], set[str]] | None:
    """The fast paths' arguments: `--vault V`/`--vault=V` and `--agent A` at most once each,
    plus the given `switches`; None for anything else (typer then parses it and explains)."""
    values: dict[str, str] = {}
    seen: set[str] = set()
    rest = list(args)
    while rest:
        arg = rest.pop(0)
        if arg in switches and arg not in seen:
            seen.add(arg)
            continue
        name, eq, value = arg.partition("=")
        if name not in ("--vault", "--agent") or name in values:
            return None
        if not eq:
            if not rest:
                return None
            value = rest.pop(0)
        values[name] = value
    return values, seen


def _quiet_sync(args: list[str]) -> bool:
    """`vaultmem sync [--vault V] [--agent A] [--json]` with nothing to do, answered without
    typer in two git calls (app/sync/quiet.py): the hooks' background sync runs it every few
    minutes. Anything else, any error, or something to do: False, and the full sync runs."""
    from vaultmem.core.environment import ENV_NO_FAST, env

    parsed = _vault_and_agent(args, switches=("--json",))
    if parsed is None:
        return False
    values, switches = parsed
    as_json = "--json" in switches
    if env(ENV_NO_FAST) or values.get("--vault") == "":
        return False
    from pathlib import Path

    from vaultmem.app.sync.quiet import nothing_to_do
    from vaultmem.core.errors import VaultmemError
    from vaultmem.core.vault import Vault

    try:
        where = values.get("--vault")
        if not nothing_to_do(Vault.open(Path(where) if where else None)):
            return False
    except VaultmemError:
        return False  # no vault, no git...: the full command says so, with its exit code
    from vaultmem.cli.hot import render_sync_nothing

    render_sync_nothing(as_json)
    return True


def _serve_mcp(args: list[str]) -> bool:
    """`vaultmem mcp --vault V --agent A`, as setup writes it, without loading typer: a runtime
    starts the server beside each session and gives it about a second before the first request
    (Claude Code's `claude -p` does not wait). Anything else goes through typer as usual."""
    parsed = _vault_and_agent(args)
    if parsed is None:
        return False
    values = parsed[0]
    if set(values) != {"--vault", "--agent"} or not all(values.values()):
        return False
    from pathlib import Path

    from vaultmem.mcp.server import serve

    serve(Path(values["--vault"]), values["--agent"])
    return True
