"""File times are the file system's: an age is measured against that clock (`fsio.fs_now_ns`,
or a file just written beside it), never against the process clock. The two can disagree by
any amount (a network mount whose server keeps another time, a faked or skewed process clock),
and where they did, a folder changed a moment ago was trusted, a live temp file swept and a
live git lock called stale. `--clock-shift` moves only the suite's clock (`VAULTMEM_NOW`), so
it cannot catch this; this check reads the code instead, and the ±400-day tests in
test_folder_stamps.py and test_temp_files.py move the process clock itself."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "vaultmem"
FILE_TIMES = {"st_mtime", "st_mtime_ns", "st_ctime", "st_ctime_ns", "st_atime", "st_atime_ns"}
PROCESS_CLOCK = {"time", "time_ns"}
# the one place: the process clock where the folder cannot be written (nothing is saved then)
ALLOWED = {"vaultmem/core/fsio.py: fs_now_ns"}


def _mixes(fn: ast.AST) -> bool:
    reads_file_time = reads_clock = False
    for node in ast.walk(fn):
        if isinstance(node, ast.Attribute) and node.attr in FILE_TIMES:
            reads_file_time = True
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in PROCESS_CLOCK
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id in {"time", "_time"}
        ):
            reads_clock = True
    return reads_file_time and reads_clock


def mixed_clocks(root: Path = PACKAGE) -> list[str]:
    out = []
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and _mixes(node):
                where = f"{path.relative_to(root.parent).as_posix()}: {node.name}"
                if where not in ALLOWED:
                    out.append(f"{path.relative_to(root.parent)}:{node.lineno}: {node.name}")
    return out


def test_no_function_measures_a_file_time_with_the_process_clock() -> None:
    assert mixed_clocks() == []


def test_the_check_finds_an_age_taken_by_the_process_clock(tmp_path: Path) -> None:
    fake = tmp_path / "vaultmem"
    fake.mkdir()
    (fake / "bad.py").write_text(
        "import os, time\n\ndef age(p):\n    return time.time() - os.stat(p).st_mtime\n"
    )
    (fake / "fine.py").write_text(
        "import os\nfrom vaultmem.core.fsio import fs_now_ns\n\n"
        "def age(p):\n    return fs_now_ns(p.parent) - os.stat(p).st_mtime_ns\n"
    )
    assert mixed_clocks(fake) == ["vaultmem/bad.py:3: age"]
