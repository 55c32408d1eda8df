"""Frozen records of settings, built without `dataclasses` (the tables of `core/config.py`).

The 17 tables of vaultmem.toml cost ~30 ms as frozen dataclasses at import: each one compiles
six methods with `exec`, on every command, the per-turn ones included. A `Section` subclass
is a class body of annotated defaults; `setting(...)` adds a range or choices that
`config.parse_config` checks. Keyword construction (every field has a default), equality,
hashing, a dataclass-like repr and frozenness; `evolve` is `dataclasses.replace` for them.
`dataclass_transform` keeps mypy checking every construction.
"""

from __future__ import annotations

from typing import Any, ClassVar, TypeVar, dataclass_transform

__all__ = ["Section", "evolve", "setting"]


class _Setting:
    __slots__ = ("default", "rules")

    def __init__(self, default: Any, rules: dict[str, Any]) -> None:
        self.default = default
        self.rules = rules


def setting(*, default: Any, lo: float | None = 0, hi: float | None = None, **more: Any) -> Any:
    """A setting with its allowed range (numbers) or choices (`choices=(...)`): every value
    in vaultmem.toml is checked against it, and a bad one stops with exit 3 and the range."""
    return _Setting(default, {"lo": lo, "hi": hi, **more})


@dataclass_transform(kw_only_default=True, frozen_default=True, field_specifiers=(setting,))
class Section:
    """A frozen record of settings (see the module's docstring)."""

    FIELDS: ClassVar[dict[str, Any]] = {}  # name -> default, in declaration order
    RULES: ClassVar[dict[str, dict[str, Any]]] = {}  # name -> range or choices

    def __init_subclass__(cls) -> None:
        defaults: dict[str, Any] = {}
        rules: dict[str, dict[str, Any]] = {}
        for name in cls.__dict__.get("__annotations__", {}):  # noqa: RUF063 (inspect is heavy)
            if name.isupper():  # FIELDS, RULES: class-level, not settings
                continue
            value = cls.__dict__[name]  # every setting has a default
            if isinstance(value, _Setting):
                rules[name] = value.rules
                value = value.default
                setattr(cls, name, value)
            else:
                rules[name] = {}
            defaults[name] = value
        cls.FIELDS, cls.RULES = defaults, rules

    def __init__(self, **values: Any) -> None:
        unknown = set(values) - set(self.FIELDS)
        if unknown:
            raise TypeError(f"{type(self).__name__}: unexpected {', '.join(sorted(unknown))}")
        self.__dict__.update(self.FIELDS)
        self.__dict__.update(values)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"cannot assign to field {name!r}: settings are frozen")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"cannot delete field {name!r}: settings are frozen")

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self.__dict__ == other.__dict__

    def __hash__(self) -> int:
        return hash((self.__class__, *self.__dict__.values()))

    def __repr__(self) -> str:
        inner = ", ".join(f"{k}={v!r}" for k, v in self.__dict__.items())
        return f"{type(self).__name__}({inner})"


_S = TypeVar("_S", bound=Section)


def evolve(obj: _S, **changes: Any) -> _S:
    """A copy of `obj` with `changes` (what `dataclasses.replace` does for a dataclass)."""
    return type(obj)(**{**obj.__dict__, **changes})
