"""`vaultmem show PATH[:LINE[-LINE]]`: print the lines a recall hit points at.

A hit names a note and a line range (`wiki/stripe.md:12-30`); `show` prints those lines, so a
person or an agent reads the place itself instead of opening the file by hand. It is scoped like
recall: an agent sees the shared notes and its own folder, never another agent's private notes,
bank or scratch, nor the pages vaultmem writes for people (`Review.md`) — those read as "not
found", so their existence does not leak. Only notes (`.md`) inside the vault are shown: nothing
under `.vaultmem/` or `.git/`, nothing through a link out of the vault (the one path check,
`Vault.path`), and an in-vault link is scoped by where it points.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from vaultmem.core.errors import NotFoundError, PathOutsideVaultError, UsageError
from vaultmem.core.records import record
from vaultmem.core.vault import STATE_DIR
from vaultmem.search.documents import PEOPLE, owner_of

if TYPE_CHECKING:
    from vaultmem.core.vault import Vault

DEFAULT_LINES = 40
MAX_LINES = 2000  # of one `show`: a longer range is cut, with a marker
MAX_BYTES = 1 << 20  # read of one note: a bigger file is shown from its first megabyte
_LINES_RE = re.compile(r"(?P<a>[0-9]{1,9})(?:-(?P<b>[0-9]{0,9}))?")
HIDDEN_TOP = (STATE_DIR, ".git", ".obsidian", ".trash")


@record
class Shown:
    path: str
    line_start: int
    line_end: int
    total_lines: int  # of the part read (the first MAX_BYTES of a huge file)
    text: str
    cut: bool  # more lines follow the range that was asked for
    problem: str | None = None  # bytes that are not UTF-8, a file read only in part

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def parse_spec(spec: str) -> tuple[str, int | None, int | None]:
    """`path`, `path:12`, `path:12-30` or `path:12-` as (path, first, last)."""
    text = spec.strip()
    path, colon, tail = text.rpartition(":")
    if colon and (m := _LINES_RE.fullmatch(tail)):
        first = int(m["a"])
        last = int(m["b"]) if m["b"] else None
        if first < 1 or (last is not None and last < first):
            raise UsageError(
                f"line range {tail!r} is empty", "give LINE or FIRST-LAST with FIRST ≤ LAST"
            )
        return path, first, last
    return text, None, None


def show(
    vault: Vault,
    spec: str,
    *,
    agent: str | None = None,
    lines: int = DEFAULT_LINES,
) -> Shown:
    rel, first, last = parse_spec(spec)
    if not rel:
        raise UsageError("which note?", "e.g. vaultmem show wiki/stripe.md:12-30")
    if lines < 1:
        raise UsageError(f"--lines {lines} must be 1 or more", "e.g. --lines 40")
    path = vault.path(rel)  # refuses '..', absolute paths, links out of the vault (exit 8)
    rel = vault.rel(path)
    if rel.split("/", 1)[0] in HIDDEN_TOP:
        raise PathOutsideVaultError(
            f"{rel} is vaultmem's or a tool's local state, not a note", "show prints notes"
        )
    if not rel.endswith(".md"):
        raise UsageError(f"{rel} is not a note (.md)", "show prints notes, as recall finds them")
    # a link inside the vault is scoped by where it points as well as by where it is
    target = path.resolve().relative_to(vault.real_root).as_posix()
    for whose in {owner_of(rel), owner_of(target)}:
        if agent is not None and (whose == PEOPLE or whose not in ("-", agent)):
            raise NotFoundError(f"no note {rel}", "see what there is with: vaultmem recall QUERY")
    if not path.is_file():
        raise NotFoundError(f"no note {rel}", "see what there is with: vaultmem recall QUERY")
    data = vault.read_bytes(path, MAX_BYTES)
    problem = None
    if len(data) > MAX_BYTES:
        data = data[:MAX_BYTES]
        problem = f"only the first {MAX_BYTES} bytes of {rel} are shown"
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        text = data.decode("utf-8", errors="replace")
        problem = problem or f"not UTF-8 (first bad byte at offset {exc.start}); shown with �"
    all_lines = text.splitlines()
    total = len(all_lines)
    start = first or 1
    if start > max(total, 1):
        raise NotFoundError(f"{rel} has {total} lines, not {start}", f"e.g. {rel}:1-{total}")
    end = last if last is not None else start + lines - 1
    end = min(end, total, start + MAX_LINES - 1)
    cut = end < total and (last is None or end < last)
    return Shown(rel, start, end, total, "\n".join(all_lines[start - 1 : end]), cut, problem)
