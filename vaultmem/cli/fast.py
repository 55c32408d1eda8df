"""A start-up fast path for the commands agents run on every turn (read, append, recall).

Importing typer costs more than everything vaultmem itself does on `read` or `append` (~45 ms
of a ~130 ms call, most of it pydantic through typer's adapters). The typer app stays the one
source of truth for the command line: after a normal (typer) run, `save_spec` derives from it a
small JSON description of the hot commands' options (names, flags, types, defaults, env vars),
cached in VAULTMEM_HOME and keyed by the vaultmem version and the CLI modules' stat. On the
next call `try_fast` parses the arguments with that description and calls the same function the
typer command calls (`vaultmem.cli.hot`). Anything it does not fully understand — `--help`, an
unknown or short-bundled option, a missing argument, a value that does not convert, a stale or
missing cache — falls back to typer, which then prints its usual message. VAULTMEM_NO_FAST=1
turns the fast path off.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import types
import typing
from pathlib import Path
from typing import Any

from vaultmem.core.config import ENV_NO_FAST, env, env_debug, home_dir

HOT = ("read", "append", "recall")
_SPEC_VERSION = 1
_TYPES = {"str": str, "int": int, "float": float, "path": Path}


def _spec_file() -> Path:
    return home_dir() / "cache" / "cli-spec.json"


def _key() -> str:
    """Changes whenever vaultmem or any CLI module changes."""
    from vaultmem import __version__

    folder = Path(__file__).resolve().parent
    digest = hashlib.blake2b(f"{_SPEC_VERSION}:{__version__}".encode(), digest_size=12)
    for path in sorted(folder.glob("*.py")):
        st = path.stat()
        digest.update(f"{path.name}:{st.st_mtime_ns}:{st.st_size};".encode())
    return digest.hexdigest()


def _load() -> dict[str, Any] | None:
    try:
        data = json.loads(_spec_file().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("key") != _key():
        return None
    return data


def _convert(kind: str, raw: str) -> Any:
    return _TYPES[kind](raw)


def parse(spec: dict[str, Any], args: list[str]) -> dict[str, Any] | None:
    """Parse `args` for one command, or None when typer should handle them."""
    options: dict[str, dict[str, Any]] = {}
    for param in spec["params"]:
        for opt in param.get("opts", []):
            options[opt] = param
    values: dict[str, Any] = {}
    positional: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--":
            positional += args[i + 1 :]
            break
        if arg.startswith("-") and arg != "-":
            name, eq, attached = arg.partition("=")
            param = options.get(name)
            if param is None:
                return None  # unknown option, --help, bundled short flags: typer decides
            if param["flag"]:
                if eq:
                    return None
                value: Any = True
            else:
                if not eq:
                    i += 1
                    if i >= len(args):
                        return None
                    attached = args[i]
                try:
                    value = _convert(param["type"], attached)
                except (ValueError, TypeError):
                    return None
            if param["multiple"]:
                values.setdefault(param["name"], []).append(value)
            else:
                values[param["name"]] = value
        else:
            positional.append(arg)
        i += 1
    arguments = [p for p in spec["params"] if not p.get("opts")]
    if len(positional) > len(arguments):
        return None
    for param, raw in zip(arguments, positional, strict=False):
        try:
            values[param["name"]] = _convert(param["type"], raw)
        except (ValueError, TypeError):
            return None
    for param in spec["params"]:
        if param["name"] in values:
            continue
        from_env = env(param["envvar"]) if param.get("envvar") else None
        if from_env is not None:
            try:
                values[param["name"]] = _convert(param["type"], from_env)
            except (ValueError, TypeError):
                return None
        elif param["required"]:
            return None
        else:
            values[param["name"]] = param["default"]
    return values


def try_fast(argv: list[str]) -> bool:
    """Run a hot command without typer; False (nothing done) when typer must handle it."""
    if not argv or argv[0] not in HOT or env(ENV_NO_FAST):
        return False
    from vaultmem.cli.boundary import split_flags

    args, debug, as_json = split_flags(argv)
    spec = _load()
    command = spec["commands"].get(args[0]) if spec else None
    if command is None:
        return False
    kwargs = parse(command, args[1:])
    if kwargs is None:
        return False
    from vaultmem.cli import hot
    from vaultmem.cli.boundary import guarded

    impl = getattr(hot, args[0])
    guarded(lambda: impl(**kwargs), as_json=as_json, debug=debug)
    return True


def _describe(param: Any, annotation: Any) -> dict[str, Any] | None:
    """One click parameter as JSON, or None if the fast parser cannot handle it."""
    if typing.get_origin(annotation) is typing.Annotated:
        annotation = typing.get_args(annotation)[0]
    args = [a for a in typing.get_args(annotation) if a is not type(None)]
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        if len(args) != 1:
            return None
        annotation = args[0]
    multiple = typing.get_origin(annotation) is list
    if multiple:
        annotation = typing.get_args(annotation)[0]
    names = {str: "str", int: "int", float: "float", Path: "path", bool: "bool"}
    kind = names.get(annotation)
    is_option = getattr(param, "param_type_name", "") == "option"
    if kind is None or param.callback is not None or param.nargs not in (1, -1):
        return None
    if is_option and (param.secondary_opts or getattr(param, "count", False)):
        return None
    flag = bool(getattr(param, "is_flag", False))
    if kind == "bool" and not flag:
        return None
    default = param.default
    if default is not None and not isinstance(default, str | int | float | bool):
        return None
    return {
        "name": param.name,
        "opts": list(param.opts) if is_option else [],
        "flag": flag,
        "multiple": multiple,
        "type": kind if kind != "bool" else "str",
        "envvar": param.envvar if isinstance(param.envvar, str) else None,
        "default": default,
        "required": bool(param.required),
    }


def build_spec(app: Any) -> dict[str, Any]:
    """Derive the fast parser's description of the hot commands from the typer app."""
    import inspect

    import typer.main

    from vaultmem.cli import hot

    group = typer.main.get_command(app)
    infos = {(i.name or i.callback.__name__): i for i in app.registered_commands if i.callback}
    commands: dict[str, Any] = {}
    for name in HOT:
        click_cmd = getattr(group, "commands", {}).get(name)
        info = infos.get(name)
        impl = getattr(hot, name, None)
        if click_cmd is None or info is None or impl is None:
            continue
        hints = typing.get_type_hints(info.callback, include_extras=True)
        params = [_describe(p, hints.get(p.name or "")) for p in click_cmd.params]
        wanted = set(inspect.signature(impl).parameters)
        if any(p is None for p in params) or {p["name"] for p in params if p} != wanted:
            continue  # this command cannot take the fast path; typer handles it
        commands[name] = {"params": params}
    return {"key": _key(), "commands": commands}


def save_spec(app: Any) -> None:
    """After a typer run of a hot command: cache the spec if it is missing or stale."""
    if _load() is not None:
        return
    try:
        spec = build_spec(app)
        target = _spec_file()
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(f".{target.name}.{os.getpid()}")
        tmp.write_text(json.dumps(spec), encoding="utf-8")
        tmp.replace(target)
    except Exception as exc:  # a cache must never break a command
        if env_debug():
            sys.stderr.write(f"warning: could not cache the CLI spec: {exc}\n")
