"""What each hook event does (see `app.hooks` for the contract and the error handling).

- `session-start` (startup, resume, clear, compact): the agent's session pack, within
  `[hooks] session_budget` tokens; the read cursor moves once it is printed.
- `prompt` (every user turn): only what is new since the agent's last read — other agents'
  entries, flagged when they wait for an ack — and recall hits for the prompt that reach
  `[hooks] recall_min_score`; nothing at all when there is nothing new. Recall (whoosh) runs only
  when the prompt names something the vault has a note or a memory about.
- `pre-compact`, `stop`: the agent's checkpoint, from the transcript's tail (session, last
  request, files touched), unless the agent wrote its own checkpoint during this session.
- `session-end`: queue the session for retention, log a `note` that it ended, and start
  `vaultmem retain --queued` in the background when a key is set.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from vaultmem.app.hooks.contract import HookEvent, HookInput, Outcome, hook_json, write_log
from vaultmem.app.hooks.quick import names_something
from vaultmem.app.pack import build as pack
from vaultmem.app.pack import sections, window
from vaultmem.core import clock
from vaultmem.core.fsio import atomic_write
from vaultmem.core.vault import Vault
from vaultmem.nexus import entry, reading
from vaultmem.nexus.shown import ShowCheck

AUTO_MARK = "(Written by the vaultmem {event} hook; `vaultmem checkpoint` replaces it.)"
SESSION_CHANNEL = "session"
MAX_REQUEST_CHARS = 600
# Claude Code replaces an additionalContext longer than 10,000 characters with a short preview
# and a file path (github.com/anthropics/claude-code/issues/94358 and #64626): stay under it
MAX_CONTEXT_CHARS = 9500
MAX_FILES = 20


def dispatch(event: HookEvent, vault: Vault, agent: str | None, payload: HookInput) -> Outcome:
    me = vault.require_agent(agent)
    if event == HookEvent.SESSION_START:
        return session_start(vault, me, payload)
    if event == HookEvent.PROMPT:
        return prompt(vault, me, payload)
    if event in (HookEvent.PRE_COMPACT, HookEvent.STOP):
        return checkpoint(vault, me, payload, event)
    return session_end(vault, me, payload)


# --- per-session state --------------------------------------------------------------------------


def _session_path(vault: Vault, agent: str) -> Path:
    return vault.state("sessions", f"{agent}.json")


def load_session(vault: Vault, agent: str) -> dict[str, Any]:
    try:
        data = json.loads(_session_path(vault, agent).read_bytes())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def save_session(vault: Vault, agent: str, data: dict[str, Any]) -> None:
    atomic_write(_session_path(vault, agent), json.dumps(data, ensure_ascii=False) + "\n")


# --- session-start ------------------------------------------------------------------------------


def session_start(vault: Vault, agent: str, payload: HookInput) -> Outcome:
    settings = vault.config.hooks
    budget = settings.session_budget or vault.config.read.budget
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
        context = context[: max(cut, 0)] + "\n\n…(cut: run `vaultmem read` for the rest)"

    def after() -> None:
        pack.commit_cursor(vault, found)
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

    return Outcome(hook_json(HookEvent.SESSION_START, context), after=after, context=context)


# --- prompt -------------------------------------------------------------------------------------


def scan_new(
    vault: Vault, agent: str, cursor: dict[str, Any] | None, limit: int
) -> tuple[list[entry.Entry], dict[str, Any], set[str], bool]:
    """Other agents' entries newer than the cursor (oldest first), where the cursor goes once
    they are shown, the ids acked by the entries read, and whether more were written than
    `limit`."""
    others: list[entry.Entry] = []
    newest: entry.Entry | None = None
    acked: set[str] = set()
    more = False
    unseen = window.Unseen(vault, agent, cursor)  # the pack's rule: new by chain, not by place
    for scanned, e in enumerate(reading.iter_reverse(vault.live_context), 1):
        if newest is None:
            newest = e
        new = unseen.is_new(e)
        acked.update(a for a in e.acks if entry.author_of(a) != e.agent)
        if e.agent != agent and (new or cursor is None):
            if len(others) >= limit:
                more = True
                break
            others.append(e)
        if cursor is not None and unseen.done:
            break
        if (cursor is None and len(others) >= limit) or scanned >= window.SCAN_LIMIT:
            break
    others.sort(key=lambda x: (x.time, x.id))
    return others, unseen.next_cursor(newest), acked, more


def recall_lines(vault: Vault, agent: str, query: str, shown: set[str]) -> list[tuple[str, str]]:
    """(key, line) for recall hits worth adding to this turn: strong, not already in context."""
    from vaultmem.search.query import recall

    settings = vault.config.hooks
    result = recall(vault, query, limit=settings.recall_hits + 4, agent=agent)
    out = []
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
    return out


def prompt(vault: Vault, agent: str, payload: HookInput) -> Outcome:
    settings = vault.config.hooks
    cursor = pack.load_cursor(vault, agent)
    others, next_cursor, acked, more = scan_new(
        vault, agent, cursor, vault.config.read.max_new_entries
    )
    check = ShowCheck(vault)  # what fails verification is left out, and said (issue 20)
    others = check.genuine(others)
    check.save()
    budget = max(min(settings.prompt_budget, MAX_CONTEXT_CHARS // 4 - 100), 100)
    parts: list[str] = [f"vaultmem: {check.note()}"] if check.failed else []
    if others:
        lines: list[str] = []
        used = 0
        for e in reversed(others):  # newest first, until the budget is spent
            line = window.entry_line(e, awaiting=e.type in entry.WANTS_ACK and e.id not in acked)
            cost = sections.estimate_tokens(line)
            if lines and used + cost > budget * 3 // 4:
                more = True
                break
            lines.append(line)
            used += cost
        lines.reverse()
        since = cursor.get("id") if cursor else None
        head = f"vaultmem: {len(lines)} new entries from other agents since your last read"
        if more:
            head += (
                f" (more were written: vaultmem log --since {since})" if since else " (the latest)"
            )
        parts.append(head + ".\n\n" + sections.fence("\n".join(lines)))
    session = load_session(vault, agent)
    shown = (
        set(session.get("shown") or [])
        if session.get("session_id") == payload.session_id
        else set()
    )
    hits: list[tuple[str, str]] = []
    if payload.prompt and names_something(str(vault.root), agent, payload.prompt):
        hits = recall_lines(vault, agent, payload.prompt, shown)
        room = budget - sum(sections.estimate_tokens(p) for p in parts)
        while hits and sections.estimate_tokens("\n".join(h for _k, h in hits)) > room:
            hits.pop()
    if hits:
        parts.append(
            "vaultmem: the vault has notes on this (read them if they matter):\n\n"
            + sections.fence("\n".join(line for _k, line in hits))
        )
    moved = next_cursor.get("id") is not None and (
        cursor is None
        or next_cursor.get("id") != cursor.get("id")
        or next_cursor.get("seen") != cursor.get("seen")
    )
    if not parts and not moved:
        return Outcome()  # nothing new: print nothing, write nothing

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
        return Outcome(after=after)  # only the agent's own entries are new
    context = "\n\n".join(parts)
    return Outcome(hook_json(HookEvent.PROMPT, context), after=after, context=context)


# --- pre-compact and stop: the checkpoint ----------------------------------------------------------


def _transcript(payload: HookInput) -> Path | None:
    if not payload.transcript_path:
        return None
    path = Path(payload.transcript_path).expanduser()
    return path if path.is_file() else None


def checkpoint(vault: Vault, agent: str, payload: HookInput, event: HookEvent) -> Outcome:
    from vaultmem.bank.transcripts import parse_transcript, read_tail
    from vaultmem.nexus import checkpoints as checkpoints_mod
    from vaultmem.nexus.checkpoints import show_checkpoint

    path = _transcript(payload)
    if path is None:
        write_log(
            vault, event, payload, agent, "note: no transcript_path in the payload; no checkpoint"
        )
        return Outcome()
    tail, first_time = read_tail(path)
    t = parse_transcript(tail)
    last = t.last_request
    if not last and not t.files:
        return Outcome()
    mark = AUTO_MARK.format(event=event.value)
    existing = show_checkpoint(vault, agent)
    session = load_session(vault, agent)
    started = (
        (session.get("started") if session.get("session_id") == payload.session_id else None)
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
        return Outcome()  # the agent keeps its own checkpoint this session: leave it alone
    sid = payload.session_id or t.session_id or "?"
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
        return Outcome()
    checkpoints_mod.checkpoint(vault, agent, text, task=task, next_steps=existing.next)
    return Outcome()


# --- session-end ----------------------------------------------------------------------------------


def session_end(vault: Vault, agent: str, payload: HookInput) -> Outcome:
    from vaultmem.bank.retention import enqueue
    from vaultmem.bank.transcripts import parse_transcript
    from vaultmem.core.fsio import read_text
    from vaultmem.nexus.log import append

    path = _transcript(payload)
    queued = None
    turns = 0
    files: tuple[str, ...] = ()
    if path is not None:
        t = parse_transcript(read_text(path, what="transcript"))
        turns, files = len(t.turns), t.files
        queued = enqueue(vault, agent, t, path.name, payload.session_id or t.session_id)
        if queued is not None:
            write_log(
                vault,
                "session-end",
                payload,
                agent,
                f"queued {vault.rel(queued.path)} ({len(t.turns)} turns) for retain --queued",
            )
    if path is not None and not turns:
        return Outcome()  # nothing happened in this session: nothing to log
    body = [f"Session {payload.session_id or '?'}: {turns} turns."]
    if files:
        body.append("Files touched: " + ", ".join(files[:MAX_FILES]))
    if queued is not None:
        body.append("Transcript queued for retention (vaultmem retain --queued).")
    append(
        vault,
        agent,
        f"Session ended ({payload.reason or 'other'})",
        channel=SESSION_CHANNEL,
        type_="note",
        body="\n".join(body),
    )
    if queued is not None:
        _start_retention(vault, agent, payload, queued.chars)
    return Outcome()


def _start_retention(vault: Vault, agent: str, payload: HookInput, chars: int) -> None:
    """`vaultmem retain --queued` as a detached process, when a key is set and the session is
    within `[llm] max_transcript_chars`; otherwise it waits for a person to run it."""
    from vaultmem.core.config import ENV_ANTHROPIC_KEY, env

    if not vault.config.hooks.retain or not env(ENV_ANTHROPIC_KEY):
        return
    if chars > vault.config.llm.max_transcript_chars:
        write_log(
            vault,
            "session-end",
            payload,
            agent,
            f"note: {chars:,} characters exceed [llm] max_transcript_chars; left in the queue",
        )
        return
    import subprocess
    import sys

    from vaultmem.app.hooks.contract import log_path

    log = log_path(vault)
    try:
        with open(log, "a", encoding="utf-8") as out:
            subprocess.Popen(
                [sys.executable, "-m", "vaultmem", "retain", "--queued", "--agent", agent,
                 "--vault", str(vault.root)],
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=out,
                start_new_session=True,  # outlives the session and Claude Code's hook timeout
            )  # fmt: skip
    except OSError as exc:
        write_log(vault, "session-end", payload, agent, f"could not start retain --queued: {exc}")
