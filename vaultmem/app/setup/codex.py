"""`vaultmem setup codex`: the Codex pieces of setup (see `app.setup.plan` for the others).

Following https://developers.openai.com/codex/hooks and .../codex/mcp: the lifecycle hooks in
`hooks.json` next to `config.toml` (the project's `.codex/`, or $CODEX_HOME with `--scope
user`); in a marked block of `config.toml`, the MCP server, the environment of every shell tool call
(`[shell_environment_policy.set]`: the vault and the agent) and the hooks feature
(`[features] hooks = true`); the instruction block in the project's AGENTS.md.

The default scope is the project: Codex loads the hooks and config of a project's `.codex/`
layer when the project is trusted ("Codex discovers hooks next to active config layers ...
<repo>/.codex/hooks.json, <repo>/.codex/config.toml"; "project-local hooks load only when
the project's .codex/ layer is trusted", developers.openai.com/codex/hooks; Codex 0.171.0's
`codex exec --trust` saves that trust). The user-wide files wire one agent for every project,
so `--scope user` refuses to replace another agent's or vault's wiring there (issue 37: wiring
lyra in a second project silently took ella's hooks from the first).
"""

from __future__ import annotations

import json
import os
import tomllib
from itertools import pairwise
from pathlib import Path

from vaultmem.app.setup import files as sf
from vaultmem.app.setup.plan import (
    MD_MARKERS,
    SERVER_NAME,
    TOML_MARKERS,
    Runtime,
    SetupPlan,
    SetupScope,
    hook_handlers,
    instructions,
    mcp_server,
    tool_env,
    vaultmem_argv,
)
from vaultmem.core.environment import ENV_HOME, home_dir
from vaultmem.core.errors import IntegrityError, RefusedError
from vaultmem.core.vault import Vault


def _q(value: str) -> str:
    return json.dumps(value, ensure_ascii=False)  # a JSON string is a TOML basic string


def server_env(vault: Vault, agent: str) -> dict[str, str]:
    """The `env` of the MCP server's table. Codex starts an MCP server with a filtered
    environment (a default whitelist: HOME, PATH, USER, LANG, ...; more only through the
    table's `env`, openai/codex docs/config.md "mcp_servers", rmcp-client/src/utils.rs), so
    a VAULTMEM_HOME set where setup runs (where this machine's keys live) never reached the
    server: `append` failed unsigned (exit 8) and the index was rebuilt on every start (issue
    37). So: VAULTMEM_HOME when this environment chooses it (VAULTMEM_HOME, or
    XDG_CONFIG_HOME under which the default lies), and the vault and the agent. Nothing
    else: never a secret such as ANTHROPIC_API_KEY (config.toml is not a secret store)."""
    out: dict[str, str] = {}
    if os.environ.get(ENV_HOME) or os.environ.get("XDG_CONFIG_HOME"):
        out[ENV_HOME] = str(home_dir().resolve())
    return {**out, **tool_env(vault, agent)}


def codex_block(
    argv: list[str], vault: Vault, agent: str, *, env: bool = True, features: bool = True
) -> str:
    """The config.toml block: the MCP server and what it needs of the environment
    (`server_env`); with `env`, the variables Codex sets for every
    shell tool call (`[shell_environment_policy] set`); with `features`, the hooks feature
    (`[features] hooks = true`; older Codex releases call it `codex_hooks`)."""
    server = mcp_server(argv, vault, agent)
    args = ", ".join(_q(a) for a in server["args"])
    env_table = ", ".join(f"{k} = {_q(v)}" for k, v in server_env(vault, agent).items())
    out = (
        f"[mcp_servers.{SERVER_NAME}]\ncommand = {_q(server['command'])}\nargs = [{args}]\n"
        f"env = {{ {env_table} }}\n"
    )
    if env:
        out += "\n[shell_environment_policy.set]\n" + "".join(
            f"{k} = {_q(v)}\n" for k, v in tool_env(vault, agent).items()
        )
    if features:
        out += "\n[features]\nhooks = true\n"
    return out


def _features_on(text: str | None) -> bool:
    try:
        data = tomllib.loads(text or "")
    except tomllib.TOMLDecodeError:
        return False
    features = data.get("features")
    return isinstance(features, dict) and (
        features.get("hooks") is True or features.get("codex_hooks") is True
    )


def _check_toml(text: str | None, path: Path, *, ours_removed: bool) -> None:
    if text is None:
        return
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise IntegrityError(
            f"{path} is not valid TOML ({exc}); vaultmem setup changed nothing",
            "fix the file and run setup again",
        ) from None
    if ours_removed and SERVER_NAME in (data.get("mcp_servers") or {}):
        raise RefusedError(
            f"{path} already configures an MCP server named {SERVER_NAME!r} outside vaultmem's block",
            "remove that table (or let it be and skip this step); vaultmem changed nothing",
        )


def _wiring(text: str | None) -> tuple[str, str] | None:
    """The vault and agent the vaultmem server of a config.toml is started for, if any."""
    try:
        data = tomllib.loads(text or "")
    except tomllib.TOMLDecodeError:
        return None
    server = (data.get("mcp_servers") or {}).get(SERVER_NAME)
    args = server.get("args") if isinstance(server, dict) else None
    if not isinstance(args, list):
        return None
    found = {}
    for flag, value in pairwise(args):
        if flag in ("--vault", "--agent") and isinstance(value, str):
            found[flag] = value
    if "--vault" not in found or "--agent" not in found:
        return None
    return found["--vault"], found["--agent"]


def plan_codex(
    vault: Vault,
    agent: str,
    *,
    project: Path,
    scope: SetupScope = SetupScope.PROJECT,
    remove: bool = False,
    codex_home: Path | None = None,
    argv: list[str] | None = None,
) -> SetupPlan:
    """The MCP server, the environment of shell tool calls and the hooks feature in
    `config.toml`, the lifecycle hooks in `hooks.json` next to it
    (https://developers.openai.com/codex/hooks), the instruction block in AGENTS.md."""
    agent = vault.require_agent(agent)
    argv = argv or vaultmem_argv()
    home = codex_home or Path.home() / ".codex"
    base = home if scope == SetupScope.USER else project / ".codex"
    config = base / "config.toml"
    hooks = base / "hooks.json"
    agents_md = project / "AGENTS.md"
    notes: list[str] = []

    def edit_config(text: str | None) -> str | None:
        theirs = sf.remove_block(text, TOML_MARKERS)
        _check_toml(theirs, config, ours_removed=True)
        if remove:
            return theirs
        wired = _wiring(text)
        if scope == SetupScope.USER and wired and wired != (str(vault.root), agent):
            raise RefusedError(
                f"{config} already wires agent {wired[1]!r} (vault {wired[0]}) for every Codex "
                f"project; wiring {agent!r} there would take it from the projects that use it",
                "wire this project alone with --scope project (the default), or take the other "
                "out first: vaultmem setup codex --scope user --remove; vaultmem changed nothing",
            )
        # a table the person already has cannot be opened again in our block: then that
        # part is left to them (said in the notes)
        for env, features in ((True, True), (True, False), (False, True), (False, False)):
            if features and _features_on(theirs):
                continue
            new = sf.upsert_block(
                text, TOML_MARKERS, codex_block(argv, vault, agent, env=env, features=features)
            )
            try:
                _check_toml(new, config, ours_removed=False)
            except IntegrityError:
                continue
            if not env:
                notes.append(
                    f"{config} has its own [shell_environment_policy]: add "
                    f"set = {{ VAULTMEM_VAULT = {_q(str(vault.root))}, VAULTMEM_AGENT = {_q(agent)} }} to it"
                )
            if not features and not _features_on(theirs):
                notes.append(f"{config} has its own [features] table: add hooks = true to it")
            return new
        raise IntegrityError(
            f"{config}: vaultmem's block does not fit", "fix the file and run setup again"
        )

    md = instructions(vault, agent, Runtime.CODEX, argv)
    handlers = hook_handlers(Runtime.CODEX, argv, vault, agent)
    changes = (
        sf.plan(config, edit_config),
        sf.hooks_change(hooks, handlers, remove),
        sf.block_change(agents_md, MD_MARKERS, md, remove),
    )
    # the edits are planned (and the notes filled) when the changes are built
    if not remove:
        if scope == SetupScope.PROJECT:
            notes.append(
                f"Codex reads {base} only in a trusted project: trust the folder when Codex "
                "asks (or run `codex exec --trust` once in it)."
            )
            user_wide = _wiring(sf.current(home / "config.toml"))
            if user_wide:
                notes.append(
                    f"{home / 'config.toml'} also wires agent {user_wide[1]!r} for every project, "
                    "so Codex runs both sets of hooks here: take that out with "
                    "vaultmem setup codex --scope user --remove"
                )
        notes.append("Codex asks once to trust new hooks: review and trust vaultmem's in /hooks.")
    return SetupPlan(Runtime.CODEX, agent, str(vault.root), remove, changes, tuple(notes))
