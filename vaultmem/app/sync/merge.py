"""Three-way merges for the files two clones of a vault can change at once (git merge drivers).

git runs `vaultmem merge-file KIND %O %A %B %P` for the paths `.gitattributes` routes here (set
up by `vaultmem init --git`, `vaultmem clone` and `vaultmem sync`; a clone without the drivers
falls back to git's own merge). Each function takes the base, ours and theirs texts and returns
the merged text and whether a person must look at it (conflict markers are then in the text,
both versions kept, and git reports the file as conflicted).

- `MEMORY.md` (index): line by line. A line either side added is kept once; a line one side
  removed is removed unless the other side changed it; so a retraction on one side (the line
  moves under `## Retracted`) and an edit on the other (the line's text changed) both survive.
- `nexus/project-state.md` (state): section by section. Two different sections changed on two
  machines both land; the same section changed differently on both is a conflict, never a
  silent overwrite.
- `agents/<agent>/checkpoint.md` (checkpoint): the newer `updated:` wins whole (a checkpoint is
  a snapshot, not a document to splice); the other version stays in git history.
- digests and profiles (snapshot): made again from the log or the memories, signed or
  fingerprinted as a whole, so the newer (`updated:`, `built:` or `created:`) wins whole.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from vaultmem.core import clock

RETRACTED = "## Retracted"
_HEADING = re.compile(r"(#{1,2})[ \t]+(.*?)[ \t]*#*[ \t]*")
_UPDATED = re.compile(r"^updated:[ \t]*['\"]?(?P<v>[^'\"\n]*)['\"]?[ \t]*$", re.MULTILINE)
_STAMP = re.compile(
    r"^(?:updated|built|created):[ \t]*['\"]?(?P<v>[^'\"\n]*)['\"]?[ \t]*$", re.MULTILINE
)


def _lines(text: str) -> list[str]:
    return text.splitlines()


def _join(lines: Sequence[str]) -> str:
    return "\n".join(lines) + ("\n" if lines else "")


# --- MEMORY.md -----------------------------------------------------------------------------


def merge_index(base: str, ours: str, theirs: str) -> tuple[str, bool]:
    """Line-based union with deletions: never a conflict.

    Ours is the starting point. A line theirs removed (and ours left as it was) is removed; a
    line theirs added is added once, after the nearest line before it in theirs that we also
    have, in the same part of the file (the active list, or under `## Retracted`).
    """
    b, o, t = _lines(base), _lines(ours), _lines(theirs)
    base_set = set(b)
    result = list(o)
    for line in base_set - set(t):
        if line.strip() and line.strip() != RETRACTED and line in result:
            result.remove(line)
    t_cut = _retracted_at(t)
    for i, line in enumerate(t):
        if not line.strip() or line in base_set or line in result:
            continue
        if line.strip() == RETRACTED:
            continue  # added below, with the first retracted line that needs it
        retracted = t_cut is not None and i > t_cut
        if retracted and _retracted_at(result) is None:
            while result and not result[-1].strip():
                result.pop()
            result += ["", RETRACTED, ""]
        cut = _retracted_at(result)
        lo, hi = (
            (cut + 1, len(result)) if retracted and cut is not None else (0, cut or len(result))
        )
        anchor = None
        for j in range(i - 1, -1, -1):
            if t[j].strip() and t[j].strip() != RETRACTED and t[j] in result[lo:hi]:
                anchor = lo + result[lo:hi].index(t[j])
                break
        if anchor is not None:
            at = anchor + 1
        elif retracted:
            at = hi
        else:
            at = _end_of_active(result)
        result.insert(at, line)
    return _join(result), False


def _retracted_at(lines: list[str]) -> int | None:
    return next((i for i, ln in enumerate(lines) if ln.strip() == RETRACTED), None)


def _end_of_active(lines: list[str]) -> int:
    cut = _retracted_at(lines)
    end = len(lines) if cut is None else cut
    while end > 0 and not lines[end - 1].strip():
        end -= 1
    return end


# --- project-state.md ------------------------------------------------------------------------


def _split_sections(text: str) -> tuple[list[str], list[tuple[str, list[str]]]]:
    """(preamble lines, [(title, lines including the heading)]) by level-2 headings outside
    closed fences (the same rule `state set` uses)."""
    from vaultmem.nexus.state import section_spans

    lines = _lines(text)
    spans = section_spans(lines)
    if not spans:
        return lines, []
    pre = lines[: spans[0][1]]
    return pre, [(title.strip().lower(), lines[s:e]) for title, s, e in spans]


def merge_state(base: str, ours: str, theirs: str) -> tuple[str, bool]:
    """Section-wise three-way merge; a section both sides changed differently is a conflict."""
    b_pre, b_secs = _split_sections(base)
    o_pre, o_secs = _split_sections(ours)
    t_pre, t_secs = _split_sections(theirs)
    conflict = False
    pre, c = _pick(b_pre, o_pre, t_pre, "the text before the first section")
    conflict |= c
    bd, od, td = dict(b_secs), dict(o_secs), dict(t_secs)
    order = [k for k, _ in o_secs] + [k for k, _ in t_secs if k not in od]
    out = list(pre)
    for key in order:
        b_lines = bd.get(key)
        o_lines, t_lines = od.get(key), td.get(key)
        if o_lines is None or t_lines is None:
            kept = o_lines if o_lines is not None else t_lines
            assert kept is not None
            if b_lines is None:  # added on one side
                out += kept
            elif kept != b_lines:  # deleted on one side, changed on the other
                out += _markers(o_lines or [], t_lines or [], key)
                conflict = True
            continue  # deleted on one side and unchanged on the other: deleted
        merged, c = _pick(b_lines or [], o_lines, t_lines, key)
        conflict |= c
        out += merged
    return _join(out), conflict


def _pick(base: list[str], ours: list[str], theirs: list[str], what: str) -> tuple[list[str], bool]:
    if ours == theirs or theirs == base:
        return ours, False
    if ours == base:
        return theirs, False
    return _markers(ours, theirs, what), True


def _markers(ours: list[str], theirs: list[str], what: str) -> list[str]:
    return [
        f"<<<<<<< this machine ({what})",
        *ours,
        "=======",
        *theirs,
        f">>>>>>> the other machine ({what})",
    ]


# --- checkpoint.md --------------------------------------------------------------------------


def _newer(ours: str, theirs: str, stamp: re.Pattern[str]) -> str:
    def when(text: str) -> float:
        m = stamp.search(text)
        moment = clock.parse_time(m.group("v")) if m else None
        return moment.timestamp() if moment else 0.0

    return theirs if when(theirs) > when(ours) else ours


def merge_checkpoint(base: str, ours: str, theirs: str) -> tuple[str, bool]:
    """The newer checkpoint (by its `updated:` stamp) wins whole; ties keep ours."""
    return _newer(ours, theirs, _UPDATED), False


def merge_snapshot(base: str, ours: str, theirs: str) -> tuple[str, bool]:
    """A digest or a profile: the newer (its first `updated:`, `built:` or `created:` line)
    wins whole, since either side's is a complete, signed or fingerprinted whole; ties keep
    ours. The other stays in git history; the next `vaultmem digest` / `profile` run notices
    if it was made from fewer entries or memories than the vault now has."""
    return _newer(ours, theirs, _STAMP), False


MERGERS = {
    "index": merge_index,
    "state": merge_state,
    "checkpoint": merge_checkpoint,
    "snapshot": merge_snapshot,
}
