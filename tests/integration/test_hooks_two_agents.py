"""Two agents coordinated by hooks alone.

`vaultmem setup claude-code` wires two projects, one for ella and one for lyra. A script then
plays Claude Code: it runs the hook commands written into each project's
`.claude/settings.json` (SessionStart → prompts → Stop → SessionEnd) with the documented JSON
on stdin and a transcript on disk. Lyra never calls vaultmem herself; ella's one action is an
MCP `append` through the server registered in her project's `.mcp.json`, as a model would
make it. Lyra's second session starts with ella's handoff in its context, flagged for an ack,
and with the checkpoint her first session's Stop hook wrote.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests._cli import run_cli

pytest.importorskip("mcp")

from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

pytestmark = pytest.mark.slow


class Runtime:
    """Plays Claude Code for one agent's project: its hooks, its transcripts, its MCP server."""

    def __init__(self, project: Path, agent: str) -> None:
        self.project = project
        self.agent = agent
        settings = json.loads((project / ".claude" / "settings.json").read_text())
        self.commands = {
            event: [h["command"] for g in groups for h in g["hooks"]]
            for event, groups in settings["hooks"].items()
        }
        self.server = json.loads((project / ".mcp.json").read_text())["mcpServers"]["vaultmem"]
        # Claude Code sets the settings' `env` for hooks and for the model's tool calls alike
        self.env = {str(k): str(v) for k, v in settings.get("env", {}).items()}
        self.session = ""
        self.lines: list[dict[str, Any]] = []

    @property
    def transcript(self) -> Path:
        return self.project / f"{self.session}.jsonl"

    def _record(self, role: str, text: str) -> None:
        n = len(self.lines)
        self.lines.append(
            {
                "type": role,
                "uuid": f"{self.session}-{n}",
                "sessionId": self.session,
                "cwd": str(self.project),
                "timestamp": f"2026-11-29T10:{n:02d}:00.000Z",
                "message": {
                    "role": role,
                    "content": text if role == "user" else [{"type": "text", "text": text}],
                },
            }
        )
        self.transcript.write_text("".join(json.dumps(x) + "\n" for x in self.lines))

    def fire(self, event: str, **fields: Any) -> subprocess.CompletedProcess[str]:
        payload = {
            "session_id": self.session,
            "transcript_path": str(self.transcript),
            "cwd": str(self.project),
            "permission_mode": "default",
            "hook_event_name": event,
            **fields,
        }
        (command,) = self.commands[event]
        proc = subprocess.run(
            ["bash", "-c", command],
            input=json.dumps(payload),
            capture_output=True,
            text=True,
            cwd=self.project,
            timeout=120,
            env={**os.environ, **self.env},
        )
        assert proc.returncode == 0 and proc.stderr == "", proc.stderr
        return proc

    def start(self, session: str, source: str = "startup") -> str:
        self.session, self.lines = session, []
        self._record("user", "")  # the transcript exists from the start
        self.lines = []
        proc = self.fire("SessionStart", source=source)
        return str(json.loads(proc.stdout)["hookSpecificOutput"]["additionalContext"])

    def resume(self, source: str) -> str:
        """SessionStart again in the same session (`resume`, `compact` or `clear`)."""
        proc = self.fire("SessionStart", source=source)
        return str(json.loads(proc.stdout)["hookSpecificOutput"]["additionalContext"])

    def prompt(self, text: str) -> str:
        self._record("user", text)
        proc = self.fire("UserPromptSubmit", prompt=text)
        if not proc.stdout:
            return ""
        return str(json.loads(proc.stdout)["hookSpecificOutput"]["additionalContext"])

    def answer(self, text: str) -> None:
        self._record("assistant", text)
        assert self.fire("Stop", stop_hook_active=False).stdout == ""

    def end(self) -> None:
        assert self.fire("SessionEnd", reason="prompt_input_exit").stdout == ""

    def mcp(self, tool: str, args: dict[str, Any]) -> Any:
        async def go() -> Any:
            params = StdioServerParameters(
                command=self.server["command"], args=self.server["args"], env=dict(os.environ)
            )
            async with stdio_client(params) as (read, write), ClientSession(read, write) as s:
                await s.initialize()
                return await s.call_tool(tool, args)

        result = anyio.run(go)
        assert not result.is_error, result.content
        return result.structured_content


def wait_for(check: Any, seconds: float = 20.0) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, "timed out waiting for the background work"
        time.sleep(0.05)


def test_lyra_second_session_sees_ellas_handoff(vault: Path, tmp_path: Path) -> None:
    from tests._layer3_helpers import make_keys

    make_keys(vault, "ella", "lyra")  # new keys for a copied vault, approved by its reviewer
    runtimes = {}
    for agent in ("ella", "lyra"):
        project = tmp_path / f"{agent}-project"
        project.mkdir()
        res = run_cli(
            "setup",
            "claude-code",
            "--agent",
            agent,
            "--vault",
            str(vault),
            "--project",
            str(project),
        )
        assert res.exit_code == 0, res.stderr
        runtimes[agent] = Runtime(project, agent)
    ella, lyra = runtimes["ella"], runtimes["lyra"]

    # lyra, session 1: works on the checkout screen, then leaves
    context = lyra.start("lyra-1")
    assert "# Session context for lyra" in context and "you are agent `lyra`" in context
    lyra.prompt("Start the checkout screen for the booking flow")
    lyra.answer("The checkout screen skeleton is in place.")
    lyra.end()
    checkpoint = vault / "agents" / "lyra" / "checkpoint.md"
    wait_for(lambda: "Last request: Start the checkout screen" in checkpoint.read_text())

    # ella, session 1: lyra's session left no bookkeeping on the log; ella hands off through
    # her MCP server
    context = ella.start("ella-1")
    assert "Session ended" not in context
    ella.prompt("Make checkout idempotent on the API side")
    handoff = ella.mcp(
        "append",
        {
            "summary": "Checkout must send Idempotency-Key",
            "type": "handoff",
            "channel": "api",
            "body": "POST /v2/checkout rejects requests without the header (409).",
        },
    )
    ella.answer("The API now requires Idempotency-Key; I handed the client side to lyra.")
    ella.end()

    # lyra, session 2: the handoff is in her context at start, waiting for her ack
    context = lyra.start("lyra-2")
    assert f"[{handoff['id']}]" in context and "Checkout must send Idempotency-Key" in context
    assert "AWAITING ACK" in context and "rejects requests without the header" in context
    assert "Last request: Start the checkout screen for the booking flow" in context
    assert lyra.prompt("ok go ahead") == ""  # nothing new: nothing added to the turn
    # a resume of the same session gets a delta, not the pack again
    resumed = lyra.resume("resume")
    assert "# Session context" not in resumed and "Nothing new from other agents" in resumed
    assert len(resumed) < 600

    # ella writes again while lyra works: lyra's next prompt carries it, once
    ella.mcp("append", {"summary": "Refund endpoint is live", "type": "fix", "channel": "api"})
    added = lyra.prompt("ok go ahead")
    assert "1 new entry from other agents" in added and "Refund endpoint is live" in added
    assert lyra.prompt("ok go ahead") == ""
    # ella writes while lyra's conversation is compacted: the compacted session gets it alone
    ella.mcp("append", {"summary": "Refunds are idempotent too", "type": "fix", "channel": "api"})
    compacted = lyra.resume("compact")
    assert "# Session context" not in compacted and "Refunds are idempotent too" in compacted
    assert lyra.prompt("ok go ahead") == ""  # delivered once
    lyra.answer("Checkout sends the header now.")
    lyra.end()

    log = json.loads(run_cli("log", "--tail", "50", "--json", "--vault", str(vault)).stdout)
    assert [e for e in log["entries"] if e["summary"].startswith("Session ended")] == []
    sessions = vault / ".vaultmem" / "sessions"
    ended = [
        json.loads(line)["session_id"]
        for agent in ("ella", "lyra")
        for line in (sessions / f"{agent}-history.jsonl").read_text().splitlines()
    ]
    assert ended == ["ella-1", "lyra-1", "lyra-2"]
    queued = sorted((vault / ".vaultmem" / "queue").glob("*/*.json"))
    assert len(queued) == 3  # every session waits for `vaultmem retain --queued`
    assert run_cli("verify", "--vault", str(vault)).exit_code == 0
