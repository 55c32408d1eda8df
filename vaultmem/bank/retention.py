"""Retention of whole sessions: `retain --from TRANSCRIPT`, the queue, `retain --queued`.

`retain_transcript` parses a transcript (`bank.transcripts`), asks the model for candidate facts
(`bank.extraction`, through `bank.llm`, the only anthropic importer) and writes them, deduped,
into the agent's bank, all or none. `plan` shows what would be sent without any key or request.

The session-end hook cannot wait for a model, and may run without a key: it *queues* the
session instead. A queued session is the parsed, redacted transcript (no raw JSONL, no secret)
in `.vaultmem/queue/<agent>/<time>-<session>.json`; `vaultmem retain --queued` sends each one,
removes it once its facts are written and keeps it (with the error) when anything fails.
"""

from __future__ import annotations

import contextlib
import json
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vaultmem.bank.transcripts import Transcript, TranscriptFormat, Turn, parse_transcript
from vaultmem.core import clock
from vaultmem.core.errors import NotFoundError, UsageError, VaultmemError
from vaultmem.core.fsio import atomic_write, read_text
from vaultmem.core.records import evolve, field, record
from vaultmem.core.vault import Vault

if TYPE_CHECKING:
    from vaultmem.bank.extraction import Chunk, Extraction
    from vaultmem.bank.model import RetainResult

QUEUE_DIR = "queue"
_SAFE = re.compile(r"[^A-Za-z0-9._-]+")


def load_transcript(path: str, stdin_text: str | None = None) -> tuple[Transcript, str]:
    """The parsed transcript and the label facts cite (`session.jsonl`, or `stdin`)."""
    if path == "-":
        return parse_transcript(stdin_text or ""), "stdin"
    file = Path(path).expanduser()
    try:
        text = read_text(file, what="transcript")
    except FileNotFoundError:
        raise NotFoundError(
            f"no transcript at {file}", "pass a file path, or '-' for stdin"
        ) from None
    except IsADirectoryError:
        raise UsageError(f"{file} is a folder", "pass a transcript file") from None
    return parse_transcript(text), file.name


def cite(transcript: Transcript, label: str, first: int, last: int) -> str:
    """`session.jsonl#T12-T14` (turns) or `notes.txt#L3-L5` (lines)."""
    mark = "L" if transcript.format == TranscriptFormat.TEXT else "T"
    return f"{label}#{mark}{first}-{mark}{last}"


@record
class Retention:
    """What one transcript gave: the per-fact outcomes and how the model was used."""

    label: str
    transcript: Transcript
    results: tuple[RetainResult, ...]
    extraction: Extraction
    dry_run: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": self.label,
            "transcript": self.transcript.to_dict(),
            "results": [r.to_dict() for r in self.results],
            "skipped": list(self.extraction.skipped),
            "chunks": self.extraction.chunks,
            "model": self.extraction.model,
            "usage": self.extraction.usage,
            "dry_run": self.dry_run,
        }


def plan(vault: Vault, transcript: Transcript) -> list[Chunk]:
    """The requests `retain --from` would make, as text, after redaction (no key needed)."""
    from vaultmem.bank.extraction import plan_chunks

    return plan_chunks(transcript, vault.config.llm)


def retain_transcript(
    vault: Vault,
    agent: str,
    transcript: Transcript,
    label: str,
    *,
    tags: tuple[str, ...] | list[str] = (),
    api_key: str | None,
    base_url: str | None = None,
    dry_run: bool = False,
) -> Retention:
    """Extract facts from the session and retain them all (or, on any error, none)."""
    from vaultmem.bank.extraction import extract_facts
    from vaultmem.bank.model import Proposal
    from vaultmem.bank.retain import retain_many

    agent = vault.require_agent(agent)
    extraction = extract_facts(
        transcript, settings=vault.config.llm, api_key=api_key, base_url=base_url
    )
    proposals = [
        Proposal(
            text=c.text,
            type=c.type,
            tags=tuple(dict.fromkeys([*tags, *c.tags])),
            source=cite(transcript, label, c.line_start, c.line_end),
            quote=c.quote,
        )
        for c in extraction.candidates
    ]
    results = retain_many(vault, proposals, agent=agent, dry_run=dry_run) if proposals else []
    return Retention(label, transcript, tuple(results), extraction, dry_run)


# --- the queue ---------------------------------------------------------------------------------


@record
class Queued:
    path: Path
    agent: str
    label: str
    session_id: str | None
    queued: str
    transcript: Transcript
    attempts: int = 0
    last_error: str | None = None

    @property
    def chars(self) -> int:
        return sum(len(u) for u in self.transcript.units)

    def to_dict(self, vault: Vault) -> dict[str, Any]:
        return {
            "path": vault.rel(self.path),
            "agent": self.agent,
            "source": self.label,
            "session_id": self.session_id,
            "queued": self.queued,
            "turns": len(self.transcript.turns),
            "chars": self.chars,
            "attempts": self.attempts,
            "last_error": self.last_error,
        }


def queue_dir(vault: Vault, agent: str) -> Path:
    return vault.state(QUEUE_DIR, agent)


def _turns_out(t: Transcript) -> list[dict[str, Any]]:
    return [
        {"n": x.n, "role": x.role, "text": x.text, "line": x.line, "time": x.time} for x in t.turns
    ]


def enqueue(
    vault: Vault,
    agent: str,
    transcript: Transcript,
    label: str,
    session_id: str | None,
    *,
    grow: bool = False,
) -> Queued | None:
    """Queue the turns of a parsed session that were never queued before; None when there
    are none, or they hold no request yet (they are queued with the next ones).

    A resumed or compacted session ends again with the whole transcript: the agent's ledger
    (`.vaultmem/queue/AGENT.ledger.json`, one key per turn: role, time and text) keeps each
    turn from being queued, sent and counted as evidence twice.

    With `grow` (a runtime that hands over one turn at a time: Hermes Agent's `sync_turn`),
    the turns join the session's queue file when it has one that no `retain --queued` has
    tried yet, so a session is still one request to the model, not one per turn."""
    agent = vault.require_agent(agent)
    ledger = _load_ledger(vault, agent)
    fresh = tuple(t for t in transcript.turns if turn_key(t) not in ledger)
    part = evolve(transcript, turns=fresh)
    if not part.turns or (part.format != TranscriptFormat.TEXT and not part.requests()):
        return None
    if grow and session_id:
        grown = _grow(vault, agent, part, session_id, ledger)
        if grown is not None:
            return grown
    stamp = clock.stamp().replace(":", "")
    name = _SAFE.sub("-", f"{stamp}-{session_id or 'session'}")[:120] + ".json"
    path = queue_dir(vault, agent) / name
    if path.exists():  # the same session queued twice within one second
        path = path.with_name(f"{path.stem}-{len(ledger)}.json")
    record = {
        "agent": agent,
        "source": label,
        "session_id": session_id,
        "queued": clock.stamp(),
        "format": part.format.value,
        "files": list(part.files),
        "cwd": part.cwd,
        "started": part.started,
        "attempts": 0,
        "last_error": None,
        "turns": _turns_out(part),
    }
    atomic_write(path, json.dumps(record, ensure_ascii=False) + "\n", mode=0o600)
    # after the queue file: a crash in between queues these turns again, never loses them
    _save_ledger(vault, agent, [*ledger, *(turn_key(t) for t in fresh)])
    return _queued_from(path, record)


def _grow(
    vault: Vault, agent: str, part: Transcript, session_id: str, ledger: dict[str, None]
) -> Queued | None:
    """Add `part`'s turns to the session's untried queue file, under the queue's lock (a
    `retain --queued` that holds it may be sending the file: then a new file is written)."""
    from vaultmem.core.locking import lock_path, release, try_exclusive

    held = try_exclusive(lock_path(vault, "retain-queue"))
    if held is None:
        return None
    try:
        for item in reversed(queued(vault, agent)):
            if item.session_id != session_id or item.attempts or item.last_error:
                continue
            data = json.loads(item.path.read_bytes())
            start = len(data.get("turns") or [])
            turns = [evolve(t, n=start + i) for i, t in enumerate(part.turns, 1)]
            data["turns"] = [*data.get("turns", []), *_turns_out(evolve(part, turns=tuple(turns)))]
            data["files"] = list(dict.fromkeys([*data.get("files", []), *part.files]))
            atomic_write(item.path, json.dumps(data, ensure_ascii=False) + "\n", mode=0o600)
            _save_ledger(vault, agent, [*ledger, *(turn_key(t) for t in part.turns)])
            return _queued_from(item.path, data)
        return None
    finally:
        release(held)


LEDGER_KEEP = 50_000  # turn keys a ledger keeps (the oldest go first)


def turn_key(turn: Turn) -> str:
    """One turn's identity across copies of a transcript (a resume, a compaction)."""
    import hashlib

    raw = "\0".join((turn.role, turn.time or "", turn.text)).encode("utf-8", "replace")
    return hashlib.sha256(raw).hexdigest()[:20]


def _ledger_path(vault: Vault, agent: str) -> Path:
    return vault.state(QUEUE_DIR, f"{agent}.ledger.json")


def _load_ledger(vault: Vault, agent: str) -> dict[str, None]:
    try:
        data = json.loads(_ledger_path(vault, agent).read_bytes())
    except (OSError, ValueError):
        return {}
    keys = data.get("turns") if isinstance(data, dict) else None
    return dict.fromkeys(k for k in keys if isinstance(k, str)) if isinstance(keys, list) else {}


def _save_ledger(vault: Vault, agent: str, keys: list[str]) -> None:
    kept = list(dict.fromkeys(keys))[-LEDGER_KEEP:]
    atomic_write(_ledger_path(vault, agent), json.dumps({"turns": kept}) + "\n", mode=0o600)


def _queued_from(path: Path, data: dict[str, Any]) -> Queued:
    turns = tuple(
        Turn(int(t["n"]), str(t["role"]), str(t["text"]), int(t.get("line") or 0), t.get("time"))
        for t in data.get("turns", [])
        if isinstance(t, dict)
    )
    transcript = Transcript(
        TranscriptFormat(data.get("format", "text")),
        turns,
        tuple(data.get("files") or ()),
        data.get("session_id"),
        data.get("cwd"),
        data.get("started"),
    )
    return Queued(
        path,
        str(data.get("agent")),
        str(data.get("source") or path.name),
        data.get("session_id"),
        str(data.get("queued") or ""),
        transcript,
        int(data.get("attempts") or 0),
        data.get("last_error"),
    )


def queued(vault: Vault, agent: str | None = None) -> list[Queued]:
    """Queued sessions, oldest first (of one agent, or of every agent)."""
    root = vault.state(QUEUE_DIR)
    agents = [agent] if agent else sorted(p.name for p in root.iterdir()) if root.is_dir() else []
    out = []
    for name in agents:
        folder = root / name
        if not folder.is_dir():
            continue
        for path in sorted(folder.glob("*.json")):
            try:
                data = json.loads(path.read_bytes())
                out.append(_queued_from(path, data))
            except (OSError, ValueError, KeyError, TypeError):
                continue  # a torn file: left for a person (status lists the folder)
    return out


@record
class QueueOutcome:
    item: Queued
    retention: Retention | None = None
    error: str | None = None
    exit_code: int = 0

    def to_dict(self, vault: Vault) -> dict[str, Any]:
        return {
            **self.item.to_dict(vault),
            "retention": self.retention.to_dict() if self.retention else None,
            "error": self.error,
        }


@record
class QueueRun:
    outcomes: tuple[QueueOutcome, ...] = ()
    busy: bool = False  # another `retain --queued` holds the queue
    notes: tuple[str, ...] = field(default_factory=tuple)


def retain_queued(
    vault: Vault,
    agent: str | None,
    *,
    api_key: str | None,
    base_url: str | None = None,
    dry_run: bool = False,
) -> QueueRun:
    """Send every queued session; a session leaves the queue once its facts are written."""
    from vaultmem.core.locking import lock_path, release, try_exclusive

    held = try_exclusive(lock_path(vault, "retain-queue"))
    if held is None:
        return QueueRun(busy=True)
    try:
        outcomes = []
        for item in queued(vault, agent):
            try:
                done = retain_transcript(
                    vault,
                    item.agent,
                    item.transcript,
                    item.label,
                    api_key=api_key,
                    base_url=base_url,
                    dry_run=dry_run,
                )
            except VaultmemError as exc:
                if not dry_run:
                    _record_failure(item, str(exc))
                outcomes.append(QueueOutcome(item, None, str(exc), exc.exit_code))
                continue
            if not dry_run:
                item.path.unlink(missing_ok=True)
            outcomes.append(QueueOutcome(item, done))
        return QueueRun(tuple(outcomes))
    finally:
        release(held)


def _record_failure(item: Queued, message: str) -> None:
    try:
        data = json.loads(item.path.read_bytes())
    except (OSError, ValueError):
        return
    data["attempts"] = int(data.get("attempts") or 0) + 1
    data["last_error"] = message
    with contextlib.suppress(VaultmemError):
        atomic_write(item.path, json.dumps(data, ensure_ascii=False) + "\n", mode=0o600)
