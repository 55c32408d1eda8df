"""The root command group (`app`) and the registry command modules add themselves to
(`commands`). The root is lazy the documented click way: `list_commands` names every command
from a table, `get_command` imports the one module that defines the asked-for command and builds
only that command, polished for its help (`cli/helptext.py`) and placed in its help panel.

typer builds a click object for every registered command on each call (~18 ms for all of
vaultmem's, plus importing every command module); one is enough to run one. `--help` lists
them all, which builds them all. `tests/test_cli.py` checks that the table and the
registrations agree.
"""

from __future__ import annotations

import importlib
from difflib import get_close_matches
from typing import Any

import typer

from vaultmem.cli.helptext import HELP_NAMES, polish
from vaultmem.cli.typer_internals import (
    CommandInfo,
    TyperGroup,
    UsageError,
    click,
    get_command_from_info,
    get_command_name,
    get_group_from_info,
    shell_complete,
)

# command or group name -> the vaultmem.cli module that registers it
COMMANDS: dict[str, str] = {
    "init": "cmd_core",
    "read": "cmd_core",
    "status": "cmd_core",
    "upgrade": "cmd_core",
    "mcp": "cmd_core",
    "remember": "cmd_memory",
    "memories": "cmd_memory",
    "forget": "cmd_memory",
    "retract": "cmd_memory",
    "append": "cmd_log",
    "log": "cmd_log",
    "decide": "cmd_log",
    "decisions": "cmd_log",
    "checkpoint": "cmd_log",
    "state": "cmd_log",
    "keys": "cmd_integrity",
    "trust": "cmd_integrity",
    "verify": "cmd_integrity",
    "repair": "cmd_integrity",
    "inbox": "cmd_coord",
    "alerts": "cmd_coord",
    "resolve": "cmd_coord",
    "wm": "cmd_coord",
    "receipts": "cmd_coord",
    "retain": "cmd_bank",
    "promote": "cmd_bank",
    "bank": "cmd_bank",
    "recall": "cmd_recall",
    "index": "cmd_recall",
    "watch": "cmd_recall",
    "show": "cmd_show",
    "digest": "cmd_digest",
    "compact": "cmd_digest",
    "profile": "cmd_digest",
    "consolidate": "cmd_digest",
    "sync": "cmd_sync",
    "clone": "cmd_sync",
    "merge-file": "cmd_sync",
    "setup": "cmd_agents",
    "hook": "cmd_agents",
}

# `vaultmem --help`: each command in one panel, panels and commands in this order
PANELS: dict[str, tuple[str, ...]] = {
    "Every turn (agents)": (
        "read",
        "append",
        "recall",
        "show",
        "inbox",
        "wm",
        "checkpoint",
        "log",
    ),
    "Memory": ("remember", "memories", "forget", "retract"),
    "Review (people)": ("retain", "promote", "consolidate", "bank"),
    "Shared state": ("decide", "decisions", "state", "alerts", "resolve", "receipts"),
    "Set up": ("init", "setup", "mcp"),
    "Machines and trust": ("sync", "clone", "keys", "trust"),
    "Maintenance": (
        "status",
        "verify",
        "repair",
        "index",
        "watch",
        "digest",
        "compact",
        "profile",
        "upgrade",
    ),
}
# run by agent runtimes and git, not people: left out of the list, runnable, with their --help
PLUMBING = ("hook", "merge-file")
PANEL_OF = {name: panel for panel, names in PANELS.items() for name in names}


def _name(info: CommandInfo) -> str:
    callback = info.callback.__name__ if info.callback else ""
    return info.name or get_command_name(callback)


def build(name: str, root: typer.Typer) -> click.Command | None:
    """The click command (or group) `name`, after importing the module that registers it."""
    module = COMMANDS.get(name)
    if module is None:
        return None
    importlib.import_module(f"vaultmem.cli.{module}")
    reg = commands
    settings: dict[str, Any] = {
        "pretty_exceptions_short": root.pretty_exceptions_short,
        "rich_markup_mode": root.rich_markup_mode,
    }
    built: click.Command | None = None
    for info in reg.registered_commands:
        if _name(info) == name:
            built = get_command_from_info(info, **settings)
    for group in reg.registered_groups:
        if group.name == name:
            built = get_group_from_info(group, suggest_commands=root.suggest_commands, **settings)
    if built is None:
        return None
    built.hidden = name in PLUMBING
    built.rich_help_panel = PANEL_OF.get(name)  # type: ignore[attr-defined]
    polish(built)
    return built


class LazyGroup(TyperGroup):
    """vaultmem's root group: commands are built when asked for, one at a time."""

    def format_help(self, ctx: click.Context, formatter: Any) -> None:
        # polished here, not when built: typer adds the completion options after that
        polish(self)
        super().format_help(ctx, formatter)

    def list_commands(self, ctx: click.Context) -> list[str]:
        return [*PANEL_OF, *PLUMBING]

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        return build(cmd_name, app)

    def invoke(self, ctx: click.Context) -> Any:
        # click turns a closed stdout into exit 1 before our boundary sees it; a reader that
        # stops early (`vaultmem log | head`) is a normal end
        try:
            return super().invoke(ctx)
        except BrokenPipeError:
            from vaultmem.cli.boundary import reader_gone

            reader_gone()

    def _main_shell_completion(
        self, ctx_args: Any, prog_name: str, complete_var: str | None = None
    ) -> None:
        """Answer a shell's completion request (`_VAULTMEM_COMPLETE` set), then exit.

        typer's scripts send `complete_bash`; click 8's protocol says `bash_complete`: both
        are read. Completion builds every command, as `--help` does; plain runs never come
        here with the variable set."""
        from vaultmem.core.environment import ENV_COMPLETE, env

        var = complete_var or ENV_COMPLETE
        instruction = env(var)
        if not instruction:
            return
        shell, _, action = instruction.partition("_")
        if action in ("complete", "source"):
            instruction = f"{action}_{shell}"
        raise SystemExit(shell_complete(self, ctx_args, prog_name, var, instruction))

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        try:
            return super().resolve_command(ctx, args)
        except UsageError as exc:
            # typer suggests from `self.commands`, which a lazy group leaves empty
            matches = get_close_matches(args[0], list(COMMANDS)) if args else []
            if not matches or "Did you mean" in exc.message:
                raise
            names = ", ".join(repr(m) for m in matches)
            raise UsageError(
                f"{exc.message.rstrip('.')}. Did you mean {names}?", ctx=exc.ctx
            ) from None


def walk(command: click.Command, path: str = "") -> list[tuple[str, click.Command]]:
    """(path, command) for every command and group under `command`, depth first."""
    out = [(path, command)] if path else []
    if isinstance(command, TyperGroup):
        ctx = click.Context(command)
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            if sub is not None:
                out += walk(sub, f"{path} {name}".strip())
    return out


ROOT_EPILOG = (
    "Times: --since and --until take an entry id where they read the log or receipts "
    "(ella.12, ella.d1), a UTC date or time (2026-11-30, 2026-11-30T14:00, Z optional) or a "
    "duration before now (90m, 2h, 7d, 8w); --ttl, --older-than and --keep-days take a "
    "duration (a bare number is days for --keep-days).\n\n"
    "Plumbing, run by agent runtimes and git rather than people, is left out of this list: "
    "`vaultmem hook EVENT` (what `vaultmem setup` installs) and `vaultmem merge-file` (git's "
    'merge driver); each has its own --help, and the README\'s "Use it from your agent" and '
    '"Several machines" describe them.\n\n'
    "Every command takes --vault, --agent and --json; `vaultmem COMMAND --help` ends with "
    "an example."
)

# The root: a lazy group that builds only the command a line names (cli/lazy.py).
app = typer.Typer(
    name="vaultmem",
    cls=LazyGroup,
    no_args_is_help=True,
    add_completion=True,  # --install-completion, --show-completion (bash, zsh, fish)
    pretty_exceptions_enable=False,
    epilog=ROOT_EPILOG,
    context_settings={"help_option_names": HELP_NAMES},
)

# Where command modules register their commands; the root looks them up here, one at a time.
commands = typer.Typer()
