"""Commands that connect agent runtimes: `setup RUNTIME` (wire it once) and `hook EVENT`
(what the runtime's lifecycle hooks call; the fast path in cli/fast.py runs it without typer)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from vaultmem.app.hooks.contract import HookEvent
from vaultmem.app.setup.plan import SetupScope
from vaultmem.cli.base import (
    AgentOpt,
    DryRunOpt,
    JsonOpt,
    VaultOpt,
    commands,
    emit,
    emit_json,
    example,
    open_vault,
)

setup_app = typer.Typer(
    help="Wire an agent runtime to the vault: hooks, MCP server, instructions.",
    no_args_is_help=True,
    epilog=example(
        "vaultmem setup claude-code --agent ella --vault ~/notes/orbit",
        "vaultmem setup codex --agent lyra --dry-run",
        "vaultmem setup openclaw --agent ella",
        "vaultmem setup generic --agent ella",
    ),
)
commands.add_typer(setup_app, name="setup")

ProjectOpt = Annotated[
    Path | None,
    typer.Option(
        "--project",
        help="The project folder whose files get the settings [default: here].",
        show_default=False,
    ),
]
RemoveOpt = Annotated[
    bool, typer.Option("--remove", help="Take out exactly what setup added, nothing else.")
]


def _finish(plan: Any, dry_run: bool, as_json: bool) -> None:
    from vaultmem.app.setup.plan import apply_plan

    if not dry_run:
        apply_plan(plan)
    if as_json:
        emit_json(
            {
                **plan.to_dict(),
                "dry_run": dry_run,
                "diff": "".join(c.diff() for c in plan.changes if c.changed),
            }
        )
        return
    for change in plan.changes:
        if dry_run and change.changed:
            emit(change.diff().rstrip("\n"))
        else:
            verb = {"create": "created", "update": "updated", "delete": "removed"}.get(
                change.verb, "unchanged"
            )
            emit(f"{verb if not dry_run else 'unchanged'}: {change.path}")
    if dry_run:
        emit("(dry run: nothing was written)")
    for note in plan.notes:
        emit(f"next: {note}")


def _vault_and_agent(vault: Path | None, agent: str | None) -> tuple[Any, str]:
    from vaultmem.core.errors import UsageError

    v = open_vault(vault)
    if not agent:
        raise UsageError(
            "setup needs the agent this runtime acts as",
            f"pass --agent NAME (known: {', '.join(v.known_agents()) or 'none'})",
        )
    return v, v.require_agent(agent)


@setup_app.command(
    "claude-code",
    epilog=example(
        "vaultmem setup claude-code --agent ella --vault ~/notes/orbit --dry-run",
        "vaultmem setup claude-code --agent ella --remove",
        "vaultmem setup claude-code --agent ella --plugin ./vaultmem-plugin",
    ),
)
def setup_claude_code(
    project: ProjectOpt = None,
    scope: Annotated[
        SetupScope,
        typer.Option(
            "--scope",
            help="project: .claude/settings.json, .mcp.json and CLAUDE.md here; user: ~/.claude/.",
        ),
    ] = SetupScope.PROJECT,
    plugin: Annotated[
        Path | None,
        typer.Option(
            "--plugin", help="Write a Claude Code plugin folder here instead.", show_default=False
        ),
    ] = None,
    dry_run: DryRunOpt = False,
    remove: RemoveOpt = False,
    vault: VaultOpt = None,
    agent: AgentOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Claude Code: hooks, the MCP server and a CLAUDE.md block, merged into your files.

    SessionStart loads the agent's pack, UserPromptSubmit adds what is new, PreCompact and Stop
    save a checkpoint, SessionEnd queues the session for retention. Your own hooks, servers and
    text are kept byte for byte; running it twice changes nothing; --remove takes out only what
    it added; --dry-run prints the changes as a diff.
    """
    from vaultmem.app.setup.plan import plan_claude_code, plan_plugin

    v, who = _vault_and_agent(vault, agent)
    if plugin is not None:
        plan = plan_plugin(v, who, plugin.expanduser().resolve(), remove=remove)
    else:
        plan = plan_claude_code(
            v, who, project=(project or Path.cwd()).resolve(), scope=scope, remove=remove
        )
    _finish(plan, dry_run, as_json)


@setup_app.command(
    "codex",
    epilog=example(
        "vaultmem setup codex --agent lyra --vault ~/notes/orbit --dry-run",
        "vaultmem setup codex --agent lyra --remove",
    ),
)
def setup_codex(
    project: ProjectOpt = None,
    scope: Annotated[
        SetupScope,
        typer.Option(
            "--scope",
            help="project: .codex/ here (Codex reads it in a trusted project); user: "
            "~/.codex/ ($CODEX_HOME), one agent for every project.",
        ),
    ] = SetupScope.PROJECT,
    dry_run: DryRunOpt = False,
    remove: RemoveOpt = False,
    vault: VaultOpt = None,
    agent: AgentOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Codex: lifecycle hooks in hooks.json, the MCP server, the shell environment and the
    hooks feature in config.toml, and an instruction block in the project's AGENTS.md.

    The TOML and markdown parts are marked blocks and the hooks are spliced in: a re-run
    updates them, --remove takes them out, and nothing else in any file changes.
    """
    from vaultmem.app.setup.codex import plan_codex
    from vaultmem.core.environment import ENV_CODEX_HOME, env

    v, who = _vault_and_agent(vault, agent)
    home = env(ENV_CODEX_HOME)
    plan = plan_codex(
        v,
        who,
        project=(project or Path.cwd()).resolve(),
        scope=scope,
        remove=remove,
        codex_home=Path(home).expanduser() if home else None,
    )
    _finish(plan, dry_run, as_json)


@setup_app.command(
    "gemini",
    epilog=example(
        "vaultmem setup gemini --agent ella --vault ~/notes/orbit",
        "vaultmem setup gemini --agent ella --remove",
    ),
)
def setup_gemini(
    project: ProjectOpt = None,
    scope: Annotated[
        SetupScope,
        typer.Option(
            "--scope",
            help="project: .gemini/settings.json here; user: ~/.gemini/settings.json.",
        ),
    ] = SetupScope.PROJECT,
    dry_run: DryRunOpt = False,
    remove: RemoveOpt = False,
    vault: VaultOpt = None,
    agent: AgentOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Gemini CLI: lifecycle hooks and the MCP server in .gemini/settings.json, and an
    instruction block in the project's GEMINI.md."""
    from vaultmem.app.setup.plan import plan_gemini

    v, who = _vault_and_agent(vault, agent)
    plan = plan_gemini(
        v, who, project=(project or Path.cwd()).resolve(), scope=scope, remove=remove
    )
    _finish(plan, dry_run, as_json)


@setup_app.command(
    "cursor",
    epilog=example(
        "vaultmem setup cursor --agent ella --vault ~/notes/orbit",
        "vaultmem setup cursor --agent ella --remove",
    ),
)
def setup_cursor(
    project: ProjectOpt = None,
    scope: Annotated[
        SetupScope,
        typer.Option(
            "--scope",
            help="project: .cursor/mcp.json and .cursor/rules/vaultmem.mdc here; user: ~/.cursor/mcp.json.",
        ),
    ] = SetupScope.PROJECT,
    dry_run: DryRunOpt = False,
    remove: RemoveOpt = False,
    vault: VaultOpt = None,
    agent: AgentOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Cursor: the MCP server in .cursor/mcp.json and an always-applied rule."""
    from vaultmem.app.setup.plan import plan_cursor

    v, who = _vault_and_agent(vault, agent)
    plan = plan_cursor(
        v, who, project=(project or Path.cwd()).resolve(), scope=scope, remove=remove
    )
    _finish(plan, dry_run, as_json)


@setup_app.command(
    "openclaw",
    epilog=example(
        "vaultmem setup openclaw --agent ella --vault ~/notes/orbit --dry-run",
        "vaultmem setup openclaw --agent ella --vault ~/notes/orbit",
        "vaultmem setup openclaw --agent ella --remove",
    ),
)
def setup_openclaw(
    config: Annotated[
        Path | None,
        typer.Option(
            "--config",
            help="OpenClaw's config file [default: $OPENCLAW_CONFIG_PATH, else ~/.openclaw/openclaw.json].",
            show_default=False,
        ),
    ] = None,
    dry_run: DryRunOpt = False,
    remove: RemoveOpt = False,
    vault: VaultOpt = None,
    agent: AgentOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """OpenClaw: vaultmem's memory plugin in the memory slot, and its MCP server, in openclaw.json.

    Before each turn the plugin adds the session pack (first turn) and what other agents logged
    since (later turns) to the system prompt; after each turn it saves a checkpoint and queues
    the turn for retention; before a compaction it saves a checkpoint. The memory slot you had
    is put back by --remove, which gives openclaw.json back byte for byte.
    """
    from vaultmem.app.setup.openclaw import plan_openclaw

    v, who = _vault_and_agent(vault, agent)
    path = config.expanduser().absolute() if config is not None else None
    _finish(plan_openclaw(v, who, config=path, remove=remove), dry_run, as_json)


@setup_app.command(
    "generic",
    epilog=example("vaultmem setup generic --agent ella --vault ~/notes/orbit"),
)
def setup_generic(vault: VaultOpt = None, agent: AgentOpt = None, as_json: JsonOpt = False) -> None:
    """Any MCP client: print the instruction block and the MCP server entry to paste."""
    from vaultmem.app.setup.plan import plan_generic

    v, who = _vault_and_agent(vault, agent)
    plan = plan_generic(v, who)
    if as_json:
        emit_json(plan.to_dict())
    else:
        emit(plan.printed)


@setup_app.command(
    "hermes",
    epilog=example(
        "vaultmem setup hermes --agent lyra --vault ~/notes/orbit --dry-run",
        "vaultmem setup hermes --agent lyra --remove",
    ),
)
def setup_hermes(
    hermes_home: Annotated[
        Path | None,
        typer.Option(
            "--hermes-home",
            help="Hermes Agent's home folder [default: $HERMES_HOME, else ~/.hermes].",
            show_default=False,
        ),
    ] = None,
    hermes: Annotated[
        Path | None,
        typer.Option(
            "--hermes",
            help="The `hermes` command whose version and interface to check [default: PATH's].",
            show_default=False,
        ),
    ] = None,
    dry_run: DryRunOpt = False,
    remove: RemoveOpt = False,
    vault: VaultOpt = None,
    agent: AgentOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Hermes Agent: vaultmem as its memory provider, in process (no command per turn).

    Writes the plugin folder plugins/vaultmem/ in Hermes's home (a shim that loads this
    vaultmem from where it is installed) and sets memory.provider: vaultmem in its
    config.yaml, in place; --remove gives config.yaml back byte for byte and deletes the
    folder; --dry-run prints the changes as a diff.
    """
    from vaultmem.app.setup.hermes import find_hermes, plan_hermes
    from vaultmem.app.setup.hermes import hermes_home as home_of
    from vaultmem.core.environment import ENV_HERMES_HOME, env

    v, who = _vault_and_agent(vault, agent)
    home = hermes_home.expanduser().resolve() if hermes_home else home_of(env(ENV_HERMES_HOME))
    exe = hermes.expanduser().resolve() if hermes else find_hermes()
    _finish(plan_hermes(v, who, home=home, remove=remove, hermes=exe), dry_run, as_json)


@commands.command(
    epilog=example(
        'echo \'{"hook_event_name": "UserPromptSubmit", "prompt": "hi"}\' | '
        "vaultmem hook prompt --agent ella --plain"
    ),
)
def hook(
    event: Annotated[
        HookEvent, typer.Argument(help="session-start, prompt, pre-compact, stop or session-end.")
    ],
    plain: Annotated[
        bool,
        typer.Option("--plain", help="Print the added context as text, not Claude Code's JSON."),
    ] = False,
    vault: VaultOpt = None,
    agent: AgentOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """What an agent runtime's lifecycle hooks call; reads the hook's JSON on stdin.

    Prints Claude Code's hook output (hookSpecificOutput.additionalContext) for session-start
    and prompt, nothing for the others. Always exits 0: a failure is one line on stderr and its
    cause goes to .vaultmem/hooks.log. `vaultmem setup claude-code` writes the hooks for you.
    """
    from vaultmem.cli import hot

    hot.hook(event=event, plain=plain, vault=vault, agent=agent, as_json=as_json)
