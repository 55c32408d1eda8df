"""Every piece of typer that is not its documented API, in one place, checked on import.

The lazy root group (`cli/lazy.py`) builds one command at a time from typer's registrations,
and the fast path's generator (`cli/fast.py`) reads how typer describes a parameter; both need
names typer does not document (and the shell completion, `typer.completion.shell_complete`):
its vendored click (`typer._click`), `typer.main`'s builders,
`TyperGroup` and a parameter's `type_descriptor`. pyproject.toml pins typer to the minor
release these were read from; a typer without one of them fails here, loudly, naming what is
missing, instead of failing somewhere inside a command (`tests/test_cli.py` imports this module
and checks the pin).
"""

from __future__ import annotations

from typing import Any

import typer
import typer.completion
import typer.main

SUPPORTED = ((0, 29), (0, 30))  # typer >= 0.29, < 0.30, as pyproject.toml pins it


class IncompatibleTyper(ImportError):
    pass


def _missing() -> list[str]:
    gone = []
    for owner, name in (
        (typer.main, "get_command_from_info"),
        (typer.main, "get_group_from_info"),
        (typer.main, "get_command_name"),
        (typer.completion, "shell_complete"),
    ):
        if not hasattr(owner, name):
            gone.append(f"typer.main.{name}")
    return gone


try:
    from typer._click import core as click
    from typer._click.exceptions import UsageError
    from typer.core import TyperGroup
except ImportError as exc:
    raise IncompatibleTyper(
        f"vaultmem needs typer {SUPPORTED[0][0]}.{SUPPORTED[0][1]}.x (found "
        f"{getattr(typer, '__version__', '?')}): {exc}; reinstall with: pip install -e ."
    ) from exc
if _missing():
    raise IncompatibleTyper(
        f"vaultmem needs typer {SUPPORTED[0][0]}.{SUPPORTED[0][1]}.x (found "
        f"{getattr(typer, '__version__', '?')}): missing {', '.join(_missing())}"
    )

get_command_from_info = typer.main.get_command_from_info
get_group_from_info = typer.main.get_group_from_info
get_command_name = typer.main.get_command_name
shell_complete = typer.completion.shell_complete
CommandInfo = typer.models.CommandInfo


def enum_choices(param: Any) -> list[Any] | None:
    """The choices typer derived for an enum-typed parameter, or None when it did not."""
    desc = getattr(param, "type_descriptor", None)  # typer's own parameter description
    if desc is None or not getattr(desc, "is_choice", False) or not desc.choices:
        return None
    return list(desc.choices)


def version() -> tuple[int, int]:
    major, minor = typer.__version__.split(".")[:2]
    return int(major), int(minor)


__all__ = [
    "SUPPORTED",
    "CommandInfo",
    "IncompatibleTyper",
    "TyperGroup",
    "UsageError",
    "click",
    "enum_choices",
    "get_command_from_info",
    "get_command_name",
    "get_group_from_info",
    "shell_complete",
    "version",
]
