"""`vaultmem setup codex`: the Codex pieces of setup (see `app.setup.plan` for the others).

Following https://developers.openai.com/codex/hooks and .../codex/mcp: the lifecycle hooks in
`hooks.json` next to `config.toml` ($CODEX_HOME, or `.codex/` with `--scope project`); in a
marked block of `config.toml`, the MCP server, the environment of every shell tool call
(`[shell_environment_policy.set]`: the vault and the agent) and the hooks feature
(`[features] hooks = true`); the instruction block in the project's AGENTS.md.
"""

from __future__ import annotations

import json
import os
import tomllib
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


def plan_codex(
    vault: Vault,
    agent: str,
    *,
    project: Path,
    scope: SetupScope = SetupScope.USER,
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
        notes.append("Codex asks once to trust new hooks: review and trust vaultmem's in /hooks.")
    return SetupPlan(Runtime.CODEX, agent, str(vault.root), remove, changes, tuple(notes))
