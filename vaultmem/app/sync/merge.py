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
  silent overwrite. A heading that appears twice is two sections (by title and occurrence).
- `agents/<agent>/checkpoint.md` (checkpoint): the newer `updated:` wins whole (a checkpoint is
  a snapshot, not a document to splice); the other version stays in git history. Two different
  versions with the same stamp are a conflict (neither is newer).
- digests and profiles (snapshot): made again from the log or the memories, signed or
  fingerprinted as a whole, so the newer (`updated:`, `built:` or `created:`) wins whole.
"""

from __future__ import annotations

import re
from collections import Counter
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
    b_count, t_count = Counter(b), Counter(t)
    for line in b_count:
        if not line.strip() or line.strip() == RETRACTED:
            continue
        for _ in range(b_count[line] - t_count[line]):  # each copy theirs removed
            if line in result:
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


Section = tuple[tuple[str, int], list[str]]  # ((title, occurrence), lines with the heading)


def _trim(lines: Sequence[str]) -> list[str]:
    """Without the blank lines at the end: the blank line before the next heading belongs to no
    section, so a section that stopped being the last one has not changed."""
    out = list(lines)
    while out and not out[-1].strip():
        out.pop()
    return out


def _split_sections(text: str) -> tuple[list[str], list[Section]]:
    """(preamble lines, sections) by level-2 headings outside closed fences (the same rule
    `state set` uses). A section is keyed by its title and which occurrence of that title it
    is, so a heading that appears twice (both sides of a conflict a person kept) is two
    sections, never one that hides the other."""
    from vaultmem.nexus.state import section_spans

    lines = _lines(text)
    spans = section_spans(lines)
    if not spans:
        return _trim(lines), []
    seen: dict[str, int] = {}
    secs: list[Section] = []
    for title, s, e in spans:
        t = title.strip().lower()
        n = seen.get(t, 0)
        seen[t] = n + 1
        secs.append(((t, n), _trim(lines[s:e])))
    return _trim(lines[: spans[0][1]]), secs


def merge_state(base: str, ours: str, theirs: str) -> tuple[str, bool]:
    """Section-wise three-way merge; a section both sides changed differently is a conflict.

    A section one side changed (or added) is never dropped: it lands, or it is one side of a
    conflict. Sections only theirs added go after the nearest section before them in theirs.
    """
    if ours == theirs or theirs == base:
        return ours, False
    if ours == base:
        return theirs, False
    b_pre, b_secs = _split_sections(base)
    o_pre, o_secs = _split_sections(ours)
    t_pre, t_secs = _split_sections(theirs)
    conflict = False
    pre, c = _pick(b_pre, o_pre, t_pre, "the text before the first section")
    conflict |= c
    bd, od, td = dict(b_secs), dict(o_secs), dict(t_secs)
    order = [k for k, _ in o_secs]
    for i, (key, _) in enumerate(t_secs):
        if key in od:
            continue
        after = next((t_secs[j][0] for j in range(i - 1, -1, -1) if t_secs[j][0] in order), None)
        order.insert(0 if after is None else order.index(after) + 1, key)
    out = list(pre)
    for key in order:
        b_lines = bd.get(key)
        o_lines, t_lines = od.get(key), td.get(key)
        what = key[0] if key[1] == 0 else f"{key[0]}, copy {key[1] + 1}"
        if o_lines is None or t_lines is None:
            kept = o_lines if o_lines is not None else t_lines
            assert kept is not None
            if b_lines is None:  # added on one side
                part = kept
            elif kept != b_lines:  # deleted on one side, changed on the other
                part = _markers(o_lines or [], t_lines or [], what)
                conflict = True
            else:
                continue  # deleted on one side and unchanged on the other: deleted
        else:
            part, c = _pick_state(b_lines or [], o_lines, t_lines, what)
            conflict |= c
        if out and out[-1].strip():
            out.append("")
        out += part
    return _join(out), conflict


def _pick_state(
    base: list[str], ours: list[str], theirs: list[str], what: str
) -> tuple[list[str], bool]:
    """One section both sides changed. Two agents' `state set` (each side's stamp is new) keep
    one current value by a rule every machine computes alike: the later stamp (then the agent,
    then the text) wins, and a line under it says whose value it superseded (that text is in
    the signed log's `state` entry and in git history). A person's edit on either side (the
    text changed, the stamp did not) is the one case both versions are kept, between markers."""
    from vaultmem.nexus.state import section_stamp

    if ours in (theirs, base) or theirs == base:
        return _pick(base, ours, theirs, what)
    was, mine, other = section_stamp(base), section_stamp(ours), section_stamp(theirs)
    if mine is None or other is None or was in (mine, other):
        return _markers(ours, theirs, what), True
    win = ours if (mine, ours) > (other, theirs) else theirs
    time, agent = other if win is ours else mine
    note = (
        f"_Superseded at a merge: {agent} set this section at {time} on another machine; that "
        "text is in the log (`vaultmem log --channel state`)._"
    )
    at = max(i for i, line in enumerate(win) if line.strip())  # the stamp line
    body = win[:at]
    while body and not body[-1].strip():
        body.pop()
    return [*body, "", note, *win[at:]], False


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


def _when(text: str, stamp: re.Pattern[str]) -> float:
    m = stamp.search(text)
    moment = clock.parse_time(m.group("v")) if m else None
    return moment.timestamp() if moment else 0.0


def _newer(ours: str, theirs: str, stamp: re.Pattern[str]) -> str:
    return theirs if _when(theirs, stamp) > _when(ours, stamp) else ours


def merge_checkpoint(base: str, ours: str, theirs: str) -> tuple[str, bool]:
    """The newer checkpoint (by its `updated:` stamp) wins whole. Two different checkpoints
    with the same stamp (or none) are a conflict: neither is newer, so choosing one would drop
    the other silently."""
    if ours == theirs or theirs == base:
        return ours, False
    if ours == base:
        return theirs, False
    if _when(ours, _UPDATED) == _when(theirs, _UPDATED):
        return _join(_markers(_lines(ours), _lines(theirs), "checkpoint")), True
    return _newer(ours, theirs, _UPDATED), False


def merge_snapshot(base: str, ours: str, theirs: str) -> tuple[str, bool]:
    """A digest or a profile: the newer (its first `updated:`, `built:` or `created:` line)
    wins whole, since either side's is a complete, signed or fingerprinted whole; ties keep
    ours. The other stays in git history; the next `vaultmem digest` / `profile` run notices
    if it was made from fewer entries or memories than the vault now has. A side that did not
    change loses to the one that did, whatever the stamps say."""
    if ours == base and base:
        return theirs, False
    return _newer(ours, theirs, _STAMP), False


# --- Review.md (generated) -------------------------------------------------------------------


def _generated_parts(text: str) -> tuple[list[str], str] | None:
    """(the page with vaultmem's list cut out, the list); None without both markers."""
    from vaultmem.bank.review_page import REVIEW_END, REVIEW_START

    start, end = text.find(REVIEW_START), text.find(REVIEW_END)
    if start == -1 or end < start:
        return None
    cut = text[:start] + REVIEW_START + "\n" + REVIEW_END + text[end + len(REVIEW_END) :]
    return _lines(cut), text[start : end + len(REVIEW_END)]


def merge_generated(base: str, ours: str, theirs: str) -> tuple[str, bool]:
    """`Review.md`: the list between vaultmem's markers is derived from the bank, so it never
    conflicts: this side's is kept, and the sync makes it again from the merged bank
    (`pipeline._after_pull`). The person's text around it merges as a whole: one side's edit
    lands; both sides' different edits are kept between markers, the one case a person sees."""
    from vaultmem.bank.review_page import REVIEW_END, REVIEW_START

    b, o, t = (_generated_parts(text) for text in (base, ours, theirs))
    if o is None or t is None:  # a person took the markers out: a text like any other
        merged, conflict = _pick(_lines(base), _lines(ours), _lines(theirs), "Review.md")
        return _join(merged), conflict
    rest, conflict = _pick(b[0] if b is not None else o[0], o[0], t[0], "Review.md")
    joined, marks = _join(rest), REVIEW_START + "\n" + REVIEW_END
    return (joined.replace(marks, o[1], 1) if marks in joined else joined), conflict


MERGERS = {
    "index": merge_index,
    "state": merge_state,
    "checkpoint": merge_checkpoint,
    "snapshot": merge_snapshot,
    "generated": merge_generated,
}
