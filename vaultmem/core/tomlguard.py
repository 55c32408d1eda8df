"""`vaultmem.toml` comes from git: the bounds a file must keep before tomllib reads it, and
the one line a lenient command (sync, verify, trust, the hooks) says when the file fails.

A remote can push any file. tomllib recurses once per level of nested arrays and inline
tables, so a 100,000-deep nesting ended every command in RecursionError (exit 1), and it reads
a file of any size. `bounded` refuses both with a ConfigError (exit 3, or the lenient fallback
of `pins.load_config`) by a scan of the text alone, before tomllib is imported.
"""

from __future__ import annotations

import sys
from pathlib import Path

from vaultmem.core.errors import ConfigError

# Settings come from git: a remote can push any vaultmem.toml. Before tomllib reads it, the file
# must be at most this many bytes, and no array or inline table may nest deeper than this
# (tomllib recurses per level: a 100,000-deep nesting ends in RecursionError, every command
# exit 1). Real files are a few KB and nest two levels.
MAX_BYTES = 256 * 1024
MAX_DEPTH = 16


def bounded(text: str, path: Path) -> None:
    """Refuse a file over the size budget or nested deeper than MAX_DEPTH."""
    if len(text) > MAX_BYTES:
        raise ConfigError(
            f"{path}: {len(text):,} characters, more than a vaultmem.toml may hold ({MAX_BYTES:,})",
            "fix the file (a real one is a few KB)",
        )
    depth = nesting(text)
    if depth > MAX_DEPTH:
        raise ConfigError(
            f"{path}: arrays or inline tables nested {depth} deep (at most {MAX_DEPTH})",
            "fix the file",
        )


def nesting(text: str) -> int:
    """How deep `[`/`{` nest in `text` outside strings and comments (a table header `[a]` or
    `[[a]]` counts 1 or 2): a scan without tomllib, so a nesting bomb never reaches it. A
    quote the scan cannot pair (invalid TOML) ends it: tomllib then says what is wrong."""
    deepest = depth = 0
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == "#":
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif c in "\"'":
            triple = text.startswith(c * 3, i)
            quote = c * 3 if triple else c
            j = i + len(quote)
            while True:
                k = text.find(quote, j)
                if k < 0:
                    return deepest
                if c == '"' and _escaped(text, k):
                    j = k + 1
                    continue
                break
            if triple:  # `""""` ends a multi-line string with a quote in it (up to two)
                extra = 0
                while extra < 2 and text.startswith(c, k + 3):
                    k, extra = k + 1, extra + 1
            i = k + len(quote)
            continue
        elif c in "[{":
            depth += 1
            deepest = max(deepest, depth)
            if deepest > MAX_DEPTH:
                return deepest
        elif c in "]}":
            depth = max(0, depth - 1)
        i += 1
    return deepest


def _escaped(text: str, k: int) -> bool:
    """Is the character at `k` escaped by an odd run of backslashes before it?"""
    run = 0
    while k - run - 1 >= 0 and text[k - run - 1] == "\\":
        run += 1
    return run % 2 == 1


_WARNED: set[str] = set()


def say_once(path: Path, problem: ConfigError, what: str, *, pinned: bool) -> None:
    """The lenient fallback's line on stderr, once per file and process."""
    if str(path) in _WARNED:
        return
    _WARNED.add(str(path))
    pins = " and its pinned security settings" if pinned else ""
    sys.stderr.write(
        f"vaultmem: {problem.message}\n"
        f"vaultmem: going on with {what}{pins} until the file is fixed"
        f" ({problem.hint or 'fix vaultmem.toml'})\n"
    )
