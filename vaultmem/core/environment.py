"""The environment: every variable vaultmem reads (the only reader of `os.environ`), and
where this machine keeps vaultmem's own files (`home`). The bottom of the core: it imports
`os` and `sys` alone, because the prompt hook's quick path reads it before anything else
loads. Entry points (the CLI, the MCP server) call these helpers and pass plain values in.
"""

# os.path, not pathlib: the prompt hook's quick path imports this module
# ruff: noqa: PTH111, PTH118

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from datetime import datetime
    from pathlib import Path

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
ENV_HERMES_HOME = "HERMES_HOME"  # where Hermes Agent keeps config.yaml (default ~/.hermes)
# crash tests only: `step:N` kills this process (SIGKILL) just before its Nth step (a rename,
# link or durable append); tests/integration/test_crash.py runs real commands at each N
ENV_CRASH_AT = "VAULTMEM_CRASH_AT"
# set by a shell's completion script (`vaultmem --show-completion`): the protocol of click
ENV_COMPLETE = "_VAULTMEM_COMPLETE"


def home() -> str:
    """VAULTMEM_HOME, else the platform's per-user config dir (`home_dir` is this, as a
    Path), with `os` alone: the prompt hook's quick path reads it."""
    explicit = os.environ.get(ENV_HOME)
    if explicit:
        return os.path.expanduser(explicit)
    if sys.platform == "win32":
        base = os.environ.get("APPDATA") or os.path.join(
            os.path.expanduser("~"), "AppData", "Roaming"
        )
    elif sys.platform == "darwin":
        base = os.path.join(os.path.expanduser("~"), "Library", "Application Support")
    else:
        base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return os.path.join(base, "vaultmem")


def env(name: str) -> str | None:
    """One VAULTMEM_* (or other documented) variable, empty treated as unset."""
    value = os.environ.get(name)
    return value or None


BLAS_THREADS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def one_blas_thread() -> None:
    """Before numpy is first imported: one BLAS thread unless the user set a number. The
    products recall runs are small; on a busy 2-core machine a BLAS thread pool made one
    query's transformer pass 15x slower (3 s instead of 0.2 s)."""
    for name in BLAS_THREADS:
        os.environ.setdefault(name, "1")


def env_now() -> datetime | None:
    """VAULTMEM_NOW pins the clock for tests and benchmarks. Two forms, UTC if no zone:

    - `2026-11-29T10:00:00Z`: frozen at that instant;
    - `2026-11-29T10:00:00Z@1796000000.5`: that instant at Unix time 1796000000.5, running from
      there with the wall clock, so that every process of a test run reads one moving clock."""
    raw = env(ENV_NOW)
    if raw is None:
        return None
    import time
    from datetime import UTC, datetime, timedelta

    text, _, anchor = raw.partition("@")
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
        since = float(anchor) if anchor else None
    except ValueError:
        from vaultmem.core.errors import ConfigError

        raise ConfigError(
            f"{ENV_NOW}={raw!r} is not an ISO time (or ISO@UNIX-TIME)",
            "e.g. VAULTMEM_NOW=2026-11-29T10:00:00Z",
        ) from None
    moment = moment if moment.tzinfo else moment.replace(tzinfo=UTC)
    if since is not None:
        moment += timedelta(seconds=time.time() - since)
    return moment


def env_crash_at() -> int | None:
    """The step to die at (VAULTMEM_CRASH_AT=step:N), for the crash tests."""
    raw = env(ENV_CRASH_AT) or ""
    kind, _, n = raw.partition(":")
    return int(n) if kind == "step" and n.isdigit() else None


def env_crash_stage() -> str | None:
    """The sync stage to die at (VAULTMEM_CRASH_AT=sync:STAGE), for the crash tests."""
    kind, _, stage = (env(ENV_CRASH_AT) or "").partition(":")
    return stage if kind == "sync" and stage else None


def env_debug() -> bool:
    return (env(ENV_DEBUG) or "").lower() in {"1", "true", "yes", "on"}


_PYTHON: list[str] = []  # set by use_python: vaultmem runs inside another program's Python


def python() -> str:
    """The Python that runs vaultmem's own processes (the background sync, `retain --queued`,
    the commands a hint tells a model to run): this process's, unless vaultmem was loaded into
    another program's interpreter (Hermes Agent's memory provider, `mcp/hermes.py`), which
    names vaultmem's own with `use_python`."""
    return _PYTHON[0] if _PYTHON else sys.executable


def use_python(path: str) -> None:
    _PYTHON[:] = [path]


def home_dir() -> Path:
    """VAULTMEM_HOME, else the platform's per-user config dir. Private keys live here."""
    from pathlib import Path

    return Path(home())
