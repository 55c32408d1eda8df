"""The one JSONL reader: journals, checkpoint history, receipts.

A line that does not parse (a torn last line after a power cut) is skipped, never fatal.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def tail_lines(path: Path, *, max_bytes: int | None = None) -> bytes:
    """The file's bytes (b"" when it does not exist); with `max_bytes`, only its last
    `max_bytes`, less the line that boundary cut: the recent records of a long file, for the
    cost of a short read."""
    try:
        with open(path, "rb") as fh:
            size = fh.seek(0, 2)
            start = 0 if max_bytes is None else max(0, size - max_bytes)
            fh.seek(start)
            data = fh.read()
    except (FileNotFoundError, NotADirectoryError):
        return b""
    if start > 0:
        data = data.partition(b"\n")[2]  # the boundary may cut the first line
    return data


def read_jsonl(path: Path, *, max_bytes: int | None = None) -> list[dict[str, Any]]:
    """Every JSON object in the file, in order; [] when the file does not exist. With
    `max_bytes`, only the objects in its last `max_bytes` (`tail_lines`)."""
    out: list[dict[str, Any]] = []
    for raw in tail_lines(path, max_bytes=max_bytes).split(b"\n"):
        try:
            item = json.loads(raw)
        except ValueError:
            continue
        if isinstance(item, dict):
            out.append(item)
    return out


def last_jsonl(path: Path, *, chunk: int = 1 << 14) -> dict[str, Any] | None:
    """The last JSON object in the file, read from its end (cheap on a long journal)."""
    try:
        fh = open(path, "rb")  # noqa: SIM115 - closed below
    except FileNotFoundError:
        return None
    with fh:
        end = fh.seek(0, 2)
        buf = b""
        pos = end
        while pos > 0:
            step = min(chunk, pos)
            pos -= step
            fh.seek(pos)
            buf = fh.read(step) + buf
            lines = buf.splitlines()
            # the first line may be cut unless the file starts here
            for raw in reversed(lines if pos == 0 else lines[1:]):
                try:
                    item = json.loads(raw)
                except ValueError:
                    continue
                if isinstance(item, dict):
                    return item
    return None


def jsonl_line(item: dict[str, Any]) -> bytes:
    """One record as a line: compact, UTF-8 (not \\u escapes), newline-terminated."""
    return json.dumps(item, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n"
