"""Shared fixtures. Every test runs with VAULTMEM_HOME and HOME in a temp folder and no
VAULTMEM_* / ANTHROPIC_* variables from the developer's environment.

One clock for the suite: every test starts at `BASE` (moved by `--clock-shift`, e.g. `400d`, which
CI uses to make a time bomb fail the day it is written), and the clock runs from there with the wall
clock, in the test's process and in every process it starts (`VAULTMEM_NOW=ISO@UNIX-TIME`). A test
that needs the machine's real time says so with `@pytest.mark.real_clock`."""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
EXAMPLE = REPO / "example-vault"
# the suite's epoch: a moment in the past of any machine that runs it
BASE = datetime(2026, 11, 29, 10, 0, 0, tzinfo=UTC)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--clock-shift",
        default="0d",
        help="move the suite's clock by this duration (90s, 2h, 400d) to catch time bombs",
    )


def suite_now(config: pytest.Config) -> datetime:
    """Where every test's clock starts: BASE moved by --clock-shift."""
    from vaultmem.core.clock import parse_duration

    shift = str(config.getoption("--clock-shift"))
    return BASE + (timedelta(0) if shift in {"0", "0d"} else parse_duration(shift) or timedelta(0))


def iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@pytest.fixture(autouse=True)
def isolated_env(
    request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[Path]:
    home = tmp_path_factory.mktemp("home")
    for name in list(os.environ):
        if name.startswith(("VAULTMEM_", "ANTHROPIC_")) or name == "EDITOR":
            monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("VAULTMEM_HOME", str(home / "vaultmem-home"))
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    if request.node.get_closest_marker("real_clock") is None:
        monkeypatch.setenv("VAULTMEM_NOW", f"{iso(suite_now(request.config))}@{time.time():.6f}")
    yield home


@pytest.fixture
def now0(request: pytest.FixtureRequest) -> datetime:
    """The moment this test's clock started."""
    return suite_now(request.config)


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
