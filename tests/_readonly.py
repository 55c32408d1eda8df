"""Make a folder read-only for real, even when the tests run as root (as CI does here).

Root ignores permission bits, so as root the folder is made immutable with `chattr +i`
(ext4 and most Linux file systems); otherwise the write bits are removed.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest


@contextmanager
def read_only(folder: Path, *, recursive: bool = True) -> Iterator[None]:
    """`folder` (and, if recursive, everything in it) cannot be written while inside."""
    if os.geteuid() == 0:
        if not shutil.which("chattr"):
            pytest.skip("root without chattr cannot make a folder read-only")
        flags = ["-R"] if recursive else []
        done = subprocess.run(["chattr", *flags, "+i", str(folder)], capture_output=True)
        if done.returncode != 0:
            pytest.skip(f"chattr +i not supported here: {done.stderr.decode().strip()}")
        try:
            yield
        finally:
            subprocess.run(["chattr", *flags, "-i", str(folder)], check=True)
        return
    modes = {}
    for path in [folder, *(folder.rglob("*") if recursive else [])]:
        modes[path] = path.stat().st_mode
        path.chmod(modes[path] & ~0o222)
    try:
        yield
    finally:
        for path, mode in modes.items():
            path.chmod(mode)
