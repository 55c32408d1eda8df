"""Every command is documented: it has help, and the README shows it with an example."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import typer.main

from tests._cli import run_cli
from vaultmem.cli.app import app

README = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")


def command_paths() -> list[str]:
    from vaultmem.cli.lazy import walk

    return [path for path, _cmd in walk(typer.main.get_command(app))]


@pytest.mark.slow
def test_every_command_has_help() -> None:
    for path in command_paths():
        res = run_cli(*path.split(), "--help")
        assert res.exit_code == 0, path
        assert "Usage" in res.stdout and "Example" in res.stdout, path


def test_every_command_is_in_readme() -> None:
    missing = [p for p in command_paths() if not re.search(rf"vaultmem {re.escape(p)}\b", README)]
    assert not missing


def test_readme_first_screen_has_the_two_commands() -> None:
    first_screen = "\n".join(README.splitlines()[:25])
    assert "pip install -e . && vaultmem read --vault example-vault --agent ella" in first_screen
    assert 'pip install -e ".[dev]" && pytest' in first_screen


def test_ci_runs_the_readme_test_command() -> None:
    ci = (Path(__file__).resolve().parent.parent / ".ci" / "run").read_text()
    assert 'pip install --quiet -e ".[dev]"' in ci and "pytest" in ci
