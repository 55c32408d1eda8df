"""Hermes Agent (the real CLI from PyPI, in its own venv) after `vaultmem setup hermes`, its
Anthropic provider pointed at the fake Messages API: what the model is shown.

Hermes is run as a person runs it one-shot (`hermes -z PROMPT`, hermes_cli/oneshot.py) with a
config.yaml that only names the model (`model.provider: anthropic`; the key and
ANTHROPIC_BASE_URL from the environment, hermes_cli/auth.py's `base_url_env_var`): every other
setting is Hermes's default."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

from tests._cli import run_cli
from tests._fake_model_api import FakeModelAPI
from tests.e2e._runtimes import PACK, Run, base_env, make_keys, packs_in, require
from tests.e2e.test_claude_code import vaultmem_append


class Hermes:
    """`hermes -z` in `project` with a scratch HERMES_HOME, after `vaultmem setup hermes`."""

    def __init__(self, api: FakeModelAPI, home: Path, project: Path) -> None:
        self.bin = require("hermes")
        self.api, self.home, self.project = api, home, project
        self.hermes_home = home / ".hermes"
        self.hermes_home.mkdir(parents=True, exist_ok=True)
        project.mkdir(parents=True, exist_ok=True)
        (self.hermes_home / "config.yaml").write_text(
            "model:\n  default: claude-sonnet-4-5\n  provider: anthropic\n"
        )

    def setup(self, vault: Path, agent: str, *extra: str) -> str:
        res = run_cli(
            "setup", "hermes", "--agent", agent, "--vault", str(vault),
            "--hermes-home", str(self.hermes_home), "--hermes", str(self.bin), *extra,
        )  # fmt: skip
        assert res.exit_code == 0, res.stderr
        return res.stdout

    def env(self) -> dict[str, str]:
        return {
            **base_env(self.home),
            "HERMES_HOME": str(self.hermes_home),
            "ANTHROPIC_API_KEY": "sk-ant-e2e-fake",
            "ANTHROPIC_BASE_URL": self.api.url,
        }

    def run(self, prompt: str, *args: str, timeout: float = 240) -> Run:
        return self.run_args("-z", prompt, *args, timeout=timeout)

    def run_args(self, *args: str, timeout: float = 240) -> Run:
        argv = [str(self.bin), *args]
        t = time.monotonic()
        res = subprocess.run(
            argv, cwd=self.project, env=self.env(), capture_output=True, text=True,
            timeout=timeout, stdin=subprocess.DEVNULL,
        )  # fmt: skip
        run = Run(res.returncode, res.stdout, res.stderr, time.monotonic() - t)
        assert run.returncode == 0, (run.stdout[-2000:], run.stderr[-2000:])
        return run


def request_text(body: dict[str, object]) -> str:
    """What one Messages request showed the model: the system prompt and the messages."""
    return json.dumps([body.get("system"), body.get("messages")], ensure_ascii=False)


def queued_texts(vault: Path, agent: str) -> str:
    found = sorted((vault / ".vaultmem" / "queue" / agent).glob("*.json"))
    return "\n".join(p.read_text() for p in found)


def test_the_first_request_has_the_pack_and_the_handoff_and_the_turn_is_queued(
    api: FakeModelAPI, vault: Path, tmp_path: Path
) -> None:
    make_keys(vault, "ella", "lyra")
    handoff = vaultmem_append(vault, "ella", "Refund endpoint ready for the web", "handoff")
    hermes = Hermes(api, Path.home(), tmp_path / "web")
    hermes.setup(vault, "lyra")
    status = hermes.run_args("memory", "status").stdout  # Hermes's own view of its provider
    assert "Provider:  vaultmem" in status and "available ✓" in status, status
    prompt = 'What should I work on today? Log it. [[tool: append {"summary": "Lyra starts the refund button", "channel": "web"}]]'
    hermes.run(prompt)
    calls = api.main_calls()
    assert calls, [c.path for c in api.calls]
    first = request_text(calls[0].body)
    assert packs_in(first) == 1 and PACK + "lyra" in first
    assert "Refund endpoint ready for the web" in first and str(handoff["id"]) in first
    assert "Prices are stored as integer euro cents" in first  # the vault's decision
    names = json.dumps(calls[0].body.get("tools"))
    assert "vaultmem_append" in names and "vaultmem_ack" in names
    # the scripted model called the provider's tool: the entry is on the shared log as lyra's
    res = run_cli("log", "--vault", str(vault), "--agent", "lyra", "--json")
    assert res.exit_code == 0, res.stderr
    mine = [e for e in json.loads(res.stdout)["entries"] if e["agent"] == "lyra"]
    assert mine[-1]["summary"] == "Lyra starts the refund button"
    # the turn reached the retention queue (or, with the key set, was already sent from it)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        sent = any(c.retention and "What should I work on today" in c.text for c in api.calls)
        if sent or "What should I work on today" in queued_texts(vault, "lyra"):
            break
        time.sleep(0.5)
    else:
        raise AssertionError("no turn was queued for retention")


def test_the_next_session_gets_a_new_entry_once_and_not_the_handoff_it_acked(
    api: FakeModelAPI, vault: Path, tmp_path: Path
) -> None:
    """The seed's night and morning: Lyra (Hermes) acks Ella's handoff with the provider's
    tool; Ella logs a fix overnight; Lyra's next session (a new `hermes -z`) has the fix in its
    first request exactly once, and the handoff no more."""
    make_keys(vault, "ella", "lyra")
    handoff = vaultmem_append(vault, "ella", "Refund endpoint ready for the web", "handoff")
    hermes = Hermes(api, Path.home(), tmp_path / "web")
    hermes.setup(vault, "lyra")
    args = json.dumps({"ids": [handoff["id"]], "summary": "Refund button follows the endpoint"})
    hermes.run(f"Handle the handoff. [[tool: ack {args}]]")
    res = run_cli("log", "--vault", str(vault), "--agent", "lyra", "--json")
    acks = [e for e in json.loads(res.stdout)["entries"] if e["type"] == "ack"]
    assert acks and acks[-1]["acks"] == [handoff["id"]] and acks[-1]["agent"] == "lyra"
    night = len(api.main_calls())
    vaultmem_append(vault, "ella", "Webhook retries fixed at 2 a.m.", "fix")
    hermes.run("Good morning: what is new?")
    morning = api.main_calls()[night:]
    first = request_text(morning[0].body)
    assert packs_in(first) == 1 and first.count("Webhook retries fixed at 2 a.m.") == 1
    assert "Refund endpoint ready for the web" not in first  # acked last night
    # where last night's session stopped: its checkpoint, in the morning's pack
    checkpoint = first[first.index("Your checkpoint") :]
    assert "Last request: Handle the handoff." in checkpoint
