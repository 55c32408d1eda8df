"""The pack's window on the live log: entries from other agents since the agent's last read
(capped) and the agent's own recent entries, read from the end of the log back to the cursor.

Addressed entries and alerts carry their status from the coordination index (who acked, who is
still waiting, what resolved them); entries the inbox or the alerts section already show are
left out here, so the pack never shows one twice.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from vaultmem.app.pack.inbox import entry_head, status_note
from vaultmem.app.pack.sections import Item as PackItem
from vaultmem.app.pack.sections import Section, fence
from vaultmem.core import clock
from vaultmem.core.vault import Vault
from vaultmem.nexus import entry, reading
from vaultmem.nexus.coord import Item
from vaultmem.nexus.shown import ShowCheck

if TYPE_CHECKING:
    from vaultmem.nexus.coord import Index

SCAN_LIMIT = 2000  # entries read back at most when looking for the agent's own recent entries
BODY_CHARS = 1200  # body shown per entry in the pack (the log keeps it whole)


def entry_line(e: entry.Entry, *, awaiting: bool = False, note: str = "") -> str:
    """One entry in the pack: `- [id] time agent · channel · type → to: summary`, its acks, its
    status (`note`), a flag when it waits for an ack, and the body indented."""
    flag = " — AWAITING ACK" if awaiting else ""
    acks = f" (acks {', '.join(e.acks)})" if e.acks else ""
    head = f"- {entry_head(e)}{acks}{note}{flag}"
    if not e.body:
        return head
    body = (
        e.body if len(e.body) <= BODY_CHARS else e.body[:BODY_CHARS] + " …(cut; see vaultmem log)"
    )
    return head + "\n" + "\n".join(f"    {ln}" if ln else "" for ln in body.split("\n"))


def _author(entry_id: str) -> str:
    return entry.author_of(entry_id)


class Unseen:
    """What an agent has not been shown yet, by chain.

    A cursor remembers, per chain (`ella`, `ella.k2f7`), the highest sequence number the agent
    was shown (`seen`). An entry is new when its number is higher, wherever it stands in the
    file: after a git merge, another machine's entries can land before the agent's last read
    in file order, and they are still shown, once. The chain heads (cached, rebuilt after the
    file changed) say how many new entries there are, so reading back from the end stops as
    soon as all of them are found. A cursor from before `seen` existed falls back to the entry
    it ended at.
    """

    def __init__(self, vault: Vault, agent: str, cursor: dict[str, Any] | None) -> None:
        from vaultmem.nexus.log import peek_heads

        self.cursor = cursor
        self.heads = peek_heads(vault, "live")
        seen = cursor.get("seen") if cursor else None
        self.seen: dict[str, int] | None = seen if isinstance(seen, dict) else None
        self.remaining = 0
        if self.seen is not None:
            for chain, (seq, _digest) in self.heads.items():
                if entry.author_of(chain) != agent:
                    self.remaining += max(0, int(seq) - int(self.seen.get(chain, 0)))
        self.reached = cursor is None

    def is_new(self, e: entry.Entry) -> bool:
        """Call once per entry, newest first."""
        if self.seen is not None:
            new = e.seq > int(self.seen.get(entry.chain_of(e.id), 0))
            if new:
                self.remaining -= 1
            return new
        if (
            self.cursor is not None
            and e.id == self.cursor.get("id")
            and e.hash == self.cursor.get("hash")
        ):
            self.reached = True
        return not self.reached

    @property
    def done(self) -> bool:
        """No new entry is left further back."""
        return self.remaining <= 0 if self.seen is not None else self.reached

    def next_cursor(self, newest: entry.Entry | None) -> dict[str, Any]:
        seen = {chain: int(seq) for chain, (seq, _d) in self.heads.items()}
        if newest is not None:
            return {"id": newest.id, "hash": newest.hash, "time": newest.time, "seen": seen}
        # an empty log: remember that the agent has read it, so the next read is not a "first"
        return {"id": None, "hash": None, "time": clock.stamp_ms(), "seen": seen}


def log_sections(
    vault: Vault,
    agent: str,
    cursor: dict[str, Any] | None,
    *,
    index: Index | None = None,
    skip: frozenset[str] = frozenset(),
) -> tuple[list[Section], dict[str, Any]]:
    """(new entries of others, own recent entries) and where the cursor goes once they are
    delivered. `cursor` is where the agent's last read ended (None: a first read); `skip` are
    ids other sections show (the inbox, open alerts)."""
    settings = vault.config.read
    newest: entry.Entry | None = None
    others: list[entry.Entry] = []
    own: list[entry.Entry] = []
    acked: set[str] = set()
    # per acked id: {agent: its ack}, and resolutions, as far as the scan went; the acks of an
    # entry come after it, so for every entry listed here they are complete
    ackers: dict[str, dict[str, str]] = {}
    resolutions: dict[str, dict[str, Any]] = {}
    unseen = Unseen(vault, agent, cursor)
    more = False
    elsewhere = 0
    for scanned, e in enumerate(reading.iter_reverse(vault.live_context), 1):
        if newest is None:
            newest = e
        new = unseen.is_new(e)
        if e.agent == agent:
            if len(own) < settings.recent_own:
                own.append(e)
        elif (cursor is not None and new) or (
            cursor is None and len(others) < settings.max_new_entries
        ):
            if e.id in skip:
                elsewhere += 1
            elif len(others) < settings.max_new_entries:
                others.append(e)
            else:
                more = True
        for a in e.acks:
            if _author(a) != e.agent:
                acked.add(a)
                ackers.setdefault(a, {})[e.agent] = e.id  # read backwards: the first one wins
        target = e.extra.get("resolves") if e.type == entry.EntryType.RESOLVE else None
        if isinstance(target, str):
            resolutions[target] = {"id": e.id, "by": e.agent, "time": e.time, "why": e.body}
        others_done = (
            (cursor is not None and unseen.done)
            or more
            or (cursor is None and len(others) >= settings.max_new_entries)
        )
        if others_done and (len(own) >= settings.recent_own or scanned >= SCAN_LIMIT):
            break
    # the order every clone agrees on: time, then id (after a merge, file order may differ)
    others.sort(key=entry.time_order)
    own.reverse()
    check = ShowCheck(vault)  # what fails verification is left out, and said (issue 20)
    others, own = check.genuine(others), check.genuine(own)
    check.save()
    agents = index.agents if index is not None else vault.known_agents()

    def shown(e: entry.Entry) -> tuple[dict[str, Any], str]:
        """The entry as JSON with its status, and its line in the pack."""
        item = index.get(e.id) if index is not None else None
        if item is None and e.to:  # closed for everyone, so dropped from the index
            item = Item(e, ackers.get(e.id, {}), resolutions.get(e.id), "")
        if item is not None:  # addressed, or an alert: the index knows its status
            waiting = agent in item.waiting_for(agents)
            data = {**e.to_dict(), "awaiting_ack": waiting, **item.status(agents)}
            note = status_note(item, agents)
        else:  # an unaddressed handoff or question: the first other agent's ack closes it
            waiting = e.agent != agent and e.type in entry.WANTS_ACK and e.id not in acked
            data, note = {**e.to_dict(), "awaiting_ack": waiting}, ""
        return data, entry_line(e, awaiting=waiting, note=note)

    rel = vault.rel(vault.live_context)
    sections = []
    since = cursor["id"] if cursor else None
    new_data, lines = [], []
    for e in others:
        data, line = shown(e)
        new_data.append(data)
        lines.append(line)

    def items(shown_entries: list[entry.Entry], texts: list[str]) -> tuple[PackItem, ...]:
        """What a budget may cut one by one (app/pack/importance.py scores them)."""
        return tuple(
            PackItem(e.id, t, e.type, e.time, acked=int(e.id in acked or e.id in resolutions))
            for e, t in zip(shown_entries, texts, strict=True)
        )

    if cursor is None:
        intro = f"First read: the latest {len(others)} entries from other agents."
    else:
        intro = f"{len(others)} new entries from other agents since {since or 'your last read'}."
    if elsewhere:
        intro += f" {elsewhere} more are shown above (your inbox, open alerts)."
    if check.failed:
        intro += " " + check.note()
    if more:
        intro += (
            f" More were written; only the latest {settings.max_new_entries} are shown"
            f" (see all with: vaultmem log --since {since})."
            if since
            else ""
        )
    text = intro + ("\n\n" + fence("\n".join(lines)) if lines else "")
    sections.append(
        Section(
            "new_entries",
            "New on the live log",
            text,
            {"since": since, "more": more, "entries": new_data, "not_verified": check.failed},
            rel,
            30,
            ids=tuple(e.id for e in others),
            items=items(others, lines),
        )
    )
    if own:
        own_shown = [shown(e) for e in own]
        sections.append(
            Section(
                "own_entries",
                "Your recent entries",
                fence("\n".join(line for _d, line in own_shown)),
                [d for d, _line in own_shown],
                rel,
                40,
                ids=tuple(e.id for e in own),
                items=items(own, [line for _d, line in own_shown]),
            )
        )
    return sections, unseen.next_cursor(newest)
