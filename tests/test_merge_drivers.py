"""The git merge drivers (`vaultmem merge-file`), as pure functions: examples and properties.

Two machines edit the same file from one common version; the driver must land every edit, and
call for a person only when both sides changed the same thing to different text.
"""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import given, settings
from hypothesis import strategies as st

from vaultmem.app.sync.merge import merge_checkpoint, merge_index, merge_state
from vaultmem.nexus.state import conflict_markers, state_sections

# --- project state: examples ---------------------------------------------------------------


def test_editing_the_last_section_and_adding_one_after_it_is_no_conflict() -> None:
    merged, conflict = merge_state("## A\n\nx\n", "## A\n\ny\n", "## A\n\nx\n\n## B\n\nz\n")
    assert not conflict
    assert state_sections(merged) == [("A", "y"), ("B", "z")]
    merged, conflict = merge_state("## A\n\nx\n", "## A\n\nx\n\n## B\n\nz\n", "## A\n\ny\n")
    assert not conflict
    assert state_sections(merged) == [("A", "y"), ("B", "z")]


def test_a_heading_that_appears_twice_loses_no_update() -> None:
    # a person kept both sides of a conflict: `## Status` twice; the other machine edits
    # the first one and adds a section
    base = "## Status\n\ngreen\n\n## Risks\n\nnone\n"
    ours = "## Status\n\ngreen\n\n## Status\n\nred\n\n## Risks\n\nnone\n"
    theirs = "## Status\n\namber\n\n## Risks\n\nnone\n\n## Next\n\nship\n"
    merged, conflict = merge_state(base, ours, theirs)
    assert not conflict
    assert state_sections(merged) == [
        ("Status", "amber"),
        ("Status", "red"),
        ("Risks", "none"),
        ("Next", "ship"),
    ]
    # both copies changed on the other side: both updates land or both are in the conflict
    theirs2 = "## Status\n\ngreen\n\n## Status\n\nblue\n\n## Risks\n\nnone\n"
    merged, conflict = merge_state(ours, ours.replace("green", "teal"), theirs2)
    assert not conflict and "teal" in merged and "blue" in merged


def test_a_conflict_keeps_both_versions_between_markers() -> None:
    merged, conflict = merge_state("## A\n\nx\n", "## A\n\ny\n", "## A\n\nz\n")
    assert conflict
    assert "y" in merged and "z" in merged
    assert len(conflict_markers(merged)) == 3


# --- project state: properties --------------------------------------------------------------

TITLES = ["Goal", "Status", "Risks", "Next", "Team", "Budget"]
WORDS = st.text(alphabet="abcdefgh ", min_size=1, max_size=6).map(str.strip).filter(bool)
BODIES = st.lists(st.one_of(WORDS, st.just("")), min_size=0, max_size=3).map(
    lambda lines: "\n".join(lines).strip()
)


def _render(sections: list[tuple[str, str]], preamble: str = "# Project state\n") -> str:
    out = preamble
    for title, body in sections:
        out += f"\n## {title}\n\n{body}\n" if body else f"\n## {title}\n"
    return out


@dataclass(frozen=True)
class Side:
    sections: list[tuple[str, str]]
    outcome: dict[str, str | None]  # title -> new body, or None when deleted


@st.composite
def _side(draw: st.DrawFn, base: list[tuple[str, str]]) -> Side:
    sections: list[tuple[str, str]] = []
    outcome: dict[str, str | None] = {}
    for title, body in base:
        what = draw(st.sampled_from(["keep", "keep", "change", "delete"]))
        if what == "keep":
            sections.append((title, body))
        elif what == "change":
            new = draw(BODIES)
            sections.append((title, new))
            if new != body:
                outcome[title] = new
        else:
            outcome[title] = None
    free = [t for t in TITLES if t not in dict(base)]
    for title in draw(st.lists(st.sampled_from(free), unique=True, max_size=2)) if free else []:
        body = draw(BODIES)
        sections.insert(draw(st.integers(0, len(sections))), (title, body))
        outcome[title] = body
    return Side(sections, outcome)


@st.composite
def _edits(draw: st.DrawFn) -> tuple[list[tuple[str, str]], Side, Side]:
    titles = draw(st.lists(st.sampled_from(TITLES), unique=True, min_size=0, max_size=4))
    base = [(t, draw(BODIES)) for t in titles]
    return base, draw(_side(base)), draw(_side(base))


@settings(max_examples=150, deadline=None)
@given(_edits())
def test_state_merge_loses_no_edit_and_conflicts_only_on_a_real_conflict(
    edits: tuple[list[tuple[str, str]], Side, Side],
) -> None:
    base, ours, theirs = edits
    merged, conflict = merge_state(_render(base), _render(ours.sections), _render(theirs.sections))
    clash = {
        t
        for t in ours.outcome.keys() & theirs.outcome.keys()
        if ours.outcome[t] != theirs.outcome[t]
    }
    assert conflict == bool(clash)
    assert bool(conflict_markers(merged)) == conflict
    base_d = dict(base)
    expected: dict[str, str | None] = {t: b for t, b in base_d.items()}
    expected.update(theirs.outcome)
    expected.update(ours.outcome)
    if not conflict:
        got = state_sections(merged)
        assert len({t for t, _ in got}) == len(got)  # no section twice
        want = {t: b for t, b in expected.items() if b is not None}
        assert dict(got) == want
        return
    # a conflict: every section outside it is settled, and both versions of the clash are there
    for side in (ours, theirs):
        for title, body in side.sections:
            if side.outcome.get(title, base_d.get(title)) == body and title in side.outcome:
                assert f"## {title}" in merged and (not body or body in merged)
    for title in clash:
        assert merged.count(f"({title.lower()})") == 2  # the two marker lines name it


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.tuples(st.sampled_from(TITLES[:3]), BODIES), max_size=4),
    st.data(),
)
def test_state_merge_with_repeated_headings_drops_no_section_either_side_wrote(
    base: list[tuple[str, str]], data: st.DataObject
) -> None:
    """Headings may repeat (kept conflicts): whatever section either side has that the common
    version did not is in the result, merged or between markers."""

    def edit() -> list[tuple[str, str]]:
        secs = list(base)
        for _ in range(data.draw(st.integers(0, 3))):
            op = data.draw(st.sampled_from(["add", "change", "delete"]))
            if op == "add" or not secs:
                item = (data.draw(st.sampled_from(TITLES[:3])), data.draw(BODIES))
                secs.insert(data.draw(st.integers(0, len(secs))), item)
            elif op == "change":
                i = data.draw(st.integers(0, len(secs) - 1))
                secs[i] = (secs[i][0], data.draw(BODIES))
            else:
                secs.pop(data.draw(st.integers(0, len(secs) - 1)))
        return secs

    ours, theirs = edit(), edit()
    merged, _conflict = merge_state(_render(base), _render(ours), _render(theirs))
    lines = merged.splitlines()
    for side in (ours, theirs):
        for title, body in side:
            if (title, body) in base:
                continue
            assert f"## {title}" in lines
            assert all(ln in lines for ln in body.splitlines())


# --- MEMORY.md: properties ------------------------------------------------------------------


@st.composite
def _index_edits(draw: st.DrawFn) -> tuple[list[str], list[str], list[str], dict[str, set[str]]]:
    n = draw(st.integers(0, 6))
    base = [f"- [[memory/f{i}|F{i}]] — fact {i}" for i in range(n)]
    fate: dict[str, set[str]] = {"gone": set(), "kept": set(), "new": set()}
    sides = []
    for side in ("o", "t"):
        lines = list(base)
        for i, line in enumerate(base):
            what = draw(st.sampled_from(["keep", "keep", "edit", "delete", "retract"]))
            if what == "edit":
                new = f"- [[memory/f{i}|F{i}]] — fact {i}, edited on {side}"
                lines[lines.index(line)] = new
                fate["new"].add(new)
                fate["gone"].add(line)
            elif what == "delete":
                lines.remove(line)
                fate["gone"].add(line)
            elif what == "retract":
                lines.remove(line)
                if "## Retracted" not in lines:
                    lines += ["", "## Retracted", ""]
                new = f"{line} (retracted on {side})"
                lines.append(new)
                fate["new"].add(new)
                fate["gone"].add(line)
        for k in range(draw(st.integers(0, 2))):
            new = f"- [[memory/{side}{k}|{side}{k}]] — added on {side}"
            cut = lines.index("## Retracted") if "## Retracted" in lines else len(lines)
            lines.insert(draw(st.integers(0, cut)), new)
            fate["new"].add(new)
        if draw(st.booleans()):  # both sides add the same line
            same = "- [[memory/both|Both]] — added on both sides"
            if same not in lines:
                cut = lines.index("## Retracted") if "## Retracted" in lines else len(lines)
                lines.insert(cut, same)
                fate["new"].add(same)
        sides.append(lines)
    fate["kept"] = set(base) - fate["gone"]
    return base, sides[0], sides[1], fate


@settings(max_examples=150, deadline=None)
@given(_index_edits())
def test_index_merge_lands_every_line_either_side_added_and_every_removal(
    edits: tuple[list[str], list[str], list[str], dict[str, set[str]]],
) -> None:
    base, ours, theirs, fate = edits
    head = ["# Memory", ""]

    def text(lines: list[str]) -> str:
        return "\n".join(head + lines) + "\n"

    merged, conflict = merge_index(text(base), text(ours), text(theirs))
    assert not conflict
    out = merged.splitlines()
    for line in fate["new"] | fate["kept"]:
        assert out.count(line) == 1, line
    for line in fate["gone"]:
        assert line not in out
    assert out.count("## Retracted") <= 1
    if "## Retracted" in out:
        cut = out.index("## Retracted")
        assert all("retracted on" in ln for ln in out[cut + 1 :] if ln.strip())


# --- checkpoint ----------------------------------------------------------------------------


def test_two_different_checkpoints_with_the_same_stamp_are_a_conflict() -> None:
    cp = "---\nagent: ella\nupdated: 2026-11-29T10:00:00Z\n---\n\n{}\n"
    base, ours, theirs = cp.format("base"), cp.format("ours"), cp.format("theirs")
    merged, conflict = merge_checkpoint(base, ours, theirs)
    assert conflict and "ours" in merged and "theirs" in merged
    assert merge_checkpoint(base, ours, ours) == (ours, False)
    assert merge_checkpoint(base, base, theirs) == (theirs, False)


def test_index_merge_removes_every_copy_the_other_side_removed() -> None:
    dup = "- [[memory/a|A]] — a"
    base = f"# Memory\n\n{dup}\n{dup}\n- [[memory/b|B]] — b\n"
    theirs = "# Memory\n\n- [[memory/b|B]] — b\n"  # a person removed both copies
    ours = base + "- [[memory/c|C]] — c\n"
    merged, conflict = merge_index(base, ours, theirs)
    assert not conflict and dup not in merged and "memory/c" in merged
    one = f"# Memory\n\n{dup}\n- [[memory/b|B]] — b\n"  # only the second copy removed
    merged, _ = merge_index(base, ours, one)
    assert merged.count(dup) == 1
