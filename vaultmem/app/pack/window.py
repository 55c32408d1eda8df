"""The pack's window on the live log: entries from other agents since the agent's last read
(capped) and the agent's own recent entries, read from the end of the log back to the cursor.

Addressed entries and alerts carry their status from the coordination index (who acked, who is
still waiting, what resolved them); entries the inbox or the alerts section already show are
left out here, so the pack never shows one twice.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from vaultmem.app.pack.inbox import entry_head, status_note
from vaultmem.app.pack.sections import Item as PackItem
from vaultmem.app.pack.sections import Section, fence
from vaultmem.core import clock
from vaultmem.core.vault import Vault
from vaultmem.nexus import entry, reading
from vaultmem.nexus.coord import Item, awaits_ack
from vaultmem.nexus.shown import Counts, ShowCheck

if TYPE_CHECKING:
    from vaultmem.app.pack.hints import Invocation
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

    A cursor remembers, per chain (`ella`, `ella.k2f7`), a low-water mark `seen`: every entry
    of the chain up to that number was shown to the agent. Entries above it that were shown
    too (a budget kept a newer one and left an older one out) are listed in `shown`, and
    `behind` counts the entries left unshown, so the quick prompt path knows to look. An
    entry is new when its number is above the mark and not in `shown`, wherever it stands in
    the file: after a git merge, another machine's entries can land before the agent's last
    read in file order, and they are still shown, once. The chain heads (cached, rebuilt
    after the file changed) say how many new entries there are, so reading back from the end
    stops as soon as all of them are found. A cursor from before `seen` existed falls back to
    the entry it ended at (and everything up to the newest entry counts as shown).

    The cursor moves per entry delivered (`next_cursor(newest, delivered)`): what a budget
    or a cap left out stays new and leads the next read.
    """

    def __init__(self, vault: Vault, agent: str, cursor: dict[str, Any] | None) -> None:
        from vaultmem.nexus.log import peek_heads

        self.agent = agent
        self.cursor = cursor
        self.heads = peek_heads(vault, "live")
        seen = cursor.get("seen") if cursor else None
        self.seen: dict[str, int] | None = _seqs(seen) if isinstance(seen, dict) else None
        self.shown: dict[str, set[int]] = _shown(cursor.get("shown") if cursor else None)
        self.found: dict[str, set[int]] = {}  # new entries the scan met, per chain
        self.times: dict[tuple[str, int], str] = {}  # and their times
        self.exhausted = False  # the scan reached the start of the file
        self.remaining = 0
        if self.seen is not None:
            for chain, (seq, _digest) in self.heads.items():
                if entry.author_of(chain) != agent:
                    low = self.seen.get(chain, 0)
                    above = sum(1 for s in self.shown.get(chain, ()) if low < s <= int(seq))
                    self.remaining += max(0, int(seq) - low - above)
        self.reached = cursor is None

    def is_new(self, e: entry.Entry) -> bool:
        """Call once per entry, newest first."""
        if self.seen is not None:
            chain = entry.chain_of(e.id)
            new = e.seq > self.seen.get(chain, 0) and e.seq not in self.shown.get(chain, ())
            if new:
                self.remaining -= 1
                if e.agent != self.agent:
                    self.found.setdefault(chain, set()).add(e.seq)
                    self.times[(chain, e.seq)] = e.time
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

    def next_cursor(
        self, newest: entry.Entry | None, delivered: Iterable[str] | None = None
    ) -> dict[str, Any]:
        """Where the cursor goes. `delivered`: the ids of other agents' entries the agent was
        actually shown (None: everything up to `newest`, as a first read or a legacy cursor
        has it). Entries of other agents that are new and not delivered stay new."""
        heads = {chain: int(seq) for chain, (seq, _d) in self.heads.items()}
        base: dict[str, Any] = (
            {"id": newest.id, "hash": newest.hash, "time": newest.time}
            if newest is not None
            # an empty log: remember that the agent has read it, so the next read is not a "first"
            else {"id": None, "hash": None, "time": clock.stamp_ms()}
        )
        if delivered is None or self.seen is None:
            return {**base, "seen": heads}
        given: dict[str, set[int]] = {}
        for entry_id in delivered:
            seq = _seq_of(entry_id)
            if seq is not None:
                given.setdefault(entry.chain_of(entry_id), set()).add(seq)
        seen: dict[str, int] = {}
        shown: dict[str, list[int]] = {}
        behind = 0
        for chain, head in heads.items():
            low = min(self.seen.get(chain, 0), head)
            if entry.author_of(chain) == self.agent or head <= low:
                seen[chain] = head
                continue
            done = self.shown.get(chain, set()) | given.get(chain, set())
            candidates = range(low + 1, head + 1)
            if self.exhausted:  # the whole file was read: what it never met is gone (archived)
                met = self.found.get(chain, set())
                left = [s for s in candidates if s in met and s not in done]
            else:
                left = [s for s in candidates if s not in done]
            if not left:
                seen[chain] = head
                continue
            seen[chain] = left[0] - 1
            above = sorted(s for s in done if s > left[0] - 1 and s <= head)
            if above:
                shown[chain] = above
            behind += len(left)
        out: dict[str, Any] = {**base, "seen": seen}
        if shown:
            out["shown"] = shown
        if behind:
            out["behind"] = behind
        return out

    def oldest_unshown(self, cursor: dict[str, Any]) -> str | None:
        """The time of the oldest entry the scan met that `cursor` still counts as new."""
        seen = _seqs(cursor.get("seen") or {})
        shown = _shown(cursor.get("shown"))
        left = [
            t
            for (chain, seq), t in self.times.items()
            if seq > seen.get(chain, 0) and seq not in shown.get(chain, ())
        ]
        return min(left) if left else None


def _seq_of(entry_id: str) -> int | None:
    tail = entry_id.rsplit(".", 1)[-1]
    return int(tail) if tail.isdigit() else None


def _seqs(value: dict[Any, Any]) -> dict[str, int]:
    out: dict[str, int] = {}
    for chain, seq in value.items():
        try:
            out[str(chain)] = int(seq)
        except (TypeError, ValueError):
            continue
    return out


def _shown(value: Any) -> dict[str, set[int]]:
    if not isinstance(value, dict):
        return {}
    out: dict[str, set[int]] = {}
    for chain, seqs in value.items():
        if isinstance(seqs, list):
            out[str(chain)] = {int(s) for s in seqs if isinstance(s, int)}
    return out


def not_shown_hint(count: int, oldest_time: str | None, run: Invocation) -> str:
    """The line that counts what a read left out and the command that lists it (runnable
    as written: `app.pack.hints`)."""
    if count <= 0:
        return ""
    command = run.command("log" + (f" --since {oldest_time}" if oldest_time else ""))
    return (
        f"{count} more new {'entry was' if count == 1 else 'entries were'} not shown here "
        f"(they lead your next read; list them now with: {command})."
    )


def log_sections(
    vault: Vault,
    agent: str,
    cursor: dict[str, Any] | None,
    *,
    index: Index | None = None,
    skip: frozenset[str] = frozenset(),
) -> tuple[list[Section], Unseen, entry.Entry | None]:
    """(new entries of others, own recent entries), what is unseen (`Unseen.next_cursor` says
    where the cursor goes once the kept sections are delivered) and the newest entry.
    `cursor` is where the agent's last read ended (None: a first read); `skip` are ids other
    sections show (the inbox, open alerts)."""
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
    counts = Counts(vault)  # the coordination index's rule: only verified acks count
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
        # a forged, unsigned or edited ack or resolve acks and resolves nothing
        acts = Counts.acts(e) and counts(e)
        for a in e.acks if acts else ():
            if _author(a) != e.agent:
                acked.add(a)
                ackers.setdefault(a, {})[e.agent] = e.id  # read backwards: the first one wins
        target = e.extra.get("resolves") if e.type == entry.EntryType.RESOLVE else None
        if acts and isinstance(target, str):
            resolutions[target] = {"id": e.id, "by": e.agent, "time": e.time, "why": e.body}
        others_done = (
            (cursor is not None and unseen.done)
            or more
            or (cursor is None and len(others) >= settings.max_new_entries)
        )
        if others_done and (len(own) >= settings.recent_own or scanned >= SCAN_LIMIT):
            break
    else:
        unseen.exhausted = True
    # the order every clone agrees on: time, then id (after a merge, file order may differ)
    others.sort(key=entry.time_order)
    own.reverse()
    check = ShowCheck(vault)  # what fails verification is left out, and said (issue 20)
    others, own = check.genuine(others), check.genuine(own)
    check.save()
    counts.save()
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
            waiting = awaits_ack(e, agent, acked)
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

    n = len(others)
    if cursor is None:
        latest = "the latest entry" if n == 1 else f"the latest {n} entries" if n else "nothing yet"
        intro = f"First read: {latest} from other agents."
    else:
        counted = "1 new entry" if n == 1 else f"{n} new entries"
        intro = f"{counted} from other agents since {since or 'your last read'}."
    if elsewhere:
        verb = "is" if elsewhere == 1 else "are"
        intro += f" {elsewhere} more {verb} shown above (your inbox, open alerts)."
    if check.failed:
        intro += " " + check.note()
    if more and cursor is not None:
        intro += (
            f" More were written than the {settings.max_new_entries} a read shows; the rest"
            " stay new and lead your next read."
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
    return sections, unseen, newest
