"""Start-up measures: what the entry point does so that a command an agent runs every turn
costs little more than starting Python. Each is measured (docs/benchmarks.md, "Start-up";
`python -X importtime -m vaultmem read ...`), kept because it pays, and tested for what it
guarantees (tests/test_startup.py, tests/test_fast.py):

- `collector`: the brief per-turn commands run without the cyclic collector, the others with
  a higher threshold (~3 ms of a `read`);
- `before_exit`: what is alive at the end is frozen, so the collections at exit do not walk it
  (~4 ms of a `read`);
- `lean_pathlib`: pathlib is imported without urllib.parse and ipaddress (~2 ms of every
  command), and a later `import urllib.parse` still gets the real module.

The other two measures of the same kind live where their subject does: `core/records.py`
(`@record`, a `dataclass` without its cost at import) and `search/whoosh_import.py` (whoosh's
unused modules are never loaded).
"""

from __future__ import annotations

import sys

# The cyclic collector during a command. Start-up allocates objects that live until exit
# (modules, functions, classes: ~140,000 allocations on a `read`), and each young collection
# walks those allocated since the last: with Python's threshold (700) ~30 collections, ~3 ms of
# a `read` or an `append` (~0.25x F), finding next to nothing to free. The per-turn commands that end in milliseconds (BRIEF)
# run without it: what they leave in cycles is freed at exit. Every other command collects
# every 20,000 allocations (7 collections on a read), so a long one's garbage stays bounded.
GC_THRESHOLD = 20_000
BRIEF = (("read",), ("append",), ("inbox",), ("wm",), ("hook", "prompt"), ("hook", "session-start"))


def collector(argv: list[str]) -> None:
    import gc

    if any(tuple(argv[: len(words)]) == words for words in BRIEF):
        gc.disable()
    else:
        gc.set_threshold(GC_THRESHOLD, *gc.get_threshold()[1:])


def before_exit() -> None:
    """The command is done: every object still alive is handed to the permanent generation, so
    the interpreter's collections at exit do not walk them again (~15,000 tracked objects
    after a `read`; a read or an append ends ~4 ms sooner, a third of `python -c pass`). Module teardown, atexit handlers and the
    flushing of open files still run; only garbage left in reference cycles is not collected
    (the operating system frees it): vaultmem closes what it writes (`with`, `core/fsio.py`)
    and makes it durable before a command returns."""
    import gc

    gc.freeze()


def lean_pathlib() -> None:
    """Import pathlib without urllib.parse. pathlib takes one function from it, the quoting
    of `Path.as_uri` (which vaultmem never calls), and urllib.parse imports ipaddress: ~2 ms of
    every command, a sixth of `python -c pass`. While pathlib imports, a stand-in module holds
    that function, which imports the real one when first called; then the stand-in is taken
    out of `sys.modules`, so a later `import urllib.parse` gets the real module (as
    `search/whoosh_import.py` does for whoosh's imports)."""
    if "pathlib" in sys.modules or "urllib.parse" in sys.modules:
        return
    import types

    def quote_from_bytes(*args: object, **kwargs: object) -> str:
        from urllib.parse import quote_from_bytes as real

        return real(*args, **kwargs)  # type: ignore[arg-type]

    stand_in = types.ModuleType("urllib.parse", "vaultmem: stand-in while pathlib imports")
    stand_in.quote_from_bytes = quote_from_bytes  # type: ignore[attr-defined]
    sys.modules["urllib.parse"] = stand_in
    try:
        import pathlib  # noqa: F401
    finally:
        if sys.modules.get("urllib.parse") is stand_in:
            del sys.modules["urllib.parse"]
