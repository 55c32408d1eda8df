"""The hooks as each runtime in `RUNTIME_EVENTS` runs them, from the files `vaultmem setup` wrote.

A script plays the runtime: it reads the hook commands from the runtime's own file (Codex:
`hooks.json` next to `config.toml`, https://developers.openai.com/codex/hooks; Claude Code:
`.claude/settings.json`, https://code.claude.com/docs/en/hooks), runs them with `bash -c` in
the project folder, with the runtime's documented JSON on stdin (tests/fixtures/hooks/codex/
cite their source) and with the environment the runtime gives hooks and tool calls (Claude
Code's settings `env`, Codex's `[shell_environment_policy] set`) on a PATH without vaultmem's
venv. A command vaultmem tells the model to run is then run exactly as written, the same way.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
import tomllib
from pathlib import Path
from typing import Any

import pytest

from tests._cli import run_cli, setup_codex_user
from tests._layer3_helpers import make_keys

pytestmark = pytest.mark.slow

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
CODEX = FIXTURES / "hooks" / "codex"
ROLLOUT = FIXTURES / "transcripts" / "codex-rollout.jsonl"
BARE_PATH = "/usr/bin:/bin"  # no venv: a bare `vaultmem` would exit 127 here


def wait_for(check: Any, seconds: float = 20.0) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, "timed out waiting for the background work"
        time.sleep(0.05)


class Codex:
    """Plays Codex for one project: its hooks.json, its shell environment, a rollout file."""

    def __init__(self, home: Path, project: Path) -> None:
        self.project = project
        hooks = json.loads((home / "hooks.json").read_text())["hooks"]
        self.commands = {
            event: [h["command"] for g in groups for h in g["hooks"]]
            for event, groups in hooks.items()
        }
        config = tomllib.loads((home / "config.toml").read_text())
        assert config["features"]["hooks"] is True
        self.env = {
            **os.environ,
            "PATH": BARE_PATH,
            **config["shell_environment_policy"]["set"],
        }
        self.transcript = project / "rollout.jsonl"
        shutil.copy(ROLLOUT, self.transcript)

    def payload(self, name: str) -> dict[str, Any]:
        data = json.loads((CODEX / f"{name}.json").read_text())
        data.pop("_source")
        data["transcript_path"] = str(self.transcript)
        data["cwd"] = str(self.project)
        return data

    def fire(self, event: str, name: str) -> str:
        (command,) = self.commands[event]
        proc = subprocess.run(
            ["bash", "-c", command],
            input=json.dumps(self.payload(name)),
            capture_output=True,
            text=True,
            cwd=self.project,
            env=self.env,
            timeout=120,
        )
        assert proc.returncode == 0 and proc.stderr == "", proc.stderr
        return proc.stdout

    def context(self, event: str, name: str) -> str:
        out = json.loads(self.fire(event, name))["hookSpecificOutput"]
        assert out["hookEventName"] == event
        return str(out["additionalContext"])

    def shell(self, command: str) -> subprocess.CompletedProcess[str]:
        """A shell tool call of the model, as Codex makes it."""
        return subprocess.run(
            ["bash", "-c", command],
            capture_output=True,
            text=True,
            cwd=self.project,
            env=self.env,
            timeout=120,
        )


def test_codex_hooks_from_setup(
    vault: Path, tmp_path: Path, isolated_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    make_keys(vault, "ella", "lyra")
    home, project = isolated_env / "codex-home", tmp_path / "web"
    monkeypatch.setenv("CODEX_HOME", str(home))
    setup_codex_user(vault, home, project)
    codex = Codex(home, project)

    pack = codex.context("SessionStart", "session-start-startup")
    assert "# Session context for lyra" in pack and "you are agent `lyra`" in pack
    handoff = run_cli(
        "append", "Checkout must send Idempotency-Key", "--type", "handoff", "--channel", "api",
        "--to", "lyra", "--vault", str(vault), "--agent", "ella", "--json",
    )  # fmt: skip
    assert handoff.exit_code == 0, handoff.stderr
    hid = json.loads(handoff.stdout)["id"]
    turn = codex.context("UserPromptSubmit", "user-prompt-submit")
    assert f"[{hid}]" in turn and "AWAITING ACK" in turn

    # a resumed or cleared session gets a delta, never the whole pack again
    resumed = codex.context("SessionStart", "session-start-resume")
    assert "# Session context" not in resumed and "Nothing new" in resumed
    cleared = codex.context("SessionStart", "session-start-clear")
    assert "# Session context" not in cleared and "read --peek" in cleared

    # Stop answers at once; the checkpoint from the Codex rollout follows
    assert codex.fire("Stop", "stop") == ""
    checkpoint = vault / "agents" / "lyra" / "checkpoint.md"
    wait_for(lambda: "Checkout must send an Idempotency-Key" in checkpoint.read_text())
    assert codex.fire("PreCompact", "pre-compact") == ""

    # the next session's pack has the handoff in the inbox; its ack hint runs as written
    fresh = {**codex.payload("session-start-startup"), "session_id": "second"}
    (command,) = codex.commands["SessionStart"]
    proc = subprocess.run(
        ["bash", "-c", command], input=json.dumps(fresh), capture_output=True, text=True,
        cwd=project, env=codex.env, timeout=120,
    )  # fmt: skip
    second = json.loads(proc.stdout)["hookSpecificOutput"]["additionalContext"]
    (hint,) = re.findall(r"ack it: (.+?) \(or answer it", second)
    ack = codex.shell(
        hint.replace('"<what you did>"', '"client sends the header"').replace("ID", hid)
    )
    assert ack.returncode == 0, ack.stderr
    log = json.loads(run_cli("log", "--json", "--vault", str(vault)).stdout)["entries"]
    assert log[-1]["agent"] == "lyra" and log[-1]["acks"] == [hid]
    # so does the read command of the AGENTS.md block
    agents_md = (project / "AGENTS.md").read_text()
    (read,) = re.findall(r"\(or `([^`]+ read [^`]+)`\)", agents_md)
    assert codex.shell(read).returncode == 0


def test_codex_hints_run_in_a_login_shell(
    vault: Path, tmp_path: Path, isolated_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Codex runs hooks with the user's PATH (here: vaultmem's venv on it) but its shell tool
    starts a login shell (`bash -lc`), whose profile sets PATH afresh (issue 37, item 4): a hint
    that says a bare `vaultmem` because the hook found it on PATH exits 127 there. Every
    command the pack and the turn's context give the model runs from such a shell."""
    make_keys(vault, "ella", "lyra")
    home, project = isolated_env / "codex-home", tmp_path / "web"
    monkeypatch.setenv("CODEX_HOME", str(home))
    setup_codex_user(vault, home, project)
    codex = Codex(home, project)
    venv_bin = str(Path(sys.executable).parent)
    assert (Path(venv_bin) / "vaultmem").is_file()
    codex.env["PATH"] = f"{venv_bin}{os.pathsep}{BARE_PATH}"  # the hooks find vaultmem on PATH
    handoff = run_cli(
        "append", "Checkout must send Idempotency-Key", "--type", "handoff", "--channel", "api",
        "--to", "lyra", "--vault", str(vault), "--agent", "ella", "--json",
    )  # fmt: skip
    hid = json.loads(handoff.stdout)["id"]
    pack = codex.context("SessionStart", "session-start-startup")
    (hint,) = re.findall(r"ack it: (.+?) \(or answer it", pack)
    assert not hint.startswith("vaultmem ")
    login = {**codex.env, "PATH": BARE_PATH}
    ack = subprocess.run(
        ["bash", "-lc", hint.replace('"<what you did>"', '"client sends the header"').replace("ID", hid)],
        capture_output=True, text=True, cwd=project, env=login, timeout=120,
    )  # fmt: skip
    assert ack.returncode == 0, ack.stderr
    log = json.loads(run_cli("log", "--json", "--vault", str(vault)).stdout)["entries"]
    assert log[-1]["agent"] == "lyra" and log[-1]["acks"] == [hid]


def test_claude_code_hints_run_as_written(vault: Path, tmp_path: Path) -> None:
    """The ack hint of a pack a Claude Code hook printed, run by the model's Bash tool from
    the project folder with the settings' env and without the venv on PATH."""
    make_keys(vault, "ella", "lyra")
    project = tmp_path / "api"
    project.mkdir()
    res = run_cli(
        "setup", "claude-code", "--agent", "ella", "--vault", str(vault), "--project", str(project)
    )
    assert res.exit_code == 0, res.stderr
    settings = json.loads((project / ".claude" / "settings.json").read_text())
    env = {**os.environ, "PATH": BARE_PATH, **settings["env"]}
    handoff = run_cli(
        "append", "Refunds need a reason code", "--type", "handoff", "--to", "ella",
        "--vault", str(vault), "--agent", "lyra", "--json",
    )  # fmt: skip
    hid = json.loads(handoff.stdout)["id"]
    (command,) = [h["command"] for g in settings["hooks"]["SessionStart"] for h in g["hooks"]]
    payload = {"session_id": "s1", "transcript_path": str(tmp_path / "none.jsonl"),
               "cwd": str(project), "hook_event_name": "SessionStart", "source": "startup"}  # fmt: skip
    proc = subprocess.run(
        ["bash", "-c", command], input=json.dumps(payload), capture_output=True, text=True,
        cwd=project, env=env, timeout=120,
    )  # fmt: skip
    context = json.loads(proc.stdout)["hookSpecificOutput"]["additionalContext"]
    (hint,) = re.findall(r"ack it: (.+?) \(or answer it", context)
    assert not hint.startswith("vaultmem ")  # not on this PATH: named by absolute path
    ack = subprocess.run(
        ["bash", "-c", hint.replace('"<what you did>"', '"added the reason code"').replace("ID", hid)],
        capture_output=True, text=True, cwd=project, env=env, timeout=120,
    )  # fmt: skip
    assert ack.returncode == 0, ack.stderr
    entries = json.loads(run_cli("log", "--json", "--vault", str(vault)).stdout)["entries"]
    assert entries[-1]["agent"] == "ella" and entries[-1]["acks"] == [hid]


def test_gemini_cli_hooks_from_setup(vault: Path, tmp_path: Path) -> None:
    """Gemini CLI's events (SessionStart, BeforeAgent, AfterAgent, PreCompress, SessionEnd)
    from the `.gemini/settings.json` setup writes, with its documented payloads; the reply
    names the event as Gemini CLI does, and `--remove` gives the file back."""
    make_keys(vault, "ella", "lyra")
    project = tmp_path / "api"
    project.mkdir()
    args = ("setup", "gemini", "--agent", "ella", "--vault", str(vault), "--project", str(project))
    assert run_cli(*args).exit_code == 0
    settings = json.loads((project / ".gemini" / "settings.json").read_text())
    assert settings["mcpServers"]["vaultmem"]["args"][-2:] == ["--agent", "ella"]
    hooks = settings["hooks"]
    assert sorted(hooks) == [
        "AfterAgent",
        "BeforeAgent",
        "PreCompress",
        "SessionEnd",
        "SessionStart",
    ]
    assert all(g["hooks"][0]["timeout"] >= 1000 for groups in hooks.values() for g in groups)
    assert "vaultmem" in (project / "GEMINI.md").read_text()
    env = {**os.environ, "PATH": BARE_PATH}

    def fire(event: str, name: str, **extra: Any) -> str:
        data = json.loads((FIXTURES / "hooks" / "gemini" / f"{name}.json").read_text())
        data.pop("_source")
        data.update(transcript_path=str(tmp_path / "none.json"), cwd=str(project), **extra)
        (command,) = [h["command"] for g in hooks[event] for h in g["hooks"]]
        proc = subprocess.run(
            ["bash", "-c", command], input=json.dumps(data), capture_output=True, text=True,
            cwd=project, env=env, timeout=120,
        )  # fmt: skip
        assert proc.returncode == 0 and proc.stderr == "", proc.stderr
        return proc.stdout

    start = json.loads(fire("SessionStart", "session-start-startup"))["hookSpecificOutput"]
    assert (
        start["hookEventName"] == "SessionStart"
        and "# Session context for ella" in start["additionalContext"]
    )
    assert fire("BeforeAgent", "before-agent") == ""  # nothing new
    run_cli("append", "Refund endpoint is live", "--type", "fix", "--vault", str(vault),
            "--agent", "lyra")  # fmt: skip
    turn = json.loads(fire("BeforeAgent", "before-agent"))["hookSpecificOutput"]
    assert (
        turn["hookEventName"] == "BeforeAgent"
        and "Refund endpoint is live" in turn["additionalContext"]
    )
    resumed = json.loads(fire("SessionStart", "session-start-resume"))["hookSpecificOutput"]
    assert "# Session context" not in resumed["additionalContext"]
    assert fire("AfterAgent", "after-agent") == ""
    assert fire("PreCompress", "pre-compress") == ""
    assert fire("SessionEnd", "session-end") == ""
    assert run_cli(*args, "--remove").exit_code == 0
    assert not (project / ".gemini").exists() and not (project / "GEMINI.md").exists()
