"""A tool's parameters, declared once in its signature, as the JSON Schema `tools/list` sends
and as the check `tools/call` runs on the arguments a model sends.

A parameter is `name: Annotated[T, Arg("what it is", ge=1)] = default`, where T is one of
`str`, `int`, `bool`, `list[str]`, a `StrEnum` or a `Literal` of strings, optionally `| None`.
That is every shape vaultmem's tools take, and all this module knows: a signature with any
other type fails when the server builds its tool table, not when a model calls it.

The check is strict where a mistake would change what is written (an unknown argument, a value
outside an enum or a bound, a list where one string is meant) and lenient where a model's
habit is harmless (an integer sent as "5", one string where a list is expected, `null` for an
optional parameter). Every refusal names the argument and says what it accepts
(https://modelcontextprotocol.io/specification/2025-11-25/server/tools: input validation
errors are tool execution errors the model can correct).
"""

from __future__ import annotations

import inspect
import re
import types
import typing
from collections.abc import Callable
from enum import StrEnum
from typing import Any, Literal, get_args, get_origin

from vaultmem.core.errors import UsageError

_INT = re.compile(r"[+-]?[0-9]{1,18}")


class Arg:
    """What a parameter is for (the model reads it), and its bounds."""

    __slots__ = ("description", "ge", "le")

    def __init__(self, description: str, *, ge: int | None = None, le: int | None = None) -> None:
        self.description, self.ge, self.le = description, ge, le


class Param:
    """One parameter of a tool: its JSON type, choices, bounds and default."""

    __slots__ = ("arg", "choices", "convert", "default", "kind", "name", "optional", "required")

    def __init__(self, name: str, annotation: Any, default: Any) -> None:
        self.name = name
        hint, arg = annotation, None
        if get_origin(hint) is typing.Annotated:
            hint, *extra = get_args(hint)
            arg = next((x for x in extra if isinstance(x, Arg)), None)
        if arg is None:
            raise TypeError(f"parameter {name!r} has no Arg(description)")
        self.arg = arg
        members = get_args(hint) if get_origin(hint) in (typing.Union, types.UnionType) else ()
        self.optional = type(None) in members
        if members:
            rest = [m for m in members if m is not type(None)]
            if len(rest) != 1:
                raise TypeError(f"parameter {name!r}: one type (or it | None), not {hint!r}")
            hint = rest[0]
        self.required = default is inspect.Parameter.empty
        self.default = None if self.required else default
        self.choices: tuple[str, ...] = ()
        self.convert: Callable[[str], Any] = str
        if hint is str:
            self.kind = "string"
        elif hint is bool:
            self.kind = "boolean"
        elif hint is int:
            self.kind = "integer"
        elif get_origin(hint) is list and get_args(hint) == (str,):
            self.kind = "array"
        elif isinstance(hint, type) and issubclass(hint, StrEnum):
            self.kind, self.choices, self.convert = "string", tuple(m.value for m in hint), hint
        elif get_origin(hint) is Literal and all(isinstance(a, str) for a in get_args(hint)):
            self.kind, self.choices = "string", tuple(get_args(hint))
        else:
            raise TypeError(f"parameter {name!r}: unsupported type {hint!r}")

    def schema(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": self.kind, "description": self.arg.description}
        if self.kind == "array":
            out["items"] = {"type": "string"}
        if self.choices:
            out["enum"] = list(self.choices)
        if self.arg.ge is not None:
            out["minimum"] = self.arg.ge
        if self.arg.le is not None:
            out["maximum"] = self.arg.le
        if self.default is not None:
            out["default"] = (
                self.default.value if isinstance(self.default, StrEnum) else self.default
            )
        return out

    def check(self, value: Any) -> Any:
        """The value to call the tool with, or UsageError saying what the parameter takes."""
        if value is None:
            if self.optional or not self.required:
                return self.default
            raise self._bad(value, "a value")
        if self.kind == "string":
            if not isinstance(value, str):
                raise self._bad(value, "a string")
            if self.choices and value not in self.choices:
                raise self._bad(value, "one of " + ", ".join(self.choices))
            return self.convert(value) if self.choices else value
        if self.kind == "boolean":
            if isinstance(value, bool):
                return value
            if value in ("true", "false"):
                return value == "true"
            raise self._bad(value, "true or false")
        if self.kind == "integer":
            number = _integer(value)
            if number is None:
                raise self._bad(value, "a whole number")
            if self.arg.ge is not None and number < self.arg.ge:
                raise self._bad(value, f"a whole number of at least {self.arg.ge}")
            if self.arg.le is not None and number > self.arg.le:
                raise self._bad(value, f"a whole number of at most {self.arg.le}")
            return number
        if isinstance(value, str):  # one id where a list is expected
            return [value]
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise self._bad(value, "a list of strings")
        return list(value)

    def _bad(self, value: Any, wanted: str) -> UsageError:
        shown = repr(value) if len(repr(value)) <= 60 else repr(value)[:57] + "..."
        return UsageError(f"argument `{self.name}` must be {wanted} (got {shown})")


def _integer(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and _INT.fullmatch(value.strip()):
        return int(value.strip())
    return None


class Signature:
    """The parameters of a tool function (after its first, the call context)."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        hints = typing.get_type_hints(fn, include_extras=True)
        found = list(inspect.signature(fn).parameters.values())[1:]
        self.params = [Param(p.name, hints[p.name], p.default) for p in found]
        self._by_name = {p.name: p for p in self.params}

    def schema(self) -> dict[str, Any]:
        """The tool's `inputSchema` (JSON Schema, an object of its parameters)."""
        out: dict[str, Any] = {
            "type": "object",
            "properties": {p.name: p.schema() for p in self.params},
            "additionalProperties": False,
        }
        required = [p.name for p in self.params if p.required]
        if required:
            out["required"] = required
        return out

    def bind(self, arguments: object) -> dict[str, Any]:
        """The keyword arguments for the tool function, or UsageError."""
        if arguments is None:
            arguments = {}
        if not isinstance(arguments, dict):
            raise UsageError("the arguments must be an object of named values")
        unknown = sorted(set(arguments) - set(self._by_name))
        if unknown:
            names = ", ".join(p.name for p in self.params) or "none"
            raise UsageError(
                f"unknown argument{'s' if len(unknown) > 1 else ''} "
                + ", ".join(f"`{u}`" for u in unknown)
                + f" (this tool takes: {names})"
            )
        out: dict[str, Any] = {}
        for param in self.params:
            if param.name in arguments:
                out[param.name] = param.check(arguments[param.name])
            elif param.required:
                raise UsageError(f"argument `{param.name}` is required: {param.arg.description}")
        return out
