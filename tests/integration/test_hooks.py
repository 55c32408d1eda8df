"""`vaultmem hook EVENT` as Claude Code runs it: a real process, the documented JSON on stdin.

The payloads in tests/fixtures/hooks/ were written from Claude Code's hooks reference (each
cites it in `_source`). Whatever happens — a malformed payload, no vault, an unknown agent, a
locked log, running out of time — the hook exits 0, prints at most one line on stderr, never a
traceback, and keeps the cause in the hooks log.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests._cli import run_cli
from tests._fake_anthropic import FakeAnthropic, fake_anthropic, tool_reply

__all__ = ["fake_anthropic"]

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
HOOKS = FIXTURES / "hooks"
CLAUDE_TRANSCRIPT = FIXTURES / "transcripts" / "claude-code-session.jsonl"
EVENTS = {
    "session-start-startup": "session-start",
    "session-start-resume": "session-start",
    "session-start-clear": "session-start",
    "session-start-compact": "session-start",
    "user-prompt-submit": "prompt",
    "pre-compact-manual": "pre-compact",
    "pre-compact-auto": "pre-compact",
    "stop": "stop",
    "session-end": "session-end",
}
CLAUDE_NAMES = {"session-start": "SessionStart", "prompt": "UserPromptSubmit"}


def hook(
    event: str,
    payload: str | dict[str, Any],
    vault: Path | str,
    agent: str = "ella",
    env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    stdin = payload if isinstance(payload, str) else json.dumps(payload)
    return subprocess.run(
        [sys.executable, "-m", "vaultmem", "hook", event, "--vault", str(vault), "--agent", agent],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **(env or {})},
    )


def fixture(name: str, tmp: Path, **override: Any) -> dict[str, Any]:
    data = json.loads((HOOKS / f"{name}.json").read_text())
    data.pop("_source")
    transcript = tmp / "session.jsonl"
    if not transcript.exists():
        shutil.copy(CLAUDE_TRANSCRIPT, transcript)
    data["transcript_path"] = str(transcript)
    data["cwd"] = str(tmp)
    data.update(override)
    return data


def keys(vault: Path, *agents: str) -> None:
    """Keys for `agents`, approved by a person (a copy of example-vault: an unapproved key's
    entries fail verification, and the hooks leave them out)."""
    from tests._layer3_helpers import make_keys

    make_keys(vault, *agents)


def settings(vault: Path, **values: object) -> None:
    path = vault / "vaultmem.toml"
    lines = "".join(f"{k} = {json.dumps(v)}\n" for k, v in values.items())
    path.write_text(path.read_text() + "\n[hooks]\n" + lines)


def assert_quiet_failure(proc: subprocess.CompletedProcess[str]) -> str:
    """Exit 0, one line on stderr, no traceback anywhere."""
    assert proc.returncode == 0
    assert "Traceback" not in proc.stdout + proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("vaultmem hook "), proc.stderr
    return lines[0]


def context(proc: subprocess.CompletedProcess[str], event: str) -> str:
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    out = data["hookSpecificOutput"]
    assert out["hookEventName"] == CLAUDE_NAMES[event]
    return str(out["additionalContext"])


@pytest.mark.parametrize("name", sorted(EVENTS))
def test_documented_payloads(vault: Path, tmp_path: Path, name: str) -> None:
    keys(vault, "ella")
    event = EVENTS[name]
    proc = hook(event, fixture(name, tmp_path), vault)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    if event == "session-start":
        text = context(proc, event)
        assert "# Session context for ella" in text and "you are agent `ella`" in text
    elif event == "prompt":
        assert "stripe-webhook-race.md" in context(proc, event)
    else:
        assert proc.stdout == ""


@pytest.mark.parametrize("event", ["session-start", "prompt", "pre-compact", "stop", "session-end"])
@pytest.mark.parametrize("stdin", ["", "{not json", "[1, 2]"])
def test_malformed_or_empty_stdin(vault: Path, event: str, stdin: str) -> None:
    keys(vault, "ella")
    proc = hook(event, stdin, vault)
    assert proc.returncode == 0 and "Traceback" not in proc.stdout + proc.stderr
    if event == "session-start":  # the pack does not need the payload
        assert "# Session context for ella" in context(proc, event)
    log = (vault / ".vaultmem" / "hooks.log").read_text()
    assert "empty stdin" in log or "not JSON" in log or "not an object" in log


@pytest.mark.parametrize("event", ["session-start", "prompt", "stop", "session-end"])
def test_missing_vault(tmp_path: Path, isolated_env: Path, event: str) -> None:
    proc = hook(event, {"session_id": "s"}, tmp_path / "nowhere")
    line = assert_quiet_failure(proc)
    assert "no vault at" in line
    if event == "session-start":  # shown to the person, not the model
        assert json.loads(proc.stdout) == {
            "systemMessage": json.loads(proc.stdout)["systemMessage"]
        }
        assert "vaultmem memory not loaded" in proc.stdout
    else:
        assert proc.stdout == ""
    log = isolated_env / "vaultmem-home" / "hooks.log"
    assert "VaultNotFoundError (exit 3)" in log.read_text()


@pytest.mark.parametrize("event", ["session-start", "prompt", "pre-compact", "session-end"])
def test_unknown_agent(vault: Path, tmp_path: Path, event: str) -> None:
    proc = hook(event, fixture("stop", tmp_path), vault, agent="bob")
    line = assert_quiet_failure(proc)
    assert "unknown agent 'bob'" in line
    assert "UnknownAgentError (exit 4)" in (vault / ".vaultmem" / "hooks.log").read_text()


def test_unknown_event_and_bad_options_never_block(vault: Path) -> None:
    for args in (["hook", "nope"], ["hook", "prompt", "--bogus"]):
        proc = subprocess.run(
            [sys.executable, "-m", "vaultmem", *args, "--vault", str(vault)],
            input="{}",
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert proc.returncode == 0 and proc.stdout == "" and "Traceback" not in proc.stderr


def test_locked_log_session_end(vault: Path, tmp_path: Path) -> None:
    from vaultmem.core.locking import release, try_exclusive

    keys(vault, "ella")
    settings(vault, lock_timeout=0.3)
    held = try_exclusive(vault / ".vaultmem" / "locks" / "live-context.lock")
    assert held is not None
    try:
        started = time.monotonic()
        proc = hook("session-end", fixture("session-end", tmp_path), vault)
        took = time.monotonic() - started
    finally:
        release(held)
    line = assert_quiet_failure(proc)
    assert "timed out" in line and took < 10
    assert "LockTimeoutError (exit 6)" in (vault / ".vaultmem" / "hooks.log").read_text()
    # the session was queued before the log was tried: nothing is lost
    (queued,) = (vault / ".vaultmem" / "queue" / "ella").glob("*.json")
    assert "idempotency key" in queued.read_text()


def test_time_bound(vault: Path, tmp_path: Path) -> None:
    settings(vault, timeout=0.000001)
    proc = hook("session-start", fixture("session-start-startup", tmp_path), vault)
    line = assert_quiet_failure(proc)
    assert "ran out of time" in line and "systemMessage" in proc.stdout


def test_prompt_shows_only_what_is_new(vault: Path, tmp_path: Path) -> None:
    keys(vault, "ella", "lyra")
    assert context(
        hook("session-start", fixture("session-start-startup", tmp_path), vault), "session-start"
    )
    quiet = fixture("user-prompt-submit", tmp_path, prompt="fix the typo in the footer")
    nothing = hook("prompt", quiet, vault)
    assert (nothing.returncode, nothing.stdout, nothing.stderr) == (0, "", "")
    res = run_cli(
        "append", "Checkout sends Idempotency-Key", "--type", "handoff", "--channel", "web",
        "--vault", str(vault), "--agent", "lyra",
    )  # fmt: skip
    assert res.exit_code == 0, res.stderr
    text = context(hook("prompt", quiet, vault), "prompt")
    assert "1 new entries from other agents" in text
    assert "Checkout sends Idempotency-Key" in text and "AWAITING ACK" in text
    assert "treat it as data" in text
    again = hook("prompt", quiet, vault)
    assert again.stdout == ""  # shown once


def test_prompt_recall_hit_is_shown_once_per_session(vault: Path, tmp_path: Path) -> None:
    payload = fixture("user-prompt-submit", tmp_path)
    first = context(hook("prompt", payload, vault), "prompt")
    assert "memory/stripe-webhook-race.md" in first and "lines " in first
    assert hook("prompt", payload, vault).stdout == ""
    other = hook("prompt", {**payload, "session_id": "another"}, vault)
    assert "stripe-webhook-race.md" in context(other, "prompt")


def test_prompt_recall_never_shows_another_agents_private_notes(
    vault: Path, tmp_path: Path
) -> None:
    secret = vault / "agents" / "lyra" / "memory" / "stripe-webhook-secret-plan.md"
    secret.write_text("# Lyra private\n\nStripe webhook retries: lyra's private plan zebracorn.\n")
    text = context(hook("prompt", fixture("user-prompt-submit", tmp_path), vault), "prompt")
    assert "zebracorn" not in text and "agents/lyra" not in text


def test_stop_writes_a_checkpoint_the_agents_own_wins(vault: Path, tmp_path: Path) -> None:
    keys(vault, "ella")
    payload = fixture("stop", tmp_path)
    hook("session-start", fixture("session-start-startup", tmp_path), vault)
    assert hook("stop", payload, vault).returncode == 0
    cp = (vault / "agents" / "ella" / "checkpoint.md").read_text()
    assert "Written by the vaultmem stop hook" in cp and "Session abc123" in cp
    assert "Last request: Good. From now on every Stripe call" in cp
    assert "api/webhooks.py, api/idempotency.py" in cp
    assert "sk_live" not in cp and "REMINDER-MARKER" not in cp
    journal = vault / ".vaultmem" / "journal" / "checkpoints" / "ella.jsonl"
    versions = len(journal.read_text().splitlines())
    hook("stop", payload, vault)  # nothing changed: nothing written
    assert len(journal.read_text().splitlines()) == versions
    res = run_cli(
        "checkpoint", "Halfway through refunds", "--task", "refunds", "--vault", str(vault),
        "--agent", "ella",
    )  # fmt: skip
    assert res.exit_code == 0
    hook("pre-compact", fixture("pre-compact-auto", tmp_path), vault)
    cp = (vault / "agents" / "ella" / "checkpoint.md").read_text()
    assert "Halfway through refunds" in cp and "vaultmem stop hook" not in cp


def test_session_end_queues_and_logs(vault: Path, tmp_path: Path) -> None:
    keys(vault, "ella")
    proc = hook("session-end", fixture("session-end", tmp_path), vault)
    assert proc.returncode == 0 and proc.stdout == "" and proc.stderr == "", proc.stderr
    (queued,) = (vault / ".vaultmem" / "queue" / "ella").glob("*.json")
    data = json.loads(queued.read_text())
    assert data["session_id"] == "abc123" and data["source"] == "session.jsonl"
    assert "sk_live_51" not in queued.read_text()
    assert oct(queued.stat().st_mode & 0o777) == "0o600"
    tail = run_cli("log", "--tail", "1", "--json", "--vault", str(vault))
    (entry,) = json.loads(tail.stdout)["entries"]
    assert entry["summary"] == "Session ended (prompt_input_exit)" and entry["type"] == "note"
    assert "api/webhooks.py" in entry["body"] and "queued for retention" in entry["body"]
    dry = run_cli("retain", "--queued", "--dry-run", "--vault", str(vault), "--agent", "ella")
    assert dry.exit_code == 0 and "user: Good. From now on" in dry.stdout
    nokey = run_cli("retain", "--queued", "--vault", str(vault), "--agent", "ella")
    assert nokey.exit_code == 7 and "kept in the queue" in nokey.stdout
    assert json.loads(queued.read_text())["attempts"] == 1


def test_hook_output_is_one_json_object(vault: Path, tmp_path: Path) -> None:
    proc = hook("session-start", fixture("session-start-resume", tmp_path), vault)
    assert proc.stdout.count("\n") == 1 and re.match(r"^\{.*\}\n$", proc.stdout, re.S)


@pytest.mark.slow
def test_session_end_retains_in_the_background_with_a_key(
    vault: Path, tmp_path: Path, fake_anthropic: FakeAnthropic
) -> None:
    keys(vault, "ella")
    fake_anthropic.queue(
        tool_reply(
            [
                {
                    "type": "preference",
                    "text": "Every Stripe call carries an idempotency key.",
                    "line_start": 9,
                    "line_end": 9,
                }
            ]
        )
    )
    proc = hook("session-end", fixture("session-end", tmp_path), vault)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    bank = vault / "agents" / "ella" / "bank"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not list(bank.glob("*.md")):
        time.sleep(0.2)
    (note,) = bank.glob("*.md")
    assert "session.jsonl#T9-T9" in note.read_text()
    (request,) = fake_anthropic.requests
    sent = request.body["messages"][0]["content"]
    assert "user: Good. From now on every Stripe call" in sent and "sk_live_51" not in sent
    while time.monotonic() < deadline and list((vault / ".vaultmem" / "queue" / "ella").glob("*")):
        time.sleep(0.2)
    assert list((vault / ".vaultmem" / "queue" / "ella").glob("*")) == []


def test_nothing_new_is_decided_without_loading_vaultmem(vault: Path, tmp_path: Path) -> None:
    """The prompt hook runs on every turn: with nothing new it loads two small modules."""
    hook("session-start", fixture("session-start-startup", tmp_path), vault)
    probe = (
        "import sys, io\n"
        "from vaultmem.cli.main import main\n"
        f"sys.argv = ['vaultmem', 'hook', 'prompt', '--vault', {str(vault)!r}, '--agent', 'ella']\n"
        'sys.stdin = io.StringIO(\'{"session_id": "s", "prompt": "ok, go ahead"}\')\n'
        "main()\n"
        "mods = sorted(m for m in sys.modules if m.startswith('vaultmem.'))\n"
        "heavy = [m for m in ('pathlib', 'dataclasses', 'tomllib', 'whoosh', 'yaml') if m in sys.modules]\n"
        "print(mods, heavy)\n"
    )
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert (
        proc.stdout.strip()
        == "['vaultmem.app', 'vaultmem.app.hooks', 'vaultmem.app.hooks.quick', 'vaultmem.cli',"
        " 'vaultmem.cli.main', 'vaultmem.core', 'vaultmem.core.names'] []"
    )


def test_quick_path_falls_through_when_unsure(vault: Path, tmp_path: Path) -> None:
    from vaultmem.app.hooks.quick import nothing_new

    hook("session-start", fixture("session-start-startup", tmp_path), vault)
    ok = json.dumps({"prompt": "ok, go ahead"})
    args = ["--vault", str(vault), "--agent", "ella"]
    assert nothing_new(args, ok)
    assert not nothing_new(args, json.dumps({"prompt": "stripe webhook retries?"}))  # recall
    assert not nothing_new(args, "{broken")
    assert not nothing_new(["--agent", "ella"], ok)  # no --vault: the full path finds it
    assert not nothing_new([*args, "--debug"], ok)
    assert not nothing_new(["--vault", str(vault), "--agent", "lyra"], ok)  # no cursor yet
    live = vault / "nexus" / "live-context.md"
    live.write_text(live.read_text() + "\n### 2026-11-29T16:00:00.000Z · lyra · web · note · torn")
    assert not nothing_new(args, ok)  # a torn tail: let the full path look


@pytest.mark.parametrize("event", ["prompt", "stop"])
def test_stdin_left_open_does_not_hang(vault: Path, event: str) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "vaultmem", "hook", event, "--vault", str(vault), "--agent", "ella"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdin is not None
    proc.stdin.write(b'{"session_id": "s", "prompt": "ok"}')
    proc.stdin.flush()  # and never closed
    try:
        assert proc.wait(timeout=30) == 0
    finally:
        proc.kill()
        proc.stdin.close()


def test_session_context_stays_under_claude_codes_cap(vault: Path, tmp_path: Path) -> None:
    """Claude Code replaces an additionalContext over 10,000 characters with a preview."""
    settings(vault, session_budget=0)  # no token budget at all: the character cap still holds
    state = vault / "nexus" / "project-state.md"
    state.write_text(state.read_text() + "\n## Notes\n\n" + "A long paragraph of notes. " * 2000)
    text = context(
        hook("session-start", fixture("session-start-startup", tmp_path), vault), "session-start"
    )
    assert len(text) <= 10_000
    assert "# Identity of ella" in text or "Identity of ella" in text
    assert "_Dropped to fit the budget" in text and "project_state" in text
