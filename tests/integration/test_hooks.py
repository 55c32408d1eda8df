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


def test_session_end_never_touches_the_log(vault: Path, tmp_path: Path) -> None:
    """Session bookkeeping lives in local state: a locked log does not even slow it down."""
    from vaultmem.core.locking import release, try_exclusive

    keys(vault, "ella")
    settings(vault, lock_timeout=0.3)
    before = (vault / "nexus" / "live-context.md").read_bytes()
    held = try_exclusive(vault / ".vaultmem" / "locks" / "live-context.lock")
    assert held is not None
    try:
        proc = hook("session-end", fixture("session-end", tmp_path), vault)
    finally:
        release(held)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    assert (vault / "nexus" / "live-context.md").read_bytes() == before
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
    assert "1 new entry from other agents" in text
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


def inline(event: str, payload: dict[str, Any], vault: Path) -> None:
    """What the detached child of `hook stop` / `hook pre-compact` runs, run to its end."""
    proc = subprocess.run(
        [sys.executable, "-m", "vaultmem.app.hooks.detached", event,
         "--vault", str(vault), "--agent", "ella"],
        input=json.dumps(payload), capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr


def wait_for(check: Any, seconds: float = 20.0) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, "timed out waiting for the background work"
        time.sleep(0.05)


def test_stop_writes_a_checkpoint_the_agents_own_wins(vault: Path, tmp_path: Path) -> None:
    keys(vault, "ella")
    payload = fixture("stop", tmp_path)
    hook("session-start", fixture("session-start-startup", tmp_path), vault)
    inline("stop", payload, vault)
    cp = (vault / "agents" / "ella" / "checkpoint.md").read_text()
    assert "Written by the vaultmem stop hook" in cp and "Session abc123" in cp
    assert "Last request: Good. From now on every Stripe call" in cp
    assert "api/webhooks.py, api/idempotency.py" in cp
    assert "sk_live" not in cp and "REMINDER-MARKER" not in cp
    journal = vault / ".vaultmem" / "journal" / "checkpoints" / "ella.jsonl"
    versions = len(journal.read_text().splitlines())
    inline("stop", payload, vault)  # nothing changed: nothing written
    assert len(journal.read_text().splitlines()) == versions
    res = run_cli(
        "checkpoint", "Halfway through refunds", "--task", "refunds", "--vault", str(vault),
        "--agent", "ella",
    )  # fmt: skip
    assert res.exit_code == 0
    inline("pre-compact", fixture("pre-compact-auto", tmp_path), vault)
    cp = (vault / "agents" / "ella" / "checkpoint.md").read_text()
    assert "Halfway through refunds" in cp and "vaultmem stop hook" not in cp


def test_stop_hands_the_checkpoint_to_a_detached_process(vault: Path, tmp_path: Path) -> None:
    """The runtime waits for `hook stop` on every turn: it answers at once, prints nothing,
    and the checkpoint is written after; the payload file it handed over is gone."""
    keys(vault, "ella")
    checkpoint = vault / "agents" / "ella" / "checkpoint.md"
    hook("session-start", fixture("session-start-startup", tmp_path), vault)
    proc = hook("stop", fixture("stop", tmp_path), vault)
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "", "")
    wait_for(lambda: checkpoint.exists() and "Session abc123" in checkpoint.read_text())
    assert list((vault / ".vaultmem" / "spool").iterdir()) == []


def test_session_end_queues_and_keeps_the_log_clean(vault: Path, tmp_path: Path) -> None:
    keys(vault, "ella")
    before = run_cli("log", "--json", "--vault", str(vault)).stdout
    proc = hook("session-end", fixture("session-end", tmp_path), vault)
    assert proc.returncode == 0 and proc.stdout == "" and proc.stderr == "", proc.stderr
    (queued,) = (vault / ".vaultmem" / "queue" / "ella").glob("*.json")
    data = json.loads(queued.read_text())
    assert data["session_id"] == "abc123" and data["source"] == "session.jsonl"
    assert "sk_live_51" not in queued.read_text()
    assert oct(queued.stat().st_mode & 0o777) == "0o600"
    # the session is recorded in local state, never on the log
    assert run_cli("log", "--json", "--vault", str(vault)).stdout == before
    history = vault / ".vaultmem" / "sessions" / "ella-history.jsonl"
    (record,) = [json.loads(line) for line in history.read_text().splitlines()]
    assert record["session_id"] == "abc123" and record["reason"] == "prompt_input_exit"
    assert "api/webhooks.py" in record["files"] and record["queued"].startswith(".vaultmem/queue/")
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
    """The prompt hook runs on every turn: with nothing new it loads a few small modules (the
    start-up measures, `cli/startup.py`; the seal check of its cursor: `os`, `json`, the
    built-in `_blake2` and `core/environment.py` for VAULTMEM_HOME; the prompt's words:
    `search/vocab.py`, `re` and `binascii`), each of them `os`/`sys`-level."""
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
        " 'vaultmem.cli.main', 'vaultmem.cli.startup', 'vaultmem.core',"
        " 'vaultmem.core.environment', 'vaultmem.core.names', 'vaultmem.core.seal',"
        " 'vaultmem.search', 'vaultmem.search.vocab'] []"
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


def test_prompt_budget_never_marks_unshown_entries_as_seen(vault: Path, tmp_path: Path) -> None:
    """A real fix followed by 12 session notes, and a prompt budget that holds a few lines:
    the fix comes first, what did not fit is counted with the command that lists it, and the
    next prompts deliver the rest, each entry exactly once."""
    keys(vault, "ella", "lyra")
    settings(vault, prompt_budget=100)
    hook("session-start", fixture("session-start-startup", tmp_path), vault)
    quiet = fixture("user-prompt-submit", tmp_path, prompt="fix the typo in the footer")
    ids = []
    for n, (summary, type_) in enumerate(
        [("Webhook retries are idempotent now", "fix")]
        + [(f"Session note number {i}", "note") for i in range(12)]
    ):
        res = run_cli("append", summary, "--type", type_, "--channel", "api" if n == 0 else "session",
                      "--vault", str(vault), "--agent", "lyra", "--json")  # fmt: skip
        ids.append(json.loads(res.stdout)["id"])
    seen: list[str] = []
    first = True
    for _turn in range(20):
        text = hook("prompt", quiet, vault).stdout
        if not text:
            break
        added = json.loads(text)["hookSpecificOutput"]["additionalContext"]
        shown = re.findall(r"^- \[(lyra\.[\w.]+)\]", added, re.M)
        assert shown, added
        if first:
            assert ids[0] in shown  # the fix is never crowded out by the notes
            left = len(ids) - len(shown)
            assert f"{left} more new entries were not shown here" in added
            assert re.search(r"vaultmem log --since \d{4}-", added) and f"--vault {vault}" in added
            first = False
        seen += shown
    assert sorted(seen) == sorted(ids) and len(seen) == len(set(seen))  # all, each once
    assert hook("prompt", quiet, vault).stdout == ""


def test_a_resumed_session_queues_only_its_new_turns(vault: Path, tmp_path: Path) -> None:
    keys(vault, "ella")
    end = fixture("session-end", tmp_path)
    assert hook("session-end", end, vault).returncode == 0
    queue = vault / ".vaultmem" / "queue" / "ella"
    (first,) = queue.glob("*.json")
    turns = len(json.loads(first.read_text())["turns"])
    assert hook("session-end", end, vault).stderr == ""  # the same transcript again (resume)
    assert list(queue.glob("*.json")) == [first]  # nothing new: nothing queued
    transcript = Path(end["transcript_path"])
    line = {
        "type": "user", "uuid": "u-new", "sessionId": "abc123", "timestamp": "2026-11-29T12:00:00.000Z",
        "message": {"role": "user", "content": "Also log every refund with its reason code."},
    }  # fmt: skip
    transcript.write_text(transcript.read_text() + json.dumps(line) + "\n")
    assert hook("session-end", end, vault).stderr == ""
    (second,) = [p for p in queue.glob("*.json") if p != first]
    later = json.loads(second.read_text())["turns"]
    assert [t["text"] for t in later] == ["Also log every refund with its reason code."]
    assert later[0]["n"] > turns  # cited by its place in the whole session


@pytest.mark.parametrize("event", ["prompt", "session-start", "stop", "pre-compact", "session-end"])
def test_deeply_nested_json_on_stdin_keeps_the_hook_contract(vault: Path, event: str) -> None:
    """'[' * 5000 on stdin made json's decoder recurse past Python's limit: the hook exited 1
    with "unexpected RecursionError" (issue 22). It is malformed input like any other."""
    proc = hook(event, "[" * 5000 + "]" * 5000, vault)
    assert proc.returncode == 0, proc.stderr
    assert "RecursionError" not in proc.stdout + proc.stderr
    assert "Traceback" not in proc.stdout + proc.stderr


@pytest.mark.parametrize(
    "where", ["etc-passwd", "proc-environ", "link-out", "wrong-suffix", "cwd-root"]
)
def test_transcript_path_outside_the_runtimes_folders_is_never_read(
    vault: Path, tmp_path: Path, where: str
) -> None:
    """From the attacker's side (issue 22): a payload whose transcript_path names a file that is
    not a transcript (a system file, a link out of the project, a secret without a transcript's
    suffix, a project claimed to be `/`) is read as no transcript. Nothing is queued, nothing of
    the file reaches the queue or a checkpoint, and the hook answers as usual (exit 0)."""
    secret = tmp_path / "outside" / "secret.txt"
    secret.parent.mkdir()
    secret.write_text('{"type": "user", "message": {"role": "user", "content": "MARKER-7Q"}}\n')
    project = tmp_path / "project"
    project.mkdir()
    target: str
    cwd = str(project)
    if where == "etc-passwd":
        target = "/etc/passwd"
    elif where == "proc-environ":
        target = "/proc/self/environ"
    elif where == "link-out":
        (project / "session.jsonl").symlink_to(secret)
        target = str(project / "session.jsonl")
    elif where == "wrong-suffix":
        (project / ".env").write_text(secret.read_text())
        target = str(project / ".env")
    else:
        target = str(tmp_path / "outside" / "secret.jsonl")
        shutil.copy(secret, target)
        cwd = "/"
    data = fixture("session-end", tmp_path, transcript_path=target, cwd=cwd)
    proc = hook("session-end", data, vault)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    assert not list((vault / ".vaultmem" / "queue").glob("**/*.json"))
    for file in vault.rglob("*"):
        if file.is_file():
            assert b"MARKER-7Q" not in file.read_bytes(), file
            assert b"root:x:0" not in file.read_bytes(), file


def test_a_transcript_in_the_project_is_still_queued(vault: Path, tmp_path: Path) -> None:
    """The other side of the transcript check: the runtime's real transcript in the project
    folder (a regular .jsonl file) is read and queued."""
    data = fixture("session-end", tmp_path)
    assert hook("session-end", data, vault).returncode == 0
    assert len(list((vault / ".vaultmem" / "queue" / "ella").glob("*.json"))) == 1
