"""Temp files a killed write left (`.vaultmem-tmp-NAME.<hex>`) are cleaned by the next command
that writes in their folder, and by `repair` everywhere: only ours, only stale ones."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from tests._cli import run_cli
from tests._layer3_helpers import make_keys
from vaultmem.core import fsio
from vaultmem.nexus import repair, state

STALE = 180.0  # seconds: older than fsio.TEMP_MAX_AGE


def _leftover(folder: Path, name: str, *, age: float = STALE) -> Path:
    """A file as a write killed between its temp file and the rename leaves it."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text("half a note")
    then = time.time() - age  # file times are the file system's: the real clock
    os.utime(path, (then, then))
    return path


def test_only_stale_temp_files_of_ours_are_removed(tmp_path: Path) -> None:
    stale = _leftover(tmp_path, ".vaultmem-tmp-2026-11.md.1a2b3c4d")
    fresh = _leftover(tmp_path, ".vaultmem-tmp-2026-12.md.5e6f7a8b", age=1.0)
    persons = [
        _leftover(tmp_path, ".vaultmem-tmp-notes.md"),  # not a name we make
        _leftover(tmp_path, "vaultmem-tmp-x.md.1a2b3c4d"),
        _leftover(tmp_path, ".vaultmem-tmp-x.md.NOTHEX00"),
    ]
    (tmp_path / ".vaultmem-tmp-dir.1a2b3c4d").mkdir()
    os.symlink(persons[0], tmp_path / ".vaultmem-tmp-link.md.1a2b3c4d")
    assert fsio.sweep_temp_files(tmp_path) == [stale]
    assert not stale.exists() and fresh.exists() and all(p.exists() for p in persons)
    assert (tmp_path / ".vaultmem-tmp-link.md.1a2b3c4d").is_symlink()
    assert (tmp_path / ".vaultmem-tmp-dir.1a2b3c4d").is_dir()


def test_the_next_write_in_a_folder_cleans_it(vault: Path) -> None:
    v = make_keys(vault)
    stale = _leftover(vault / "nexus", ".vaultmem-tmp-project-state.md.00ff00ff")
    deeper = _leftover(vault / "nexus/archive", ".vaultmem-tmp-live-context-2026-10.md.0a0b0c0d")
    state.set_state(v, "ella", "Goal", "ship")
    assert not stale.exists()
    assert deeper.exists()  # another folder: cleaned by what writes there, or by repair


def test_repair_cleans_every_folder_and_says_so(vault: Path) -> None:
    v = make_keys(vault)
    archive = _leftover(vault / "nexus/archive", ".vaultmem-tmp-live-context-2026-10.md.0a0b0c0d")
    digest = _leftover(vault / "nexus/digests", ".vaultmem-tmp-2026-W47.md.deadbeef")
    fresh = _leftover(vault / "nexus/digests", ".vaultmem-tmp-2026-W48.md.feedbeef", age=2.0)
    report = repair.repair(v)
    assert not archive.exists() and not digest.exists() and fresh.exists()
    assert [a for a in report.actions if "temp file" in a] == [
        "removed nexus/archive/.vaultmem-tmp-live-context-2026-10.md.0a0b0c0d, "
        "a temp file a killed write left",
        "removed nexus/digests/.vaultmem-tmp-2026-W47.md.deadbeef, a temp file a killed write left",
    ]
    res = run_cli("repair", "--vault", str(vault))
    assert res.exit_code == 0, res.stderr


def test_a_clock_ahead_of_the_files_clock_sweeps_no_live_write(
    vault: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The process clock a year ahead of the file system's (a faked clock, a network mount):
    a temp file written a second ago is a live write and stays, by the next write's sweep and
    by `repair`; one older than the limit by the files' clock goes."""
    v = make_keys(vault)
    fresh = _leftover(vault / "nexus", ".vaultmem-tmp-project-state.md.00ff00ff", age=1.0)
    stale = _leftover(vault / "nexus", ".vaultmem-tmp-decisions.md.0a0b0c0d")
    real = time.time_ns
    monkeypatch.setattr(time, "time_ns", lambda: real() + 400 * 86_400 * 10**9)
    monkeypatch.setattr(time, "time", lambda: time.time_ns() / 1e9)
    state.set_state(v, "ella", "Goal", "ship")
    assert fresh.exists() and not stale.exists()
    repair.repair(v)
    assert fresh.exists()
