"""`vaultmem digest` and `vaultmem compact`: digests of closed log periods, offline and through
the real anthropic client against the local fake Messages API, and compaction that only moves
what a digest covers."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from tests._cli import run_cli
from tests._fake_anthropic import (
    FakeAnthropic,
    Reply,
    error_reply,
    fake_anthropic,
    overloaded,
    text_reply,
    tool_call_reply,
)
from tests._layer3_helpers import fresh_vault, make_keys, set_toml
from vaultmem.core.vault import Vault
from vaultmem.nexus import digests, log

__all__ = ["fake_anthropic"]  # the fixture, imported for pytest

NOW = "2026-11-30T12:00:00Z"  # week 48 (23-29 November) has just ended
GOLDEN = Path(__file__).parent / "fixtures" / "digest-offline-2026-W47.md"


def t(day: int, hour: int) -> str:
    return f"2026-11-{day:02d}T{hour:02d}:00:00.000Z"


@pytest.fixture
def week(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A vault whose log holds a busy week 47, one entry in week 48 and one in open week 49."""
    monkeypatch.setenv("VAULTMEM_NOW", NOW)
    root = fresh_vault(tmp_path)
    v = make_keys(root)
    a = log.append
    a(
        v,
        "ella",
        "Webhook retries are idempotent now",
        channel="backend",
        type_="fix",
        time=t(16, 9),
    )
    h = a(
        v, "ella", "Checkout must send Idempotency-Key", channel="api", type_="handoff",
        to=["lyra"], body="POST /v2/checkout rejects requests without it (409).", time=t(16, 10),
    ).entry  # fmt: skip
    a(
        v,
        "lyra",
        "Checkout sends Idempotency-Key",
        channel="api",
        type_="ack",
        acks=[h.id],
        time=t(17, 9),
    )
    a(
        v, "ella", "Prices are stored in integer cents", channel="decisions", type_="decision",
        extra={"decision": "ella.d1"}, time=t(17, 11),
    )  # fmt: skip
    a(
        v,
        "lyra",
        "Do refunds keep the booking fee?",
        channel="payments",
        type_="question",
        time=t(18, 9),
    )
    d = a(v, "ella", "Disk 91% full on db-1", channel="ops", type_="alert", time=t(19, 9)).entry
    a(
        v, "lyra", "Old backups deleted", channel="ops", type_="resolve", acks=[d.id],
        extra={"resolves": d.id}, time=t(19, 12),
    )  # fmt: skip
    a(v, "ella", "Queue backlog on worker-2", channel="ops", type_="alert", time=t(20, 9))
    for n, hour in enumerate((9, 11, 15), 1):
        a(v, "lyra", f"Slot calendar step {n} merged", channel="frontend", time=t(21, hour))
    a(v, "ella", "Handoff nobody took", channel="api", type_="handoff", time=t(22, 9))
    a(v, "lyra", "Week 48 note", channel="frontend", time=t(24, 9))
    a(v, "ella", "Week 49 note, still open", channel="backend", time="2026-11-30T08:00:00.000Z")
    return root


def digest_cli(root: Path, *args: str) -> object:
    return run_cli("digest", "--vault", str(root), "--agent", "ella", *args)


def _note(root: Path, period: str) -> digests.DigestNote:
    v = Vault.open(root)
    return digests.read_digest(v, digests.digest_path(v, period))


# --- offline --------------------------------------------------------------------------------


def test_offline_digest_matches_the_golden_file_and_is_deterministic(week: Path) -> None:
    res = digest_cli(week, "--offline")
    assert res.exit_code == 0, res.stderr
    assert "wrote nexus/digests/2026-W47.md (12 entries" in res.stdout
    assert "wrote nexus/digests/2026-W48.md (1 entry" in res.stdout
    assert "2026-W49" not in res.stdout  # the current week is not over
    body = _note(week, "2026-W47").body
    if os.environ.get("REGEN_GOLDEN"):
        GOLDEN.write_text(body, encoding="utf-8")
    assert body == GOLDEN.read_text(encoding="utf-8")
    again = digest_cli(week, "--offline", "--rebuild")
    assert again.exit_code == 0 and _note(week, "2026-W47").body == body
    # without a key the offline digest is what you get, and --json says so
    data = json.loads(digest_cli(week, "--rebuild", "--json").stdout)
    assert data["mode"] == "offline" and data["requests"] == 0


def test_every_statement_links_entries_that_exist(week: Path) -> None:
    assert digest_cli(week).exit_code == 0
    note = _note(week, "2026-W47")
    logged = digests.logged_ids(Vault.open(week))
    body, cited_list = note.body.split("## Entries cited")
    statements = [ln for ln in body.splitlines() if ln.startswith("- ")]
    assert len(statements) >= 8
    for line in statements:
        ids = [m["id"] for m in digests.CITE_RE.finditer(line)]
        assert ids, line
        assert set(ids) <= logged, line
        for i in ids:  # each link resolves to the block of its entry in the list
            assert f"^{digests.block_id(i)}" in cited_list
    assert "Disk 91% full on db-1” resolved by lyra" in body
    assert "ella → lyra: Checkout must send Idempotency-Key — acked by lyra" in body
    assert "Question from lyra: Do refunds keep the booking fee?" in body
    assert "Alert from ella: Queue backlog on worker-2" in body
    assert "Prices are stored in integer cents (decision ella.d1)" in body


def test_a_digest_is_made_again_only_when_its_period_changed(week: Path) -> None:
    assert digest_cli(week).exit_code == 0
    path = week / "nexus" / "digests" / "2026-W47.md"
    first = path.read_bytes()
    res = digest_cli(week)
    assert res.exit_code == 0 and "unchanged nexus/digests/2026-W47.md" in res.stdout
    assert path.read_bytes() == first
    # a late entry of week 47 (a merge from another machine) changes the period
    log.append(Vault.open(week), "lyra", "Late note from a laptop", time=t(20, 23))
    plan = digest_cli(week, "--dry-run")
    assert "would write nexus/digests/2026-W47.md (changed, 13 entries" in plan.stdout
    assert path.read_bytes() == first  # a dry run writes nothing
    res = digest_cli(week)
    assert "wrote nexus/digests/2026-W47.md (13 entries" in res.stdout
    assert "unchanged nexus/digests/2026-W48.md" in res.stdout
    assert "Late note from a laptop" in path.read_text()


def test_since_and_month_periods(week: Path) -> None:
    res = digest_cli(week, "--since", "2026-11-23", "--json")
    periods = [p["period"] for p in json.loads(res.stdout)["periods"]]
    assert periods == ["2026-W48"]
    month = digest_cli(week, "--period", "month")
    assert month.exit_code == 0 and "no closed period" in month.stdout  # November is not over
    assert digest_cli(week, "--since", "junk").exit_code == 2


def test_verify_checks_digests(week: Path) -> None:
    assert digest_cli(week).exit_code == 0
    ok = run_cli("verify", "--vault", str(week), "--json")
    assert ok.exit_code == 0, ok.stdout
    assert "nexus/digests/2026-W47.md" in json.loads(ok.stdout)["checked"]
    path = week / "nexus" / "digests" / "2026-W47.md"
    path.write_text(path.read_text().replace("Disk 91% full", "Disk 11% full"))
    bad = run_cli("verify", "--vault", str(week), "--json")
    assert bad.exit_code == 5
    problems = json.loads(bad.stdout)["problems"]
    assert [(p["path"], p["kind"]) for p in problems] == [("nexus/digests/2026-W47.md", "edited")]


def test_a_digest_needs_a_writer_with_a_key(
    week: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert run_cli("digest", "--vault", str(week)).exit_code == 2  # who signs it?
    monkeypatch.setenv("VAULTMEM_HOME", str(tmp_path / "elsewhere"))  # no private keys here
    res = digest_cli(week)
    assert res.exit_code == 8 and "keys create" in res.stderr
    assert not (week / "nexus" / "digests").exists()


# --- through the model ----------------------------------------------------------------------


def digest_reply(**sections: list[dict[str, object]]) -> Reply:
    data = {
        key: sections.get(key, [])
        for key in ("summary", "decided", "handed_over", "open", "fixes", "other")
    }
    return tool_call_reply("record_digest", data)


GOOD = dict(
    summary=[
        {
            "text": "Payments work: idempotent retries and integer cents.",
            "ids": ["ella.1", "ella.3"],
        }
    ],
    decided=[{"text": "Prices are integer cents (ella.d1).", "ids": ["ella.3"]}],
    open=[
        {"text": "Refund fee question unanswered.", "ids": ["lyra.2"]},
        {"text": "A statement citing nothing real.", "ids": ["zed.99"]},
        {"text": "Leaked key AKIAIOSFODNN7EXAMPLE in a statement.", "ids": ["ella.5", "nope.1"]},
    ],
)


@pytest.fixture
def llm_week(week: Path) -> Path:
    set_toml(week, "llm", "timeout", "5.0")
    set_toml(week, "llm", "max_retries", "2")
    return week


@pytest.mark.slow
def test_model_digest_through_the_fake_api(llm_week: Path, fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.queue(
        digest_reply(**GOOD), digest_reply(summary=[{"text": "Quiet week.", "ids": ["lyra.8"]}])
    )
    res = digest_cli(llm_week)
    assert res.exit_code == 0, res.stderr
    assert (
        "wrote nexus/digests/2026-W47.md (12 entries, 4 statements, claude-haiku-4-5)" in res.stdout
    )
    assert "2 request(s)" in res.stdout and "from the prompt cache" in res.stdout
    assert "cites no entry of the period" in res.stderr  # zed.99 dropped, with a warning
    body = _note(llm_week, "2026-W47").body
    assert "Made by claude-haiku-4-5" in body
    assert "AKIAIOSFODNN7EXAMPLE" not in body and "[redacted:" in body  # scrubbed before disk
    assert "nope.1" not in body and "zed.99" not in body
    assert "Refund fee question unanswered. ([[#^e-lyra-2|lyra.2]])" in body
    first = fake_anthropic.requests[0].body
    assert first["tool_choice"] == {"type": "tool", "name": "record_digest"}
    assert first["tools"][0]["cache_control"] == {"type": "ephemeral"}
    assert first["system"][0]["cache_control"] == {"type": "ephemeral"}
    assert first["max_tokens"] == 4096 and first["model"] == "claude-haiku-4-5"
    sent = first["messages"][0]["content"]
    assert sent.startswith("Log entries 1-12 of 12 of Week 47 of 2026")
    assert "ella.2 | 2026-11-16T10:00Z | ella | api | handoff → lyra | Checkout must send" in sent
    # the stable prefix is byte-identical across requests (what makes the cache hit)
    second = fake_anthropic.requests[1].body
    assert second["system"] == first["system"] and second["tools"] == first["tools"]
    assert run_cli("verify", "--vault", str(llm_week)).exit_code == 0


def _no_digests(root: Path) -> bool:
    folder = root / "nexus" / "digests"
    return not folder.exists() or not list(folder.glob("*.md"))


@pytest.mark.slow  # ~4 s alone, 7 s in the quick loop under load (two CLI runs through the SDK)
def test_malformed_reply_writes_nothing(llm_week: Path, fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.queue(text_reply("Here is the digest: ..."))
    res = digest_cli(llm_week)
    assert res.exit_code == 7 and "malformed" in res.stderr and "nothing was written" in res.stderr
    assert _no_digests(llm_week)
    fake_anthropic.queue(tool_call_reply("record_digest", {"other": "not a list"}))
    assert digest_cli(llm_week).exit_code == 7 and _no_digests(llm_week)


def test_overloaded_then_success(llm_week: Path, fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.queue(
        overloaded(), digest_reply(**GOOD), digest_reply(other=[{"text": "x", "ids": ["lyra.8"]}])
    )
    res = digest_cli(llm_week)
    assert res.exit_code == 0, res.stderr
    assert len(fake_anthropic.requests) == 3  # the SDK retried the 529 itself
    assert not _no_digests(llm_week)


def test_401_writes_nothing(llm_week: Path, fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.queue(error_reply(401, "authentication_error", "invalid x-api-key"))
    res = digest_cli(llm_week, "--json")
    assert res.exit_code == 7 and "401" in res.stderr
    assert json.loads(res.stdout)["error"]["type"] == "LLMError"
    assert len(fake_anthropic.requests) == 1 and _no_digests(llm_week)


def test_timeout_writes_nothing(llm_week: Path, fake_anthropic: FakeAnthropic) -> None:
    set_toml(llm_week, "llm", "timeout", "0.3")
    set_toml(llm_week, "llm", "max_retries", "0")
    fake_anthropic.queue(Reply(200, {}, delay=1.0))
    res = digest_cli(llm_week)
    assert res.exit_code == 7 and "did not answer within 0.3s" in res.stderr
    assert _no_digests(llm_week)


def test_a_long_period_is_chunked_then_merged(
    llm_week: Path, fake_anthropic: FakeAnthropic
) -> None:
    set_toml(llm_week, "llm", "chunk_chars", "1000")
    v = Vault.open(llm_week)
    for n in range(30):
        text = f"Note {n} about the slot calendar and its capacity badges"
        log.append(v, "lyra", text, time=f"2026-11-18T10:{n:02d}:00.000Z")
    plan = json.loads(digest_cli(llm_week, "--since", "2026-11-20", "--dry-run", "--json").stdout)
    first = plan["periods"][0]
    assert first["period"] == "2026-W47" and first["requests"] >= 4  # chunks + a merge
    chunks = first["requests"] - 1
    part = dict(summary=[{"text": "Part.", "ids": ["ella.1"]}])
    fake_anthropic.queue(*[digest_reply(**part) for _ in range(chunks)])
    fake_anthropic.queue(
        *[
            digest_reply(summary=[{"text": "Merged.", "ids": ["ella.1", "lyra.9"]}])
            for _ in range(4)
        ]
    )
    res = digest_cli(llm_week, "--since", "2026-11-20", "--json")
    assert res.exit_code == 0, res.stderr
    texts = [r.body["messages"][0]["content"] for r in fake_anthropic.requests]
    assert texts[0].startswith("Log entries 1-")
    assert any(x.startswith("Partial digests of Week 47 of 2026") for x in texts)
    merged = _note(llm_week, "2026-W47").body
    assert "Merged. ([[#^e-ella-1|ella.1]], [[#^e-lyra-9|lyra.9]])" in merged
    assert "Part." not in merged


# --- compact ---------------------------------------------------------------------------------


def test_compact_refuses_a_period_without_a_digest(week: Path) -> None:
    live = week / "nexus" / "live-context.md"
    before = live.read_bytes()
    res = run_cli("compact", "--older-than", "3d", "--vault", str(week))
    assert res.exit_code == 8
    assert "2026-W47 (no digest)" in res.stderr and "2026-W48 (no digest)" in res.stderr
    assert "vaultmem digest" in res.stderr
    assert live.read_bytes() == before and not (week / "nexus" / "archive").exists()
    # an entry of the open week is never old enough to have a digest
    assert digest_cli(week).exit_code == 0
    res = run_cli("compact", "--older-than", "1h", "--vault", str(week))
    assert res.exit_code == 8 and "2026-W49 (not closed yet)" in res.stderr
    assert live.read_bytes() == before


def test_compact_refuses_an_out_of_date_digest(week: Path) -> None:
    assert digest_cli(week).exit_code == 0
    log.append(Vault.open(week), "lyra", "Late note", time=t(21, 20))
    res = run_cli("compact", "--older-than", "3d", "--vault", str(week))
    assert res.exit_code == 8 and "out of date" in res.stderr


def test_compact_moves_what_digests_cover_and_verify_passes(week: Path) -> None:
    assert digest_cli(week).exit_code == 0
    dry = run_cli("compact", "--older-than", "3d", "--dry-run", "--vault", str(week))
    assert "would move 13 entries" in dry.stdout
    res = run_cli("compact", "--older-than", "3d", "--vault", str(week), "--json")
    assert res.exit_code == 0, res.stderr
    data = json.loads(res.stdout)
    assert data["moved"] == 13 and data["kept"] == 1
    assert data["files"] == {"nexus/archive/live-context-2026-11.md": 13}
    assert data["digests"] == ["nexus/digests/2026-W47.md", "nexus/digests/2026-W48.md"]
    live = (week / "nexus" / "live-context.md").read_text()
    assert "Week 49 note" in live and "Webhook retries" not in live
    ok = run_cli("verify", "--vault", str(week))
    assert ok.exit_code == 0, ok.stdout
    # the pack now shows the digests of the periods it no longer shows verbatim
    res = run_cli("read", "--vault", str(week), "--agent", "lyra", "--peek", "--json")
    pack = json.loads(res.stdout)
    shown = pack["sections"]["digests"]
    assert shown["data"]["periods"] == ["2026-W48", "2026-W47"]
    assert "Checkout must send Idempotency-Key" in shown["text"]
    assert not re.search(r"\[\[#\^", shown["text"])  # links become plain ids in a prompt
    # compacting again moves nothing
    again = run_cli("compact", "--older-than", "3d", "--vault", str(week))
    assert again.exit_code == 0 and "nothing older than" in again.stdout


@pytest.mark.slow
def test_model_text_is_escaped_and_its_citations_checked(
    llm_week: Path, fake_anthropic: FakeAnthropic
) -> None:
    """Model output is untrusted text: `<!--` would hide the rest of the note in Obsidian, and
    a link written in the text could pass for a citation of an entry that does not exist."""
    hostile = dict(
        summary=[
            {"text": "Quiet week <!-- everything after this is hidden", "ids": ["ella.1"]},
            {"text": "Also see [[#^e-ghost-9|ghost.9]] for details.", "ids": ["ella.3"]},
        ],
    )
    fake_anthropic.queue(
        digest_reply(**hostile), digest_reply(summary=[{"text": "Quiet.", "ids": ["lyra.8"]}])
    )
    res = digest_cli(llm_week)
    assert res.exit_code == 0, res.stderr
    note = (llm_week / "nexus" / "digests" / "2026-W47.md").read_text(encoding="utf-8")
    body = note.split("<!-- vaultmem-digest", 1)[0]
    assert "<!--" not in body and "Quiet week <\\!--" in body
    assert "[[#^e-ghost-9" not in body and "[\\[#^e-ghost-9|ghost.9]]" in body
    assert run_cli("verify", "--vault", str(llm_week)).exit_code == 0
