"""Shared fixtures. Every test runs with VAULTMEM_HOME and HOME in a temp folder and no
VAULTMEM_* / ANTHROPIC_* variables from the developer's environment."""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
EXAMPLE = REPO / "example-vault"


@pytest.fixture(autouse=True)
def isolated_env(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Path]:
    home = tmp_path_factory.mktemp("home")
    for name in list(os.environ):
        if name.startswith(("VAULTMEM_", "ANTHROPIC_")) or name == "EDITOR":
            monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("VAULTMEM_HOME", str(home / "vaultmem-home"))
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    yield home


def copy_example(dest: Path) -> Path:
    shutil.copytree(EXAMPLE, dest, ignore=shutil.ignore_patterns(".vaultmem"))
    return dest


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    """A private copy of example-vault/ (tests never mutate the original)."""
    return copy_example(tmp_path / "vault")


@dataclass
class Result:
    exit_code: int
    stdout: str
    stderr: str


def run_cli(*args: str, stdin: str = "") -> Result:
    """Run the CLI in-process through its real error boundary (vaultmem.cli.app.run)."""
    from vaultmem.cli.app import run

    out, err = io.StringIO(), io.StringIO()
    old_stdin = sys.stdin
    sys.stdin = io.StringIO(stdin)
    code = 0
    try:
        with redirect_stdout(out), redirect_stderr(err):
            try:
                run(list(args))
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    finally:
        sys.stdin = old_stdin
    return Result(code, out.getvalue(), err.getvalue())


@pytest.fixture
def cli() -> object:
    return run_cli


def run_proc(
    *args: str,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
    stdin: str | None = None,
    timeout: float = 60,
) -> subprocess.CompletedProcess[str]:
    """Run `python -m vaultmem ARGS` as a real process."""
    full_env = dict(os.environ)
    if env:
        full_env.update(env)
    return subprocess.run(
        [sys.executable, "-m", "vaultmem", *args],
        cwd=cwd,
        env=full_env,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
