"""What each hook event does (see `app.hooks` for the contract and the error handling).

- `session-start`: `startup` gets the agent's session pack, within `[hooks] session_budget`
  tokens; `resume`, `compact` and `clear` get the delta since the agent's last read (they had
  the pack already). The cursor moves past what was shown, entry by entry, once it is printed.
  A background sync starts when one is due (`app.hooks.background`).
- `prompt` (every user turn): only what is new since the agent's last read — other agents'
  entries, most important first, within the budget; what does not fit stays new, is counted
  with the command that lists it and leads the next read — and recall hits for the prompt that
  reach `[hooks] recall_min_score`; nothing at all when there is nothing new. Recall (whoosh)
  runs only when the prompt names something the vault has a note or a memory about.
- `pre-compact`, `stop`: the agent's checkpoint, from the transcript's tail (session, last
  request, files touched), unless the agent wrote its own checkpoint during this session. The
  CLI hands both to a detached process first; `stop` then starts a background sync.
- `session-end`: queue the session's turns not queued before, record the session in local
  state (never on the log), and start `vaultmem retain --queued` in the background when a key
  is set (`app.hooks.ending`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from vaultmem.app.hooks.contract import (
    HookEvent,
    HookInput,
    Outcome,
    hook_json,
    transcript_file,
    write_log,
)
from vaultmem.app.hooks.quick import names_something
from vaultmem.app.hooks.session import MAX_FILES, load_session, save_session
from vaultmem.app.pack import build as pack
from vaultmem.app.pack import sections, window
from vaultmem.app.pack.hints import invocation
from vaultmem.core import clock
from vaultmem.core.records import record
from vaultmem.core.vault import Vault
from vaultmem.nexus import entry, reading
from vaultmem.nexus.coord import awaits_ack
from vaultmem.nexus.shown import Counts, ShowCheck

if TYPE_CHECKING:
    from vaultmem.bank.transcripts import Transcript

AUTO_MARK = "(Written by the vaultmem {event} hook; `vaultmem checkpoint` replaces it.)"
SESSION_CHANNEL = "session"
MAX_REQUEST_CHARS = 600
# Claude Code replaces an additionalContext longer than 10,000 characters with a short preview
# and a file path (github.com/anthropics/claude-code/issues/94358 and #64626): stay under it
MAX_CONTEXT_CHARS = 9500


def dispatch(event: HookEvent, vault: Vault, agent: str | None, payload: HookInput) -> Outcome:
    """Run `event`'s handler from `HANDLERS` (the one table: an event without one is refused
    before anything runs, see `run_hook`)."""
    return HANDLERS[event](vault, vault.require_agent(agent), payload)


# --- session-start ------------------------------------------------------------------------------


DELTA_SOURCES = ("resume", "compact", "clear")  # SessionStart's `source` for a session going on
_DONE = {"resume": "resumed", "compact": "compacted", "clear": "cleared"}


def session_start(vault: Vault, agent: str, payload: HookInput) -> Outcome:
    """A new session gets the pack; a resumed, compacted or cleared one (SessionStart's
    `source`) already had it, so it gets only what is new since (and the command for the
    whole pack)."""
    from vaultmem.app.hooks.background import start_sync

    start_sync(vault)
    cursor = pack.load_cursor(vault, agent)
    if payload.source in DELTA_SOURCES and cursor is not None:
        return _session_delta(vault, agent, payload, cursor)
    settings = vault.config.hooks
    budget = settings.session_budget or vault.config.read.budget
    run = invocation(vault.root, agent)
    intro = (
        f"vaultmem: you are agent `{agent}`; this is the shared memory of the agents on this "
        f"project (vault {vault.root}). Append after each significant turn, ack what you use "
        f"(`--ack ID`), retain facts worth keeping. Session source: {payload.source or 'startup'}."
    )
    found = pack.read(vault, agent, budget=budget)
    context = intro + "\n\n" + pack.render_markdown(found)
    for _ in range(4):  # whole sections go, lowest priority first, until the context fits
        excess = len(context) - MAX_CONTEXT_CHARS
        if excess <= 0 or len(found.sections) <= 1:
            break
        budget = max(1, found.tokens - excess // 4 - 50)
        found = pack.read(vault, agent, budget=budget)
        context = intro + "\n\n" + pack.render_markdown(found)
    if len(context) > MAX_CONTEXT_CHARS:  # the identity alone is too long: cut at a line
        cut = context.rfind("\n", 0, MAX_CONTEXT_CHARS - 200)
        context = context[: max(cut, 0)] + f"\n\n…(cut: run `{run.command('read')}` for the rest)"

    def after() -> None:
        pack.delivered(vault, found)  # the cursor moves, the receipt records what was shown
        _begin_session(vault, agent, payload)

    return Outcome(
        hook_json(HookEvent.SESSION_START, context, payload.hook_event_name),
        after=after,
        context=context,
    )


def _begin_session(vault: Vault, agent: str, payload: HookInput) -> None:
    """The session's local state (`.vaultmem/sessions/AGENT.json`): kept across a resume or a
    compaction of the same session, new otherwise. Never on the log."""
    session = load_session(vault, agent)
    if session.get("session_id") == payload.session_id and payload.source in DELTA_SOURCES:
        save_session(vault, agent, {**session, "source": payload.source})
        return
    save_session(
        vault,
        agent,
        {
            "session_id": payload.session_id,
            "started": clock.stamp_ms(),
            "source": payload.source,
            "shown": [],
        },
    )


def _session_delta(vault: Vault, agent: str, payload: HookInput, cursor: dict[str, Any]) -> Outcome:
    settings = vault.config.hooks
    budget = min(settings.session_budget or vault.config.read.budget, MAX_CONTEXT_CHARS // 4)
    found = delta(vault, agent, cursor, max(budget - 100, 100), what="from other agents since")
    run = invocation(vault.root, agent)
    whole = f"`{run.command('read --peek')}`"
    head = (
        f"vaultmem: agent `{agent}`; the conversation was cleared, your shared memory was not "
        f"(your session pack: {whole})."
        if payload.source == "clear"
        else f"vaultmem: agent `{agent}`, session {_DONE[payload.source or '']}: your session "
        f"pack is already in this conversation (the whole pack again: {whole})."
    )
    if not found.text:
        context = head + " Nothing new from other agents since your last read."
    else:
        context = head + "\n\n" + found.text

    def after() -> None:
        if found.moved:
            pack.save_cursor(vault, agent, found.cursor)
        _begin_session(vault, agent, payload)

    return Outcome(
        hook_json(HookEvent.SESSION_START, context, payload.hook_event_name),
        after=after,
        context=context,
    )


# --- prompt -------------------------------------------------------------------------------------


def scan_new(
    vault: Vault, agent: str, cursor: dict[str, Any] | None, limit: int
) -> tuple[list[entry.Entry], window.Unseen, entry.Entry | None, set[str]]:
    """Other agents' entries newer than the cursor (oldest first, at most `limit`: the rest
    stay new), what is unseen (its `next_cursor` moves past what is delivered), the newest
    entry and the ids acked by the entries read."""
    others: list[entry.Entry] = []
    newest: entry.Entry | None = None
    acked: set[str] = set()
    unseen = window.Unseen(vault, agent, cursor)  # the pack's rule: new by chain, not by place
    counts = Counts(vault)
    for scanned, e in enumerate(reading.iter_reverse(vault.live_context), 1):
        if newest is None:
            newest = e
        new = unseen.is_new(e)
        if e.acks and counts(e):  # the coordination index's rule: only verified acks count
            acked.update(a for a in e.acks if entry.author_of(a) != e.agent)
        if e.agent != agent and (new or cursor is None):
            if len(others) >= limit:
                break
            others.append(e)
        if cursor is not None and unseen.done:
            break
        if (cursor is None and len(others) >= limit) or scanned >= window.SCAN_LIMIT:
            break
    else:
        unseen.exhausted = True
    counts.save()
    others.sort(key=entry.time_order)
    return others, unseen, newest, acked


def _rank(e: entry.Entry, agent: str, acked: set[str]) -> int:
    """What a small budget shows first: what waits for this agent, then what agents did
    (fixes, decisions, questions), then notes."""
    if awaits_ack(e, agent, acked) or agent in e.to:
        return 0
    if e.type == entry.EntryType.NOTE or e.channel == SESSION_CHANNEL:
        return 2
    return 1


@record
class Delta:
    """What is new for an agent since its cursor, fitted to a budget."""

    text: str  # "" when nothing new is shown
    cursor: dict[str, Any]  # where the cursor goes once `text` is delivered
    moved: bool  # the cursor changes
    shown: int = 0
    behind: int = 0


def delta(
    vault: Vault, agent: str, cursor: dict[str, Any] | None, budget: int, *, what: str
) -> Delta:
    """Other agents' new entries within `budget` tokens, most important first (waiting for
    this agent, then what agents did, then notes; older first within a rank), shown in time
    order. The cursor moves past the entries shown, one by one; the rest are counted with the
    command that lists them and stay new, so they lead the next read."""
    others, unseen, newest, acked = scan_new(
        vault, agent, cursor, vault.config.read.max_new_entries
    )
    check = ShowCheck(vault)  # what fails verification is left out, and said (issue 20)
    others = check.genuine(others)
    check.save()
    failing = f"vaultmem: {check.note()}\n\n" if check.failed else ""
    chosen: list[entry.Entry] = []
    used = 0
    lines: dict[str, str] = {}
    for e in sorted(others, key=lambda x: (_rank(x, agent, acked), *entry.time_order(x))):
        line = window.entry_line(e, awaiting=awaits_ack(e, agent, acked))
        cost = sections.estimate_tokens(line)
        if chosen and used + cost > budget:
            continue
        if not chosen and cost > budget:  # one entry alone over the budget: its head only
            line = line.split("\n", 1)[0]
            cost = sections.estimate_tokens(line)
        chosen.append(e)
        lines[e.id] = line
        used += cost
    chosen.sort(key=entry.time_order)
    next_cursor = unseen.next_cursor(newest, [e.id for e in chosen] if cursor else None)
    behind = int(next_cursor.get("behind") or 0)
    keys = ("id", "hash", "seen", "shown", "behind")
    moved = next_cursor.get("id") is not None and (
        cursor is None or any(next_cursor.get(k) != cursor.get(k) for k in keys)
    )
    if not chosen:
        return Delta(failing.strip(), next_cursor, moved, 0, behind)
    head = f"vaultmem: {len(chosen)} new {'entry' if len(chosen) == 1 else 'entries'} {what}"
    note = ""
    if behind:
        run = invocation(vault.root, agent)
        note = " " + window.not_shown_hint(behind, unseen.oldest_unshown(next_cursor), run)
    text = failing + head + "." + note + "\n\n"
    text += sections.fence("\n".join(lines[e.id] for e in chosen))
    return Delta(text, next_cursor, moved, len(chosen), behind)


def recall_lines(
    vault: Vault, agent: str, query: str, shown: set[str]
) -> tuple[list[tuple[str, str]], list[str]]:
    """(key, line) for recall hits worth adding to this turn (strong, not already in context),
    and the index's warnings (e.g. a folder git put there, deleted and rebuilt), which are for
    the person (stderr), not the model."""
    from vaultmem.search.query import recall

    settings = vault.config.hooks
    result = recall(vault, query, limit=settings.recall_hits + 4, agent=agent)
    warnings = list(result.index.warnings)
    out: list[tuple[str, str]] = []
    for hit in result.hits:
        key = f"{hit.path}#{hit.line_start}"
        if hit.score < settings.recall_min_score or hit.kind in ("log", "identity"):
            continue
        if hit.path.endswith("/MEMORY.md") or hit.path == "MEMORY.md" or key in shown:
            continue
        where = hit.path + (f" › {hit.heading}" if hit.heading else "")
        snippet = " ".join(hit.snippet.replace("**", "").split())
        out.append((key, f"- {where} (lines {hit.line_start}-{hit.line_end}): {snippet}"))
        if len(out) >= settings.recall_hits:
            break
    return out, warnings


def prompt(vault: Vault, agent: str, payload: HookInput) -> Outcome:
    settings = vault.config.hooks
    cursor = pack.load_cursor(vault, agent)
    budget = max(min(settings.prompt_budget, MAX_CONTEXT_CHARS // 4 - 100), 100)
    found = delta(
        vault, agent, cursor, budget * 3 // 4, what="from other agents since your last read"
    )
    parts: list[str] = [found.text] if found.text else []
    next_cursor, moved = found.cursor, found.moved
    session = load_session(vault, agent)
    shown = (
        set(session.get("shown") or [])
        if session.get("session_id") == payload.session_id
        else set()
    )
    hits: list[tuple[str, str]] = []
    warned = ""
    if payload.prompt and names_something(str(vault.root), agent, payload.prompt):
        hits, warnings = recall_lines(vault, agent, payload.prompt, shown)
        warned = "".join(f"vaultmem: {w}\n" for w in warnings)
        room = budget - sum(sections.estimate_tokens(p) for p in parts)
        while hits and sections.estimate_tokens("\n".join(h for _k, h in hits)) > room:
            hits.pop()
    if hits:
        parts.append(
            "vaultmem: the vault has notes on this (read them if they matter):\n\n"
            + sections.fence("\n".join(line for _k, line in hits))
        )
    if not parts and not moved:
        return Outcome(stderr=warned)  # nothing new: print nothing, write nothing

    def after() -> None:
        if moved:
            pack.save_cursor(vault, agent, next_cursor)
        if hits:
            save_session(
                vault,
                agent,
                {
                    **session,
                    "session_id": payload.session_id,
                    "shown": sorted(shown | {k for k, _l in hits}),
                },
            )

    if not parts:
        return Outcome(stderr=warned, after=after)  # only the agent's own entries are new
    context = "\n\n".join(parts)
    return Outcome(
        hook_json(HookEvent.PROMPT, context, payload.hook_event_name),
        stderr=warned,
        after=after,
        context=context,
    )


# --- pre-compact and stop: the checkpoint ----------------------------------------------------------


def checkpoint(vault: Vault, agent: str, payload: HookInput, event: HookEvent) -> Outcome:
    from vaultmem.bank.transcripts import parse_transcript, read_tail

    path = transcript_file(payload)
    if path is None:
        write_log(
            vault, event, payload, agent, "note: no transcript_path in the payload; no checkpoint"
        )
        return Outcome()
    tail, first_time = read_tail(path)
    checkpoint_from(vault, agent, parse_transcript(tail), payload.session_id, first_time, event)
    return Outcome()


def checkpoint_from(
    vault: Vault,
    agent: str,
    t: Transcript,
    session_id: str | None,
    first_time: str | None,
    event: HookEvent,
) -> None:
    """The automatic checkpoint from a session's turns (a transcript's tail, or the messages
    a runtime hands over in process: Hermes Agent), unless the agent wrote its own checkpoint
    during this session."""
    from vaultmem.nexus import checkpoints as checkpoints_mod
    from vaultmem.nexus.checkpoints import show_checkpoint

    last = t.last_request
    if not last and not t.files:
        return
    mark = AUTO_MARK.format(event=event.value)
    existing = show_checkpoint(vault, agent)
    session = load_session(vault, agent)
    started = (
        (session.get("started") if session.get("session_id") == session_id else None)
        or first_time
        or t.started
    )
    ours = existing.text.startswith("(Written by the vaultmem ")
    begun = clock.parse_time(started)
    updated = clock.parse_time(existing.updated)
    # checkpoint times have whole seconds: one written in the session's first second counts
    if (
        existing.exists
        and not ours
        and begun
        and updated
        and updated >= begun.replace(microsecond=0)
    ):
        return  # the agent keeps its own checkpoint this session: leave it alone
    sid = session_id or t.session_id or "?"
    request = " ".join((last or "").split())
    if len(request) > MAX_REQUEST_CHARS:
        request = request[: MAX_REQUEST_CHARS - 1] + "…"
    files = list(t.files[-MAX_FILES:])
    text = "\n".join(
        [
            mark,
            f"Session {sid} ({t.format.value}), at its {event.value.replace('-', ' ')}.",
            f"Last request: {request}" if request else "",
            f"Files touched: {', '.join(files)}" if files else "",
        ]
    ).strip()
    same_session = ours and sid in existing.text
    first = " ".join((t.first_request or "").split())[:120] or None
    task = existing.task if (same_session or not ours) and existing.task else first
    if existing.exists and existing.text == text and existing.task == task:
        return
    checkpoints_mod.checkpoint(vault, agent, text, task=task, next_steps=existing.next)


def _pre_compact(vault: Vault, agent: str, payload: HookInput) -> Outcome:
    return checkpoint(vault, agent, payload, HookEvent.PRE_COMPACT)


def _stop(vault: Vault, agent: str, payload: HookInput) -> Outcome:
    try:
        return checkpoint(vault, agent, payload, HookEvent.STOP)
    finally:
        from vaultmem.app.hooks.background import start_sync

        start_sync(vault)  # the turn's writes reach the other machines


def _session_end(vault: Vault, agent: str, payload: HookInput) -> Outcome:
    from vaultmem.app.hooks.ending import session_end

    return session_end(vault, agent, payload)


HANDLERS: dict[HookEvent, Callable[[Vault, str, HookInput], Outcome]] = {
    HookEvent.SESSION_START: session_start,
    HookEvent.PROMPT: prompt,
    HookEvent.PRE_COMPACT: _pre_compact,
    HookEvent.STOP: _stop,
    HookEvent.SESSION_END: _session_end,
}
