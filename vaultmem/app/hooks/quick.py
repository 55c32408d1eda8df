"""The prompt hook's quick answer: "nothing new", decided before anything heavy is imported.

`hook prompt` runs on every user turn, and most turns have nothing to add. Proving it needs
three small reads: the agent's read cursor, the metadata line of the newest entry on the live
log (its last 64 KB), and, for the recall gate, the words of the memory indexes and the filter
of note-name words the index keeps beside its manifest (`search/vocab.py`: one small file,
whatever the vault's size). This module does them with `os` and `json` alone (no
dataclasses, no tomllib, no log parser: the full path costs ~2x more in imports than in work).
When it cannot tell for sure — an option it does not know, a torn log tail, a cursor that does
not match, a prompt that names something the vault has notes on — it says so and the full hook
(`app.hook_events`) runs as if it had never been asked.

It reads the formats documented in docs/FORMAT.md (the entry's metadata line, the cursor file)
and `names.json` (`search/vocab.py`); `hook_events` uses the same recall gate, so both paths
decide alike. The cursor and the names filter are sealed
(`core/seal.py`, which imports only `os`, `json` and the built-in `_blake2`): one this machine
did not write counts as none, so a cursor git wrote never makes a turn "nothing new".
"""

# os.path, not pathlib: importing pathlib alone costs about one more Python start-up
# ruff: noqa: PTH111, PTH113, PTH118

from __future__ import annotations

import json
import os
import re
from typing import Any

TAIL = 1 << 16
_META = re.compile(rb"^<!-- vaultmem (\{.*\}) -->[ \t]*$", re.M)


def names_something(root: str, agent: str, prompt: str) -> bool:
    """Does the prompt share a word with a memory's title or description (shared and own
    MEMORY.md), or with the name of a note the agent may see? Decides whether recall runs."""
    from vaultmem.search.vocab import words

    asked = words(prompt)
    if not asked:
        return False
    known: set[str] = set()
    inside = os.path.realpath(root) + os.sep
    for rel in ("memory/MEMORY.md", f"agents/{agent}/MEMORY.md"):
        path = os.path.realpath(os.path.join(root, rel))
        if not (path.startswith(inside) and os.path.isfile(path)):
            continue  # a link out of the vault (or to a folder, a fifo) is never read
        try:
            with open(path, encoding="utf-8", errors="replace") as fh:
                known |= words(fh.read())
        except OSError:
            continue
    if asked & known:
        return True
    from vaultmem.search import vocab

    # the words of note names, written with the index (search/vocab.py): one small file
    folder = os.path.join(root, ".vaultmem", "index")
    names = vocab.load(folder)
    if names is not None:
        return any(names.holds("", w) or names.holds(agent, w) for w in asked)
    return _manifest_names(folder, agent, asked)


def _manifest_names(folder: str, agent: str, asked: set[str]) -> bool:
    """The note names from the manifest itself: an index written before names.json existed
    (the next refresh that changes a file writes it)."""
    from vaultmem.core import seal
    from vaultmem.search import vocab

    try:
        # sealed (core/seal.py): a manifest this machine did not write names nothing, as a
        # missing one (the next recall rebuilds the index)
        manifest = seal.read(os.path.join(folder, "manifest.json"))
        paths = manifest["files"]["paths"]
    except (KeyError, TypeError):
        return False
    mine = f"agents/{agent}/"
    for path in paths if isinstance(paths, list) else ():
        if not isinstance(path, str) or (path.startswith("agents/") and not path.startswith(mine)):
            continue
        stem = path.rsplit("/", 1)[-1].rsplit(".", 1)[0]
        if asked & vocab.words(stem):
            return True
    return False


def newest_entry(root: str) -> tuple[str | None, str | None] | None:
    """(id, hash) of the last entry on the live log, from its metadata line; (None, None) for
    a log without entries; None when unsure."""
    try:
        with open(os.path.join(root, "nexus", "live-context.md"), "rb") as fh:
            size = fh.seek(0, 2)
            fh.seek(max(0, size - TAIL))
            tail = fh.read()
    except OSError:
        return None
    found = list(_META.finditer(tail))
    if not found:
        # a whole file without a single entry is an empty log (what the cursor of a read of
        # an empty log says); a long tail without one is something else: let the parser look
        return (None, None) if size <= TAIL and b"\n### " not in tail else None
    try:
        meta = json.loads(found[-1].group(1))
    except ValueError:
        return None
    if not isinstance(meta, dict) or meta.get("log") != "live":
        return None
    # only a complete last entry counts: nothing but blank lines may follow its metadata
    if tail[found[-1].end() :].strip():
        return None
    return str(meta.get("id")), str(meta.get("hash"))


def read_stdin(stream: Any, timeout: float = 2.0, limit: int = 4 << 20) -> str:
    """The hook's payload; "" for a terminal, and whatever arrived if the runtime leaves stdin
    open without closing it for `timeout` seconds (a hook must never hang on its input)."""
    if stream is None:
        return ""
    try:
        if stream.isatty():
            return ""
        fd = stream.fileno()
    except (OSError, ValueError, AttributeError):  # not a real file (a test's StringIO)
        return str(stream.read(limit))
    import select
    import time

    chunks: list[bytes] = []
    size = 0
    deadline = time.monotonic() + timeout
    while size < limit:
        left = deadline - time.monotonic()
        try:
            ready, _w, _x = select.select([fd], [], [], max(left, 0))
        except (OSError, ValueError):  # select does not take pipes here (Windows)
            return str(stream.read(limit))
        if not ready:
            break
        data = os.read(fd, 1 << 16)
        if not data:
            break
        chunks.append(data)
        size += len(data)
    return b"".join(chunks).decode("utf-8", "replace")


def _options(args: list[str]) -> dict[str, str] | None:
    out: dict[str, str] = {}
    i = 0
    while i < len(args):
        name, eq, value = args[i].partition("=")
        if name in ("--plain", "--json") and not eq:
            i += 1
            continue
        if name not in ("--vault", "--agent"):
            return None
        if not eq:
            i += 1
            if i >= len(args):
                return None
            value = args[i]
        out[name[2:]] = value
        i += 1
    return out if set(out) == {"vault", "agent"} else None


def nothing_new(args: list[str], payload: str) -> bool:
    """True when `hook prompt ARGS` with this payload would certainly print nothing and change
    nothing. `args` are the options after `hook prompt`; both --vault and --agent must be given
    (what `vaultmem setup` writes), so no environment or config is read."""
    opts = _options(args)
    if opts is None:
        return False
    root, agent = os.path.expanduser(opts["vault"]), opts["agent"]
    from vaultmem.core.names import AGENT_NAME_RE

    if not AGENT_NAME_RE.fullmatch(agent):
        return False
    if not os.path.isfile(os.path.join(root, "vaultmem.toml")):
        return False
    from vaultmem.core import seal

    try:
        data = json.loads(payload)
    except (ValueError, RecursionError):  # RecursionError: '[' * 5000
        return False
    # sealed (core/seal.py): a cursor this machine did not write is no cursor
    cursor = seal.read(os.path.join(root, ".vaultmem", "cursors", f"{agent}.json"))
    if not isinstance(data, dict) or not isinstance(cursor, dict):
        return False
    if cursor.get("behind"):
        return False  # entries an earlier read left unshown are still new: show them now
    newest = newest_entry(root)
    if newest is None or (cursor.get("id"), cursor.get("hash")) != newest:
        return False
    prompt = data.get("prompt")
    return not (isinstance(prompt, str) and names_something(root, agent, prompt))
