"""Rich rendering and the interactive review loop of `vaultmem promote`."""

from __future__ import annotations

import os
import shlex
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console
from rich.markup import escape
from rich.panel import Panel
from rich.prompt import Prompt
from rich.table import Table

from vaultmem.cli.output import err, out
from vaultmem.core.spawn import run_program

if TYPE_CHECKING:
    from vaultmem.bank.review import Decision, QueueItem
    from vaultmem.core.vault import Vault

KEYS = (
    "[bold]a[/]pprove  [bold]e[/]dit  [bold]m[/]erge  [bold]r[/]eject  [bold]s[/]kip  [bold]q[/]uit"
)


def render_queue(items: Sequence[QueueItem], status: str) -> None:
    if not items:
        out.print(
            "Nothing is waiting for review."
            if status == "pending"
            else f"No {status} facts in the bank."
        )
        return
    table = Table(show_edge=False)
    for col in ("id", "type", "author", "ev"):
        table.add_column(col, no_wrap=True)
    table.add_column("fact", overflow="fold", ratio=3)
    table.add_column("most similar memory", overflow="fold", ratio=1)
    for item in items:
        f = item.fact
        near = item.similar[0] if item.similar else None
        table.add_row(
            f.id,
            f.type,
            f.author,
            str(f.evidence),
            escape(f.text if len(f.text) <= 120 else f.text[:119] + "…"),
            escape(
                f"replaces {', '.join(f.consolidates)}"
                if f.consolidates
                else f"{near.name} ({near.score:.2f})"
                if near
                else ""
            ),
        )
    out.print(table)
    if status == "pending":
        out.print(f"{len(items)} pending. Review with: vaultmem promote --reviewer NAME")


def render_card(item: QueueItem, n: int, total: int, screen: Console = out) -> None:
    f = item.fact
    lines = [escape(f.text), ""]
    meta = [
        f"[bold]author[/] {escape(f.author)}",
        f"[bold]evidence[/] {f.evidence}",
        f"[bold]created[/] {f.created[:10]}",
    ]
    lines.append("    ".join(meta))
    if f.sources:
        lines.append(f"[bold]source[/] {escape(', '.join(f.sources))}")
    if f.tags:
        lines.append(f"[bold]tags[/] {escape(', '.join(f.tags))}")
    if f.valid_until:
        lines.append(f"[bold]valid until[/] {escape(f.valid_until)}")
    if f.may_supersede:
        lines.append(f"[yellow]may supersede {escape(f.may_supersede)}[/]")
    if f.consolidates:
        lines.append(
            f"[yellow]consolidates {escape(', '.join(f.consolidates))} "
            f"({escape(f.consolidation or 'merge')}): approving replaces them with this one[/]"
        )
    if f.quote:
        lines += ["", "[dim]" + escape(f.quote) + "[/]"]
    title = f"[{n}/{total}] {f.id} · {f.type} · {f.path}"
    # full width on a terminal; elsewhere as wide as its text (see output.UNWRAPPED)
    card = Panel(
        "\n".join(lines), title=escape(title), title_align="left", expand=screen.is_terminal
    )
    screen.print(card)
    if item.similar:
        table = Table(title="Most similar memories", show_edge=False, title_justify="left")
        for col in ("#", "id", "score", "type", "name"):
            table.add_column(col, overflow="fold")
        for i, m in enumerate(item.similar, 1):
            table.add_row(str(i), m.id, f"{m.score:.2f}", m.type, escape(m.name))
        screen.print(table)
    else:
        screen.print("[dim]No similar memory.[/]")


def _ask(
    question: str,
    screen: Console,
    *,
    choices: list[str] | None = None,
    default: str | None = None,
    show_choices: bool = True,
) -> str | None:
    """A prompt; None on end of input (Ctrl-D), which the loop treats as quit."""
    try:
        if default is None:
            return Prompt.ask(question, console=screen, choices=choices, show_choices=show_choices)
        return Prompt.ask(
            question, console=screen, choices=choices, show_choices=show_choices, default=default
        )
    except EOFError:
        return None


def edit_in_editor(text: str, editor: str | None) -> str | None:
    """Open $EDITOR on the text; the new text, or None if the editor failed."""
    command = shlex.split(editor) if editor else ["vi"]
    fd, name = tempfile.mkstemp(prefix="vaultmem-fact-", suffix=".md")
    path = Path(name)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text.rstrip("\n") + "\n")
        # in the temporary file's folder, never the vault (an editor reads `.exrc` and the like
        # from where it starts), found on PATH by absolute path (core/spawn)
        code = run_program([*command, str(path)], cwd=str(path.parent))
        if code != 0:
            err.print(f"[red]The editor exited with {code}; nothing was changed.[/]")
            return None
        return path.read_text(encoding="utf-8")
    except OSError as exc:
        err.print(f"[red]Cannot run the editor {escape(' '.join(command))}: {exc}[/]")
        return None
    finally:
        path.unlink(missing_ok=True)


def interactive_review(vault: Vault, reviewer: str, *, to_stderr: bool = False) -> list[Decision]:
    """One fact at a time: approve / edit / merge / reject / skip / quit. Quit leaves the rest.

    `to_stderr` (under --json) keeps stdout for the JSON summary.
    """
    screen = err if to_stderr else out
    from vaultmem.bank import review
    from vaultmem.core.environment import ENV_EDITOR, env
    from vaultmem.core.errors import VaultmemError

    queue = review.review_queue(vault)
    decisions: list[Decision] = []
    if not queue:
        screen.print("Nothing is waiting for review.")
        return decisions
    screen.print(f"{len(queue)} fact(s) to review, as [bold]{escape(reviewer)}[/].")
    skipped = 0
    n = 0
    quit_ = False
    while n < len(queue) and not quit_:
        item = queue[n]
        render_card(item, n + 1, len(queue), screen)
        screen.print(KEYS)
        key = _ask("Action", screen, choices=["a", "e", "m", "r", "s", "q"], show_choices=False)
        try:
            if key is None or key == "q":
                quit_ = True
                continue
            if key == "s":
                skipped += 1
                n += 1
                continue
            if key == "a":
                scope: str | None = "shared"  # a consolidation keeps its memories' scope
                if not item.fact.consolidates:
                    scope = _ask("Scope", screen, choices=["shared", "agent"], default="shared")
                name = _ask("Name", screen, default=item.fact.name) if scope else None
                if scope is None or name is None:
                    quit_ = True
                    continue
                supersedes = None
                if item.fact.may_supersede:
                    answer = _ask(
                        f"Supersede {item.fact.may_supersede}?",
                        screen,
                        choices=["y", "n"],
                        default="n",
                    )
                    if answer is None:
                        quit_ = True
                        continue
                    supersedes = item.fact.may_supersede if answer == "y" else None
                d = review.approve(
                    vault,
                    item.fact.id,
                    reviewer=reviewer,
                    scope=scope,
                    name=name,
                    supersedes=supersedes,
                )
                assert d.memory is not None
                screen.print(f"[green]approved[/] → {d.memory.id} {escape(d.memory.path)}")
                for message in d.warnings:
                    err.print(f"[yellow]warning:[/] {escape(message)}")
            elif key == "m":
                hint = "number from the list, or a memory id"
                default = "1" if item.similar else None
                choice = _ask(f"Merge into ({hint})", screen, default=default)
                if choice is None:
                    quit_ = True
                    continue
                choice = choice.strip()
                target = (
                    item.similar[int(choice) - 1].id
                    if choice.isdigit() and 0 < int(choice) <= len(item.similar)
                    else choice
                )
                d = review.merge(vault, item.fact.id, target, reviewer=reviewer)
                assert d.memory is not None
                screen.print(f"[green]merged[/] into {d.memory.id} {escape(d.memory.path)}")
            elif key == "r":
                reason = _ask("Reason", screen)
                while reason is not None and not reason.strip():
                    reason = _ask("Reason (required)", screen)
                if reason is None:
                    quit_ = True
                    continue
                d = review.reject(vault, item.fact.id, why=reason, reviewer=reviewer)
                screen.print(f"[red]rejected[/] {d.fact.id}")
            elif key == "e":
                new = edit_in_editor(item.fact.text, env(ENV_EDITOR))
                if new is not None and new.strip() and new.strip() != item.fact.text.strip():
                    d = review.edit(vault, item.fact.id, new, reviewer=reviewer)
                    decisions.append(d)
                    queue[n] = review.QueueItem(d.fact, item.similar)
                    screen.print("[cyan]edited[/]")
                else:
                    screen.print("[dim]unchanged[/]")
                continue  # show the edited fact again
            else:
                continue
            decisions.append(d)
            n += 1
        except VaultmemError as exc:
            err.print(f"[red]Error:[/] {escape(str(exc))}")
    left = len(queue) - n
    done = [d for d in decisions if d.action != "edited"]
    screen.print(
        f"Done: {len(done)} decided, {skipped} skipped, {left} left in the queue."
        if left
        else f"Done: {len(done)} decided, {skipped} skipped."
    )
    return decisions
