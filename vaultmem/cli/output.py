"""Human output: rich tables and panels. The only module that imports rich."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from rich.console import Console, ConsoleDimensions
from rich.table import Table

if TYPE_CHECKING:
    from vaultmem.app.lifecycle.status import StatusReport
    from vaultmem.memory.facts import Fact


# Output that is not a terminal (a pipe, a file) is laid out this wide, so it never wraps: rich
# otherwise folds it at $COLUMNS (readline exports it in many processes), at the width of a
# terminal on another stream, or at 80 columns, and a path cut in two (`vaultmem memories > f;
# grep test-rules.md f`) is found by no one. No line is padded to it: tables size their columns
# to their content (none expands). A terminal keeps rich's width, $COLUMNS included.
UNWRAPPED = 100_000


class _Console(Console):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._asked_width: int | None = kwargs.get("width")

    def _size(self) -> ConsoleDimensions:
        found = Console.size.fget(self)  # type: ignore[attr-defined]
        if self._asked_width is None and not self.is_terminal:
            return ConsoleDimensions(UNWRAPPED, found.height)
        return found  # type: ignore[no-any-return]

    size = property(_size, Console.size.fset)  # type: ignore[attr-defined]

    def on_broken_pipe(self) -> None:
        # rich exits 1 when stdout's reader went away; for us that is a normal end (exit 0)
        from vaultmem.cli.boundary import reader_gone

        reader_gone()


def console(*, stderr: bool = False) -> Console:
    """The consoles every rich renderer uses (`cli/output*.py`)."""
    return _Console(stderr=stderr, highlight=False, soft_wrap=False)


out = console()
err = console(stderr=True)


def render_status(report: StatusReport) -> None:
    out.print(f"[bold]Vault[/] {report.vault}")
    out.print(
        f"[bold]Agents[/] {', '.join(report.agents) or '-'}    "
        f"[bold]Reviewers[/] {', '.join(report.reviewers) or '-'}    "
        f"[bold]Language[/] {report.language}"
    )
    facts = Table(title="Facts", show_edge=False)
    facts.add_column("type")
    facts.add_column("count", justify="right")
    for kind, count in report.facts_by_type.items():
        facts.add_row(kind, str(count))
    out.print(facts)
    if report.facts_by_status:
        out.print("  " + ", ".join(f"{k}: {v}" for k, v in report.facts_by_status.items()))
    if report.waiting:
        out.print(f"[bold]Waiting for a person[/] ({len(report.waiting)})")
        for w in report.waiting:
            out.print(f"  - {w.who}: {w.what}", markup=False, highlight=False)
            out.print(f"      {w.command}", markup=False, highlight=False)
    if not report.problems:
        out.print("[green]No problems found.[/]")
        return
    table = Table(title=f"Problems ({len(report.problems)})", show_edge=False)
    table.add_column("file")
    table.add_column("line", justify="right")
    table.add_column("problem")
    table.add_column("detail", overflow="fold")
    for p in report.problems:
        table.add_row(p.path, str(p.line or ""), p.kind, p.message)
    out.print(table)


def render_facts(facts: Sequence[Fact]) -> None:
    if not facts:
        out.print("No facts yet. Add one with: vaultmem remember TEXT --name N --type T")
        return
    table = Table(show_edge=False)
    for col in ("id", "type", "name", "scope", "status", "path"):
        table.add_column(col, overflow="fold")
    for f in facts:
        scope = f"agent:{f.agent}" if f.agent else "shared"
        table.add_row(f.id, f.type, f.name, scope, f.status, f.path)
    out.print(table)
