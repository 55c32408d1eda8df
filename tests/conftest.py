"""Shared fixtures. Every test runs with VAULTMEM_HOME and HOME in a temp folder and no
VAULTMEM_* / ANTHROPIC_* variables from the developer's environment.

One clock for the suite: every test starts at `BASE` (moved by `--clock-shift`, e.g. `400d`, which
CI uses to make a time bomb fail the day it is written), and the clock runs from there with the wall
clock, in the test's process and in every process it starts (`VAULTMEM_NOW=ISO@UNIX-TIME`). A test
that needs the machine's real time says so with `@pytest.mark.real_clock`."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tests._cli import REPO, copy_example, run_cli

# the suite's epoch: after everything example-vault/ holds, in the past of any machine that runs it
BASE = datetime(2026, 11, 30, 12, 0, 0, tzinfo=UTC)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--clock-shift",
        default="0d",
        help="move the suite's clock by this duration (90s, 2h, 400d) to catch time bombs",
    )
    parser.addoption(
        "--all",
        action="store_true",
        help="run every test, slow, integration and e2e ones too (CI does); plain `pytest` is "
        "the quick loop",
    )


def pytest_sessionstart(session: pytest.Session) -> None:
    """Byte-compile vaultmem once: with PYTHONDONTWRITEBYTECODE set (as on CI machines) every
    `python -m vaultmem` a test starts would otherwise compile each module it imports again."""
    import compileall

    compileall.compile_dir(REPO / "vaultmem", quiet=2)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests under tests/integration/ (real processes, git, runtimes) carry `integration`, and
    `slow` too. Plain `pytest` is the quick loop: slow tests are left out unless `--all` is
    given, a `-m` expression chooses, or the command line names a test, a file or a folder
    below tests/ (then what it names runs, slow or not). CI runs `pytest --all`."""
    here = Path(__file__).resolve().parent / "integration"
    for item in items:
        if here in Path(str(item.fspath)).resolve().parents:
            item.add_marker(pytest.mark.integration)
            item.add_marker(pytest.mark.slow)
    if not _quick_loop(config):
        return
    slow = [item for item in items if item.get_closest_marker("slow") is not None]
    if slow:
        config.hook.pytest_deselected(items=slow)
        items[:] = [item for item in items if item.get_closest_marker("slow") is None]


def _quick_loop(config: pytest.Config) -> bool:
    if config.getoption("--all") or config.getoption("markexpr"):
        return False
    root = Path(__file__).resolve().parent
    for arg in config.args:
        named = Path(arg.split("::", 1)[0]).resolve()
        if "::" in arg or named not in (root, root.parent):
            return False
    return True


def pytest_report_header(config: pytest.Config) -> str | None:
    if _quick_loop(config):
        return "quick loop: slow, integration and e2e tests left out (`pytest --all` runs them)"
    return None


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


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    """A private copy of example-vault/ (tests never mutate the original)."""
    return copy_example(tmp_path / "vault")


@pytest.fixture
def cli() -> object:
    return run_cli
