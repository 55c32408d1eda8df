"""Transcripts, not raw JSON: Claude Code and Codex sessions reach the model as dialogue.

The fixtures under tests/fixtures/transcripts/ were written by hand from the published
descriptions of each format (their first line cites the source). The real `anthropic` client
talks to the local fake Messages API; the tests assert on the request body it received.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests._cli import run_cli
from tests._fake_anthropic import FakeAnthropic, fake_anthropic, tool_reply
from vaultmem.bank.transcripts import TranscriptFormat, parse_transcript, read_tail

__all__ = ["fake_anthropic"]

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "transcripts"
CLAUDE = FIXTURES / "claude-code-session.jsonl"
CODEX = FIXTURES / "codex-rollout.jsonl"
# what must never reach the model: runtime bookkeeping, thinking, tool payloads, secrets
NEVER = (
    "SECRET-THOUGHTS",
    "signature",
    "TOOL-OUTPUT-MARKER",
    "ORIGINAL-FILE-MARKER",
    "SIDECHAIN-MARKER",
    "REMINDER-MARKER",
    "SUMMARY-MARKER",
    "REASONING-MARKER",
    "ENV-MARKER",
    "INSTRUCTIONS-MARKER",
    "encrypted",
    "parentUuid",
    "sessionId",
    "8f3c2a9e-1d4b",
    "toolu_01",
    "call_rg",
    "/home/ella/orbit",
    "sk_live_51HxQeT2eZvKYlo2",
    "ghp_abcdefghij",
    "line 37 of the webhook handler",
)


def _settings(vault: Path, **extra: object) -> None:
    path = vault / "vaultmem.toml"
    block = "".join(f"{k} = {json.dumps(v)}\n" for k, v in {"timeout": 5.0, **extra}.items())
    path.write_text(re.sub(r"^\[llm\]\n", "[llm]\n" + block, path.read_text(), count=1, flags=re.M))


def _sent(fake: FakeAnthropic) -> list[str]:
    return [r.body["messages"][0]["content"] for r in fake.requests]


def test_claude_code_transcript_is_dialogue_and_tool_lines() -> None:
    t = parse_transcript(CLAUDE.read_text())
    assert t.format == TranscriptFormat.CLAUDE_CODE
    assert t.session_id == "8f3c2a9e-1d4b-4c6e-9a7f-2b5d8e1c3f40"
    text = "\n".join(t.units)
    for marker in NEVER:
        assert marker not in text, marker
    assert "tool: Read api/webhooks.py → ok" in t.units
    assert "tool: Edit api/webhooks.py → ok" in t.units
    assert any(u.startswith("tool: Bash: pytest -q") and "→ error: FAILED" in u for u in t.units)
    assert t.files == ("api/webhooks.py", "api/idempotency.py")
    assert t.last_request and t.last_request.startswith("Good. From now on every Stripe call")
    assert [f.kind for f in t.redactions] == ["stripe-key"]
    assert t.dropped["thinking blocks"] == 1 and t.dropped["characters of tool output"] > 30_000


def test_codex_rollout_is_dialogue_and_tool_lines() -> None:
    t = parse_transcript(CODEX.read_text())
    assert t.format == TranscriptFormat.CODEX
    text = "\n".join(t.units)
    for marker in NEVER:
        assert marker not in text, marker
    assert t.units[0].startswith("user: Checkout must send an Idempotency-Key header")
    assert "tool: apply_patch src/checkout.ts → ok" in t.units
    assert any("npm test -- checkout → error" in u for u in t.units)
    assert t.files == ("src/checkout.ts",)
    # the event_msg copies of the messages are not counted twice
    assert sum(1 for u in t.units if "Idempotency-Key; one test still" in u) == 1


def test_plain_text_stays_lines() -> None:
    t = parse_transcript("user: hi\nagent: hello\n")
    assert t.format == TranscriptFormat.TEXT and t.units == ("user: hi", "agent: hello")


def test_garbage_and_half_json_is_plain_text() -> None:
    t = parse_transcript('{"a": 1}\nnot json\nmore prose\n{"broken": \n')
    assert t.format == TranscriptFormat.TEXT and len(t.units) == 4


def test_tail_reads_whole_lines(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(CLAUDE.read_bytes())
    text, started = read_tail(path, max_bytes=3000)
    assert started is None  # the fixture's first line has no timestamp
    assert all(json.loads(line) for line in text.splitlines())
    assert parse_transcript(text).last_request


@pytest.mark.parametrize(
    ("fixture", "must"),
    [
        (CLAUDE, "user: Good. From now on every Stripe call gets an idempotency key"),
        (CODEX, "tool: apply_patch src/checkout.ts → ok"),
    ],
)
def test_only_dialogue_reaches_the_messages_api(
    vault: Path, fake_anthropic: FakeAnthropic, fixture: Path, must: str
) -> None:
    _settings(vault)
    fake_anthropic.queue(
        tool_reply(
            [
                {
                    "type": "preference",
                    "text": "Every Stripe call carries an idempotency key.",
                    "line_start": 1,
                    "line_end": 2,
                }
            ]
        )
    )
    res = run_cli("retain", "--from", str(fixture), "--vault", str(vault), "--agent", "ella")
    assert res.exit_code == 0, res.stderr
    (sent,) = _sent(fake_anthropic)
    assert must in sent
    assert re.search(r"^1: user: ", sent, re.M) and "turns 1-" in sent
    for marker in NEVER:
        assert marker not in sent, marker
    assert "[redacted:" in sent
    assert "redacted a credential" in res.stderr
    body = json.dumps(fake_anthropic.requests[0].body)
    assert '"signature"' not in body and "uuid" not in body
    (note,) = sorted((vault / "agents" / "ella" / "bank").glob("*.md"))
    text = note.read_text()
    assert f"{fixture.name}#T1-T2" in text
    assert "> T1 (line 4, 2026-11-29" in text  # a person finds the turn by file line and time


def test_long_session_is_chunked_by_whole_turns(
    vault: Path, fake_anthropic: FakeAnthropic, tmp_path: Path
) -> None:
    _settings(vault, chunk_chars=1000)
    lines = [json.dumps({"type": "session_meta", "payload": {"id": "s1", "cwd": "/w"}})]
    for n in range(60):
        for role, kind in (("user", "input_text"), ("assistant", "output_text")):
            lines.append(
                json.dumps(
                    {
                        "timestamp": f"2026-11-29T10:{n:02d}:00.000Z",
                        "type": "response_item",
                        "payload": {
                            "type": "message",
                            "role": role,
                            "content": [{"type": kind, "text": f"{role} turn {n} " + "x" * 40}],
                        },
                    }
                )
            )
    path = tmp_path / "rollout-long.jsonl"
    path.write_text("\n".join(lines) + "\n")
    dry = run_cli(
        "retain", "--from", str(path), "--dry-run", "--json", "--vault", str(vault),
        "--agent", "ella",
    )  # fmt: skip
    plan = json.loads(dry.stdout)
    assert len(plan["chunks"]) > 3 and fake_anthropic.requests == []
    fake_anthropic.queue(*(tool_reply([]) for _ in plan["chunks"]))
    res = run_cli("retain", "--from", str(path), "--vault", str(vault), "--agent", "ella")
    assert res.exit_code == 0, res.stderr
    sent = _sent(fake_anthropic)
    assert len(sent) == len(plan["chunks"])
    firsts = [int(re.search(r"turns (\d+)-(\d+) of 120", s).group(1)) for s in sent]  # type: ignore[union-attr]
    assert firsts[0] == 1 and firsts == sorted(firsts)
