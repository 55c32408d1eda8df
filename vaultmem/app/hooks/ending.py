"""`session-end`: queue the session's turns not queued before for retention, record the
session in local state (`.vaultmem/sessions/AGENT-history.jsonl`, never on the log), and start
`vaultmem retain --queued` in the background when a key is set. Run from `events.HANDLERS`."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from vaultmem.app.hooks.contract import HookInput, Outcome, transcript_file, write_log
from vaultmem.app.hooks.session import MAX_FILES, load_session
from vaultmem.core import clock
from vaultmem.core.vault import Vault

if TYPE_CHECKING:
    from vaultmem.bank.retention import Queued

HISTORY_MAX_BYTES = 1 << 20  # then the history moves to .1


def session_end(vault: Vault, agent: str, payload: HookInput) -> Outcome:
    """Queue the turns of the session not queued yet, and record the session in local state
    (`.vaultmem/sessions/AGENT-history.jsonl`): session bookkeeping never goes on the log."""
    from vaultmem.bank.retention import enqueue
    from vaultmem.bank.transcripts import parse_transcript
    from vaultmem.core.fsio import read_text

    path = transcript_file(payload)
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
                f"queued {vault.rel(queued.path)} ({len(queued.transcript.turns)} new of "
                f"{len(t.turns)} turns) for retain --queued",
            )
    finish_session(vault, agent, payload, turns, files, queued)
    return Outcome()


def finish_session(
    vault: Vault,
    agent: str,
    payload: HookInput,
    turns: int,
    files: tuple[str, ...],
    queued: Queued | None,
) -> None:
    """Record the ended session in local state and start `retain --queued` for what it queued
    (the session-end hook, and Hermes Agent's `on_session_end` in process)."""
    session = load_session(vault, agent)
    record = {
        "session_id": payload.session_id,
        "started": session.get("started")
        if session.get("session_id") == payload.session_id
        else None,
        "ended": clock.stamp_ms(),
        "reason": payload.reason or "other",
        "turns": turns,
        "files": list(files[:MAX_FILES]),
        "queued": vault.rel(queued.path) if queued is not None else None,
    }
    _append_history(vault, agent, record)
    if queued is not None:
        _start_retention(vault, agent, payload, queued.chars)


def _append_history(vault: Vault, agent: str, record: dict[str, Any]) -> None:
    import os

    path = vault.state("sessions", f"{agent}-history.jsonl")
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists() and path.stat().st_size > HISTORY_MAX_BYTES:
        os.replace(path, path.with_name(path.name + ".1"))
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(json.dumps(record, ensure_ascii=False) + "\n")


def _start_retention(vault: Vault, agent: str, payload: HookInput, chars: int) -> None:
    """`vaultmem retain --queued` as a detached process, when a key is set and the session is
    within `[llm] max_transcript_chars`; otherwise it waits for a person to run it."""
    from vaultmem.core.environment import ENV_ANTHROPIC_KEY, env

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
    from vaultmem.app.hooks.contract import log_path
    from vaultmem.core.spawn import detached, python_argv

    root = str(vault.root)
    argv = python_argv("vaultmem", "retain", "--queued", "--agent", agent, "--vault", root,
                       vault=root)  # fmt: skip
    try:
        with open(log_path(vault), "a", encoding="utf-8") as out:
            # a new session: outlives the session and Claude Code's hook timeout
            started = detached(argv, stdout=out.fileno(), stderr=out.fileno())
    except OSError as exc:
        started, why = False, str(exc)
    else:
        why = "the process did not start"
    if not started:
        write_log(vault, "session-end", payload, agent, f"could not start retain --queued: {why}")
