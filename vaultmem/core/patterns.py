"""Regular expressions compiled on first use.

A module's patterns were compiled when it was imported, each once per process: 52 of them on
`vaultmem read`, ~7 ms, though half of them parse what that command never reads (an entry's id,
a conflict marker, a date, a quoted YAML key); with these, 24 (~3.8 ms). `later(...)`
stands for `re.compile(...)`: the pattern is compiled by the first call of one of its methods,
whose bound methods then replace the stand-in's own, so a pattern in a loop costs what a
compiled one does. `.pattern` and `.flags` are there without compiling (other patterns are built
from them).
"""

from __future__ import annotations

import re
from typing import Any

_METHODS = (
    "match",
    "fullmatch",
    "search",
    "sub",
    "subn",
    "split",
    "findall",
    "finditer",
    "groupindex",
    "groups",
)


class _Later:
    def __init__(self, pattern: str, flags: int) -> None:
        self.pattern = pattern
        self.flags = flags

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):  # copy, pickle and the like probe for these
            raise AttributeError(name)
        compiled = self.__dict__.get("_compiled")
        if compiled is None:
            compiled = re.compile(self.pattern, self.flags)
            self.__dict__["_compiled"] = compiled
            self.__dict__.update((m, getattr(compiled, m)) for m in _METHODS)
        return getattr(compiled, name)

    def __repr__(self) -> str:
        return f"later({self.pattern!r})"


def later(pattern: str, flags: int = 0) -> re.Pattern[str]:
    """`re.compile(pattern, flags)`, made when first used."""
    return _Later(pattern, flags)  # type: ignore[return-value]
