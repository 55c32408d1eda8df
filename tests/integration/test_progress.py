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


def test_sync_into_a_file_writes_no_counter(tmp_path: Path) -> None:
    """Issue 25: `sync 2>err` wrote '\\rindexing 0/12\\rindexing 1/12…' into the file: the index
    catching up with what the merge brought in shows a bar on a terminal, nothing here."""
    from tests.integration.test_sync import git, vm

    homes = {side: tmp_path / f"home-{side}" for side in "ab"}
    a, b, bare = tmp_path / "a", tmp_path / "b", tmp_path / "origin.git"
    assert vm("init", str(a), "--agent", "ella", "--git", home=homes["a"]).returncode == 0
    git(tmp_path, "init", "--quiet", "--bare", str(bare))
    git(a, "remote", "add", "origin", str(bare))
    git(a, "push", "--quiet", "-u", "origin", "HEAD")
    assert vm("clone", str(bare), str(b), home=homes["b"]).returncode == 0
    assert vm("recall", "anything", "--vault", str(b), home=homes["b"]).returncode == 0  # an index
    for i in range(12):
        (a / f"note-{i}.md").write_text(f"# Note {i}\n\nAbout the zanzibar gateway.\n")
    assert vm("sync", "--vault", str(a), home=homes["a"]).returncode == 0
    with open(tmp_path / "err", "wb") as err:
        proc = subprocess.run(
            [sys.executable, "-m", "vaultmem", "sync", "--vault", str(b)],
            stdout=subprocess.PIPE,
            stderr=err,
            env={**os.environ, "VAULTMEM_HOME": str(homes["b"])},
            timeout=120,
        )
    assert proc.returncode == 0, (tmp_path / "err").read_text()
    assert (b / "note-11.md").exists()
    written = (tmp_path / "err").read_bytes()
    assert b"\r" not in written and b"ndexing" not in written, written
