"""Progress is for people at a terminal: on stderr, with a unit and an end, and nothing at all
when stderr is a pipe or a file (issue 25: `sync 2>err` wrote carriage-return counters)."""

from __future__ import annotations

import os
import select
import subprocess
import sys
from pathlib import Path


def _index(vault: Path, stderr: int) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "vaultmem", "index", "--rebuild", "--vault", str(vault)],
        stdout=subprocess.PIPE,
        stderr=stderr,
        timeout=120,
    )


def test_no_progress_into_a_file_or_a_pipe(vault: Path, tmp_path: Path) -> None:
    with open(tmp_path / "err", "wb") as err:
        proc = _index(vault, err.fileno())
    assert proc.returncode == 0
    assert (tmp_path / "err").read_bytes() == b""
    piped = _index(vault, subprocess.PIPE)
    assert piped.returncode == 0 and piped.stderr == b""
    assert b"Rebuilt index" in piped.stdout


def test_a_terminal_gets_a_bar_with_its_unit(vault: Path) -> None:
    leader, follower = os.openpty()
    try:
        proc = _index(vault, follower)
        os.close(follower)
        follower = -1
        shown = b""
        while select.select([leader], [], [], 0.5)[0]:
            try:
                chunk = os.read(leader, 1 << 16)
            except OSError:  # the other side closed
                break
            if not chunk:
                break
            shown += chunk
    finally:
        if follower >= 0:
            os.close(follower)
        os.close(leader)
    assert proc.returncode == 0
    text = shown.decode("utf-8", "replace")
    assert "Indexing" in text and " files" in text and "/" in text
