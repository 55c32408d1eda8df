"""A full disk and a read-only vault, for real: the vault on a small tmpfs (needs root to mount,
as CI has; skipped elsewhere). The first append that does not fit leaves no torn entry and
exits 6 (retryable); recall searches the index it has and says so; `index` says the disk is
full instead of "unexpected OSError"; on a read-only mount recall still answers (issue 22)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests._cli import copy_example
from tests._layer3_helpers import make_keys


@pytest.fixture
def mount(tmp_path: Path) -> Iterator[Path]:
    point = tmp_path / "mnt"
    point.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    made = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=3m", "tmpfs", str(point)],
                          capture_output=True, text=True)  # fmt: skip
    if made.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {made.stderr.strip()}")
    try:
        yield point
    finally:
        subprocess.run(["umount", "-l", str(point)], check=False)


def vm(vault: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "vaultmem", *args, "--vault", str(vault)],
        input=stdin, capture_output=True, text=True, timeout=120, env=dict(os.environ),
    )  # fmt: skip


def fill(folder: Path, leave: int) -> None:
    """Fill the file system, then free `leave` bytes (tmpfs frees whole pages)."""
    with open(folder / "filler", "wb") as fh:
        try:
            while True:
                fh.write(b"\0" * 65536)
                fh.flush()
        except OSError:
            pass
    with open(folder / "filler", "rb+") as fh:
        size = os.fstat(fh.fileno()).st_size
        fh.truncate(max(0, size - leave))


def test_a_full_disk_leaves_no_torn_entry_and_recall_still_answers(mount: Path) -> None:
    vault = copy_example(mount / "vault")
    make_keys(vault, "ella")
    assert vm(vault, "recall", "payments").returncode == 0  # the index exists
    log = vault / "nexus" / "live-context.md"
    before = log.read_bytes()
    fill(mount, 8192)
    res = vm(vault, "append", "big entry", "--body", "-", "--type", "note", "--agent", "ella",
             stdin="x" * 19_000)  # fmt: skip
    assert res.returncode == 6, res.stderr
    assert "disk is full" in res.stderr and "Traceback" not in res.stderr
    assert log.read_bytes() == before  # not one byte of a torn entry
    recall = vm(vault, "recall", "payments", "--json")
    assert recall.returncode == 0, recall.stderr
    index = vm(vault, "index", "--rebuild")
    assert index.returncode == 6 and "unexpected" not in index.stderr, index.stderr
    (mount / "filler").unlink()
    assert vm(vault, "verify").returncode == 0
    again = vm(vault, "append", "big entry", "--body", "-", "--type", "note", "--agent", "ella",
               stdin="x" * 19_000)  # fmt: skip
    assert again.returncode == 0, again.stderr
    assert vm(vault, "verify").returncode == 0


def test_a_read_only_vault_can_still_recall(mount: Path) -> None:
    vault = copy_example(mount / "vault")
    assert vm(vault, "recall", "payments").returncode == 0
    (vault / "wiki" / "new-note.md").write_text("# Fresh\n\nsomething new about payments\n")
    subprocess.run(["mount", "-o", "remount,ro", str(mount)], check=True)
    res = vm(vault, "recall", "payments", "--json")
    assert res.returncode == 0, res.stderr
    data = json.loads(res.stdout)
    assert data["hits"] and any("searched the index as is" in w for w in data["index"]["warnings"])
    write = vm(vault, "remember", "x", "--name", "X", "--type", "fact")
    assert write.returncode == 3 and "read-only" in write.stderr
