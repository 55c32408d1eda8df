"""A start-up fast path for the commands agents run on every turn (read, append, recall,
inbox, the working-memory subcommands `wm set/get/list/del/push`, and `hook`, which a runtime
runs on every user prompt).

Importing typer costs more than everything vaultmem itself does on `read` or `append` (~45 ms
of a ~130 ms call, most of it pydantic through typer's adapters). The typer app stays the one
definition of the command line: `vaultmem/cli/spec.py` is generated from it
(`python -m vaultmem.cli.fast`) and committed, and a test fails when regenerating it gives
anything else, so the two cannot drift and nothing is cached at run time. `try_fast` parses the
arguments with that description and calls the same function the typer command calls
(`vaultmem.cli.hot`). Anything it does not fully understand — `--help`, an unknown or
short-bundled option, a missing argument, a value that does not convert or is not one of the
choices — goes through typer, which prints its usual message. VAULTMEM_NO_FAST=1 turns the fast
path off.
"""

from __future__ import annotations

import sys
import types
import typing
from pathlib import Path
from typing import Any

from vaultmem.core.environment import ENV_NO_FAST, env

HOT = (
    "read",
    "append",
    "recall",
    "inbox",
    "hook",
    "wm set",
    "wm get",
    "wm list",
    "wm del",
    "wm push",
)
GROUPS = ("wm",)  # groups whose subcommands are hot: the name is two words
_TYPES = {"str": str, "int": int, "float": float, "path": Path}


def _convert(param: dict[str, Any], raw: str) -> Any:
    if param["type"] == "choice":
        if raw not in param["choices"]:
            raise ValueError(raw)
        return raw
    return _TYPES[param["type"]](raw)


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
            if eq and not name.startswith("--"):
                return None  # click reads `-c=x` as `-c` with the value `=x`: typer decides
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
                    value = _convert(param, attached)
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
            values[param["name"]] = _convert(param, raw)
        except (ValueError, TypeError):
            return None
    for param in spec["params"]:
        if param["name"] in values:
            continue
        from_env = env(param["envvar"]) if param.get("envvar") else None
        if from_env is not None:
            try:
                values[param["name"]] = _convert(param, from_env)
            except (ValueError, TypeError):
                return None
        elif param["required"]:
            return None
        else:
            values[param["name"]] = param["default"]
    return values


def try_fast(argv: list[str]) -> bool:
    """Run a hot command without typer; False (nothing done) when typer must handle it."""
    if not argv or env(ENV_NO_FAST):
        return False
    depth = 2 if argv[0] in GROUPS else 1
    name = " ".join(argv[:depth])
    if name not in HOT:
        return False
    from vaultmem.cli.boundary import split_flags
    from vaultmem.cli.spec import SPEC

    args, debug, as_json = split_flags(argv)
    command = SPEC.get(name)
    if command is None or args[:depth] != argv[:depth]:
        return False
    kwargs = parse(command, args[depth:])
    if kwargs is None:
        return False
    from vaultmem.cli import hot
    from vaultmem.cli.boundary import guarded

    impl = getattr(hot, name.replace(" ", "_"))
    guarded(lambda: impl(**kwargs), as_json=as_json, debug=debug)
    return True


# --- generating spec.py from the typer app ----------------------------------------------------


def _describe(param: Any, annotation: Any) -> dict[str, Any] | None:
    """One click parameter as data, or None if the fast parser cannot handle it."""
    import enum

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
    choices: list[str] | None = None
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        from vaultmem.cli.typer_internals import enum_choices

        found = enum_choices(param)
        if found is None:
            return None
        kind: str | None = "choice"
        choices = [str(c.value if isinstance(c, enum.Enum) else c) for c in found]
    else:
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
    if isinstance(default, enum.Enum):
        default = default.value
    if default is not None and not isinstance(default, str | int | float | bool):
        return None
    out: dict[str, Any] = {
        "name": param.name,
        "opts": list(param.opts) if is_option else [],
        "flag": flag,
        "multiple": multiple,
        "type": kind if kind != "bool" else "str",
        "envvar": param.envvar if isinstance(param.envvar, str) else None,
        "default": default,
        "required": bool(param.required),
    }
    if choices is not None:
        out["choices"] = choices
    return out


def _typer_command(name: str) -> tuple[Any, Any]:
    """(click command, typer CommandInfo) of a command, or of `group sub`."""
    from vaultmem.cli.base import app, commands
    from vaultmem.cli.lazy import build

    group, _, sub = name.partition(" ")
    click_cmd = build(group, app)
    registry = commands.registered_commands
    if sub:
        found = next((g for g in commands.registered_groups if g.name == group), None)
        if click_cmd is None or found is None or found.typer_instance is None:
            return None, None
        click_cmd = getattr(click_cmd, "commands", {}).get(sub)
        registry = found.typer_instance.registered_commands
    leaf = sub or group
    info = next(
        (i for i in registry if i.callback and (i.name or "") == leaf),
        None,
    ) or next((i for i in registry if i.callback and i.callback.__name__ == leaf), None)
    return click_cmd, info


def build_spec() -> dict[str, Any]:
    """The fast parser's description of the hot commands, derived from the typer app."""
    import inspect

    from vaultmem.cli import hot

    commands_out: dict[str, Any] = {}
    for name in HOT:
        click_cmd, info = _typer_command(name)
        impl = getattr(hot, name.replace(" ", "_"), None)
        if click_cmd is None or info is None or impl is None or info.callback is None:
            continue
        hints = typing.get_type_hints(info.callback, include_extras=True)
        params = [_describe(p, hints.get(p.name or "")) for p in click_cmd.params]
        # an implementation may take the rest of the options as **kwargs (recall's filters)
        sig = inspect.signature(impl).parameters.values()
        wanted = {p.name for p in sig if p.kind is not p.VAR_KEYWORD}
        open_ended = any(p.kind is p.VAR_KEYWORD for p in sig)
        names = {p["name"] for p in params if p}
        fits = wanted <= names if open_ended else names == wanted
        if any(p is None for p in params) or not fits:
            continue  # this command cannot take the fast path; typer handles it
        commands_out[name] = {"params": params}
    return commands_out


def render_spec(spec: dict[str, Any]) -> str:
    import pprint

    return (
        '"""Generated by `python -m vaultmem.cli.fast` from the typer app: do not edit.\n\n'
        "What the start-up fast path (cli/fast.py) knows of the hot commands' options. A test\n"
        'regenerates it and fails on any difference, so it cannot drift from the typer app.\n"""\n\n'
        "from typing import Any\n\n"
        f"SPEC: dict[str, Any] = {pprint.pformat(spec, width=96, sort_dicts=False)}\n"
    )


def spec_path() -> Path:
    return Path(__file__).resolve().parent / "spec.py"


if __name__ == "__main__":
    spec_path().write_text(render_spec(build_spec()), encoding="utf-8")
    sys.stdout.write(f"wrote {spec_path()}\n")
