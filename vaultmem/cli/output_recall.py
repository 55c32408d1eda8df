"""Human output for recall and index: a rich table of hits, a progress bar for rebuilds."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table

from vaultmem.cli.output import console

if TYPE_CHECKING:
    from vaultmem.search.query import RecallResult

out = console()
err = console(stderr=True)
_MARK = re.compile(r"\*\*(.+?)\*\*")


def _snippet(text: str) -> str:
    """Snippet terms arrive marked **like this**; show them bold."""
    parts = _MARK.split(text)
    return "".join(
        f"[bold yellow]{escape(p)}[/]" if i % 2 else escape(p) for i, p in enumerate(parts)
    )


def _head(title: str, heading: str) -> str:
    """The note's title, then the heading path under it, the title said once ("Stripe
    integration › Webhooks", not "Stripe integration › Stripe integration > Webhooks")."""
    if heading.startswith(f"{title} > "):
        heading = heading[len(title) + 3 :]
    return title + (f" › {heading}" if heading and heading != title else "")


def render_recall(result: RecallResult) -> None:
    fresh = result.index
    if not result.hits:
        out.print(f"No hits for {escape(result.query)!s}.")
    else:
        table = Table(show_edge=False, show_lines=False, expand=False)
        table.add_column("#", justify="right")
        table.add_column("score", justify="right")
        table.add_column("where", overflow="fold")
        table.add_column("kind")
        table.add_column("what", overflow="fold", ratio=3)
        for h in result.hits:
            where = f"{h.path}:{h.line_start}-{h.line_end}"
            head = _head(h.title, h.heading)
            extra = " · ".join(x for x in (h.id, h.agent, h.date) if x)
            what = f"[bold]{escape(head)}[/]"
            if extra:
                what += f"  [dim]{escape(extra)}[/]"
            if h.snippet:
                what += "\n" + _snippet(h.snippet)
            if result.explain and result.mode != "keyword":
                kw, sem = h.ranks
                what += (
                    f"\n[dim]keyword rank {kw if kw is not None else '-'}, "
                    f"semantic rank {sem if sem is not None else '-'}[/]"
                )
            if h.explain:
                what += (
                    "\n[dim]"
                    + escape(" + ".join(f"{term} {score:.2f}" for term, score in h.explain))
                    + "[/]"
                )
            table.add_row(str(h.rank), f"{h.score:.2f}", escape(where), h.kind, what)
        out.print(table)
    state = (
        "stale: another process is refreshing"
        if fresh.stale
        else f"{fresh.refreshed} refreshed, {fresh.removed} removed"
        + (", rebuilt" if fresh.rebuilt else "")
    )
    embedded = f", {fresh.embedded} embedded" if fresh.embedded else ""
    err.print(
        f"[dim]{result.mode} search; index: {fresh.files} files, {state}{embedded}, "
        f"checked by {fresh.checked_by} in {fresh.duration_ms:.0f} ms[/]"
    )


@contextmanager
def progress_bar(
    label: str, unit: str = "files", *, done_label: str = "finishing"
) -> Iterator[Callable[[int, int], None]]:
    """A progress bar on stderr, with its unit, the time taken and the time left — on a terminal
    only (a pipe, a log file or `--json` get nothing), and only once something is reported (a
    step with nothing to do shows no empty bar). When the count reaches its end the label says
    `done_label` until the work after the last item (writing the index) is over."""
    if not err.is_terminal:
        yield lambda done, total: None
        return
    bars: list[tuple[Progress, Any]] = []

    def update(done: int, total: int) -> None:
        if not bars:
            bar = Progress(
                TextColumn("[bold]{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn(unit),
                TimeElapsedColumn(),
                TextColumn("left"),
                TimeRemainingColumn(),
                console=err,
                transient=True,
            )
            bar.start()
            bars.append((bar, bar.add_task(label, total=total or None)))
        bar, task = bars[0]
        text = f"{label} ({done_label})" if total and done >= total else label
        bar.update(task, completed=done, total=total or None, description=text)

    try:
        yield update
    finally:
        if bars:
            bars[0][0].stop()


@contextmanager
def lazy_progress() -> Iterator[Callable[[int, int], None]]:
    """A progress bar that appears only if something long is reported (a hub model fetched,
    a first embedding of the vault); a recall that reports nothing prints nothing."""
    stack: list[Progress] = []
    tasks: dict[str, object] = {}

    def update(done: int, total: int) -> None:
        if not stack:
            if total < 500:
                return
            progress = Progress(
                TextColumn("[bold]{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("documents"),
                TimeElapsedColumn(),
                TextColumn("left"),
                TimeRemainingColumn(),
                console=err,
                transient=True,
            )
            progress.start()
            stack.append(progress)
            tasks["t"] = progress.add_task("Embedding the vault (once)", total=total)
        stack[0].update(tasks["t"], completed=done, total=total)  # type: ignore[arg-type]

    try:
        yield update
    finally:
        if stack:
            stack[0].stop()
