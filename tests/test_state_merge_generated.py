"""Review.md merges as a generated page (`merge_generated`): vaultmem's list never conflicts
(it is made again after the merge), the person's text around it merges as a whole."""

from __future__ import annotations

from vaultmem.app.sync.merge import MERGERS, merge_generated
from vaultmem.bank.review_page import REVIEW_END, REVIEW_START


def _page(items: str, note: str = "") -> str:
    return f"# Review\n\n## Pending\n\n{REVIEW_START}\n{items}\n{REVIEW_END}\n\n{note}"


def test_two_different_lists_keep_this_sides_and_no_conflict() -> None:
    base = _page("- none")
    merged, conflict = merge_generated(base, _page("- fact a"), _page("- fact b"))
    assert not conflict and merged == _page("- fact a")
    assert MERGERS["generated"] is merge_generated


def test_a_persons_note_on_either_side_lands_with_this_sides_list() -> None:
    base = _page("- none")
    merged, conflict = merge_generated(base, _page("- a"), _page("- b", "Review on Mondays.\n"))
    assert not conflict and merged == _page("- a", "Review on Mondays.\n")


def test_two_people_editing_the_page_differently_is_the_one_conflict() -> None:
    base = _page("- none", "note\n")
    merged, conflict = merge_generated(base, _page("- a", "mine\n"), _page("- b", "theirs\n"))
    assert conflict and "mine" in merged and "theirs" in merged and "<<<<<<<" in merged
