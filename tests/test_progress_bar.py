"""cli/output_recall.progress_bar, the one bar `index` and `sync` show (issue 25): on a terminal
only, nothing until the first report (`index` with nothing to fetch showed `Preparing model 0/?`),
the unit beside the count, and 'finishing' once the count is complete while the index is still
being written (a 5,000-note rebuild sat silent at 5000/5000 for 29 s)."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from vaultmem.cli import output_recall


def _stderr(monkeypatch: pytest.MonkeyPatch, *, terminal: bool) -> io.StringIO:
    buf = io.StringIO()
    console = Console(file=buf, force_terminal=terminal, width=120, color_system=None)
    monkeypatch.setattr(output_recall, "err", console)
    return buf


def test_no_report_no_bar(monkeypatch: pytest.MonkeyPatch) -> None:
    buf = _stderr(monkeypatch, terminal=True)
    with output_recall.progress_bar("Fetching model"):
        pass  # nothing to fetch: the step reports nothing
    assert buf.getvalue() == ""


def test_a_bar_has_its_unit_and_says_finishing_at_the_end(monkeypatch: pytest.MonkeyPatch) -> None:
    buf = _stderr(monkeypatch, terminal=True)
    with output_recall.progress_bar("Indexing") as update:
        update(3, 12)
        assert "finishing" not in buf.getvalue()
        update(12, 12)
    shown = buf.getvalue()
    assert "Indexing" in shown and "files" in shown and "12/12" in shown
    assert "Indexing (finishing)" in shown


def test_nothing_when_stderr_is_not_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    buf = _stderr(monkeypatch, terminal=False)
    with output_recall.progress_bar("Indexing") as update:
        for i in range(13):
            update(i, 12)
    assert buf.getvalue() == ""
