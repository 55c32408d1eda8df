"""`vaultmem setup hermes`: the Hermes Agent pieces of setup (see `app.setup.plan` for the
others).

Hermes Agent (PyPI `hermes-agent`, read at 0.19.0) loads a user-installed memory provider
from `$HERMES_HOME/plugins/<name>/` (`__init__.py` with `register(ctx)`, and `plugin.yaml`;
hermes-agent's plugins/memory/__init__.py) and runs the one `memory.provider` names in
`$HERMES_HOME/config.yaml` (hermes_cli/config.py, `DEFAULT_CONFIG["memory"]["provider"]`;
agent/agent_init.py reads it). Setup writes:

- `plugins/vaultmem/__init__.py`: a shim, the vault and the agent written in, which loads
  vaultmem from where it is installed (its package folder by absolute path, its dependencies'
  site folders after Hermes's own) and registers `vaultmem.mcp.hermes`'s provider. Hermes runs
  in a virtual environment of its own: nothing is installed into it, and nothing is ever
  imported from the vault.
- `plugins/vaultmem/plugin.yaml`: `kind: exclusive` (a memory provider: hermes_cli/plugins.py
  leaves it to the memory loader).
- `config.yaml`: `memory.provider: vaultmem`, one line edited in place with a comment that
  remembers what it replaced (`# vaultmem:was ...`), or added (`# vaultmem:added`), or a
  marked `memory:` block at the end when the file has none; `--remove` puts back the exact
  bytes.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

from vaultmem.app.setup import files as sf
from vaultmem.app.setup.plan import OWNED, SetupPlan
from vaultmem.core.errors import IntegrityError, RefusedError
from vaultmem.core.vault import Vault

RUNTIME = "hermes"
PROVIDER = "vaultmem"  # the plugin folder's name and memory.provider's value
YAML_MARKERS = sf.Markers(
    "# vaultmem:start (written by `vaultmem setup hermes`; `--remove` takes it out)",
    "# vaultmem:end",
)
WAS = "  # vaultmem:was "  # after our value: the line's text after `provider:` before setup
ADDED = "  # vaultmem:added"  # after our value: the line was not there before setup
_MEMORY = re.compile(r"^memory[ \t]*:(?P<rest>[^\n]*)$")
_PROVIDER = re.compile(r"^(?P<indent>[ \t]+)provider[ \t]*:(?P<rest>.*)$")


def hermes_home(env_value: str | None, home: Path | None = None) -> Path:
    """`$HERMES_HOME`, else `~/.hermes` (hermes_constants.get_hermes_home)."""
    if env_value:
        return Path(env_value).expanduser()
    return (home or Path.home()) / ".hermes"


def where_vaultmem_is() -> dict[str, Any]:
    """What the shim needs to load this vaultmem inside Hermes's Python: the package folder,
    the folders its dependencies are installed in, this interpreter and its version."""
    import sysconfig

    import vaultmem
    from vaultmem.core.environment import python

    paths = sysconfig.get_paths()
    sites = list(dict.fromkeys(p for p in (paths["purelib"], paths["platlib"]) if p))
    return {
        "package": str(Path(vaultmem.__file__).resolve().parent),
        "sites": sites,
        "python": python(),
        "version": list(sys.version_info[:2]),
    }


def shim(vault: Vault, agent: str, install: dict[str, Any]) -> str:
    """The plugin's `__init__.py`. Hermes picks a user plugin as a memory provider when its
    source names `register_memory_provider` or `MemoryProvider` (plugins/memory/__init__.py,
    `_is_memory_provider_dir`): this one calls `register_memory_provider` through vaultmem."""
    from vaultmem import __version__

    def lit(value: object) -> str:
        return json.dumps(value, ensure_ascii=False)

    return f'''"""vaultmem memory provider for Hermes Agent ({OWNED}: written by `vaultmem setup hermes`
{__version__}; `vaultmem setup hermes --remove` deletes this folder). Shared agent memory in
the vaultmem vault {vault.root}, as agent {agent}.

It registers vaultmem's MemoryProvider (ctx.register_memory_provider) from vaultmem's own
install, below; nothing is imported from the vault. Run setup again after moving vaultmem.
"""

import importlib.util
import os
import site
import sys

VAULT = {lit(str(vault.root))}
AGENT = {lit(agent)}
PACKAGE = {lit(install["package"])}  # vaultmem's package folder
SITES = {lit(install["sites"])}  # where its dependencies are installed
PYTHON = {lit(install["python"])}  # vaultmem's interpreter, for the processes it starts
VERSION = {tuple(install["version"])!r}  # the Python those dependencies were built for


def _vaultmem():
    if tuple(sys.version_info[:2]) != VERSION:
        raise ImportError(
            "vaultmem was installed for Python %d.%d and Hermes runs Python %d.%d: install "
            "vaultmem with Python %d.%d and run `vaultmem setup hermes` again"
            % (VERSION + tuple(sys.version_info[:2]) * 2)
        )
    loaded = sys.modules.get("vaultmem")
    if loaded is not None:
        here = os.path.dirname(getattr(loaded, "__file__", "") or "")
        if os.path.realpath(here) != os.path.realpath(PACKAGE):
            raise ImportError("another vaultmem is loaded here (%s), not %s" % (here, PACKAGE))
        return
    if not os.path.isfile(os.path.join(PACKAGE, "__init__.py")):
        raise ImportError(
            "vaultmem is no longer installed at %s: run `vaultmem setup hermes` again" % PACKAGE
        )
    for folder in SITES:
        if folder not in sys.path:
            site.addsitedir(folder)  # after Hermes's own packages, which win
    spec = importlib.util.spec_from_file_location(
        "vaultmem", os.path.join(PACKAGE, "__init__.py"), submodule_search_locations=[PACKAGE]
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules["vaultmem"] = module
    spec.loader.exec_module(module)


def register(ctx):
    try:
        _vaultmem()
        from vaultmem.mcp.hermes import register as register_provider
    except Exception as exc:  # Hermes logs a failed register() at debug level only: say it
        import logging

        logging.getLogger("vaultmem").warning("vaultmem memory provider not loaded: %s", exc)
        raise
    register_provider(ctx, vault=VAULT, agent=AGENT, python=PYTHON)
'''


def manifest(vault: Vault, agent: str) -> str:
    from vaultmem import __version__

    description = f"vaultmem: shared agent memory in the vault {vault.root}, as agent {agent}"
    return (
        f"# {OWNED}: written by `vaultmem setup hermes`; `--remove` deletes this folder\n"
        f"name: {PROVIDER}\nversion: {json.dumps(__version__)}\n"
        f"description: {json.dumps(description, ensure_ascii=False)}\n"
        "kind: exclusive\n"
    )


# --- the Hermes this is for ---------------------------------------------------------------------

NEEDS = "hermes-agent >= 0.19.0"  # the interface the provider was written against
# what the provider uses of Hermes (agent/memory_provider.py; plugins/memory/__init__.py)
_CHECK = """
import json, sys
out = {"python": list(sys.version_info[:2])}
try:
    from importlib.metadata import version
    out["version"] = version("hermes-agent")
except Exception:
    out["version"] = None
try:
    from agent.memory_provider import MemoryProvider
    import plugins.memory as loader
    wanted = ("system_prompt_block", "prefetch", "sync_turn", "on_pre_compress",
              "on_session_end", "on_session_switch", "get_tool_schemas", "handle_tool_call")
    out["missing"] = [m for m in wanted if not hasattr(MemoryProvider, m)]
    if not hasattr(loader, "_get_user_plugins_dir"):
        out["missing"].append("plugins.memory user plugins ($HERMES_HOME/plugins/)")
except Exception as exc:
    out["missing"] = ["agent.memory_provider.MemoryProvider (%s)" % exc]
print(json.dumps(out))
"""


def find_hermes() -> Path | None:
    """The `hermes` PATH finds, if any."""
    import os

    from vaultmem.core.environment import env

    for folder in (env("PATH") or "").split(os.pathsep):
        candidate = Path(folder or ".") / "hermes"
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return candidate.resolve()
    return None


def interpreter_of(exe: Path) -> Path | None:
    """The Python a `hermes` console script runs (its `#!` line: pip writes the venv's)."""
    try:
        with open(exe, "rb") as fh:
            first = fh.readline(4096).decode("utf-8", "replace").strip()
    except OSError:
        return None
    if not first.startswith("#!"):
        return None
    words = first[2:].split()
    if not words:
        return None
    if Path(words[0]).name == "env" and len(words) > 1:
        return None  # `#!/usr/bin/env python`: which one is PATH's business at run time
    return Path(words[0])


def check_hermes(exe: Path, install: dict[str, Any]) -> str:
    """Ask the Hermes at `exe` for its version and the interface the provider uses; refuse
    one without it (naming the version needed) or on another Python than vaultmem's. Returns
    the version found."""
    from vaultmem.core.spawn import ask_python

    python = interpreter_of(exe)
    if python is None or not python.is_file():
        raise RefusedError(
            f"cannot tell which Python runs {exe}; vaultmem setup changed nothing",
            f"pass --hermes with the `hermes` of a pip-installed {NEEDS}",
        )
    try:
        found = json.loads(ask_python(str(python), _CHECK).strip().splitlines()[-1])
    except (OSError, ValueError, IndexError):
        raise RefusedError(
            f"{python} (the Python of {exe}) could not be asked for its Hermes Agent version",
            f"vaultmem needs {NEEDS}; vaultmem setup changed nothing",
        ) from None
    version = found.get("version") or "unknown"
    if found.get("missing"):
        raise RefusedError(
            f"Hermes Agent {version} at {exe} lacks what vaultmem's memory provider uses: "
            + ", ".join(map(str, found["missing"])),
            f"vaultmem needs {NEEDS} (pip install -U 'hermes-agent>=0.19.0' in its venv); "
            "vaultmem setup changed nothing",
        )
    if list(found.get("python") or []) != list(install["version"]):
        have = ".".join(map(str, found.get("python") or ["?"]))
        mine = ".".join(map(str, install["version"]))
        raise RefusedError(
            f"Hermes Agent {version} runs Python {have}, this vaultmem Python {mine}: the "
            "provider loads vaultmem's installed packages into Hermes's Python",
            f"install vaultmem with Python {have} and run its `vaultmem setup hermes`; "
            "vaultmem setup changed nothing",
        )
    return str(version)


# --- config.yaml: memory.provider --------------------------------------------------------------


def _lines(text: str) -> list[str]:
    return text.splitlines(keepends=True)


def _body(line: str) -> tuple[str, str]:
    """(the line without its ending, the ending)."""
    stripped = line.rstrip("\r\n")
    return stripped, line[len(stripped) :]


def restore_config(text: str | None) -> str | None:
    """config.yaml as it was before setup: the block taken out, an added line removed, a
    replaced value put back. None when nothing else was there."""
    if text is None:
        return None
    out = sf.remove_block(text, YAML_MARKERS)
    if out is None:
        return None
    lines = []
    for line in _lines(out):
        body, end = _body(line)
        m = _PROVIDER.match(body)
        ours = f"{m.group('indent')}provider: {PROVIDER}" if m else None
        if ours and body == ours + ADDED:
            continue
        if ours and body.startswith(ours + WAS):
            try:
                before = json.loads(body[len(ours + WAS) :])
            except ValueError:
                before = None
            if isinstance(before, str):
                lines.append(f"{m.group('indent')}provider:{before}{end}")  # type: ignore[union-attr]
                continue
        lines.append(line)
    return "".join(lines) or None


def _load(text: str, path: Path) -> Any:
    import yaml

    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise IntegrityError(
            f"{path} is not valid YAML ({str(exc).splitlines()[0]}); vaultmem setup changed nothing",
            "fix the file (hermes config check) and run setup again",
        ) from None


def set_provider(text: str | None, path: Path) -> str:
    """config.yaml with `memory.provider: vaultmem` (any earlier edit of ours first undone)."""
    theirs = restore_config(text) or ""
    data = _load(theirs, path) if theirs.strip() else None
    if data is not None and not isinstance(data, dict):
        raise IntegrityError(f"{path} does not hold a YAML mapping", "vaultmem changed nothing")
    memory = data.get("memory") if isinstance(data, dict) else None
    if isinstance(data, dict) and "memory" in data and memory is not None:
        if not isinstance(memory, dict):
            raise IntegrityError(
                f"{path}: `memory` is not a mapping", "fix the file; vaultmem changed nothing"
            )
        out = _edit_memory(theirs, path)
    else:
        if isinstance(data, dict) and "memory" in data:  # `memory:` with nothing under it
            out = _edit_memory(theirs, path)
        else:
            out = sf.upsert_block(
                theirs or None, YAML_MARKERS, f"memory:\n  provider: {PROVIDER}\n"
            )
    check = _load(out, path)
    if not (
        isinstance(check, dict)
        and isinstance(check.get("memory"), dict)
        and check["memory"].get("provider") == PROVIDER
    ):
        raise RefusedError(
            f"{path}: vaultmem could not set memory.provider in this layout",
            f"set `memory: {{provider: {PROVIDER}}}` by hand (hermes config set memory.provider "
            f"{PROVIDER}); vaultmem changed nothing",
        )
    return out


def _edit_memory(text: str, path: Path) -> str:
    """The top-level `memory:` block's `provider:` line set (or added) in place."""
    lines = _lines(text)
    start = next((i for i, ln in enumerate(lines) if _MEMORY.match(_body(ln)[0])), None)
    if start is None:
        raise RefusedError(
            f"{path}: the `memory` mapping is not a plain `memory:` block",
            f"set memory.provider to {PROVIDER} by hand; vaultmem changed nothing",
        )
    rest = _MEMORY.match(_body(lines[start])[0])
    assert rest is not None
    if rest.group("rest").strip() and not rest.group("rest").strip().startswith("#"):
        raise RefusedError(
            f"{path}: `memory:` is written inline ({rest.group('rest').strip()})",
            f"set memory.provider to {PROVIDER} by hand; vaultmem changed nothing",
        )
    end_of_line = _body(lines[start])[1] or "\n"
    indent = None
    for i in range(start + 1, len(lines)):
        body, end = _body(lines[i])
        if not body.strip() or body.lstrip().startswith("#"):
            continue
        if not body[0].isspace():
            break  # the next top-level key
        width = body[: len(body) - len(body.lstrip())]
        indent = indent or width
        m = _PROVIDER.match(body)
        if m and m.group("indent") == indent:
            new = f"{indent}provider: {PROVIDER}{WAS}{json.dumps(m.group('rest'))}{end}"
            return "".join([*lines[:i], new, *lines[i + 1 :]])
    line = f"{indent or '  '}provider: {PROVIDER}{ADDED}{end_of_line}"
    if not lines[start].endswith(("\n", "\r")):
        lines[start] += end_of_line
    return "".join([*lines[: start + 1], line, *lines[start + 1 :]])


def _owned(path: Path, text: str, remove: bool) -> sf.FileChange:
    return sf.plan(path, lambda t: sf.owned_file(t, OWNED, path, None if remove else text))


def plan_hermes(
    vault: Vault,
    agent: str,
    *,
    home: Path,
    remove: bool = False,
    hermes: Path | None = None,
    install: dict[str, Any] | None = None,
) -> SetupPlan:
    """The plugin folder and `memory.provider` in Hermes's home (`$HERMES_HOME`), for the
    Hermes at `hermes` when it is known (its version and interface checked first)."""
    agent = vault.require_agent(agent)
    folder = home / "plugins" / PROVIDER
    config = home / "config.yaml"
    install = install or where_vaultmem_is()
    checked = check_hermes(hermes, install) if hermes is not None and not remove else None
    changes = [
        _owned(folder / "__init__.py", shim(vault, agent, install), remove),
        _owned(folder / "plugin.yaml", manifest(vault, agent), remove),
    ]
    before = sf.current(config)
    changes.append(
        sf.plan(config, lambda t: restore_config(t) if remove else set_provider(t, config))
    )
    notes: list[str] = []
    if not remove:
        data = _load(restore_config(before) or "", config) if before else None
        memory = data.get("memory") if isinstance(data, dict) else None
        was = memory.get("provider") if isinstance(memory, dict) else None
        if was and was != PROVIDER:
            notes.append(
                f"memory.provider was {was!r} (Hermes runs one external provider); "
                "`vaultmem setup hermes --remove` puts it back"
            )
        if checked is None:
            notes.append(f"no `hermes` found to check: vaultmem's provider needs {NEEDS}")
        notes.append(f"check it: hermes memory status (HERMES_HOME={home})")
    return SetupPlan(RUNTIME, agent, str(vault.root), remove, tuple(changes), tuple(notes))
