"""Claude Code (the real CLI from npm) after `vaultmem setup claude-code`: what the model is
shown, read from the request bodies the fake Messages API recorded."""

from __future__ import annotations

import json
import time
from pathlib import Path

from tests._fake_model_api import FakeModelAPI
from tests.e2e._runtimes import (
    ClaudeCode,
    make_keys,
    packs_in,
    tool_results,
    turn_text,
    vaultmem,
)


def claude(api: FakeModelAPI, tmp_path: Path, name: str = "proj") -> ClaudeCode:
    return ClaudeCode(api, Path.home(), tmp_path / name)


def test_the_pack_reaches_the_model_unasked(api: FakeModelAPI, vault: Path, tmp_path: Path) -> None:
    make_keys(vault, "ella")
    cc = claude(api, tmp_path)
    cc.setup(vault, "ella")
    cc.run("What should I work on today?")
    first = api.main_calls()[0].body
    seen = turn_text(first)
    assert packs_in(seen) == 1, seen[:2000]  # SessionStart's additionalContext, once
    assert "Ella is the backend engineer" in seen
    assert "What should I work on today?" in seen


def test_a_handoff_from_ella_reaches_lyra(api: FakeModelAPI, vault: Path, tmp_path: Path) -> None:
    make_keys(vault, "ella", "lyra")
    ella, lyra = claude(api, tmp_path, "backend"), claude(api, tmp_path, "web")
    ella.setup(vault, "ella")
    lyra.setup(vault, "lyra")
    handoff = "Refund endpoint ready: POST /refunds takes booking_id"
    cmd = vaultmem(
        "append", handoff, "--type", "handoff", "--to", "lyra", "--channel", "api",
        "--vault", str(vault), "--agent", "ella",
    )  # fmt: skip
    ella.run(f"Ship it and hand off. [[bash: {cmd}]]")
    assert any("ella." in r for r in tool_results(api)), tool_results(api)  # the append ran
    api.calls.clear()
    lyra.run("Anything for me?")
    seen = turn_text(api.main_calls()[0].body)
    assert handoff in seen and "lyra" in seen
    assert "AWAITING ACK" in seen or "inbox" in seen.lower()


def test_mcp_read_shows_the_model_the_markdown(
    api: FakeModelAPI, vault: Path, tmp_path: Path
) -> None:
    make_keys(vault, "ella", "lyra")
    res = vaultmem_append(vault, "lyra", "Checkout sends Idempotency-Key now", "handoff")
    cc = claude(api, tmp_path)
    cc.setup(vault, "ella")
    cc.run("Start by reading the shared memory. [[tool: read {}]]")
    results = tool_results(api)
    assert len(results) == 1, results
    shown = results[0]
    # the markdown itself, not section names and token counts
    assert "Session context for ella" in shown
    assert "Ella is the backend engineer" in shown
    assert "Checkout sends Idempotency-Key now" in shown
    assert res["id"] in shown


def test_session_end_queues_the_transcript(api: FakeModelAPI, vault: Path, tmp_path: Path) -> None:
    make_keys(vault, "ella")
    cc = claude(api, tmp_path)
    cc.setup(vault, "ella")
    run = cc.run("Remember: the staging database resets every Sunday.")
    session = cc.session_id(run)
    queue = vault / ".vaultmem" / "queue" / "ella"
    queued = sorted(queue.glob("*")) if queue.is_dir() else []
    assert queued, f"nothing queued under {queue}"
    text = "\n".join(p.read_text(errors="replace") for p in queued if p.is_file())
    assert "staging database resets every Sunday" in text
    assert session in text or session in " ".join(p.name for p in queued)
    # with ANTHROPIC_API_KEY set, the hook starts `retain --queued` in the background: the
    # transcript reaches the extraction model (the same fake, through the anthropic client)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not any(c.retention for c in api.calls):
        time.sleep(0.5)
    sent = [c.text for c in api.calls if c.retention]
    assert any("staging database resets every Sunday" in t for t in sent), sent[:1]


def test_resume_gets_a_delta_not_another_pack(
    api: FakeModelAPI, vault: Path, tmp_path: Path
) -> None:
    make_keys(vault, "ella", "lyra")
    cc = claude(api, tmp_path)
    cc.setup(vault, "ella")
    session = cc.session_id(cc.run("First turn."))
    vaultmem_append(vault, "lyra", "Slot calendar ships on Friday", "note")
    api.calls.clear()
    cc.run("Second turn.", "--resume", session)
    seen = api.main_calls()[0].text
    assert "Slot calendar ships on Friday" in seen  # what is new reaches the model
    assert packs_in(seen) == 1, packs_in(seen)  # the first pack, in history; no second one


def test_compact_then_resume_holds_one_pack(api: FakeModelAPI, vault: Path, tmp_path: Path) -> None:
    make_keys(vault, "ella")
    cc = claude(api, tmp_path)
    cc.setup(vault, "ella")
    session = cc.session_id(cc.run("First turn."))
    cc.run("/compact", "--resume", session)
    api.calls.clear()
    cc.run("After compaction.", "--resume", session)
    seen = api.main_calls()[0].text
    assert packs_in(seen) <= 1, packs_in(seen)


def test_nothing_not_shown_is_marked_seen(api: FakeModelAPI, vault: Path, tmp_path: Path) -> None:
    make_keys(vault, "ella", "lyra")
    cc = claude(api, tmp_path)
    cc.setup(vault, "ella")
    fix = "Fixed the double-charge on retried webhooks"

    def lyra_writes() -> None:  # between two of ella's prompts, in the same session
        vaultmem_append(vault, "lyra", fix, "fix")
        for i in range(12):  # more than the prompt hook's budget holds after the fix
            body = f"Session note {i}: " + "details of what was looked at " * 20
            vaultmem_append(vault, "lyra", f"Looked at slot rendering, part {i}", "note", body)

    cc.turns("First turn.", lyra_writes, "Second turn.")
    cc.run("A new session.")
    shown = api.shown()
    assert fix in shown  # that turn, or the next session's pack: never dropped unseen


def vaultmem_append(
    vault: Path, agent: str, summary: str, type_: str, body: str = ""
) -> dict[str, object]:
    from tests._cli import run_cli

    args = ["append", summary, "--type", type_, "--channel", "web", "--json"]
    args += ["--vault", str(vault), "--agent", agent]
    if type_ == "handoff":
        args += ["--to", "lyra" if agent == "ella" else "ella"]
    if body:
        args += ["--body", body]
    res = run_cli(*args)
    assert res.exit_code == 0, res.stderr
    return dict(json.loads(res.stdout))
