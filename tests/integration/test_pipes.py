"""A reader that stops early (`vaultmem inbox | grep -q X`, `vaultmem log | head`) is a normal end:
exit 0, nothing on stderr, on every path output takes (plain writes, rich tables, the fast path,
JSON, the interpreter's final flush). Scripts under `set -o pipefail` depend on it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests._layer3_helpers import make_keys
from vaultmem.nexus import log

COMMANDS = [
    ("log", "--tail", "50"),  # typer, plain text
    ("log", "--tail", "50", "--json"),
    ("read", "--agent", "ella", "--peek"),  # the fast path
    ("status",),  # rich
    ("memories",),  # rich table
    ("inbox", "--agent", "lyra"),
    ("recall", "stripe webhook"),
    ("decisions",),
]


@pytest.fixture
def busy(vault: Path) -> Path:
    v = make_keys(vault, "ella", "lyra")
    for i in range(60):
        log.append(v, "ella", f"note {i}", body="x" * 2000, to=("lyra",) if i % 3 == 0 else ())
    return vault


@pytest.mark.parametrize("args", COMMANDS, ids=" ".join)
def test_a_closed_stdout_is_a_normal_end(busy: Path, args: tuple[str, ...]) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "vaultmem", *args, "--vault", str(busy)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # the reader is gone before the first byte: every write fails (EPIPE)
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=60) == 0, err
    assert err == ""


def test_the_same_commands_succeed_with_a_reader(busy: Path) -> None:
    """The control: with someone reading, each prints something and exits 0."""
    for args in COMMANDS:
        proc = subprocess.run(
            [sys.executable, "-m", "vaultmem", *args, "--vault", str(busy)],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert proc.returncode == 0 and proc.stdout, (args, proc.stderr)
