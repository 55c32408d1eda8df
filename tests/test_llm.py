"""`retain --from TRANSCRIPT`: the real anthropic client against a local fake Messages API."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests._cli import run_cli
from tests._fake_anthropic import (
    FakeAnthropic,
    error_reply,
    fake_anthropic,
    overloaded,
    text_reply,
    tool_reply,
)
from vaultmem.bank.extraction import chunk_lines
from vaultmem.core.config import LLMSettings

__all__ = ["fake_anthropic"]  # the fixture, imported for pytest

TRANSCRIPT = """\
user: the booking API double-charges when Stripe retries
agent: the webhook arrives before the booking commit; I added an idempotency key on the charge
user: good. From now on every Stripe call gets an idempotency key, please
agent: noted. Also, Marta is away until January.
user: and keep answers short, conclusion first
"""


def _settings(vault: Path, **extra: object) -> None:
    """Short timeouts and retries for tests; extra [llm] keys."""
    path = vault / "vaultmem.toml"
    text = path.read_text()
    lines = {"timeout": 5.0, "max_retries": 2, **extra}
    block = "".join(f"{k} = {json.dumps(v)}\n" for k, v in lines.items())
    path.write_text(re.sub(r"^\[llm\]\n", "[llm]\n" + block, text, count=1, flags=re.MULTILINE))


@pytest.fixture
def session(vault: Path, tmp_path: Path) -> Path:
    _settings(vault)
    path = tmp_path / "session.txt"
    path.write_text(TRANSCRIPT)
    return path


def _bank(vault: Path, agent: str = "ella") -> list[Path]:
    folder = vault / "agents" / agent / "bank"
    return sorted(folder.glob("*.md")) if folder.exists() else []


FACTS = [
    {
        "type": "decision",
        "text": "Every Stripe call carries an idempotency key, so a retried webhook cannot charge twice.",
        "line_start": 2,
        "line_end": 3,
        "tags": ["payments"],
    },
    {"type": "user", "text": "Marta is away until January.", "line_start": 4, "line_end": 4},
]


def test_tool_use_reply_lands_as_pending_facts(
    vault: Path, session: Path, fake_anthropic: FakeAnthropic
) -> None:
    fake_anthropic.queue(tool_reply(FACTS))
    res = run_cli("retain", "--from", str(session), "--vault", str(vault), "--agent", "ella")
    assert res.exit_code == 0, res.stderr
    assert res.stdout.count("inserted") == 2
    notes = _bank(vault)
    assert len(notes) == 2
    text = "\n".join(p.read_text() for p in notes)
    assert "status: pending" in text and "author: ella" in text
    assert "session.txt#L2-L3" in text and "session.txt#L4-L4" in text
    assert "## Evidence" in text and "> L3: user: good. From now on every Stripe call" in text
    assert "- payments" in text
    # what the client sent: forced tool use, cached stable instructions, settings from the toml
    (req,) = fake_anthropic.requests
    assert req.path == "/v1/messages"
    sent_key = req.headers.get("x-api-key") or req.headers.get("authorization", "")
    assert sent_key.removeprefix("Bearer ") == "sk-ant-test-not-a-real-key"
    body = req.body
    assert body["model"] == "claude-haiku-4-5" and body["max_tokens"] == 4096
    assert body["tool_choice"] == {"type": "tool", "name": "record_facts"}
    assert body["tools"][0]["name"] == "record_facts"
    assert body["tools"][0]["cache_control"] == {"type": "ephemeral"}
    assert body["system"][0]["cache_control"] == {"type": "ephemeral"}
    assert "1: user: the booking API double-charges" in body["messages"][0]["content"]


def test_json_output_and_dedupe_against_memories(
    vault: Path, session: Path, fake_anthropic: FakeAnthropic
) -> None:
    memory_text = (vault / "memory" / "production-setup.md").read_text().split("---\n", 2)[2]
    facts = [
        *FACTS,
        {"type": "reference", "text": memory_text.strip(), "line_start": 1, "line_end": 1},
    ]
    fake_anthropic.queue(tool_reply(facts))
    res = run_cli(
        "retain", "--from", str(session), "--vault", str(vault), "--agent", "ella", "--json"
    )
    assert res.exit_code == 0, res.stderr
    data = json.loads(res.stdout)
    outcomes = [r["outcome"] for r in data["results"]]
    assert outcomes == ["inserted", "inserted", "duplicate"]
    assert data["results"][2]["target"] == "m-bacc2cb0"
    assert data["usage"]["cache_read_input_tokens"] == 900
    assert "evidence: 2" in (vault / "memory" / "production-setup.md").read_text()
    assert len(_bank(vault)) == 2


def test_malformed_reply_writes_nothing(
    vault: Path, session: Path, fake_anthropic: FakeAnthropic
) -> None:
    fake_anthropic.queue(text_reply("Here are the facts: ..."))
    res = run_cli("retain", "--from", str(session), "--vault", str(vault), "--agent", "ella")
    assert res.exit_code == 7
    assert "malformed" in res.stderr and "nothing was written" in res.stderr
    assert _bank(vault) == []


def test_facts_not_a_list_is_malformed(
    vault: Path, session: Path, fake_anthropic: FakeAnthropic
) -> None:
    reply = tool_reply([])
    reply.body["content"][0]["input"] = {"facts": "none"}
    fake_anthropic.queue(reply)
    res = run_cli("retain", "--from", str(session), "--vault", str(vault), "--agent", "ella")
    assert res.exit_code == 7 and "malformed" in res.stderr
    assert _bank(vault) == []


def test_bad_items_are_skipped_with_a_warning(
    vault: Path, session: Path, fake_anthropic: FakeAnthropic
) -> None:
    fake_anthropic.queue(
        tool_reply([FACTS[1], {"type": "gossip", "text": "x", "line_start": 1, "line_end": 1}])
    )
    res = run_cli("retain", "--from", str(session), "--vault", str(vault), "--agent", "ella")
    assert res.exit_code == 0
    assert "unknown type 'gossip'" in res.stderr
    assert len(_bank(vault)) == 1


def test_cut_off_reply_is_an_error(
    vault: Path, session: Path, fake_anthropic: FakeAnthropic
) -> None:
    fake_anthropic.queue(tool_reply(FACTS, stop_reason="max_tokens"))
    res = run_cli("retain", "--from", str(session), "--vault", str(vault), "--agent", "ella")
    assert res.exit_code == 7 and "max_tokens" in res.stderr
    assert _bank(vault) == []


def test_overloaded_then_success_is_retried_by_the_sdk(
    vault: Path, session: Path, fake_anthropic: FakeAnthropic
) -> None:
    fake_anthropic.queue(overloaded(), tool_reply(FACTS))
    res = run_cli("retain", "--from", str(session), "--vault", str(vault), "--agent", "ella")
    assert res.exit_code == 0, res.stderr
    assert len(fake_anthropic.requests) == 2
    assert len(_bank(vault)) == 2


def test_overloaded_beyond_the_retries_fails_cleanly(
    vault: Path, session: Path, fake_anthropic: FakeAnthropic
) -> None:
    fake_anthropic.queue(overloaded(), overloaded(), overloaded())
    res = run_cli("retain", "--from", str(session), "--vault", str(vault), "--agent", "ella")
    assert res.exit_code == 7
    assert "529 after retries" in res.stderr and "nothing was written" in res.stderr
    assert len(fake_anthropic.requests) == 3  # one try + max_retries = 2
    assert _bank(vault) == []


def test_401_is_reported_and_not_retried(
    vault: Path, session: Path, fake_anthropic: FakeAnthropic
) -> None:
    fake_anthropic.queue(error_reply(401, "authentication_error", "invalid x-api-key"))
    res = run_cli(
        "retain", "--from", str(session), "--vault", str(vault), "--agent", "ella", "--json"
    )
    assert res.exit_code == 7
    assert "401" in res.stderr and "ANTHROPIC_API_KEY" in res.stderr
    assert json.loads(res.stdout)["error"]["type"] == "LLMError"
    assert len(fake_anthropic.requests) == 1
    assert _bank(vault) == []


def test_no_key_exits_7_before_any_request(
    vault: Path, session: Path, fake_anthropic: FakeAnthropic, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    res = run_cli("retain", "--from", str(session), "--vault", str(vault), "--agent", "ella")
    assert res.exit_code == 7
    assert "ANTHROPIC_API_KEY is not set" in res.stderr
    assert fake_anthropic.requests == []


def test_no_key_in_a_real_process(vault: Path, session: Path) -> None:
    from tests._cli import run_proc

    proc = run_proc("retain", "--from", str(session), "--vault", str(vault), "--agent", "ella")
    assert proc.returncode == 7 and "ANTHROPIC_API_KEY" in proc.stderr
    assert proc.stdout == ""


def test_long_transcript_is_chunked_and_a_failing_chunk_writes_nothing(
    vault: Path, tmp_path: Path, fake_anthropic: FakeAnthropic
) -> None:
    _settings(vault, chunk_chars=1000)
    lines = [f"user: line {n} about the booking service and its capacity rules" for n in range(60)]
    path = tmp_path / "long.txt"
    path.write_text("\n".join(lines) + "\n")
    ranges = chunk_lines(lines, 1000)
    assert len(ranges) >= 3
    fake_anthropic.queue(
        tool_reply([FACTS[0]]), text_reply("oops"), *[tool_reply([]) for _ in ranges]
    )
    res = run_cli("retain", "--from", str(path), "--vault", str(vault), "--agent", "ella")
    assert res.exit_code == 7
    assert len(fake_anthropic.requests) == 2  # stopped at the bad chunk
    assert _bank(vault) == []  # chunk 1's fact was not written either
    # and when every chunk answers, each one got its own line range
    fake_anthropic.requests.clear()
    fake_anthropic.replies.clear()
    fake_anthropic.queue(*[tool_reply([]) for _ in ranges])
    res = run_cli("retain", "--from", str(path), "--vault", str(vault), "--agent", "ella")
    assert res.exit_code == 0 and "nothing worth retaining" in res.stdout
    contents = [r.body["messages"][0]["content"] for r in fake_anthropic.requests]
    assert len(contents) == len(ranges)
    assert contents[1].startswith(f"Transcript lines {ranges[1][0]}-{ranges[1][1]} of 60")


def test_chunks_keep_whole_lines() -> None:
    lines = ["x" * 50] * 30 + ["y" * 3000] + ["z"]
    ranges = chunk_lines(lines, 1000)
    covered = [n for a, b in ranges for n in range(a, b + 1)]
    assert covered == list(range(1, len(lines) + 1))
    assert (31, 31) in ranges  # the long line alone
    assert LLMSettings().chunk_chars > 1000


def test_dry_run_shows_what_would_be_sent_without_a_request(
    vault: Path, session: Path, fake_anthropic: FakeAnthropic
) -> None:
    res = run_cli(
        "retain", "--from", "-", "--dry-run", "--vault", str(vault), "--agent", "ella",
        stdin=TRANSCRIPT,
    )  # fmt: skip
    assert res.exit_code == 0, res.stderr
    assert "1 request(s)" in res.stdout and "lines 1-5" in res.stdout
    assert "3: user: good. From now on every Stripe call" in res.stdout
    assert "nothing was sent and nothing was written" in res.stderr
    assert fake_anthropic.requests == [] and _bank(vault) == []


def test_dry_run_needs_no_key(vault: Path, session: Path) -> None:
    res = run_cli(
        "retain", "--from", str(session), "--dry-run", "--json", "--vault", str(vault),
        "--agent", "ella",
    )  # fmt: skip
    assert res.exit_code == 0, res.stderr
    data = json.loads(res.stdout)
    assert data["dry_run"] and data["transcript"]["format"] == "text"
    assert [c["first"] for c in data["chunks"]] == [1]


def test_transcript_over_the_cap_is_chunked_not_refused(
    vault: Path, tmp_path: Path, fake_anthropic: FakeAnthropic
) -> None:
    _settings(vault, chunk_chars=1000)
    toml = vault / "vaultmem.toml"
    toml.write_text(
        toml.read_text().replace("max_transcript_chars = 400000", "max_transcript_chars = 100")
    )
    path = tmp_path / "big.txt"
    path.write_text("".join(f"user: hello number {n}, about the launch\n" for n in range(100)))
    fake_anthropic.queue(*(tool_reply([]) for _ in range(6)))
    res = run_cli("retain", "--from", str(path), "--vault", str(vault), "--agent", "ella")
    assert res.exit_code == 0, res.stderr
    assert "max_transcript_chars" in res.stderr and "several requests" in res.stderr
    assert len(fake_anthropic.requests) >= 4


def test_secret_in_a_proposed_fact_is_redacted(
    vault: Path, session: Path, fake_anthropic: FakeAnthropic
) -> None:
    key = "AKIA" + "ABCDEFGHIJKLMNOP"
    fake_anthropic.queue(
        tool_reply(
            [
                {
                    "type": "reference",
                    "text": f"The deploy user's key is {key}",
                    "line_start": 1,
                    "line_end": 1,
                }
            ]
        )
    )
    res = run_cli("retain", "--from", str(session), "--vault", str(vault), "--agent", "ella")
    assert res.exit_code == 0, res.stderr
    (note,) = _bank(vault)
    assert key not in note.read_text() and "[redacted:" in note.read_text()
    assert "redacted" in res.stderr


def test_transcript_and_text_together_is_a_usage_error(vault: Path, session: Path) -> None:
    res = run_cli("retain", "x", "--from", str(session), "--vault", str(vault), "--agent", "ella")
    assert res.exit_code == 2


@pytest.mark.slow
def test_timeout_is_reported_after_the_retries(
    vault: Path, tmp_path: Path, fake_anthropic: FakeAnthropic
) -> None:
    _settings(vault, timeout=0.3, max_retries=1)
    path = tmp_path / "s.txt"
    path.write_text(TRANSCRIPT)
    slow = tool_reply(FACTS)
    slow.delay = 1.0
    fake_anthropic.queue(slow, slow)
    res = run_cli("retain", "--from", str(path), "--vault", str(vault), "--agent", "ella")
    assert res.exit_code == 7
    assert "did not answer within 0.3s" in res.stderr and "nothing was written" in res.stderr
    assert len(fake_anthropic.requests) == 2  # the SDK retried the timeout once
    assert _bank(vault) == []


def test_unreachable_api_is_reported(
    vault: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import socket

    _settings(vault, max_retries=0)
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-not-a-real-key")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", f"http://127.0.0.1:{port}")
    path = tmp_path / "s.txt"
    path.write_text(TRANSCRIPT)
    res = run_cli("retain", "--from", str(path), "--vault", str(vault), "--agent", "ella")
    assert res.exit_code == 7 and "cannot reach the Anthropic API" in res.stderr
    assert _bank(vault) == []


def test_odd_tags_and_overlong_facts_do_not_sink_the_batch(
    vault: Path, session: Path, fake_anthropic: FakeAnthropic
) -> None:
    fake_anthropic.queue(
        tool_reply(
            [
                {**FACTS[1], "tags": ["c++", "front end", "#people", 7]},
                {"type": "fact", "text": "x " * 3000, "line_start": 1, "line_end": 1},
            ]
        )
    )
    res = run_cli("retain", "--from", str(session), "--vault", str(vault), "--agent", "ella")
    assert res.exit_code == 0, res.stderr
    assert "too long" in res.stderr
    (note,) = _bank(vault)
    text = note.read_text()
    assert "- front-end" in text and "- people" in text and "c++" not in text
