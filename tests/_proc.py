"""Helpers every process-level test imports as `tests._proc`: `vaultmem` and `git` as the user
runs them, each a process of its own, never the real home directory's state."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

# the identity of commits a test makes itself (vaultmem's own commits use the vault's settings)
GIT_IDENTITY = ("-c", "user.name=t", "-c", "user.email=t@example.invalid")


def vm(
    *args: str,
    home: Path | None = None,
    cwd: Path | None = None,
    stdin: str = "",
    env: dict[str, str] | None = None,
    drop: Sequence[str] = (),
    timeout: float = 120,
) -> subprocess.CompletedProcess[str]:
    """`vaultmem ARGS` as a process: VAULTMEM_HOME set to `home`, variables starting with a
    prefix in `drop` taken out of the environment first, `env` added last; stdin is `stdin`
    (empty: the process reads end of file, never the terminal)."""
    full = {k: v for k, v in os.environ.items() if not any(k.startswith(p) for p in drop)}
    if home is not None:
        full["VAULTMEM_HOME"] = str(home)
    full.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "vaultmem", *args],
        cwd=cwd,
        env=full,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def git(cwd: Path, *args: str) -> str:
    """`git ARGS` in `cwd` with a test identity; its stdout; a failure raises."""
    return subprocess.run(
        ["git", *GIT_IDENTITY, *args], cwd=cwd, capture_output=True, text=True, check=True
    ).stdout
