"""Domain vocabularies as `StrEnum`s, and the one way to turn user text into one.

Each layer defines its own (`memory.facts.FactType`, `nexus.entry.EntryType`, ...). A StrEnum
member is a `str`, so files and JSON carry the plain word; typer turns an enum parameter into
a checked choice and the MCP schema gets an `enum` from the type.
"""

from __future__ import annotations

from enum import StrEnum
from typing import TypeVar

from vaultmem.core.errors import UsageError

E = TypeVar("E", bound=StrEnum)


def choose(kind: type[E], value: str, what: str) -> E:
    """`value` as a member of `kind`, or UsageError (exit 2) listing the choices. Full match:
    `"note\\n"` is not `note`."""
    try:
        return kind(value)
    except ValueError:
        raise UsageError(
            f"unknown {what} {value!r}", f"use one of: {', '.join(m.value for m in kind)}"
        ) from None


def values(kind: type[StrEnum]) -> tuple[str, ...]:
    return tuple(m.value for m in kind)
