"""Seals: local state that only this machine's vaultmem can have written.

git writes tracked files over ignored ones, so a plain `git pull` of a hostile remote can put
any file under `.vaultmem/`. Every state file there that decides something (the coordination
index, read cursors, chain heads, receipts, session and profile state, the search index's
manifest) is therefore sealed: a keyed BLAKE2b MAC over its bytes and its name under
`.vaultmem/`, keyed with the 32-byte secret `VAULTMEM_HOME/memo.key` (mode 0600, outside the
vault; the one the signature memo uses, with its own personalisation). A file whose seal does
not match is treated as absent: rebuilt from the vault's files, or started fresh. An agent that
can write the vault but not VAULTMEM_HOME cannot make a seal either.

A sealed JSON file stays JSON: `{"seal":"<64 hex>","data":DATA}` followed by a newline, where
the MAC covers DATA's bytes exactly as written (a slice, no re-serialising on read). A sealed
JSONL line is `{"seal":"<64 hex>","line":DATA}`.

Why keyed BLAKE2b and not HMAC-SHA256: it is a MAC by construction (a key parameter), and
`_blake2` is a built-in module that costs ~0.2 ms to import where `hashlib`/`hmac` cost ~4 ms
(they load OpenSSL): the prompt hook's quick path checks a seal before anything heavy loads.
This module imports only `os` and `json` (no pathlib, no config) for that reason.
"""

# os.path, not pathlib: the prompt hook's quick path imports this module
# ruff: noqa: PTH118

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING, Any

from vaultmem.core.environment import home

try:  # the built-in module hashlib itself takes blake2b from; hashlib loads OpenSSL first
    from _blake2 import blake2b
except ImportError:  # pragma: no cover - another Python implementation
    from hashlib import blake2b

if TYPE_CHECKING:
    from pathlib import Path

PERSON = b"vaultmem-seal-1"  # personalisation: a seal is never a memo line, nor the reverse
HEX = 64
_HEAD = b'{"seal":"'
_DATA = b'","data":'
_LINE = b'","line":'
_PREFIX = len(_HEAD) + HEX + len(_DATA)  # _DATA and _LINE have the same length
SECRET_FILE = "memo.key"
STATE_DIR = ".vaultmem"

_SECRET: dict[str, bytes | None] = {}


def secret(*, create: bool = True) -> bytes | None:
    """This machine's 32-byte secret (made on first use when `create`); None when
    VAULTMEM_HOME has none and cannot get one: then nothing is sealed, and every sealed file
    reads as absent (state is rebuilt each time, never trusted)."""
    where = home()
    known = _SECRET.get(where)
    if known is not None:
        return known
    try:
        with open(os.path.join(where, SECRET_FILE), "rb") as fh:
            raw = fh.read(64)
        found: bytes | None = raw if len(raw) == 32 else None
    except OSError:
        found = None
    if found is None and create:
        from vaultmem.core.device import memo_secret

        found = memo_secret()
    if found is not None:
        _SECRET[where] = found
    return found


def label(path: str | Path) -> bytes:
    """What a seal binds a file to: its path under `.vaultmem/` (`coord/live.json`), so a
    sealed file moved to another name (one agent's cursor as another's) does not pass; a path
    outside `.vaultmem/` is taken as the name itself."""
    parts = os.fspath(path).replace("\\", "/").split("/")
    if STATE_DIR in parts:  # else a name already (`receipts/ella`)
        i = len(parts) - 1 - parts[::-1].index(STATE_DIR)
        parts = parts[i + 1 :]
    return "/".join(parts).encode("utf-8", "surrogateescape")


def mac(key: bytes, name: bytes, data: bytes) -> str:
    h = blake2b(key=key, person=PERSON, digest_size=32)
    h.update(len(name).to_bytes(4, "big"))
    h.update(name)
    h.update(data)
    return h.hexdigest()


def _wrap(key: bytes, name: bytes, data: bytes, middle: bytes) -> bytes:
    return b"".join((_HEAD, mac(key, name, data).encode("ascii"), middle, data, b"}"))


def _unwrap(key: bytes, name: bytes, raw: bytes, middle: bytes) -> bytes | None:
    end = len(raw)
    while end and raw[end - 1] == 0x0A:  # the final newline(s), without copying the bytes
        end -= 1
    if end < _PREFIX + 1 or not raw.startswith(_HEAD) or raw[end - 1] != 0x7D:  # "}"
        return None
    if raw[len(_HEAD) + HEX : _PREFIX] != middle:
        return None
    data = raw[_PREFIX : end - 1]
    want = mac(key, name, data).encode("ascii")
    return data if _equal(raw[len(_HEAD) : len(_HEAD) + HEX], want) else None


def _equal(a: bytes, b: bytes) -> bool:
    """Constant-time comparison without importing hmac (it loads OpenSSL)."""
    if len(a) != len(b):
        return False
    diff = 0
    for x, y in zip(a, b, strict=True):
        diff |= x ^ y
    return diff == 0


def dumps(path: str | Path, obj: Any, *, key: bytes | None = None) -> bytes | None:
    """The sealed file for `obj` at `path` (JSON, compact); None when there is no secret."""
    key = key or secret()
    if key is None:
        return None
    data = json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    return _wrap(key, label(path), data, _DATA) + b"\n"


def loads(path: str | Path, raw: bytes, *, key: bytes | None = None) -> Any:
    """The value a sealed file holds; None when the seal does not match (or is missing)."""
    key = key or secret(create=False)
    if key is None:
        return None
    data = _unwrap(key, label(path), raw, _DATA)
    if data is None:
        return None
    try:
        return json.loads(data)
    except ValueError:
        return None


def read(path: str | Path, *, create: bool = False) -> Any:
    """The sealed file's value; None when it is absent, unreadable or not sealed by this
    machine (`exists_unsealed` says which, for a warning)."""
    key = secret(create=create)
    if key is None:
        return None
    data = read_bytes(path)
    return None if data is None else loads(path, data, key=key)


def read_bytes(path: str | Path) -> bytes | None:
    """A sealed file's bytes as they are (None when absent or unreadable), for `loads`."""
    try:  # os-level: an `io` file object costs five system calls more (read on every append)
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_BINARY", 0))
        try:
            chunks = []
            while chunk := os.read(fd, 1 << 16):
                chunks.append(chunk)
        finally:
            os.close(fd)
    except OSError:
        return None
    return b"".join(chunks)


def line(path: str | Path, obj: Any, *, key: bytes | None = None) -> bytes | None:
    """One sealed JSONL line (with its newline) for a file appended to line by line."""
    key = key or secret()
    if key is None:
        return None
    data = json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    return _wrap(key, label(path), data, _LINE) + b"\n"


def lines(path: str | Path, data: bytes, *, key: bytes | None = None) -> list[Any]:
    """The values of the sealed lines in `data` (a JSONL file's bytes); lines without a
    matching seal are left out."""
    key = key or secret(create=False)
    if key is None:
        return []
    name = label(path)
    out = []
    for raw in data.split(b"\n"):
        got = _unwrap(key, name, raw, _LINE)
        if got is None:
            continue
        try:
            out.append(json.loads(got))
        except ValueError:
            continue
    return out
