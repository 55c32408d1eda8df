"""The `read` pack: what an agent loads at the start of a session (and before answering).

Sections come in priority order (lower is more important); the pack is data (frozen dataclasses)
that the CLI renders as markdown for a prompt or as JSON:

     0 inbox               what is open for this agent, however old (app/pack/inbox.py); never
                           dropped: a budget cuts its list and says how much
     0 identity            never dropped
     0 not_read            files that are symlinks out of the vault: named, never read
     0 not_verified        open items that fail verification: named, their text left out
     5 profile             memory/PROFILE.md, built from approved memory (app/pack/condensed.py)
     6 agent_profile       agents/<agent>/PROFILE.md
    10 decisions           active decisions (nexus/decisions.md)
    20 checkpoint          the agent's own working checkpoint
    21 working             the agent's working memory (agents/<agent>/working.md), unexpired
    25 alerts              open alerts raised within [alerts] window
    30 new_entries         log entries from other agents since this agent's last read
    40 own_entries         the agent's own recent entries
    42 digests             digests of the periods before the oldest entry shown (nexus/digests/)
    45 recall              with --query: the top recall hits, with where they come from
    50 project_state       nexus/project-state.md
    55 agent_memory        agents/<agent>/MEMORY.md
    60 memory              memory/MEMORY.md
    70 pending             the agent's own facts waiting for review (never another agent's)

A per-agent cursor in `.vaultmem/cursors/<agent>.json` remembers the newest entry the agent was
shown. `read` never moves it: the caller calls `commit_cursor` (and `record_receipt`) after
the pack was written out, so a pack that never reached the agent is shown again. The log is read from its end and only as
far back as the cursor (or a fixed window), so the pack costs the same on a log of any length.

Text other agents wrote (log entries, decisions, project state) goes out inside a fence with a
line that says it is data, not instructions. What fails verification (an entry, a decision, a
digest or a profile edited or forged: `nexus.verify.ShowCheck`, `nexus.digests`) is left out,
and the section that would have shown it says so, with `vaultmem verify` to run. Every file is
read through `Vault.open_inside`: a link out of the vault is never followed.

A budget drops the least important sections first, as a whole when they are one block; a
section made of items (entries, memory lines, decisions, pending facts, digests, profile lines)
first loses its lowest-scoring items (`app/pack/importance.py`), and the pack says what it cut.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from vaultmem.app.pack.sections import (
    IDENTITY_CHARS,
    Item,
    Section,
    cut,
    fence,
    refused_section,
)
from vaultmem.app.pack.window import log_sections
from vaultmem.core import notes, seal
from vaultmem.core.errors import (
    IntegrityError,
    NotWritableError,
    PathOutsideVaultError,
    VaultmemError,
)
from vaultmem.core.fsio import atomic_write
from vaultmem.core.records import field, record
from vaultmem.core.vault import Vault


@record
class Pack:
    agent: str
    vault: str
    sections: tuple[Section, ...]
    dropped: tuple[str, ...] = field(default_factory=tuple)  # section keys, lowest priority first
    dropped_tokens: dict[str, int] = field(default_factory=dict)
    budget: int = 0  # 0: no budget
    tokens: int = 0  # estimate of what is in the pack
    cursor: dict[str, Any] | None = None  # where the cursor goes once the pack is delivered
    since: str | None = None  # the entry id the previous read ended at
    peek: bool = False
    query: str | None = None  # the session's topic: recall hits and the pending facts' order
    cut: dict[str, list[str]] = field(default_factory=dict)  # section -> ids cut by the budget
    behind: int = 0  # new entries of others the pack did not show (they stay new)
    behind_since: str | None = None  # the time of the oldest of them, when known

    def shown(self) -> tuple[list[str], list[str]]:
        """(ids, paths) of what the kept sections show: what a receipt records."""
        ids = [i for s in self.sections for i in s.ids]
        paths = [p for s in self.sections for p in s.paths]
        return list(dict.fromkeys(ids)), list(dict.fromkeys(paths))

    def sections_by_key(self) -> dict[str, Section]:
        return {s.key: s for s in self.sections}

    def to_dict(self) -> dict[str, Any]:
        return {
            "agent": self.agent,
            "vault": self.vault,
            "sections": {
                s.key: {
                    "title": s.title,
                    "source": s.source,
                    "priority": s.priority,
                    "tokens": s.tokens,
                    "text": s.text,
                    "data": s.data,
                }
                for s in self.sections
            },
            "dropped": list(self.dropped),
            "dropped_tokens": self.dropped_tokens,
            "cut": self.cut,
            "budget": self.budget,
            "tokens": self.tokens,
            "since": self.since,
            "cursor": self.cursor,
            "peek": self.peek,
            "query": self.query,
            "behind": self.behind,
        }


def render_markdown(pack: Pack) -> str:
    """The pack as `vaultmem read` prints it: markdown for a prompt."""
    out = [f"# Session context for {pack.agent}", ""]
    for section in pack.sections:
        source = f" ({section.source})" if section.source else ""
        out += [f"## {section.title}{source}", "", section.text.strip() or "(empty)", ""]
    if pack.cut:
        from vaultmem.app.pack.importance import cut_note

        out += [f"_{cut_note(pack.cut, list(pack.sections))}._", ""]
    if pack.behind:
        from vaultmem.app.pack.hints import invocation
        from vaultmem.app.pack.window import not_shown_hint

        run = invocation(Path(pack.vault), pack.agent)
        out += [f"_{not_shown_hint(pack.behind, pack.behind_since, run)}_", ""]
    if pack.dropped:
        detail = ", ".join(f"{k} (~{pack.dropped_tokens.get(k, 0)} tokens)" for k in pack.dropped)
        out += [f"_Dropped to fit the budget of {pack.budget} tokens: {detail}_", ""]
    return "\n".join(out)


def identity_section(vault: Vault, agent: str) -> Section:
    path = vault.identity(agent)
    rel = vault.rel(path)
    if not path.exists():
        return Section("identity", f"Identity of {agent}", f"(no {rel} yet)", {}, rel, 0)
    note = vault.read_note(path)
    if not note.ok:
        raise IntegrityError(
            f"{path}: {note.error}", "fix the identity file's frontmatter between the '---' lines"
        )
    body = cut(note.body.strip(), IDENTITY_CHARS, rel)
    return Section("identity", f"Identity of {agent}", body, note.meta, rel, 0)


def memory_index_section(vault: Vault, agent: str | None) -> Section | None:
    path = vault.index_for(agent)
    if not path.exists():
        return None
    text = vault.read_text(path, what="memory index").strip()
    rel = vault.rel(path)
    key = "memory" if agent is None else "agent_memory"
    title = "Shared memory index" if agent is None else f"Memory index of {agent}"
    lines = [ln for ln in text.splitlines() if ln.lstrip().startswith("- ")]
    retracted = text.find("\n## Retracted")
    active = text[:retracted] if retracted >= 0 else text
    return Section(
        key,
        title,
        fence(text),  # its descriptions are agents' text (their own facts, approved proposals)
        {"path": rel, "entries": lines},
        rel,
        60 if agent is None else 55,
        paths=(rel,),
        items=tuple(_memory_item(ln) for ln in active.splitlines() if ln.startswith("- ")),
    )


_WIKILINK = re.compile(r"\[\[([^\[\]|#^]+)")


def _memory_item(line: str) -> Item:
    """A MEMORY.md line as an item: the fact note it links to knows its type and age."""
    m = _WIKILINK.search(line)
    target = m.group(1).strip().removesuffix(".md") + ".md" if m else None
    return Item(target or line, line, path=target)


def decisions_section(vault: Vault) -> Section | None:
    from vaultmem.nexus import decisions as decisions_mod
    from vaultmem.nexus.shown import ShowCheck

    try:
        active = decisions_mod.decisions(vault)
    except VaultmemError:
        return None
    check = ShowCheck(vault)  # a decision that fails verification is left out, and said
    active = [d for d in active if check.problem(d.entry) is None]
    check.save()
    if not active and not check.failed:
        return None
    lines: list[str] = []
    items = []
    for d in active:
        e = d.entry
        why = str(e.extra.get("why", "")).replace("\n", " ")
        sup = f"; supersedes {e.extra['supersedes']}" if e.extra.get("supersedes") else ""
        lines.append(f"- [{e.id}] {e.summary} — why: {why} ({e.time[:10]}, {e.agent}{sup})")
        items.append(Item(e.id, lines[-1], "decision", e.time))
    return Section(
        "decisions",
        "Active decisions",
        (check.note() + "\n\n" if check.failed else "") + fence("\n".join(lines)),
        [d.to_dict() for d in active],
        vault.rel(vault.decisions),
        10,
        ids=tuple(d.entry.id for d in active),
        items=tuple(items),
    )


def checkpoint_section(vault: Vault, agent: str) -> Section | None:
    from vaultmem.nexus.checkpoints import show_checkpoint

    cp = show_checkpoint(vault, agent)
    if not cp.exists:
        return None
    parts = [f"Updated {cp.updated}" if cp.updated else ""]
    if cp.task:
        parts.append(f"Task: {cp.task}")
    if cp.text:
        parts.append(cp.text)
    if cp.next:
        parts.append("Next steps:\n" + "\n".join(f"- {s}" for s in cp.next))
    text = "\n\n".join(p for p in parts if p)
    text = cut(text, IDENTITY_CHARS, cp.path)
    return Section("checkpoint", "Your checkpoint", text, cp.to_dict(), cp.path, 20)


def cursor_path(vault: Vault, agent: str) -> Path:
    return vault.state("cursors", f"{agent}.json")


def load_cursor(vault: Vault, agent: str) -> dict[str, Any] | None:
    # sealed (core/seal.py): a cursor git wrote (everything marked read) counts as none
    data = seal.read(cursor_path(vault, agent))
    # "id" is None when the agent last read an empty log
    ok = isinstance(data, dict) and (data.get("id") is None or isinstance(data.get("id"), str))
    return data if ok else None


def delivered(vault: Vault, pack: Pack) -> None:
    """The pack has been written out: its entries count as read (the cursor moves, unless it
    was a peek) and the receipt records what it showed. Every face calls this, and only once
    the pack has reached its reader."""
    commit_cursor(vault, pack)
    record_receipt(vault, pack)


def record_receipt(vault: Vault, pack: Pack) -> None:
    """Record what the pack showed (`.vaultmem/receipts/`). Call it after the pack was written
    out, with `commit_cursor`; a peek is a delivery too, so it is recorded."""
    from vaultmem.app.pack.receipts import record

    ids, paths = pack.shown()
    record(vault, pack.agent, "read", ids, paths)


def commit_cursor(vault: Vault, pack: Pack) -> bool:
    """Move the agent's cursor to what the pack showed. Call it after the pack was written out."""
    if pack.peek or pack.cursor is None:
        return False
    save_cursor(vault, pack.agent, pack.cursor)
    return True


def save_cursor(vault: Vault, agent: str, cursor: dict[str, Any]) -> None:
    """Record the newest entry `agent` was shown (`{"id", "hash", "time"}`)."""
    path = cursor_path(vault, agent)
    data = seal.dumps(path, cursor)
    try:
        if data is None:  # no secret to seal with: an unsealed cursor would never be read
            path.unlink(missing_ok=True)
            return
        atomic_write(path, data)
    except OSError as exc:
        raise NotWritableError(
            f"cannot save the read cursor {vault.rel(path)}: {exc.strerror or exc}",
            "check that .vaultmem/ is writable",
        ) from exc


def project_state_section(vault: Vault) -> Section | None:
    path = vault.project_state
    if not path.exists():
        return None
    from vaultmem.nexus.state import state_sections, without_stamps

    note = notes.parse(vault.read_text(path, what="project state"))
    body = without_stamps(note.body).strip()
    if not body:
        return None

    return Section(
        "project_state",
        "Project state",
        fence(body),
        {title: text for title, text in state_sections(note.text)},
        vault.rel(path),
        50,
    )


RECALL_HITS = 5


def recall_section(vault: Vault, agent: str, query: str) -> Section | None:
    """Top recall hits for the session's topic, from shared notes and the agent's own folder
    (never another agent's private notes). Imports whoosh: only with --query."""
    from vaultmem.search.query import recall

    result = recall(vault, query, limit=RECALL_HITS, agent=agent)
    if not result.hits:
        return None
    lines = []
    for hit in result.hits:
        where = f"{hit.path}" + (f" › {hit.heading}" if hit.heading else "")
        lines.append(
            f"- {where} (lines {hit.line_start}-{hit.line_end}, {hit.kind}): "
            + " ".join(hit.snippet.replace("**", "").split())  # marks would break wikilinks
        )
    return Section(
        "recall",
        f"What the vault holds about: {query}",
        fence("\n".join(lines)),
        result.to_dict(),
        None,
        45,
        ids=tuple(h.id for h in result.hits if h.id),
        paths=tuple(f"{h.path}:{h.line_start}-{h.line_end}" for h in result.hits if not h.id),
    )


def pending_section(vault: Vault, agent: str, query: str | None) -> Section | None:
    """The agent's own unreviewed facts, marked as such; other agents' never show."""
    folder = vault.bank_dir(agent)
    if not folder.is_dir() or not any(p.suffix == ".md" for p in folder.iterdir()):
        return None  # nothing proposed: the bank's modules stay unloaded
    from vaultmem.bank.store import pending_block

    block = pending_block(vault, agent, query)
    if block is None:
        return None
    return Section(
        "pending",
        f"Your unreviewed facts ({block.total} pending review)",
        fence(block.text),
        block.to_dict(),
        None,
        70,
        ids=tuple(f.id for f in block.facts),
        items=tuple(
            Item(f.id, line, "pending", f.created, f.evidence)
            for f, line in zip(block.facts, block.lines(), strict=True)
        ),
    )


def _guarded(refused: list[str], make: Callable[[], Section | None]) -> Section | None:
    """A section, or None when its file is a link out of the vault: that is never read, only
    named (in `refused`, shown as the pack's "Files not read" section)."""
    try:
        return make()
    except PathOutsideVaultError as exc:
        refused.append(exc.message)
        return None


def read(
    vault: Vault,
    agent: str,
    *,
    budget: int | None = None,
    peek: bool = False,
    query: str | None = None,
) -> Pack:
    """The session-start pack for `agent`. Does not move the cursor: see `commit_cursor`."""
    if budget is not None and budget < 0:
        from vaultmem.core.errors import UsageError

        raise UsageError(
            f"--budget {budget} is not a number of tokens",
            "give a number of tokens, e.g. --budget 2000 (0: no budget)",
        )
    from vaultmem.app.pack import condensed, importance
    from vaultmem.app.pack import inbox as coordination
    from vaultmem.core import clock
    from vaultmem.nexus import coord

    agent = vault.require_agent(agent)
    index = coord.load(vault)
    view = coordination.inbox(vault, agent, index=index)  # leaves out what fails verification
    in_inbox = {i.id for i in view.items}
    alerts = coordination.alerts_section(vault, index, in_inbox, agent)
    skip = frozenset(in_inbox | set(alerts.ids if alerts else ()))
    sections: list[Section] = [coordination.inbox_section(view)] if view.items else []
    refused: list[str] = []  # files that are links out of the vault: named, never read
    for s in (
        _guarded(refused, lambda: identity_section(vault, agent)),
        _guarded(refused, lambda: condensed.profile_section(vault, None)),
        _guarded(refused, lambda: condensed.profile_section(vault, agent)),
        decisions_section(vault),
        _guarded(refused, lambda: checkpoint_section(vault, agent)),
        _guarded(refused, lambda: coordination.working_section(vault, agent)),
        alerts,
    ):
        if s is not None:
            sections.append(s)
    cursor = load_cursor(vault, agent)
    since = cursor["id"] if cursor else None
    log_part, unseen, newest = log_sections(vault, agent, cursor, index=index, skip=skip)
    sections += log_part
    now = clock.now()
    shown = [i.time for s in log_part for i in s.items if i.time]
    for extra in (
        condensed.digest_section(vault, min(shown) if shown else None, now),
        _guarded(refused, lambda: project_state_section(vault)),
        _guarded(refused, lambda: memory_index_section(vault, None)),
        _guarded(refused, lambda: memory_index_section(vault, agent)),
        recall_section(vault, agent, query) if query else None,
        pending_section(vault, agent, query),
    ):
        if extra is not None:
            sections.append(extra)
    if refused:
        sections.append(refused_section(refused))
    if view.failed:
        sections.append(
            Section("not_verified", "Not shown: fails verification", view.note, view.failed)
        )
    sections.sort(key=lambda s: s.priority)
    limit = vault.config.read.budget if budget is None else budget
    kept, dropped, sizes, cut = importance.fit(
        sections, limit, rescore=importance.scorer(vault, agent, now)
    )
    total = sum(s.tokens for s in kept)
    if limit > 0 and total > limit and view.items:
        # even the sections a budget keeps do not fit: cut the inbox's list, saying how much
        first = kept[0]
        kept[0] = coordination.cut_inbox(view, max(0, limit - (total - first.tokens)))
    # the cursor moves past what the kept sections show, entry by entry: what the budget or a
    # cap left out stays new, is counted below and leads the next read
    delivered = [i for sec in kept for i in sec.ids]
    new_cursor = unseen.next_cursor(newest, delivered if cursor is not None else None)
    behind = int(new_cursor.get("behind") or 0)
    return Pack(
        agent=agent,
        vault=str(vault.root),
        sections=tuple(kept),
        dropped=dropped,
        dropped_tokens=sizes,
        budget=max(limit, 0),
        tokens=sum(s.tokens for s in kept),
        cursor=new_cursor,
        since=since,
        peek=peek,
        query=query,
        cut=cut,
        behind=behind,
        behind_since=unseen.oldest_unshown(new_cursor) if behind else None,
    )
