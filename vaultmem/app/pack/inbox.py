"""The coordination parts of the `read` pack: the inbox, open alerts, working memory.

The inbox is everything open for the reading agent — addressed to it or to all, not acked by
it, not resolved — however old and however many entries came after it. It comes from the
coordination index (`nexus.coord`), not from the window of new entries, so it never drops: it
is the first section of the pack and a budget cuts its list (saying exactly how many items are
not shown) but never removes it. `vaultmem inbox` shows it alone.
"""

from __future__ import annotations

from datetime import timedelta
from functools import cached_property
from typing import Any

from vaultmem.app.pack.hints import Invocation, invocation
from vaultmem.app.pack.sections import SUMMARY_CHARS, Section, cut, fence
from vaultmem.core import clock
from vaultmem.core.records import field, record
from vaultmem.core.vault import Vault
from vaultmem.nexus import coord
from vaultmem.nexus.entry import ARROW, Entry, EntryType

BODY_CHARS = 600  # body shown per inbox item in the pack (`vaultmem log` has it whole)
INBOX_PRIORITY = 0
WORKING_PRIORITY = 21
ALERTS_PRIORITY = 25


def ack_command(agent: str, item: coord.Item, run: Invocation | None = None) -> str:
    """The command that acks `item`, runnable as written (`app.pack.hints`)."""
    rest = f'append "<what you did>" --type ack --ack {item.id}'
    if run is None:
        return f"vaultmem {rest} --agent {agent}"
    return run.command(rest)


def entry_head(e: Entry) -> str:
    to = f"{ARROW.strip()} {', '.join(e.to)}" if e.to else ""
    what = f"{e.type} {to}".strip()
    ref = f" = decision {e.extra['decision']}" if isinstance(e.extra.get("decision"), str) else ""
    summary = cut(e.summary, SUMMARY_CHARS, f"vaultmem log --since {e.id}")
    return f"[{e.id}{ref}] {e.time[:16]}Z {e.agent} · {e.channel} · {what}: {summary}"


def _body(e: Entry, limit: int) -> str:
    if not e.body:
        return ""
    body = e.body if len(e.body) <= limit else e.body[:limit] + " …(cut; see vaultmem log)"
    return "\n" + "\n".join(f"    {ln}" if ln else "" for ln in body.split("\n"))


def status_note(item: coord.Item, agents: tuple[str, ...]) -> str:
    """`(acked by nova; waiting for lyra)` for an addressed entry, `(resolved by …)`."""
    parts = ["open"] if item.entry.type == EntryType.ALERT and item.resolved is None else []
    if item.resolved is not None:
        parts.append(f"resolved by {item.resolved.get('by')} ({item.resolved.get('id')})")
    else:
        if item.acked_by:
            parts.append("acked by " + ", ".join(item.acked_by))
        waiting = item.waiting_for(agents)
        if waiting:
            parts.append("waiting for " + ", ".join(waiting))
    return f" ({'; '.join(parts)})" if parts else ""


@record
class InboxView:
    agent: str
    items: tuple[coord.Item, ...]
    agents: tuple[str, ...]
    run: Invocation | None = None  # how the agent runs vaultmem (hints carry it)
    failed: dict[str, str] = field(default_factory=dict)  # id -> why it is not shown
    note: str = ""  # what was left out for failing verification ("" when nothing was)

    def item_dict(self, item: coord.Item) -> dict[str, Any]:
        return {**item.to_dict(self.agents), "ack_command": ack_command(self.agent, item, self.run)}

    def to_dict(self) -> dict[str, Any]:
        out = {
            "agent": self.agent,
            "count": len(self.items),
            "items": [self.item_dict(i) for i in self.items],
        }
        return {**out, "not_verified": self.failed} if self.failed else out

    @cached_property
    def lines(self) -> list[str]:
        """One line (and the cut body) per item; computed once (a budget tries many cuts)."""
        return [
            f"- {entry_head(i.entry)}{status_note(i, self.agents)}{_body(i.entry, BODY_CHARS)}"
            for i in self.items
        ]


def inbox(vault: Vault, agent: str, *, index: coord.Index | None = None) -> InboxView:
    """What is open for `agent`, oldest first."""
    from vaultmem.nexus.shown import ShowCheck

    agent = vault.require_agent(agent)
    index = index or coord.load(vault)
    check = ShowCheck(vault)  # an open item that fails verification is left out, and said
    items = tuple(
        i for i in index.inbox(agent) if check.problem(i.entry, hash_ok=i.hash_ok) is None
    )
    check.save()
    run = invocation(vault.root, agent)
    return InboxView(agent, items, index.agents, run, dict(check.failed), check.note())


def inbox_section(view: InboxView, shown: int | None = None) -> Section:
    """The inbox as the pack's first section, listing the first `shown` items (all: None)."""
    total = len(view.items)
    shown = total if shown is None else max(0, min(shown, total))
    run = view.run or Invocation("vaultmem", f" --agent {view.agent}")
    ack = run.command('append "<what you did>" --type ack --ack ID')
    intro = (
        f"{total} open for you (addressed to you or to all, not acked by you), oldest first. "
        f"When you have handled one, ack it: {ack} (or answer it with --ack ID); "
        f"close an alert for everyone with: {run.command('resolve ID --why TEXT')}."
    )
    if shown < total:
        intro += (
            f" The budget cut this list: {shown} of {total} shown, {total - shown} not shown"
            f" (all of them: {run.command('inbox')})."
        )
    lines = view.lines[:shown]
    text = intro + ("\n\n" + fence("\n".join(lines)) if lines else "")
    items = view.items[:shown]
    return Section(
        "inbox",
        f"Your inbox ({total} open)",
        text,
        {"count": total, "shown": shown, "items": [view.item_dict(i) for i in items]},
        None,
        INBOX_PRIORITY,
        ids=tuple(i.id for i in items),
    )


def cut_inbox(view: InboxView, room: int) -> Section:
    """The inbox section with as many items as fit in `room` tokens (at least its intro)."""
    low, high = 0, len(view.items)
    while low < high:  # the largest count that fits; tokens grow with the count
        mid = (low + high + 1) // 2
        if inbox_section(view, mid).tokens <= room:
            low = mid
        else:
            high = mid - 1
    return inbox_section(view, low)


def alerts_window(vault: Vault) -> timedelta:
    span = clock.parse_duration(vault.config.alerts.window, "[alerts] window")
    assert span is not None  # a window cannot be "never" (config checks it)
    return span


def alerts_section(
    vault: Vault, index: coord.Index, skip: set[str], agent: str | None = None
) -> Section | None:
    """Open alerts raised within `[alerts] window` (those in the inbox are shown there)."""
    since = clock.stamp_ms(clock.now() - alerts_window(vault))
    found = [i for i in index.alerts() if i.id not in skip and i.entry.time >= since]
    if not found:
        return None
    from vaultmem.nexus.sightings import Sighting, sightings

    seen = sightings(vault)
    rows, lines = [], []
    for item in found:
        sighting = seen.get(item.id, Sighting())
        rows.append({**item.to_dict(index.agents), **sighting.to_dict()})
        again = f" (seen again {sighting.count}×, last {sighting.last})" if sighting.count else ""
        note = status_note(item, index.agents)
        lines.append(f"- {entry_head(item.entry)}{again}{note}{_body(item.entry, 300)}")
    run = invocation(vault.root, agent)
    intro = (
        f"{len(found)} open, raised in the last {vault.config.alerts.window}. "
        f"Close one for everyone when it is dealt with: {run.command('resolve ID --why TEXT')}."
    )
    return Section(
        "alerts",
        "Open alerts",
        intro + "\n\n" + fence("\n".join(lines)),
        rows,
        vault.rel(vault.live_context),
        ALERTS_PRIORITY,
        ids=tuple(i.id for i in found),
    )


def working_section(vault: Vault, agent: str) -> Section | None:
    """The agent's own unexpired working memory (no other agent ever sees it)."""
    if not vault.working(agent).exists():
        return None
    from vaultmem.nexus.working import ItemKind, wm_list

    held = wm_list(vault, agent)
    if not held.items:
        return None
    lines: list[str] = []
    for thread in held.threads():
        mine = [i for i in held.items if i.thread == thread]
        lines.append("Yours:" if thread is None else f"Thread {thread}:")
        for i in mine:
            value = " ".join(i.value.split())
            until = f" (expires {i.expires})" if i.expires else ""
            label = f"{i.key} = " if i.kind == ItemKind.KEY else "turn: "
            lines.append(f"- {label}{value}{until}")
    return Section(
        "working",
        "Your working memory",
        "\n".join(lines),
        held.to_dict(),
        held.path,
        WORKING_PRIORITY,
    )
