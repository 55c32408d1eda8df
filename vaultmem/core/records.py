"""Records built without `dataclasses`: `record` for every value type, `Section` for settings.

Importing `dataclasses` (it imports `inspect`) costs ~12 ms, and each class it builds ~1 ms:
it compiles six methods with `exec` and renders a signature for the docstring. The session-start
hook built 40 of them before it did anything (40 ms of a 158 ms hook). `record` gives the same
class (construction by position or keyword in field order, defaults, `field(default_factory=)`,
repr, equality, hashing when frozen, frozenness) from methods shared by every record, with no
compiling: `@record` is `@dataclass(frozen=True)`, `@record(frozen=False)` is `@dataclass`,
`evolve` is `dataclasses.replace`.

Settings: the tables of `core/config.py`.

The 17 tables of vaultmem.toml cost ~30 ms as frozen dataclasses at import: each one compiles
six methods with `exec`, on every command, the per-turn ones included. A `Section` subclass
is a class body of annotated defaults; `setting(...)` adds a range or choices that
`config.parse_config` checks. Keyword construction (every field has a default), equality,
hashing, a dataclass-like repr and frozenness; `evolve` is `dataclasses.replace` for them.
`dataclass_transform` keeps mypy checking every construction.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar, TypeVar, dataclass_transform, overload

__all__ = ["FrozenError", "Section", "evolve", "field", "record", "setting"]

_T = TypeVar("_T")


class FrozenError(AttributeError):
    """An assignment to a field of a frozen record (dataclasses' FrozenInstanceError)."""


class _Missing:
    __slots__ = ()

    def __repr__(self) -> str:
        return "MISSING"


_MISSING: Any = _Missing()


class _Field:
    __slots__ = ("compare", "default", "factory", "repr")

    def __init__(self, default: Any, factory: Callable[[], Any] | None, repr: bool, compare: bool):
        self.default, self.factory, self.repr, self.compare = default, factory, repr, compare


@overload
def field(*, default: _T, repr: bool = True, compare: bool = True) -> _T: ...
@overload
def field(*, default_factory: Callable[[], _T], repr: bool = True, compare: bool = True) -> _T: ...
@overload
def field(*, repr: bool = True, compare: bool = True) -> Any: ...
def field(
    *,
    default: Any = _MISSING,
    default_factory: Callable[[], Any] | None = None,
    repr: bool = True,
    compare: bool = True,
) -> Any:
    """A field with a default made per instance, or left out of repr or comparison."""
    if default is not _MISSING and default_factory is not None:
        raise ValueError("cannot give both default and default_factory")
    return _Field(default, default_factory, repr, compare)


def _record_init(cls: type, names: tuple[str, ...], fill: tuple[Any, ...]) -> Callable[..., None]:
    count, known = len(names), frozenset(names)
    required = tuple(n for n, default, factory in fill if default is _MISSING and factory is None)
    plain = {n: default for n, default, _f in fill if default is not _MISSING}
    factories = tuple((n, factory) for n, _d, factory in fill if factory is not None)

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        if args:
            if len(args) > count:
                raise TypeError(f"{cls.__name__}() takes {count} arguments, {len(args)} given")
            given = dict(zip(names, args, strict=False))
            if kwargs:
                if not given.keys().isdisjoint(kwargs):
                    twice = sorted(set(given) & set(kwargs))
                    raise TypeError(f"{cls.__name__}() got two values for {twice[0]!r}")
                given.update(kwargs)
        else:
            given = kwargs
        if kwargs and not known.issuperset(kwargs):
            odd = sorted(set(kwargs) - known)
            raise TypeError(f"{cls.__name__}() got an unexpected argument {odd[0]!r}")
        values = self.__dict__
        if len(given) < count:
            for name in required:
                if name not in given:
                    raise TypeError(f"{cls.__name__}() is missing the argument {name!r}")
            values.update(plain)
            values.update(given)
            for name, factory in factories:
                if name not in given:
                    values[name] = factory()
        else:
            values.update(given)

    return __init__


def _frozen_setattr(self: Any, name: str, value: Any) -> None:
    raise FrozenError(f"cannot assign to field {name!r}: {type(self).__name__} is frozen")


def _frozen_delattr(self: Any, name: str) -> None:
    raise FrozenError(f"cannot delete field {name!r}: {type(self).__name__} is frozen")


def _build(cls: type[_T], frozen: bool) -> type[_T]:
    fill: list[tuple[str, Any, Callable[[], Any] | None]] = []
    shown: list[str] = []
    compared: list[str] = []
    for name, annotation in cls.__dict__.get("__annotations__", {}).items():  # noqa: RUF063
        if "ClassVar" in str(annotation):
            continue
        value = cls.__dict__.get(name, _MISSING)
        spec = value if isinstance(value, _Field) else _Field(value, None, True, True)
        if isinstance(spec.default, list | dict | set):
            raise ValueError(f"{cls.__name__}.{name}: a mutable default; use default_factory")
        if isinstance(value, _Field):
            if spec.default is _MISSING:
                delattr(cls, name)
            else:
                setattr(cls, name, spec.default)
        if (
            spec.default is _MISSING
            and spec.factory is None
            and fill
            and any(d is not _MISSING or f is not None for _n, d, f in fill)
        ):
            raise TypeError(f"{cls.__name__}.{name}: a field without a default after one with")
        fill.append((name, spec.default, spec.factory))
        if spec.repr:
            shown.append(name)
        if spec.compare:
            compared.append(name)
    names = tuple(n for n, _d, _f in fill)
    keys, listed = tuple(compared), tuple(shown)

    def __repr__(self: Any) -> str:
        values = self.__dict__
        inner = ", ".join(f"{n}={values[n]!r}" for n in listed)
        return f"{type(self).__qualname__}({inner})"

    def __eq__(self: Any, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        mine, theirs = self.__dict__, other.__dict__
        return all(mine[k] == theirs[k] for k in keys)

    methods: dict[str, Any] = {
        "__init__": _record_init(cls, names, tuple(fill)),
        "__repr__": __repr__,
        "__eq__": __eq__,
        "__match_args__": names,
        "__record_fields__": names,
    }
    if frozen:

        def __hash__(self: Any) -> int:
            values = self.__dict__
            return hash(tuple(values[k] for k in keys))

        methods.update(__hash__=__hash__, __setattr__=_frozen_setattr, __delattr__=_frozen_delattr)
    else:
        methods["__hash__"] = None
    for attr, method in methods.items():
        if callable(method):
            method.__qualname__ = f"{cls.__qualname__}.{attr}"
        setattr(cls, attr, method)
    return cls


@overload
def record(cls: type[_T], /) -> type[_T]: ...
@overload
def record(*, frozen: bool = True) -> Callable[[type[_T]], type[_T]]: ...
@dataclass_transform(frozen_default=True, field_specifiers=(field,))
def record(cls: type[_T] | None = None, /, *, frozen: bool = True) -> Any:
    """`@record`: a frozen value class from its annotated fields; `@record(frozen=False)`:
    one whose fields can be assigned (see the module's docstring)."""
    if cls is None:
        return lambda c: _build(c, frozen)
    return _build(cls, frozen)


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


def evolve(obj: _T, **changes: Any) -> _T:
    """A copy of a record or a Section with `changes` (`dataclasses.replace`)."""
    return type(obj)(**{**obj.__dict__, **changes})
