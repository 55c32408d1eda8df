"""Importing whoosh: its core, once, without what vaultmem never uses (`load()`).

Importing whoosh costs more than a cold `vaultmem recall` does with the index (issue 23): it
loads ~80 modules, and a dozen of them only for features vaultmem never calls. While whoosh
imports, `load` puts stand-ins for those in `sys.modules`:

- `urllib.request` (whoosh.compat imports it for one `urlretrieve` nothing calls: http.client,
  email, ssl), the `cached_property` package (whoosh.reading; it imports asyncio) and the
  English morphology tables (`whoosh.lang.morph_en`, for the `Variations` query): replaced by
  the few names whoosh takes from them (the tables load on Variations' first use);
- `html` (whoosh takes `escape`, for highlights), `shutil` (`copyfileobj`, for compound
  files; shutil imports bz2 and lzma) and the double-metaphone tables
  (`whoosh.lang.dmetaphone`, for a phonetic filter): functions that import the real module
  when first called; `hashlib` (whoosh takes `md5`, for its hash tables: hashlib loads
  OpenSSL), the built-in module's md5;
- `calendar`, `queue`, `random`, `tempfile`, `whoosh.sorting` and `whoosh.automata.lev`
  (whoosh imports them whole, uses them for dates, multiprocessing writers, temp names and
  storage, sorted or grouped results, fuzzy terms): modules that import the real one on
  their first attribute access (`_Later`).

The stand-ins are taken out of `sys.modules` right after, so nothing else in the process ever
sees them: a later `import urllib.request` (or calendar, html, ...) gets the real module. The
modules a search needs later (the codec, the searcher, the collectors) are imported here too,
while the stand-ins are in place.

One lasting change: `whoosh.lang.snowball` is the real package without its `__init__`, whose
fourteen stemmers (~190 KB of bytecode) all load whenever one is asked for (opening an index
unpickles its analyzer, which asks for one). Here each loads on first use, through the same
`classes` table and the same names (`snowball`).

Every module that uses whoosh calls `load()` (or, for the analyzer alone, `stand_ins()` and
`snowball()`) before its own function-level `from whoosh... import`: this module, `engine.py`,
`whoosh_analysis.py` and `whoosh_query.py` are the only ones that import whoosh (CONTRIBUTING.md).
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import importlib.util
import sys
import types
from typing import Any


class _Later(types.ModuleType):
    """A module imported for real on its first attribute access (then this one forwards)."""

    def __getattr__(self, attr: str) -> Any:
        name = self.__name__
        if sys.modules.get(name) is self:
            del sys.modules[name]
        real = importlib.import_module(name)
        self.__dict__.update(real.__dict__)
        return getattr(real, attr)


def _later_function(module: str, name: str) -> Any:
    def call(*args: Any, **kwargs: Any) -> Any:
        return getattr(importlib.import_module(module), name)(*args, **kwargs)

    call.__name__ = call.__qualname__ = name
    return call


def _unused(*_a: object, **_k: object) -> None:
    raise RuntimeError("not available inside vaultmem's whoosh import")


def _md5(*args: Any, **kwargs: Any) -> Any:
    """whoosh's hash tables' md5, from the built-in module (hashlib would load OpenSSL)."""
    try:
        from _md5 import md5  # type: ignore[import-not-found]
    except ImportError:  # pragma: no cover - a build without it
        from hashlib import md5
    return md5(*args, **kwargs)


# name -> what the stand-in holds: a dict of attributes, or LATER for a `_Later` module
LATER = None
STAND_INS: dict[str, dict[str, Any] | None] = {
    "urllib.request": {"urlretrieve": _unused},
    "cached_property": {"cached_property": functools.cached_property},
    "whoosh.lang.morph_en": {"variations": _unused},
    "html": {"escape": _later_function("html", "escape")},
    "whoosh.lang.dmetaphone": {
        "double_metaphone": _later_function("whoosh.lang.dmetaphone", "double_metaphone")
    },
    "hashlib": {"md5": _md5},
    "shutil": {"copyfileobj": _later_function("shutil", "copyfileobj")},
    "whoosh.sorting": LATER,
    "calendar": LATER,
    "queue": LATER,
    "random": LATER,
    "tempfile": LATER,
    "whoosh.automata.lev": LATER,
}

# whoosh/lang/snowball/__init__.py: language code -> (module, class)
SNOWBALL = {
    "da": ("danish", "DanishStemmer"),
    "nl": ("dutch", "DutchStemmer"),
    "en": ("english", "EnglishStemmer"),
    "fi": ("finnish", "FinnishStemmer"),
    "fr": ("french", "FrenchStemmer"),
    "de": ("german", "GermanStemmer"),
    "hu": ("hungarian", "HungarianStemmer"),
    "it": ("italian", "ItalianStemmer"),
    "no": ("norwegian", "NorwegianStemmer"),
    "pt": ("portugese", "PortugueseStemmer"),
    "ro": ("romanian", "RomanianStemmer"),
    "ru": ("russian", "RussianStemmer"),
    "es": ("spanish", "SpanishStemmer"),
    "sv": ("swedish", "SwedishStemmer"),
}


class _Stemmers(dict[str, Any]):
    """`whoosh.lang.snowball.classes`, each class imported when first looked up."""

    def __missing__(self, code: str) -> Any:
        module, cls = SNOWBALL[code]
        found = getattr(importlib.import_module(f"whoosh.lang.snowball.{module}"), cls)
        self[code] = found
        return found

    def __contains__(self, code: object) -> bool:
        return code in SNOWBALL

    def keys(self) -> Any:
        return SNOWBALL.keys()


def snowball() -> None:
    """The real `whoosh.lang.snowball` package, its stemmers loaded one by one (see above)."""
    name = "whoosh.lang.snowball"
    if name in sys.modules:
        return
    spec = importlib.util.find_spec(name)
    if spec is None:  # pragma: no cover - whoosh without its stemmers
        return
    package = importlib.util.module_from_spec(spec)
    stemmers = _Stemmers()
    by_class = {cls: code for code, (_m, cls) in SNOWBALL.items()}

    def __getattr__(attr: str) -> Any:
        if attr in by_class:
            return stemmers[by_class[attr]]
        raise AttributeError(f"module {name!r} has no attribute {attr!r}")

    package.__dict__.update(classes=stemmers, __getattr__=__getattr__)
    sys.modules[name] = package
    import whoosh.lang

    whoosh.lang.snowball = package


@contextlib.contextmanager
def stand_ins() -> Any:
    """`STAND_INS` in `sys.modules` while whoosh imports, taken out right after."""
    stubs: dict[str, types.ModuleType] = {}
    for name, attrs in STAND_INS.items():
        if name in sys.modules:
            continue  # already imported for real by someone: whoosh gets the real one
        if attrs is LATER:
            stub: types.ModuleType = _Later(name, "vaultmem: imported on first use")
        else:
            stub = types.ModuleType(name, "vaultmem: stand-in while whoosh imports")
            stub.__dict__.update(attrs)
        stubs[name] = stub
    sys.modules.update(stubs)
    try:
        yield stubs
    finally:
        for name, stub in stubs.items():
            if sys.modules.get(name) is stub:
                del sys.modules[name]


def load() -> None:
    """Import whoosh's core once, without what vaultmem never uses (see `STAND_INS`)."""
    if "whoosh.query.terms" in sys.modules:
        return
    with stand_ins() as stubs:
        import whoosh.codec.whoosh3
        import whoosh.collectors
        import whoosh.compat
        import whoosh.query.terms
        import whoosh.reading
        import whoosh.scoring
        import whoosh.searching
    snowball()
    if "whoosh.lang.morph_en" in stubs:
        # the Variations query still works: the real tables load on its first use
        def variations(word: str) -> Any:
            from whoosh.lang.morph_en import variations as real

            return real(word)

        whoosh.query.terms.variations = variations
