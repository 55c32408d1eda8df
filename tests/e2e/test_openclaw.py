"""OpenClaw (the real CLI from npm, pinned in runtimes.txt) after `vaultmem setup openclaw`:
one-shot embedded turns (`openclaw agent --local --agent main --message ...`,
docs/cli/agent.md) against the fake Messages API, configured the way a person adds a model
provider (`models.providers.<id>` with `api: "anthropic-messages"` and a `baseUrl`,
docs/gateway/config-tools/custom-providers.md) and nothing else. What the model was shown is
read from the request bodies the fake recorded: OpenClaw sends plugin context in the system
prompt (`appendSystemContext`), so the assertions read the system prompt and the messages."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path
from typing import Any

from tests._cli import run_cli
from tests._fake_model_api import FakeModelAPI
from tests.e2e._runtimes import (
    BIN,
    NODE_BIN,
    PACK,
    Run,
    base_env,
    make_keys,
    packs_in,
    require,
    tool_results,
)
from tests.e2e.test_claude_code import vaultmem_append

MODEL = "fake-model"


class OpenClaw:
    """`openclaw agent --local` for one agent, with a scratch HOME (~/.openclaw in it)."""

    def __init__(self, api: FakeModelAPI, home: Path) -> None:
        self.bin = require("openclaw")
        self.api, self.home = api, home
        self.config = home / ".openclaw" / "openclaw.json"
        self.config.parent.mkdir(parents=True, exist_ok=True)
        provider = {
            "baseUrl": api.url,
            "apiKey": "sk-ant-e2e-fake",
            "api": "anthropic-messages",
            "models": [
                {
                    "id": MODEL,
                    "name": "Fake",
                    "reasoning": False,
                    "input": ["text"],
                    "contextWindow": 200000,
                    "maxTokens": 8000,
                }
            ],
        }
        # JSON5, as OpenClaw's docs write its config: setup must keep it and OpenClaw read it
        self.config.write_text(
            "// a person's OpenClaw config: one model provider, the rest OpenClaw's defaults\n"
            "{\n"
            f"  models: {{ providers: {{ fake: {json.dumps(provider)} }} }},\n"
            f"  agents: {{ defaults: {{ model: {{ primary: 'fake/{MODEL}' }} }} }}, // the model\n"
            "}\n"
        )

    def setup(self, vault: Path, agent: str, *extra: str) -> None:
        res = run_cli("setup", "openclaw", "--agent", agent, "--vault", str(vault), *extra)
        assert res.exit_code == 0, res.stderr

    def env(self) -> dict[str, str]:
        env = base_env(self.home)
        env["PATH"] = f"{NODE_BIN}:{env['PATH']}"  # OpenClaw needs Node >= 24
        env["ANTHROPIC_API_KEY"] = "sk-ant-e2e-fake"  # retain --queued talks to the same fake
        env["ANTHROPIC_BASE_URL"] = self.api.url
        return env

    def run(self, message: str, timeout: float = 180) -> Run:
        argv = [str(self.bin), "agent", "--local", "--agent", "main", "--json"]
        argv += ["--message", message]
        t = time.monotonic()
        res = subprocess.run(
            argv, cwd=self.home, env=self.env(), capture_output=True, text=True,
            timeout=timeout, stdin=subprocess.DEVNULL,
        )  # fmt: skip
        run = Run(res.returncode, res.stdout, res.stderr, time.monotonic() - t)
        if os.environ.get("VAULTMEM_E2E_DEBUG"):
            print(run.stderr[-3000:])
        assert run.returncode == 0, (run.stdout[-2000:], run.stderr[-3000:])
        return run

    @staticmethod
    def session_id(run: Run) -> str:
        data = json.loads(run.stdout[run.stdout.index("{") :])
        found = _find_key(data, "sessionId")
        assert found, run.stdout[:1000]
        return found


def _find_key(data: Any, key: str) -> str | None:
    if isinstance(data, dict):
        if isinstance(data.get(key), str):
            return str(data[key])
        for value in data.values():
            found = _find_key(value, key)
            if found:
                return found
    if isinstance(data, list):
        for value in data:
            found = _find_key(value, key)
            if found:
                return found
    return None


def shown(body: dict[str, Any]) -> str:
    """What one model call was shown: the system prompt and the conversation."""
    return json.dumps([body.get("system"), body.get("messages")], ensure_ascii=False)


def test_the_first_request_has_the_pack_and_what_another_agent_logged(
    api: FakeModelAPI, vault: Path
) -> None:
    assert BIN["openclaw"]  # pinned in runtimes.txt
    make_keys(vault, "ella", "lyra")
    handoff = vaultmem_append(vault, "lyra", "Stripe retries fixed, deploy it tonight", "handoff")
    oc = OpenClaw(api, Path.home())
    oc.setup(vault, "ella")
    run = oc.run("Good morning. What is waiting for me?")
    calls = api.main_calls()
    assert calls, run.stderr[-2000:]
    first = shown(calls[0].body)
    assert packs_in(first) == 1, first[:3000]  # the pack, once
    assert PACK + "ella" in first and "Ella is the backend engineer" in first
    assert "Stripe retries fixed, deploy it tonight" in first and str(handoff["id"]) in first
    assert "Good morning. What is waiting for me?" in first

    # the turn was queued for retention (agent_end -> `vaultmem hook session-end`)
    session = oc.session_id(run)
    queue = vault / ".vaultmem" / "queue" / "ella"
    queued = sorted(queue.glob("*.json")) if queue.is_dir() else []
    assert queued, f"nothing queued under {queue}; hooks.log: {_hooks_log(vault)}"
    text = "\n".join(p.read_text(errors="replace") for p in queued)
    assert "What is waiting for me?" in text and session in text
    assert '"format": "openclaw"' in text


def test_a_later_turn_gets_what_is_new_once_and_keeps_one_pack(
    api: FakeModelAPI, vault: Path
) -> None:
    make_keys(vault, "ella", "lyra")
    oc = OpenClaw(api, Path.home())
    oc.setup(vault, "ella")
    session = oc.session_id(oc.run("First turn."))
    vaultmem_append(vault, "lyra", "Slot calendar ships on Friday", "note")
    api.calls.clear()
    run = oc.run("Second turn.")
    assert oc.session_id(run) == session  # the same session (agent:main:main)
    seen = shown(api.main_calls()[0].body)
    assert seen.count("Slot calendar ships on Friday") == 1, seen[-3000:]
    assert packs_in(seen) == 1  # the session's pack, not a second one
    api.calls.clear()
    oc.run("Third turn.")
    seen = shown(api.main_calls()[0].body)
    assert seen.count("Slot calendar ships on Friday") == 1  # kept, not sent again
    assert packs_in(seen) == 1
    # each turn queued once: the ledger knows the turns already queued
    queue = vault / ".vaultmem" / "queue" / "ella"
    queued = [json.loads(p.read_text()) for p in sorted(queue.glob("*.json"))]
    requests = [t["text"] for q in queued for t in q["turns"] if t["role"] == "user"]
    assert requests == ["First turn.", "Second turn.", "Third turn."], requests


def test_the_model_acks_a_handoff_from_its_shell(api: FakeModelAPI, vault: Path) -> None:
    """OpenClaw's `exec` tool gets VAULTMEM_VAULT and VAULTMEM_AGENT from the plugin
    (`resolve_exec_env`): a vaultmem command the model runs needs no --vault or --agent."""
    from tests.e2e._runtimes import VAULTMEM

    make_keys(vault, "ella", "lyra")
    handoff = vaultmem_append(vault, "lyra", "Refund webhook needs a deploy", "handoff")
    oc = OpenClaw(api, Path.home())
    oc.setup(vault, "ella")
    cmd = f'{VAULTMEM} append "Deployed the refund webhook" --type ack --ack {handoff["id"]}'
    oc.run(f"Deploy it and ack. [[bash: {cmd}]]")
    # the model's shell ran the append as ella, acking lyra's handoff
    live = (vault / "nexus" / "live-context.md").read_text()
    assert "Deployed the refund webhook" in live, (tool_results(api), _hooks_log(vault))
    assert any(r.startswith("ella.") for r in tool_results(api)), tool_results(api)
    res = run_cli("inbox", "--json", "--vault", str(vault), "--agent", "ella")
    assert res.exit_code == 0, res.stderr
    assert str(handoff["id"]) not in res.stdout  # acked: no longer waiting for ella


def _hooks_log(vault: Path) -> str:
    path = vault / ".vaultmem" / "hooks.log"
    return path.read_text()[-2000:] if path.exists() else "(no hooks.log)"
