"""The hook contract: the events, the payload a runtime sends, the outcome, the failure log.

The runtime (Claude Code; see README, "Use it from your agent") runs the hook as a command and
writes a JSON object on its stdin: `session_id`, `transcript_path`, `cwd`, `hook_event_name`,
and per event `source` (SessionStart), `prompt` (UserPromptSubmit), `trigger` (PreCompact),
`stop_hook_active` (Stop) or `reason` (SessionEnd). SessionStart and UserPromptSubmit add context
through `{"hookSpecificOutput": {"hookEventName": ..., "additionalContext": ...}}` on stdout
with exit 0 (https://code.claude.com/docs/en/hooks, "Hook input and output").

A hook must never break the agent's session. `run_hook` turns every failure (no vault, unknown
agent, a locked log, a malformed payload, a bug, running out of time) into an `Outcome` with
exit 0, one line for stderr and the cause appended to `.vaultmem/hooks.log`; for SessionStart
the line also goes out as a `systemMessage`, which Claude Code shows to the person, not the
model. Nothing here raises, and no traceback reaches the agent's context. Each call is bounded
in time (`[hooks] timeout`) and waits at most `[hooks] lock_timeout` for a vault lock.

This module is the contract (the events, the payload, the outcome, the failure log); the
handlers live in `app.hooks.events` and the entry point in `app.hooks.run`. It stays small
because `hook prompt` runs on every user turn.
"""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from enum import StrEnum
from pathlib import Path
from typing import Any

from vaultmem.core import clock
from vaultmem.core.errors import VaultmemError
from vaultmem.core.records import evolve, field, record
from vaultmem.core.vault import Vault

LOG_NAME = "hooks.log"
LOG_MAX_BYTES = 1 << 20  # then hooks.log moves to hooks.log.1


class HookEvent(StrEnum):
    SESSION_START = "session-start"
    PROMPT = "prompt"
    PRE_COMPACT = "pre-compact"
    STOP = "stop"
    SESSION_END = "session-end"


# our event name -> Claude Code's `hook_event_name`
CLAUDE_EVENTS: dict[HookEvent, str] = {
    HookEvent.SESSION_START: "SessionStart",
    HookEvent.PROMPT: "UserPromptSubmit",
    HookEvent.PRE_COMPACT: "PreCompact",
    HookEvent.STOP: "Stop",
    HookEvent.SESSION_END: "SessionEnd",
}

# The one table of runtimes with lifecycle hooks: which of our events each wires, under the
# name its `hook_event_name` carries. Both take the same `hooks.json` shape (event -> matcher
# groups -> `{"type": "command", "command", "timeout"}`), send the same payload fields
# (`session_id`, `transcript_path`, `cwd`, `source`, `prompt`, `trigger`) and read
# `hookSpecificOutput.additionalContext` from SessionStart and UserPromptSubmit.
# - claude-code: https://code.claude.com/docs/en/hooks
# - codex: https://developers.openai.com/codex/hooks (`.codex/hooks.json` next to a config
#   layer; no SessionEnd: a session is queued for retention only where the runtime ends it)
# - gemini: https://geminicli.com/docs/hooks/reference (`.gemini/settings.json` `hooks`,
#   timeouts in milliseconds; BeforeAgent carries `prompt`, AfterAgent ends a turn,
#   PreCompress carries `trigger`, SessionEnd `reason`)
RUNTIME_EVENTS: dict[str, dict[HookEvent, str]] = {
    "claude-code": CLAUDE_EVENTS,
    "codex": {
        HookEvent.SESSION_START: "SessionStart",
        HookEvent.PROMPT: "UserPromptSubmit",
        HookEvent.PRE_COMPACT: "PreCompact",
        HookEvent.STOP: "Stop",
    },
    "gemini": {
        HookEvent.SESSION_START: "SessionStart",
        HookEvent.PROMPT: "BeforeAgent",
        HookEvent.PRE_COMPACT: "PreCompress",
        HookEvent.STOP: "AfterAgent",
        HookEvent.SESSION_END: "SessionEnd",
    },
}
TIMEOUT_UNIT = {"gemini": 1000}  # a runtime whose hook timeouts are not in seconds


class HookTimeout(Exception):
    """The hook ran out of its time (`[hooks] timeout`)."""


@record
class HookInput:
    """The documented fields of the payload; anything else is kept in `raw`."""

    session_id: str | None = None
    transcript_path: str | None = None
    cwd: str | None = None
    hook_event_name: str | None = None
    source: str | None = None
    prompt: str | None = None
    reason: str | None = None
    trigger: str | None = None
    raw: dict[str, Any] = field(default_factory=dict)
    problem: str | None = None  # why the payload could not be read, if it could not


def parse_input(text: str) -> HookInput:
    """Read the payload; empty or malformed stdin gives an empty input and a `problem`."""
    if not text.strip():
        return HookInput(problem="empty stdin")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        return HookInput(problem=f"stdin is not JSON ({exc.msg} at line {exc.lineno})")
    except ValueError:
        return HookInput(problem="stdin is not JSON")
    except RecursionError:  # '[' * 5000: json's decoder recurses once per level
        return HookInput(problem="stdin is JSON nested too deeply to read")
    if not isinstance(data, dict):
        return HookInput(problem=f"stdin is JSON but not an object ({type(data).__name__})")

    def text_of(key: str) -> str | None:
        value = data.get(key)
        return value if isinstance(value, str) and value else None

    return HookInput(
        session_id=text_of("session_id"),
        transcript_path=text_of("transcript_path"),
        cwd=text_of("cwd"),
        hook_event_name=text_of("hook_event_name"),
        source=text_of("source"),
        prompt=text_of("prompt"),
        reason=text_of("reason"),
        trigger=text_of("trigger"),
        raw=data,
    )


@record
class Outcome:
    """What the command prints (stdout, stderr), then `after` runs (e.g. move the read cursor
    once the context is out). The exit status is always 0."""

    stdout: str = ""
    stderr: str = ""
    after: Callable[[], None] | None = None
    context: str = ""  # the additionalContext alone, for --plain and for tests


def event_name(event: HookEvent, payload_name: str | None) -> str:
    """The runtime's name for `event`: the payload's `hook_event_name` when it is one of the
    names a runtime in `RUNTIME_EVENTS` gives this event, else Claude Code's."""
    names = {row[event] for row in RUNTIME_EVENTS.values() if event in row}
    return payload_name if payload_name in names else CLAUDE_EVENTS[event]


def hook_json(event: HookEvent, context: str, payload_name: str | None = None) -> str:
    """The output of events that add context (`hookSpecificOutput.additionalContext`, the
    same in every runtime of `RUNTIME_EVENTS`), named as the runtime named the event."""
    out = {
        "hookSpecificOutput": {
            "hookEventName": event_name(event, payload_name),
            "additionalContext": context,
        }
    }
    return json.dumps(out, ensure_ascii=False)


@contextmanager
def time_bound(seconds: float) -> Iterator[None]:
    """Raise HookTimeout after `seconds` (POSIX main thread; elsewhere no bound)."""
    usable = hasattr(signal, "setitimer") and seconds > 0
    if usable:
        try:
            old = signal.signal(signal.SIGALRM, _on_alarm)
        except ValueError:  # not the main thread
            usable = False
    if not usable:
        yield
        return
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def _on_alarm(_signum: int, _frame: object) -> None:
    raise HookTimeout("the hook ran out of time")


def hook_vault(vault: Vault) -> Vault:
    """The vault with the hooks' shorter lock timeout: a hook never waits long for a writer."""
    log = vault.config.log
    limit = min(log.lock_timeout, vault.config.hooks.lock_timeout)
    return evolve(vault, config=evolve(vault.config, log=evolve(log, lock_timeout=limit)))


def open_hook_vault(vault_path: Path | None, payload: HookInput) -> Vault:
    """`--vault` / VAULTMEM_VAULT, else walk up from the payload's `cwd` (or here)."""
    start = Path(payload.cwd) if payload.cwd and Path(payload.cwd).is_dir() else None
    # a broken vaultmem.toml (pushed by a remote) never stops a hook: lenient
    return hook_vault(Vault.open(vault_path, start=start, lenient=True))


# --- the log of failures ------------------------------------------------------------------------


def log_path(vault: Vault | None) -> Path:
    """`.vaultmem/hooks.log` in the vault; without a vault, VAULTMEM_HOME/hooks.log."""
    if vault is not None:
        try:
            return vault.state(LOG_NAME)
        except VaultmemError:
            pass
    from vaultmem.core.environment import home_dir

    return home_dir() / LOG_NAME


def write_log(
    vault: Vault | None, event: str, payload: HookInput, agent: str | None, text: str
) -> Path:
    """Append one record (and any traceback lines, indented) to the hooks log. Never raises."""
    path = log_path(vault)
    head = f"{clock.stamp()} {event} agent={agent or '-'} session={payload.session_id or '-'}"
    lines = text.rstrip("\n").splitlines() or [""]
    record = head + " " + lines[0] + "".join(f"\n    {ln}" for ln in lines[1:]) + "\n"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.exists() and path.stat().st_size > LOG_MAX_BYTES:
            os.replace(path, path.with_name(LOG_NAME + ".1"))
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(record)
    except OSError:
        pass
    return path


# --- transcript_path: read only where a runtime keeps transcripts --------------------------------


TRANSCRIPT_SUFFIXES = (".jsonl", ".json")  # Claude Code and Codex write JSONL, Gemini CLI JSON
TRANSCRIPT_MAX_BYTES = 64 << 20  # a transcript larger than this is not read at all


def transcript_roots(payload: HookInput) -> list[Path]:
    """Where a runtime keeps its transcripts, and the project the hook runs for: the only
    folders a hook reads `transcript_path` from. Claude Code: `~/.claude/projects/` (or
    `$CLAUDE_CONFIG_DIR/projects/`); Codex: `$CODEX_HOME/sessions/` (default `~/.codex/`);
    Gemini CLI: `~/.gemini/tmp/`; OpenClaw: `~/.openclaw/vaultmem/transcripts/` (what the vaultmem
    plugin writes; `$OPENCLAW_STATE_DIR/vaultmem/transcripts/` when that is set); the project is the payload's `cwd` when it is a folder other
    than `/` or the home folder itself."""
    home = Path.home()
    roots = [home / ".claude" / "projects", home / ".codex" / "sessions", home / ".gemini" / "tmp"]
    for var, sub in (("CLAUDE_CONFIG_DIR", "projects"), ("CODEX_HOME", "sessions")):
        if os.environ.get(var):
            roots.append(Path(os.environ[var]).expanduser() / sub)
    # the transcripts the vaultmem OpenClaw plugin writes, in OpenClaw's state folder
    # (OPENCLAW_STATE_DIR, else OPENCLAW_HOME or HOME, then .openclaw)
    state = (os.environ.get("OPENCLAW_STATE_DIR") or "").strip()
    base = (os.environ.get("OPENCLAW_HOME") or "").strip()
    claw = (
        Path(state).expanduser()
        if state
        else (Path(base).expanduser() if base else home) / ".openclaw"
    )
    roots.append(claw / "vaultmem" / "transcripts")
    if payload.cwd:
        project = Path(payload.cwd).expanduser()
        if project.is_absolute() and project.is_dir():
            real = Path(os.path.realpath(project))
            if real != Path(real.anchor) and real != Path(os.path.realpath(home)):
                roots.append(real)
    return [Path(os.path.realpath(r)) for r in roots]


def transcript_file(payload: HookInput) -> Path | None:
    """The payload's transcript, when it is one: a regular `.jsonl`/`.json` file of at most
    TRANSCRIPT_MAX_BYTES inside a runtime's transcript folder or the project (links resolved
    first). Anything else (`/etc/shadow`, `/proc/self/environ`, a fifo, a link out) is read as
    no transcript: the hook's normal "nothing to add", never an error (issue 22)."""
    import stat

    if not payload.transcript_path:
        return None
    path = Path(payload.transcript_path).expanduser()
    if not path.is_absolute() or path.suffix.lower() not in TRANSCRIPT_SUFFIXES:
        return None
    real = Path(os.path.realpath(path))
    if not any(real.is_relative_to(root) for root in transcript_roots(payload)):
        return None
    try:
        st = real.stat()
    except OSError:
        return None
    if not stat.S_ISREG(st.st_mode) or st.st_size > TRANSCRIPT_MAX_BYTES:
        return None
    return real
