"""Candidate facts from a session transcript (the model call itself is `bank.llm`).

`extract_facts` numbers a parsed transcript's units (the turns of a Claude Code or Codex session,
see `bank.transcripts`, or the lines of plain text), cuts them into chunks of whole units, and
asks the model (forced tool use: the reply is a `record_facts` call whose input follows a JSON
schema) for the facts worth keeping, each with its type, text and the units it rests on. Every
chunk goes through `secrets.redact_outbound` before it is sent. The instructions and
the tool definition never change between calls, so they come first and carry `cache_control`
(`bank.llm`): later chunks (and sessions within the cache lifetime) read them from the prompt
cache, once the prefix reaches the model's minimum cacheable length.

All chunks are extracted before anything is returned: an API error, a timeout or a malformed
reply on chunk 3 of 4 fails the whole call, and the caller writes nothing. The SDK retries what
it considers retryable (429, 5xx including 529 overloaded, timeouts, connection errors) with its
own backoff; the number of retries and the timeout come from `[llm]` in vaultmem.toml.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from vaultmem.bank.model import BANK_TYPES as FACT_TYPES
from vaultmem.bank.model import MAX_TEXT
from vaultmem.bank.transcripts import Transcript, TranscriptFormat
from vaultmem.core import llm
from vaultmem.core.config import LLMSettings
from vaultmem.core.environment import ENV_ANTHROPIC_KEY
from vaultmem.core.errors import UsageError
from vaultmem.core.records import record
from vaultmem.core.secrets import Finding, redact_outbound
from vaultmem.core.tags import is_tag

TOOL_NAME = "record_facts"
MAX_QUOTE_LINES = 12
MAX_QUOTE_CHARS = 1500

INSTRUCTIONS = """\
You read the transcript of a working session between a person and an AI agent, and pick out what
is worth remembering in later sessions. The facts you record are proposals: a person reviews each
one before it becomes shared memory, so fewer, better facts beat many weak ones.

Record a fact only if it will still matter in a week and a later session could not easily find it
again in the code or documents:
- decision: a choice that was made, with its reason ("Use Stripe Checkout, not Elements, because ...").
- failure: something that went wrong, why, and the fix adopted.
- preference: how the person wants things done, as they stated or corrected it.
- user: a non-obvious fact about the person (role, schedule, responsibilities).
- project: a fact about the project (deadlines, constraints, who owns what).
- reference: where something lives (a document, a dashboard, a command).
- fact: anything else durable and non-obvious.

Do not record: small talk, steps of the work itself, things that were only tried or guessed,
anything the transcript says is temporary, and never credentials, tokens or passwords.

Write each fact as one to three plain sentences that make sense on their own, without "the user
said" or "in this session". Give the first and last numbers of the transcript lines or turns the
fact rests on (the numbers at the start of each line or turn). Tool lines only say which tool
ran on what and whether it worked. Record nothing if nothing qualifies: an empty list is a
good answer. Call the record_facts tool exactly once.
"""

TOOL: dict[str, Any] = {
    "name": TOOL_NAME,
    "description": "Record the durable facts found in the transcript (possibly none).",
    "input_schema": {
        "type": "object",
        "properties": {
            "facts": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "type": {"type": "string", "enum": list(FACT_TYPES)},
                        "text": {"type": "string", "description": "The fact, 1-3 sentences."},
                        "line_start": {"type": "integer", "minimum": 1},
                        "line_end": {"type": "integer", "minimum": 1},
                        "tags": {"type": "array", "items": {"type": "string"}},
                    },
                    "required": ["type", "text", "line_start", "line_end"],
                },
            }
        },
        "required": ["facts"],
    },
}


@record
class Candidate:
    """One fact the model proposed, with the transcript lines it rests on."""

    type: str
    text: str
    line_start: int
    line_end: int
    quote: str
    tags: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        out = dict(self.__dict__)
        out["tags"] = list(self.tags)
        return out


@record
class Extraction:
    candidates: tuple[Candidate, ...]
    skipped: tuple[str, ...]  # why individual proposals were dropped (unknown type, empty, ...)
    chunks: int
    model: str
    usage: dict[str, int]

    def to_dict(self) -> dict[str, Any]:
        return {
            "candidates": [c.to_dict() for c in self.candidates],
            "skipped": list(self.skipped),
            "chunks": self.chunks,
            "model": self.model,
            "usage": self.usage,
        }


def chunk_lines(lines: Sequence[str], chunk_chars: int) -> list[tuple[int, int]]:
    """Cut numbered lines into (first, last) 1-based ranges of at most ~chunk_chars characters.

    A line longer than a chunk gets a chunk of its own: lines are never split, so every line
    number the model cites is a real line.
    """
    ranges: list[tuple[int, int]] = []
    start, size = 1, 0
    for n, line in enumerate(lines, 1):
        cost = len(line) + 8
        if size and size + cost > chunk_chars:
            ranges.append((start, n - 1))
            start, size = n, 0
        size += cost
    if lines:
        ranges.append((start, len(lines)))
    return ranges


def _numbered(units: Sequence[str], first: int, last: int) -> str:
    return "\n".join(f"{n}: {units[n - 1]}" for n in range(first, last + 1))


def _quote(transcript: Transcript, first: int, last: int) -> str:
    """The units a fact rests on, each labelled so a person can find it in the file."""
    picked = transcript.turns[first - 1 : min(last, first + MAX_QUOTE_LINES - 1)]
    if transcript.format == TranscriptFormat.TEXT:
        text = "\n".join(f"L{t.n}: {t.text}" for t in picked)
    else:
        text = "\n".join(
            f"T{t.n} (line {t.line}{', ' + t.time[:16].replace('T', ' ') if t.time else ''}) "
            + " ".join(t.render().split())
            for t in picked
        )
    if len(text) > MAX_QUOTE_CHARS:
        text = text[: MAX_QUOTE_CHARS - 1].rstrip() + "…"
    elif last - first + 1 > MAX_QUOTE_LINES:
        text += "\n…"
    return text


@record
class Chunk:
    """One request's worth of the transcript: units first..last, as the model will read them."""

    first: int
    last: int
    text: str
    redactions: tuple[Finding, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"first": self.first, "last": self.last, "chars": len(self.text), "text": self.text}


def plan_chunks(transcript: Transcript, settings: LLMSettings) -> list[Chunk]:
    """Exactly what would be sent, chunk by chunk (no API call): `retain --from --dry-run`."""
    units = transcript.units
    ranges = chunk_lines(units, max(settings.chunk_chars, 1000))
    total = len(units)
    noun = "lines" if transcript.unit == "line" else "turns"
    out = []
    for i, (first, last) in enumerate(ranges, 1):
        header = (
            f"Transcript {noun} {first}-{last} of {total} (part {i} of {len(ranges)}; "
            f"{transcript.format.value}):\n\n"
        )
        # what leaves the machine is redacted, whatever was redacted before
        text, found = redact_outbound(header + _numbered(units, first, last))
        out.append(Chunk(first, last, text, tuple(found)))
    return out


def _parse_reply(
    reply: Any, transcript: Transcript, first: int, last: int, skipped: list[str]
) -> list[Candidate]:
    """The facts in one reply; a reply without a well-formed tool call raises LLMError."""
    data = llm.tool_input(
        reply, TOOL_NAME, "raise [llm] max_tokens or lower [llm] chunk_chars in vaultmem.toml"
    )
    facts = data.get("facts")
    if not isinstance(facts, list):
        raise llm.malformed("'facts' is not a list")
    out = []
    for i, item in enumerate(facts, 1):
        if not isinstance(item, dict):
            skipped.append(f"lines {first}-{last}, item {i}: not an object")
            continue
        kind, text = item.get("type"), item.get("text")
        if kind not in FACT_TYPES:
            skipped.append(f"lines {first}-{last}, item {i}: unknown type {kind!r}")
            continue
        if not isinstance(text, str) or not text.strip():
            skipped.append(f"lines {first}-{last}, item {i}: empty text")
            continue
        if len(text) > MAX_TEXT:
            skipped.append(f"lines {first}-{last}, item {i}: {len(text)} characters, too long")
            continue
        start, end = item.get("line_start"), item.get("line_end")
        if not isinstance(start, int) or isinstance(start, bool):
            start = first
        if not isinstance(end, int) or isinstance(end, bool):
            end = start
        start = min(max(start, first), last)
        end = min(max(end, start), last)
        raw_tags = item.get("tags")
        # a tag the bank would refuse is dropped, not allowed to fail the whole batch
        tags = tuple(
            dict.fromkeys(
                clean
                for t in (raw_tags if isinstance(raw_tags, list) else [])
                if isinstance(t, str) and is_tag(clean := t.strip().lstrip("#").replace(" ", "-"))
            )
        )
        out.append(
            Candidate(
                type=kind,
                text=" ".join(text.split()),
                line_start=start,
                line_end=end,
                quote=_quote(transcript, start, end),
                tags=tags,
            )
        )
    return out


def extract_facts(
    transcript: Transcript,
    *,
    settings: LLMSettings,
    api_key: str | None,
    base_url: str | None = None,
) -> Extraction:
    """Ask the model for candidate facts in a transcript. All chunks or an LLMError (exit 7).

    Long sessions are cut into chunks of whole turns (or lines), never refused."""
    key = llm.require_key(
        api_key,
        "retain --from",
        f"export {ENV_ANTHROPIC_KEY}=... (see what would be sent with --dry-run; or retain "
        "facts one by one: vaultmem retain TEXT --type T)",
    )
    if not any(u.strip() for u in transcript.units):
        raise UsageError(
            "the transcript is empty (no dialogue found)",
            "pass a file with the session, or '-' for stdin",
        )
    chunks = plan_chunks(transcript, settings)
    sess = llm.session(settings, key, base_url)
    skipped: list[str] = []
    found: list[Candidate] = []
    for chunk in chunks:
        reply = llm.call(sess, INSTRUCTIONS, TOOL, chunk.text)
        found += _parse_reply(reply, transcript, chunk.first, chunk.last, skipped)
    return Extraction(
        candidates=tuple(found),
        skipped=tuple(skipped),
        chunks=len(chunks),
        model=settings.model,
        usage=sess.usage,
    )
