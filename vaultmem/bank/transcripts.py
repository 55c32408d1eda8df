"""Session transcripts as dialogue: Claude Code JSONL, Codex rollout JSONL, OpenClaw session
JSONL, or plain text.

`retain --from` and the session-end hook send a session to the model; what the model needs is
what was said, not the runtime's bookkeeping. A Claude Code transcript line carries uuids, the
working directory, thinking blocks with their signatures and whole tool payloads; a Codex
rollout line wraps the same in `{"timestamp", "type", "payload"}`. `parse_transcript` keeps the
user's and the assistant's text, folds each tool call and its result into one line (tool, file
or command, outcome), drops thinking, signatures, reasoning, metadata and tool output, and
numbers what is left as *turns*. Facts cite turn numbers; each turn keeps the line of the file it
came from and its time, so a person can find it. Plain text stays as numbered lines.

Every turn goes through `secrets.redact_outbound`: what reaches the model, the retention queue
or a checkpoint never carries a credential.

Neither format has an official schema. What this module reads follows community descriptions of
real files (Claude Code: github.com/simonw/claude-code-transcripts and
github.com/kvsankar/agent-history `docs/specs/agents/formats/claude-code-format.md`; Codex: the
`RolloutLine` types in github.com/openai/codex `codex-rs/protocol/src/protocol.rs`, described
in the same agent-history repository's `codex-cli-format.md`; OpenClaw: the session file its
session manager writes, a `{"type": "session", "version": 4, "id", "cwd"}` header then
`{"type": "message", "message": {"role", "content"}}` entries, roles user / assistant /
toolResult, `toolCall` blocks with `name` and `arguments` (openclaw 2026.9.6,
dist/session-manager-*.mjs); the vaultmem OpenClaw plugin writes the session it is handed in
that shape). Unknown record types are skipped, never fatal. Hermes Agent hands its OpenAI-style
messages over in process (`from_messages`).

Why this module is long: one reader per runtime's format (Claude Code, Codex, OpenClaw, Hermes's
messages) over one shared `_Builder` (redaction, tool outcomes folded into their call, files
touched); split by format, each reader would import the builder's private helpers back from here.
"""

from __future__ import annotations

import json
import re
from enum import StrEnum
from pathlib import Path
from typing import Any

from vaultmem.core.records import field, record
from vaultmem.core.secrets import Finding, redact_outbound

MAX_TURN_CHARS = 2000  # dialogue kept per turn; pasted logs are cut
TOOL_DETAIL_CHARS = 100  # the command, pattern or url shown in a tool line
TAIL_BYTES = 2 << 20  # what the stop and pre-compact hooks read of a long transcript

_EDIT_TOOLS = {"Edit", "Write", "MultiEdit", "NotebookEdit"}
_CODEX_BOILERPLATE = (
    "<environment_context>",
    "<user_instructions>",
    "# AGENTS.md instructions",
    "<permissions instructions>",
    "<user_shell_command>",
)
_REMINDER = re.compile(r"<system-reminder>.*?</system-reminder>", re.DOTALL)
_COMMAND = re.compile(r"<command-name>(.*?)</command-name>", re.DOTALL)
_LOCAL_OUTPUT = re.compile(
    r"<local-command-std(?:out|err)>.*?</local-command-std(?:out|err)>", re.DOTALL
)
_PATCH_FILE = re.compile(r"^\*\*\* (?:Add|Update|Delete) File: (.+)$", re.MULTILINE)
_EXIT_CODE = re.compile(r"(?:Exit code|exit_code)\"?\s*[:=]\s*(-?\d+)")


class TranscriptFormat(StrEnum):
    CLAUDE_CODE = "claude-code"
    CODEX = "codex"
    OPENCLAW = "openclaw"
    HERMES = "hermes"  # Hermes Agent's OpenAI-style messages, handed over in process
    TEXT = "text"


@record
class Turn:
    n: int  # 1-based turn number, what facts cite
    role: str  # user, assistant or tool
    text: str
    line: int  # the line of the transcript file it comes from (1-based)
    time: str | None = None

    def render(self) -> str:
        return f"{self.role}: {self.text}"

    def label(self) -> str:
        """How a person finds the turn: its number, the file line, the time."""
        when = f", {self.time[:16].replace('T', ' ')}" if self.time else ""
        return f"turn {self.n} (file line {self.line}{when})"


@record
class Transcript:
    format: TranscriptFormat
    turns: tuple[Turn, ...]
    files: tuple[str, ...] = ()  # files the session's tools edited or wrote, first touch first
    session_id: str | None = None
    cwd: str | None = None
    started: str | None = None  # time of the first record that has one
    dropped: dict[str, int] = field(default_factory=dict)  # what was left out, by kind
    redactions: tuple[Finding, ...] = ()

    @property
    def unit(self) -> str:
        return "line" if self.format == TranscriptFormat.TEXT else "turn"

    @property
    def units(self) -> tuple[str, ...]:
        """What the model reads, one numbered unit per turn (or per line of plain text)."""
        if self.format == TranscriptFormat.TEXT:
            return tuple(t.text for t in self.turns)
        return tuple(t.render() for t in self.turns)

    def requests(self) -> list[Turn]:
        return [t for t in self.turns if t.role == "user"]

    @property
    def first_request(self) -> str | None:
        found = self.requests()
        return found[0].text if found else None

    @property
    def last_request(self) -> str | None:
        found = self.requests()
        return found[-1].text if found else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": self.format.value,
            "unit": self.unit,
            "turns": len(self.turns),
            "files": list(self.files),
            "session_id": self.session_id,
            "started": self.started,
            "dropped": self.dropped,
            "redacted": [f.to_dict() for f in self.redactions],
        }


# --- detection -------------------------------------------------------------------------------


def _records(text: str) -> list[tuple[int, dict[str, Any]]]:
    out = []
    for n, raw in enumerate(text.splitlines(), 1):
        raw = raw.strip()
        if not raw.startswith("{"):
            continue
        try:
            item = json.loads(raw)
        except ValueError:
            continue
        if isinstance(item, dict):
            out.append((n, item))
    return out


def detect(records: list[tuple[int, dict[str, Any]]], lines: int) -> TranscriptFormat:
    """JSONL from Claude Code or Codex when most non-empty lines are records of that shape."""
    if not records or len(records) * 2 < lines:
        return TranscriptFormat.TEXT
    codex = sum(1 for _n, r in records if "payload" in r and r.get("type") in _CODEX_TYPES)
    claude = sum(
        1
        for _n, r in records
        if r.get("type") in _CLAUDE_TYPES and ("message" in r or r.get("type") != "user")
    )
    openclaw = sum(
        1
        for _n, r in records
        if (r.get("type") == "message" and isinstance(r.get("message"), dict))
        or (r.get("type") == "session" and "version" in r)
    )
    if openclaw * 2 >= len(records) and openclaw > claude:
        return TranscriptFormat.OPENCLAW
    if codex >= claude and codex * 2 >= len(records):
        return TranscriptFormat.CODEX
    if claude * 2 >= len(records):
        return TranscriptFormat.CLAUDE_CODE
    return TranscriptFormat.TEXT


_CODEX_TYPES = {"session_meta", "response_item", "event_msg", "turn_context", "compacted"}
_CLAUDE_TYPES = {
    "user",
    "assistant",
    "system",
    "summary",
    "file-history-snapshot",
    "queue-operation",
    "attachment",
}


# --- building turns ---------------------------------------------------------------------------


class _Builder:
    """Collects turns, redacting each one and counting what it leaves out."""

    def __init__(self, cwd: str | None) -> None:
        self.turns: list[Turn] = []
        self.files: dict[str, None] = {}
        self.dropped: dict[str, int] = {}
        self.findings: list[Finding] = []
        self.cwd = cwd
        self.pending: dict[str, int] = {}  # tool call id -> index of its turn

    def drop(self, kind: str, amount: int = 1) -> None:
        self.dropped[kind] = self.dropped.get(kind, 0) + amount

    def add(self, role: str, text: str, line: int, time: str | None) -> int:
        text = text.strip()
        if not text:
            return -1
        if len(text) > MAX_TURN_CHARS:
            self.drop("characters cut from long turns", len(text) - MAX_TURN_CHARS)
            text = text[:MAX_TURN_CHARS].rstrip() + f" …(cut, {len(text):,} characters)"
        clean, found = redact_outbound(text)
        self.findings.extend(found)
        self.turns.append(Turn(len(self.turns) + 1, role, clean, line, time))
        return len(self.turns) - 1

    def tool(self, call_id: str | None, line: str, line_no: int, time: str | None) -> None:
        index = self.add("tool", line, line_no, time)
        if call_id and index >= 0:
            self.pending[call_id] = index

    def outcome(self, call_id: str | None, ok: bool, detail: str = "") -> None:
        index = self.pending.pop(call_id or "", -1)
        if index < 0:
            return
        turn = self.turns[index]
        result = "ok" if ok else "error" + (f": {_one_line(detail, 80)}" if detail else "")
        clean, found = redact_outbound(f"{turn.text} → {result}")
        self.findings.extend(found)
        self.turns[index] = Turn(turn.n, turn.role, clean, turn.line, turn.time)

    def touched(self, path: object) -> str:
        if not isinstance(path, str) or not path:
            return ""
        shown = self.short(path)
        self.files.setdefault(shown, None)
        return shown

    def short(self, path: str) -> str:
        if self.cwd and path.startswith(self.cwd.rstrip("/") + "/"):
            return path[len(self.cwd.rstrip("/")) + 1 :]
        return path


def _one_line(text: str, limit: int = TOOL_DETAIL_CHARS) -> str:
    line = " ".join(str(text).split())
    return line if len(line) <= limit else line[: limit - 1].rstrip() + "…"


def _text_of(content: Any, kinds: tuple[str, ...] = ("text",)) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            str(b.get("text", ""))
            for b in content
            if isinstance(b, dict) and b.get("type") in kinds and b.get("text")
        )
    return ""


def _clean_user_text(text: str) -> str:
    text = _REMINDER.sub("", text)
    text = _LOCAL_OUTPUT.sub("", text)
    command = _COMMAND.search(text)
    if command:
        return command.group(1).strip()
    return text.strip()


# --- Claude Code ------------------------------------------------------------------------------


def _claude_tool_line(b: _Builder, name: str, data: dict[str, Any]) -> str:
    target = data.get("file_path") or data.get("notebook_path")
    if name in _EDIT_TOOLS:
        return f"{name} {b.touched(target)}".rstrip()
    if isinstance(target, str):
        return f"{name} {b.short(target)}"
    for key in ("command", "pattern", "url", "query", "description", "path"):
        value = data.get(key)
        if isinstance(value, str) and value:
            return f"{name}: {_one_line(value)}"
    return name


def _claude(records: list[tuple[int, dict[str, Any]]]) -> Transcript:
    cwd = next((r["cwd"] for _n, r in records if isinstance(r.get("cwd"), str)), None)
    b = _Builder(cwd)
    session = next(
        (r["sessionId"] for _n, r in records if isinstance(r.get("sessionId"), str)), None
    )
    started = next(
        (r["timestamp"] for _n, r in records if isinstance(r.get("timestamp"), str)), None
    )
    for n, r in records:
        kind = r.get("type")
        message = r.get("message")
        if kind not in ("user", "assistant") or not isinstance(message, dict):
            b.drop(f"{kind or 'unknown'} records")
            continue
        if r.get("isSidechain") or r.get("isMeta"):
            b.drop("sub-agent and meta records")
            continue
        time = r.get("timestamp") if isinstance(r.get("timestamp"), str) else None
        content = message.get("content")
        if kind == "user" and isinstance(content, str):
            b.add("user", _clean_user_text(content), n, time)
            continue
        if not isinstance(content, list):
            continue
        for block in content:
            if not isinstance(block, dict):
                continue
            btype = block.get("type")
            if btype == "text":
                text = str(block.get("text", ""))
                b.add(kind, _clean_user_text(text) if kind == "user" else text, n, time)
            elif btype == "tool_use":
                raw = block.get("input")
                data: dict[str, Any] = raw if isinstance(raw, dict) else {}
                b.tool(block.get("id"), _claude_tool_line(b, str(block.get("name")), data), n, time)
            elif btype == "tool_result":
                result = block.get("content")
                detail = _text_of(result) if block.get("is_error") else ""
                b.drop("characters of tool output", len(_text_of(result)))
                b.outcome(block.get("tool_use_id"), not block.get("is_error"), detail)
            elif btype in ("thinking", "redacted_thinking"):
                b.drop("thinking blocks")
            else:
                b.drop(f"{btype} blocks")
    return Transcript(
        TranscriptFormat.CLAUDE_CODE,
        tuple(b.turns),
        tuple(b.files),
        session,
        cwd,
        started,
        b.dropped,
        tuple(b.findings),
    )


# --- Codex ------------------------------------------------------------------------------------


def _codex_command(args: dict[str, Any]) -> str:
    command = args.get("command") or args.get("cmd")
    if isinstance(command, list):
        parts = [str(c) for c in command]
        if len(parts) >= 3 and parts[1] in ("-lc", "-c"):
            return parts[2]
        return " ".join(parts)
    return str(command or "")


def _codex_call(b: _Builder, payload: dict[str, Any]) -> str:
    name = str(payload.get("name") or payload.get("type") or "tool")
    raw = payload.get("arguments") if "arguments" in payload else payload.get("input")
    args: dict[str, Any] = {}
    if isinstance(raw, str):
        try:
            parsed = json.loads(raw)
        except ValueError:
            parsed = None
        args = parsed if isinstance(parsed, dict) else {"input": raw}
    elif isinstance(raw, dict):
        args = raw
    action = payload.get("action")
    if isinstance(action, dict):  # local_shell_call
        args = {**action, **args}
    patch = args.get("input") if isinstance(args.get("input"), str) else ""
    command = _codex_command(args)
    if "*** Begin Patch" in command:
        patch, command = command, ""
    if patch and "*** " in patch:
        files = [b.touched(f.strip()) for f in _PATCH_FILE.findall(patch)]
        return f"apply_patch {', '.join(files)}".rstrip()
    if command:
        return f"{name}: {_one_line(command)}"
    return name


def _codex_outcome(output: Any) -> tuple[bool, str]:
    text = output if isinstance(output, str) else json.dumps(output)
    try:
        data = json.loads(text)
    except ValueError:
        data = None
    if isinstance(data, dict):
        raw = data.get("metadata")
        meta: dict[str, Any] = raw if isinstance(raw, dict) else {}
        code = meta.get("exit_code", data.get("exit_code"))
        body = str(data.get("output", ""))
        if isinstance(code, int):
            return code == 0, body
    found = _EXIT_CODE.search(text)
    if found:
        return found.group(1) == "0", text
    return True, ""


def _codex(records: list[tuple[int, dict[str, Any]]]) -> Transcript:
    meta: dict[str, Any] = next(
        (
            r["payload"]
            for _n, r in records
            if r.get("type") == "session_meta" and isinstance(r.get("payload"), dict)
        ),
        {},
    )
    cwd = meta.get("cwd") if isinstance(meta.get("cwd"), str) else None
    b = _Builder(cwd)
    items = [(n, r) for n, r in records if r.get("type") == "response_item"]
    has_messages = any(
        isinstance(r.get("payload"), dict) and r["payload"].get("type") == "message"
        for _n, r in items
    )
    for n, r in records:
        payload = r.get("payload")
        time = r.get("timestamp") if isinstance(r.get("timestamp"), str) else None
        if not isinstance(payload, dict):
            b.drop("records without a payload")
            continue
        ptype = payload.get("type")
        if (
            r.get("type") == "event_msg"
            and not has_messages
            and ptype in ("user_message", "agent_message")
        ):
            who = "user" if ptype == "user_message" else "assistant"
            b.add(who, str(payload.get("message", "")), n, time)
            continue
        if r.get("type") != "response_item":
            b.drop(f"{r.get('type')} records")
            continue
        if ptype == "message":
            role = payload.get("role")
            said = _text_of(payload.get("content"), ("input_text", "output_text", "text"))
            if role not in ("user", "assistant") or said.lstrip().startswith(_CODEX_BOILERPLATE):
                b.drop("instructions and context records")
                continue
            b.add(str(role), said, n, time)
        elif ptype in ("function_call", "custom_tool_call", "local_shell_call"):
            b.tool(payload.get("call_id") or payload.get("id"), _codex_call(b, payload), n, time)
        elif ptype in ("function_call_output", "custom_tool_call_output"):
            output = payload.get("output")
            b.drop("characters of tool output", len(str(output)))
            ok, detail = _codex_outcome(output)
            b.outcome(payload.get("call_id"), ok, "" if ok else detail)
        elif ptype == "reasoning":
            b.drop("reasoning records")
        else:
            b.drop(f"{ptype} records")
    return Transcript(
        TranscriptFormat.CODEX,
        tuple(b.turns),
        tuple(b.files),
        meta.get("id") if isinstance(meta.get("id"), str) else None,
        cwd,
        next((r["timestamp"] for _n, r in records if isinstance(r.get("timestamp"), str)), None),
        b.dropped,
        tuple(b.findings),
    )


# --- OpenClaw ---------------------------------------------------------------------------------

_OPENCLAW_EDITS = {"write", "edit", "apply_patch", "multi_edit"}


def _openclaw_tool_line(b: _Builder, name: str, args: dict[str, Any]) -> str:
    target = args.get("path") or args.get("file_path")
    if name in _OPENCLAW_EDITS and isinstance(target, str):
        return f"{name} {b.touched(target)}"
    patch = args.get("input") or args.get("patch")
    if name == "apply_patch" and isinstance(patch, str):
        files = [b.touched(f.strip()) for f in _PATCH_FILE.findall(patch)]
        return f"apply_patch {', '.join(files)}".rstrip()
    if isinstance(target, str):
        return f"{name} {b.short(target)}"
    for key in ("command", "pattern", "url", "query", "description"):
        value = args.get(key)
        if isinstance(value, str) and value:
            return f"{name}: {_one_line(value)}"
    return name


def _openclaw(records: list[tuple[int, dict[str, Any]]]) -> Transcript:
    header = next((r for _n, r in records if r.get("type") == "session"), {})
    cwd = header.get("cwd") if isinstance(header.get("cwd"), str) else None
    b = _Builder(cwd)
    for n, r in records:
        message = r.get("message")
        if r.get("type") != "message" or not isinstance(message, dict):
            if r.get("type") != "session":
                b.drop(f"{r.get('type') or 'unknown'} records")
            continue
        time = r.get("timestamp") if isinstance(r.get("timestamp"), str) else None
        role = message.get("role")
        content = message.get("content")
        if role == "toolResult":
            result = _text_of(content)
            b.drop("characters of tool output", len(result))
            failed = bool(message.get("isError"))
            b.outcome(message.get("toolCallId"), not failed, result if failed else "")
            continue
        if role not in ("user", "assistant"):
            b.drop(f"{role or 'unknown'} messages")
            continue
        if isinstance(content, str):
            b.add(role, content, n, time)
            continue
        for block in content if isinstance(content, list) else ():
            if not isinstance(block, dict):
                continue
            btype = block.get("type")
            if btype == "text":
                b.add(role, str(block.get("text", "")), n, time)
            elif btype == "toolCall":
                raw = block.get("arguments")
                args: dict[str, Any] = raw if isinstance(raw, dict) else {}
                b.tool(
                    block.get("id"), _openclaw_tool_line(b, str(block.get("name")), args), n, time
                )
            elif btype in ("thinking", "redacted_thinking"):
                b.drop("thinking blocks")
            else:
                b.drop(f"{btype} blocks")
    session = header.get("id") if isinstance(header.get("id"), str) else None
    started = header.get("timestamp") if isinstance(header.get("timestamp"), str) else None
    return Transcript(
        TranscriptFormat.OPENCLAW,
        tuple(b.turns),
        tuple(b.files),
        session,
        cwd,
        started
        or next((r["timestamp"] for _n, r in records if isinstance(r.get("timestamp"), str)), None),
        b.dropped,
        tuple(b.findings),
    )


# --- Hermes Agent (OpenAI chat messages) ------------------------------------------------------


_MEMORY_CONTEXT = re.compile(r"<memory-context>.*?</memory-context>", re.DOTALL)


def from_messages(
    messages: list[Any],
    *,
    first_line: int = 1,
    time: str | None = None,
    session_id: str | None = None,
) -> Transcript:
    """OpenAI-style chat messages as turns: what Hermes Agent hands a memory provider's
    `sync_turn(..., messages=...)` and `on_session_end(messages)` (agent/memory_provider.py in
    hermes-agent 0.19.0). `user` and `assistant` text is kept (an injected
    `<memory-context>` block, which Hermes adds to the API copy only, is dropped if present),
    each `tool_calls` item folds into one tool line and its `tool` message into that line's
    outcome, `system` messages are left out. A turn's `line` is its message's place in the
    session, counted from `first_line`."""
    b = _Builder(None)
    for offset, message in enumerate(messages):
        if not isinstance(message, dict):
            continue
        line = first_line + offset
        role = message.get("role")
        content = message.get("content")
        if role == "user":
            b.add("user", _MEMORY_CONTEXT.sub("", _text_of(content)), line, time)
        elif role == "assistant":
            b.add("assistant", _text_of(content), line, time)
            for call in message.get("tool_calls") or ():
                fn = call.get("function") if isinstance(call, dict) else None
                if isinstance(fn, dict):
                    b.tool(call.get("id"), _codex_call(b, fn), line, time)
        elif role == "tool":
            ok, detail = _codex_outcome(_text_of(content))
            b.outcome(message.get("tool_call_id"), ok, detail)
        else:
            b.drop(f"{role or 'unknown'} messages")
    return Transcript(
        TranscriptFormat.HERMES,
        tuple(b.turns),
        tuple(b.files),
        session_id,
        dropped=b.dropped,
        redactions=tuple(b.findings),
    )


# --- entry points -----------------------------------------------------------------------------


def _plain(text: str) -> Transcript:
    lines = text.splitlines()
    found: list[Finding] = []
    turns = []
    for n, line in enumerate(lines, 1):
        clean, hits = redact_outbound(line)
        found.extend(hits)
        turns.append(Turn(n, "line", clean, n))
    return Transcript(TranscriptFormat.TEXT, tuple(turns), redactions=tuple(found))


def parse_transcript(text: str) -> Transcript:
    """The session as numbered turns (JSONL from Claude Code, Codex or OpenClaw) or lines
    (anything else)."""
    records = _records(text)
    lines = sum(1 for ln in text.splitlines() if ln.strip())
    kind = detect(records, lines)
    if kind == TranscriptFormat.CLAUDE_CODE:
        return _claude(records)
    if kind == TranscriptFormat.CODEX:
        return _codex(records)
    if kind == TranscriptFormat.OPENCLAW:
        return _openclaw(records)
    return _plain(text)


def read_tail(path: Path, max_bytes: int = TAIL_BYTES) -> tuple[str, str | None]:
    """The last `max_bytes` of a transcript (whole lines) and the time of its first record.

    The stop hook runs after every turn: it needs the last request and the files touched, not
    the whole of a long session.
    """
    with open(path, "rb") as fh:
        head = fh.readline(1 << 16).decode("utf-8", "replace")
        size = fh.seek(0, 2)
        start = max(0, size - max_bytes)
        fh.seek(start)
        data = fh.read()
    text = data.decode("utf-8", "replace")
    if start:
        text = text.split("\n", 1)[1] if "\n" in text else ""
    started = None
    try:
        first = json.loads(head)
        if isinstance(first, dict) and isinstance(first.get("timestamp"), str):
            started = first["timestamp"]
    except ValueError:
        pass
    return text, started
