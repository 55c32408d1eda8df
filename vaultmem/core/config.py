"""Settings: flag > VAULTMEM_* environment > vaultmem.toml > defaults.

This is the only module that reads `os.environ`. Entry points (the CLI, the MCP server) call
`env_*` helpers and pass plain values into the core.
"""

from __future__ import annotations

import json
import os
import re
import sys
import tomllib
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from vaultmem.core.errors import ConfigError

ENV_VAULT = "VAULTMEM_VAULT"
ENV_AGENT = "VAULTMEM_AGENT"
ENV_HOME = "VAULTMEM_HOME"
ENV_DEBUG = "VAULTMEM_DEBUG"
ENV_NO_FAST = "VAULTMEM_NO_FAST"
ENV_REVIEWER = "VAULTMEM_REVIEWER"
ENV_NOW = "VAULTMEM_NOW"
ENV_ANTHROPIC_KEY = "ANTHROPIC_API_KEY"
ENV_ANTHROPIC_BASE_URL = "ANTHROPIC_BASE_URL"
ENV_EDITOR = "EDITOR"
ENV_CODEX_HOME = "CODEX_HOME"  # where Codex keeps config.toml (default ~/.codex)

CONFIG_NAME = "vaultmem.toml"

SUPPORTED_LANGUAGES = ("en", "it", "de", "fr", "es", "pt", "nl")


@dataclass(frozen=True)
class LogSettings:
    require_signatures: bool = True
    lock_timeout: float = 10.0
    max_summary: int = 200
    max_body: int = 20_000


@dataclass(frozen=True)
class SecretSettings:
    policy: str = "redact"  # "redact" or "refuse"


@dataclass(frozen=True)
class ReadSettings:
    budget: int = 0  # tokens; 0 means no budget
    recent_own: int = 5
    max_new_entries: int = 50


@dataclass(frozen=True)
class RecallSettings:
    limit: int = 10
    max_file_bytes: int = 2_000_000


@dataclass(frozen=True)
class LLMSettings:
    model: str = "claude-haiku-4-5"
    max_tokens: int = 4096
    max_transcript_chars: int = 400_000
    chunk_chars: int = 60_000
    timeout: float = 60.0
    max_retries: int = 2


@dataclass(frozen=True)
class BankSettings:
    prune_after_days: int = 60
    duplicate_threshold: float = 0.85
    related_threshold: float = 0.5
    read_limit: int = 5  # own pending facts shown by `vaultmem read`


@dataclass(frozen=True)
class HookSettings:
    """`vaultmem hook EVENT` (the lifecycle hooks of Claude Code and similar runtimes)."""

    session_budget: int = 2000  # tokens of the session-start pack (0: the [read] budget)
    prompt_budget: int = 800  # tokens a prompt hook may add to one turn
    recall_hits: int = 3  # recall hits a prompt hook may add
    recall_min_score: float = 12.0  # BM25F score a hit must reach to be added to a turn
    timeout: float = 5.0  # seconds one hook call may take before it gives up (exit 0)
    lock_timeout: float = 2.0  # seconds a hook waits for a vault lock
    retain: bool = True  # session-end runs `retain --queued` in the background when a key is set


@dataclass(frozen=True)
class Config:
    """The parsed `vaultmem.toml` of one vault."""

    agents: tuple[str, ...] = ()
    reviewers: tuple[str, ...] = ()
    language: str = "en"
    default_reviewer: str | None = None
    format: int = 0  # how many migrations the vault has seen (vaultmem upgrade)
    log: LogSettings = field(default_factory=LogSettings)
    secrets: SecretSettings = field(default_factory=SecretSettings)
    read: ReadSettings = field(default_factory=ReadSettings)
    recall: RecallSettings = field(default_factory=RecallSettings)
    llm: LLMSettings = field(default_factory=LLMSettings)
    bank: BankSettings = field(default_factory=BankSettings)
    hooks: HookSettings = field(default_factory=HookSettings)


def _section(cls: type[Any], raw: Any, name: str, path: Path) -> Any:
    if raw is None:
        return cls()
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: [{name}] must be a table", "see README, Configuration")
    known = set(cls.__dataclass_fields__)
    unknown = sorted(set(raw) - known)
    if unknown:
        raise ConfigError(
            f"{path}: unknown key(s) in [{name}]: {', '.join(unknown)}",
            f"known keys: {', '.join(sorted(known))}",
        )
    defaults = cls()
    for key, value in raw.items():
        expected = type(getattr(defaults, key))
        ok = isinstance(value, expected) or (expected is float and isinstance(value, int))
        if not ok or isinstance(value, bool) != (expected is bool):
            raise ConfigError(
                f"{path}: [{name}] {key} must be {expected.__name__}, got {value!r}",
                "fix the value in vaultmem.toml",
            )
    return cls(**raw)


def _names(raw: Any, key: str, path: Path) -> tuple[str, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list) or not all(isinstance(x, str) for x in raw):
        raise ConfigError(f"{path}: {key} must be a list of names", f'e.g. {key} = ["ella"]')
    return tuple(raw)


def parse_config(text: str, path: Path) -> Config:
    """Parse the text of a `vaultmem.toml`; raise ConfigError naming the file on any problem."""
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(
            f"{path}: not valid TOML: {exc}", "fix the file or run vaultmem init"
        ) from exc
    language = raw.get("language", "en")
    if language not in SUPPORTED_LANGUAGES:
        raise ConfigError(
            f"{path}: language {language!r} is not supported",
            f"use one of: {', '.join(SUPPORTED_LANGUAGES)}",
        )
    default_reviewer = raw.get("default_reviewer")
    if default_reviewer is not None and not isinstance(default_reviewer, str):
        raise ConfigError(
            f"{path}: default_reviewer must be a name", 'e.g. default_reviewer = "chiara"'
        )
    fmt = raw.get("format", 0)
    if not isinstance(fmt, int) or isinstance(fmt, bool) or fmt < 0:
        raise ConfigError(
            f"{path}: format must be a whole number >= 0, got {fmt!r}",
            "vaultmem upgrade sets it; remove the line to start from 0",
        )
    return Config(
        agents=_names(raw.get("agents"), "agents", path),
        format=fmt,
        reviewers=_names(raw.get("reviewers"), "reviewers", path),
        language=language,
        default_reviewer=default_reviewer,
        log=_section(LogSettings, raw.get("log"), "log", path),
        secrets=_section(SecretSettings, raw.get("secrets"), "secrets", path),
        read=_section(ReadSettings, raw.get("read"), "read", path),
        recall=_section(RecallSettings, raw.get("recall"), "recall", path),
        llm=_section(LLMSettings, raw.get("llm"), "llm", path),
        bank=_section(BankSettings, raw.get("bank"), "bank", path),
        hooks=_section(HookSettings, raw.get("hooks"), "hooks", path),
    )


def set_toml_key(text: str, key: str, literal: str, path: Path) -> str:
    """Set one top-level `key = literal` in a vaultmem.toml text, keeping every other line.

    A key already there is replaced in place (a one-line value, or an array over several
    lines); a new one goes before the first table. The result must parse as a valid config.
    """
    pattern = re.compile(rf"^{re.escape(key)}[ \t]*=[ \t]*(?:\[[^\]]*\]|[^\n]*)", re.MULTILINE)
    head_end = m.start() if (m := re.search(r"^\[", text, re.MULTILINE)) else len(text)
    line = f"{key} = {literal}"
    found = pattern.search(text, 0, head_end)
    if found:
        new = text[: found.start()] + line + text[found.end() :]
    else:
        new = (
            text[:head_end] + line + "\n" + ("\n" if head_end < len(text) else "") + text[head_end:]
        )
    parse_config(new, path)  # never write a config we cannot read back
    return new


def toml_list(names: list[str] | tuple[str, ...]) -> str:
    return "[" + ", ".join(json.dumps(n) for n in names) + "]"


def load_config(path: Path) -> Config:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ConfigError(
            f"cannot read {path}: {exc.strerror}", "check the file's permissions"
        ) from exc
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8 text", "re-save the file as UTF-8") from exc
    return parse_config(text, path)


# --- environment (entry points only) -------------------------------------------------------


def env(name: str) -> str | None:
    """One VAULTMEM_* (or other documented) variable, empty treated as unset."""
    value = os.environ.get(name)
    return value or None


def env_now() -> datetime | None:
    """VAULTMEM_NOW (an ISO time, UTC if no zone): pins the clock for tests and benchmarks."""
    raw = env(ENV_NOW)
    if raw is None:
        return None
    try:
        moment = datetime.fromisoformat(raw.replace("Z", "+00:00"))
    except ValueError:
        raise ConfigError(
            f"{ENV_NOW}={raw!r} is not an ISO time", "e.g. VAULTMEM_NOW=2026-11-29T10:00:00Z"
        ) from None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def env_debug() -> bool:
    return (env(ENV_DEBUG) or "").lower() in {"1", "true", "yes", "on"}


def home_dir() -> Path:
    """VAULTMEM_HOME, else the platform's per-user config dir. Private keys live here."""
    explicit = env(ENV_HOME)
    if explicit:
        return Path(explicit).expanduser()
    if sys.platform == "win32":
        base = Path(os.environ.get("APPDATA") or Path.home() / "AppData" / "Roaming")
    elif sys.platform == "darwin":
        base = Path.home() / "Library" / "Application Support"
    else:
        base = Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config")
    return base / "vaultmem"
