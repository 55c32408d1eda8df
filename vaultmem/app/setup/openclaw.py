"""`vaultmem setup openclaw`: wire vaultmem into OpenClaw's memory-plugin slot.

What OpenClaw 2026.9.6 documents (its package's docs/, read for this module):

- a native plugin is a folder with `openclaw.plugin.json` (`id`, `kind: "memory"`,
  `configSchema`) and a `package.json` whose `openclaw.extensions` names the entry module
  (docs/plugins/manifest.md, docs/plugins/building-plugins.md); a folder listed in
  `plugins.load.paths` is loaded without a managed install (docs/gateway/config-extensions.md,
  "Plugins");
- `plugins.slots.memory` picks the one memory plugin; selecting it counts as activation
  (docs/tools/plugin.md, "Configure plugin policy");
- a non-bundled plugin's `before_prompt_build` and `agent_end` hooks run only with
  `plugins.entries.<id>.hooks.allowConversationAccess: true` (docs/plugins/hooks.md,
  "Permissions and scope");
- MCP servers an embedded run may use live under `mcp.servers.<name>` as
  `{command, args}` (docs/cli/mcp/registry.md): vaultmem's own server goes there, so the
  tools (read, append, recall, retain, ack, ...) are exactly the MCP server's.

So setup edits one file, OpenClaw's config (`$OPENCLAW_CONFIG_PATH`, else
`$OPENCLAW_STATE_DIR/openclaw.json`, else `~/.openclaw/openclaw.json`), in place: read as
JSON5, as OpenClaw reads it (`app.setup.json5edit`: comments, unquoted keys, trailing commas),
spliced with `app.setup.jsonedit`; every other byte stays, and `--remove` gives the file back
as it was. The
plugin itself is package data (`openclaw_plugin/`, loaded from where vaultmem is installed):
nothing is copied, and an upgrade of vaultmem upgrades the plugin. The memory slot the person
had (say `memory-lancedb`) is kept in vaultmem's plugin entry and put back by `--remove`.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from vaultmem.app.setup import files as sf
from vaultmem.app.setup import json5edit, jsonedit
from vaultmem.app.setup.plan import SERVER_NAME, Runtime, SetupPlan, mcp_server
from vaultmem.core.errors import IntegrityError, RefusedError
from vaultmem.core.vault import Vault

PLUGIN_ID = "vaultmem"  # the plugin's id in openclaw.plugin.json, plugins.entries and the slot
PLUGIN_DIR = Path(__file__).resolve().parent / "openclaw_plugin"
NEEDS = "OpenClaw 2026.9.6 or later (Node.js >= 24.16)"
_ENTRY = ("plugins", "entries", PLUGIN_ID)
_SLOT = ("plugins", "slots", "memory")
_PATHS = ("plugins", "load", "paths")
_ALLOW = ("plugins", "allow")
_SERVER = ("mcp", "servers", SERVER_NAME)


def config_path(env: dict[str, str] | None = None, home: Path | None = None) -> Path:
    """OpenClaw's config file, as OpenClaw resolves it (docs/help/environment.md:
    OPENCLAW_CONFIG_PATH, OPENCLAW_STATE_DIR, OPENCLAW_HOME, then HOME)."""
    e = os.environ if env is None else env
    if e.get("OPENCLAW_CONFIG_PATH", "").strip():
        return Path(e["OPENCLAW_CONFIG_PATH"]).expanduser()
    if e.get("OPENCLAW_STATE_DIR", "").strip():
        return Path(e["OPENCLAW_STATE_DIR"]).expanduser() / "openclaw.json"
    base = e.get("OPENCLAW_HOME", "").strip()
    root = Path(base).expanduser() if base else (home or Path.home())
    return root / ".openclaw" / "openclaw.json"


def hook_argv() -> list[str]:
    """How the plugin starts vaultmem: this interpreter by absolute path, isolated (`-I`: no
    PYTHON* variables, no user site, not the working folder on sys.path), never a bare name
    on PATH nor code from the vault."""
    return [sys.executable, "-I", "-m", "vaultmem"]


def plugin_entry(vault: Vault, agent: str, argv: list[str], previous_slot: Any) -> dict[str, Any]:
    """`plugins.entries.vaultmem`: enabled, allowed the conversation hooks, and its config
    (the command, the vault, the agent; the memory slot it replaced, for --remove)."""
    config: dict[str, Any] = {"command": argv, "vault": str(vault.root), "agent": agent}
    if previous_slot is not None:
        config["previousMemorySlot"] = previous_slot
    return {"enabled": True, "hooks": {"allowConversationAccess": True}, "config": config}


# --- editing nested JSON in place --------------------------------------------------------------


def _doc(text: str | None, path: Path) -> str:
    """The config's text, checked: JSON5 holding an object, no key twice in one object."""
    source = text if text is not None and text.strip() else "{}\n"
    try:
        node = json5edit.parse(source)
        duplicate = json5edit.duplicate_key(source)
    except (ValueError, IndexError) as exc:
        raise IntegrityError(
            f"{path} is not valid JSON5 ({exc}); vaultmem setup changed nothing",
            "fix the file (`openclaw config validate` says where), then run setup again",
        ) from None
    if node.kind != "object":
        raise IntegrityError(f"{path} does not hold an object", "vaultmem setup changed nothing")
    if duplicate is not None:
        raise IntegrityError(
            f"{path} has the key {duplicate!r} twice in one object; vaultmem setup changed nothing",
            "merge the two into one (OpenClaw reads only one of them), then run setup again",
        )
    return source


def _find(source: str, keys: tuple[str, ...], path: Path) -> jsonedit.Node | None:
    node = json5edit.parse(source)
    for i, key in enumerate(keys):
        if node.kind != "object":
            where = ".".join(keys[:i])
            raise IntegrityError(
                f"{path}: `{where}` is not a JSON object",
                "fix the file; vaultmem setup changed nothing",
            )
        member = node.member(key)
        if member is None:
            return None
        node = member.value
    return node


def _nest(keys: tuple[str, ...], value: Any) -> Any:
    for key in reversed(keys):
        value = {key: value}
    return value


def set_at(source: str, keys: tuple[str, ...], value: Any, path: Path) -> str:
    """`keys` set to `value`, making the objects on the way; untouched when already so."""
    for depth in range(len(keys) - 1, -1, -1):
        parent = _find(source, keys[:depth], path)
        if parent is None:
            continue
        if parent.kind != "object":
            raise IntegrityError(
                f"{path}: `{'.'.join(keys[:depth])}` is not a JSON object",
                "fix the file; vaultmem setup changed nothing",
            )
        member = parent.member(keys[depth]) if depth < len(keys) else None
        if depth == len(keys) - 1 and member is not None:
            if json5edit.value_of(source, member.value) == value:
                return source
            return jsonedit.replace_value(source, member.value, value)
        return jsonedit.insert_member(source, parent, keys[depth], _nest(keys[depth + 1 :], value))
    raise AssertionError("the root is an object")  # pragma: no cover (checked by _doc)


def remove_at(source: str, keys: tuple[str, ...], path: Path) -> str:
    """`keys` taken out, and each object on the way that this left empty (never the root)."""
    while keys:
        parent = _find(source, keys[:-1], path)
        member = parent.member(keys[-1]) if parent is not None and parent.kind == "object" else None
        if parent is None or member is None:
            return source
        if len(parent.members) > 1 or len(keys) == 1:
            return jsonedit.remove_child(source, parent, parent.members.index(member))
        keys = keys[:-1]  # the parent holds only this: it goes too
    return source


def add_item(source: str, keys: tuple[str, ...], item: Any, path: Path) -> str:
    """`item` at the end of the array at `keys` (made when absent), unless it is there."""
    node = _find(source, keys, path)
    if node is None:
        return set_at(source, keys, [item], path)
    if node.kind != "array":
        raise IntegrityError(
            f"{path}: `{'.'.join(keys)}` is not a JSON array",
            "fix the file; vaultmem setup changed nothing",
        )
    if any(json5edit.value_of(source, n) == item for n in node.items):
        return source
    return jsonedit.append_item(source, node, item)


def remove_item(source: str, keys: tuple[str, ...], item: Any, path: Path) -> str:
    """`item` out of the array at `keys`; the array (and emptied parents) out when it held
    nothing else."""
    node = _find(source, keys, path)
    if node is None or node.kind != "array":
        return source
    for i, n in enumerate(node.items):
        if json5edit.value_of(source, n) == item:
            if len(node.items) == 1:
                return remove_at(source, keys, path)
            return jsonedit.remove_child(source, node, i)
    return source


def _value(source: str, keys: tuple[str, ...], path: Path) -> Any:
    node = _find(source, keys, path)
    return None if node is None else json5edit.value_of(source, node)


def _ours(entry: Any) -> bool:
    """A `plugins.entries.vaultmem` setup wrote: its config names a vaultmem command."""
    if not isinstance(entry, dict):
        return False
    config = entry.get("config")
    command = config.get("command") if isinstance(config, dict) else None
    return isinstance(command, list) and any("vaultmem" in str(w) for w in command)


# --- the plan ------------------------------------------------------------------------------------


def plan_openclaw(
    vault: Vault,
    agent: str,
    *,
    config: Path | None = None,
    remove: bool = False,
    argv: list[str] | None = None,
    plugin_dir: Path | None = None,
) -> SetupPlan:
    """The plugin folder in `plugins.load.paths`, its entry (enabled, conversation hooks
    allowed, vault and agent), the memory slot, `plugins.allow` when the person keeps an
    allowlist, and vaultmem's MCP server in `mcp.servers`: one in-place edit of openclaw.json."""
    agent = vault.require_agent(agent)
    argv = argv or hook_argv()
    path = config or config_path()
    folder = str(plugin_dir or PLUGIN_DIR)
    server = mcp_server(argv, vault, agent)
    notes: list[str] = []

    def edit(text: str | None) -> str | None:
        source = _doc(text, path)
        entry = _value(source, _ENTRY, path)
        if entry is not None and not _ours(entry):
            raise RefusedError(
                f"{path} already has a plugin entry named {PLUGIN_ID!r} that is not vaultmem's",
                "rename or remove plugins.entries.vaultmem, then run setup again; "
                "vaultmem changed nothing",
            )
        existing_server = _value(source, _SERVER, path)
        if existing_server is not None and not sf.is_our_server(existing_server):
            raise RefusedError(
                f"{path} already has an MCP server named {SERVER_NAME!r} that is not vaultmem's",
                "rename or remove mcp.servers.vaultmem, then run setup again; "
                "vaultmem changed nothing",
            )
        slot = _value(source, _SLOT, path)
        before = entry.get("config", {}).get("previousMemorySlot") if _ours(entry) else None
        if remove:
            if entry is None:
                return text
            if slot == PLUGIN_ID:
                source = (
                    set_at(source, _SLOT, before, path)
                    if before is not None
                    else remove_at(source, _SLOT, path)
                )
            if entry.get("config", {}).get("addedToAllow"):
                source = remove_item(source, _ALLOW, PLUGIN_ID, path)
            source = remove_item(source, _PATHS, folder, path)
            source = remove_at(source, _ENTRY, path)
            if existing_server is not None:
                source = remove_at(source, _SERVER, path)
            return sf._empty_to_none(source)
        previous = before if slot == PLUGIN_ID else slot
        new_entry = plugin_entry(vault, agent, argv, previous)
        allow = _value(source, _ALLOW, path)
        if isinstance(allow, list) and (
            PLUGIN_ID not in allow or (_ours(entry) and entry["config"].get("addedToAllow"))
        ):
            new_entry["config"]["addedToAllow"] = True  # an allowlist loads only what it names
            source = add_item(source, _ALLOW, PLUGIN_ID, path)
        if isinstance(previous, str) and previous not in ("none", PLUGIN_ID):
            notes.append(
                f"the memory slot was {previous!r}: vaultmem takes it now, and "
                "`vaultmem setup openclaw --remove` gives it back"
            )
        for old in _value(source, _PATHS, path) or ():
            if isinstance(old, str) and old != folder and old.endswith("/openclaw_plugin"):
                source = remove_item(source, _PATHS, old, path)  # an earlier install's copy
        source = add_item(source, _PATHS, folder, path)
        source = set_at(source, _ENTRY, new_entry, path)
        source = set_at(source, _SLOT, PLUGIN_ID, path)
        return set_at(source, _SERVER, server, path)

    change = sf.plan(path, edit)
    if not remove:
        notes.append(f"needs {NEEDS}; check with: openclaw plugins inspect {PLUGIN_ID} --runtime")
    return SetupPlan(Runtime.OPENCLAW, agent, str(vault.root), remove, (change,), tuple(notes))
