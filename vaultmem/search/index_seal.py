"""Whoosh's files authenticated block by block before whoosh reads a byte of them.

Whoosh unpickles its table of contents, its stored fields, its posting blocks and inlined
postings (`whoosh/index.py` `_read_toc`, `whoosh/columns.py` `PickleColumn`,
`whoosh/codec/whoosh3.py` `W3LeafMatcher`/`W3TermInfo`): every file of a generation is code
to whoever can write it. The generation's listing (`manifest.proven`: name, size, mtime and
inode) is no proof of content, since a writer can rewrite a file in place and restore its
mtime. So every file whoosh opens goes through `SealedStorage.open_file`, which serves it from
memory, 16 KiB block by 16 KiB block, each block checked against a keyed BLAKE2b MAC before
any of it reaches whoosh; a block that does not match raises `UnsealedBlock` (a ValueError,
one of `engine.index_errors`: the index is rebuilt from the vault's files, never read).

The MACs are made while whoosh writes (`create_file`: each block as it is written, so a file
changed between whoosh's write and the seal cannot be sealed as ours) and kept in the
generation's `blocks.json`, sealed with `core/seal.py` (the machine secret under
VAULTMEM_HOME, which a vault writer cannot read). A MAC binds the block's number, and the
sealed `blocks.json` binds each name to its list of MACs and its length, so no block passes
for another and a file cut short or grown fails.

Only the blocks a search touches are read and checked (the table of contents, a few terms'
postings, the hits' stored fields), each once per open file: cost in docs/benchmarks.md
(`bench/index_seal.py`).
"""

# os.path and str paths: whoosh's storage works on them
# ruff: noqa: PTH118, PTH208

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Any

from vaultmem.core import seal
from vaultmem.core.environment import home

try:  # as core/seal.py: the built-in module, without hashlib's OpenSSL
    from _blake2 import blake2b
except ImportError:  # pragma: no cover - another Python implementation
    from hashlib import blake2b

BLOCK = 1 << 14
DIGEST = 16  # 128-bit MACs: forging one block is as hard as guessing the key's output
PERSON = b"vaultmem-index-1"  # never a seal (vaultmem-seal-1), nor the reverse
BLOCKS = "blocks.json"  # in the generation folder, beside whoosh's files
CACHE_BLOCKS = 1024  # per open file: a long-lived server keeps at most 16 MiB of one file


class UnsealedBlock(ValueError):
    """A whoosh file (or one of its blocks) that this machine did not write."""


def _mac(key: bytes, index: int, data: bytes | memoryview) -> bytes:
    """A block's MAC. Not bound to the file's name (whoosh writes its table of contents under
    a temporary name and renames it): `blocks.json`, sealed, says which MACs a name has."""
    h = blake2b(key=key, person=PERSON, digest_size=DIGEST)
    h.update(index.to_bytes(8, "big"))
    h.update(data)
    return h.digest()


def _key() -> bytes:
    key = seal.secret(create=True)
    if key is None:
        raise UnsealedBlock(f"no secret in {home()}: the index cannot be authenticated")
    return key


class _Sealed:
    """One file's seal: its length and its blocks' MACs."""

    __slots__ = ("length", "macs")

    def __init__(self, length: int, macs: bytes) -> None:
        self.length = length
        self.macs = macs


def _load(folder: str) -> dict[str, _Sealed]:
    raw = seal.read(os.path.join(folder, BLOCKS))
    out: dict[str, _Sealed] = {}
    if not isinstance(raw, dict) or raw.get("block") != BLOCK:
        return out
    try:
        for name, (length, macs) in raw["files"].items():
            out[str(name)] = _Sealed(int(length), bytes.fromhex(macs))
    except (KeyError, TypeError, ValueError, AttributeError):
        return {}
    return out


class _VerifiedFile:
    """A read-only file whose bytes reach the caller only after their block's MAC matched.

    No `fileno`: whoosh's StructFile then never maps or reads the file behind our back."""

    def __init__(self, path: str, name: str, sealed: _Sealed, key: bytes) -> None:
        self._fd: int | None = os.open(path, os.O_RDONLY | getattr(os, "O_BINARY", 0))
        self._sealed = sealed
        self._key = key
        self._pos = 0
        self._blocks: dict[int, bytes] = {}
        self.name = name

    def _block(self, i: int) -> bytes:
        found = self._blocks.get(i)
        if found is not None:
            return found
        if self._fd is None:
            raise ValueError("I/O operation on closed file")
        length = self._sealed.length
        want = min(BLOCK, length - i * BLOCK)
        data = (
            os.pread(self._fd, want, i * BLOCK)
            if hasattr(os, "pread")
            else self._seek_read(i, want)
        )
        mac = self._sealed.macs[i * DIGEST : (i + 1) * DIGEST]
        if len(data) != want or not seal._equal(_mac(self._key, i, data), mac):
            raise UnsealedBlock(f"index file {self.name} block {i} was not written by this machine")
        if len(self._blocks) >= CACHE_BLOCKS:
            self._blocks.clear()
        self._blocks[i] = data
        return data

    def _seek_read(self, i: int, want: int) -> bytes:  # pragma: no cover - Windows
        assert self._fd is not None
        os.lseek(self._fd, i * BLOCK, os.SEEK_SET)
        return os.read(self._fd, want)

    def read(self, n: int = -1) -> bytes:
        length = self._sealed.length
        start = self._pos
        end = length if n is None or n < 0 else min(length, start + n)
        if end <= start:
            return b""
        first, last = start // BLOCK, (end - 1) // BLOCK
        if first == last:
            data = self._block(first)
            out = data[start - first * BLOCK : end - first * BLOCK]
        else:
            parts = [self._block(i) for i in range(first, last + 1)]
            joined = b"".join(parts)
            out = joined[start - first * BLOCK : end - first * BLOCK]
        self._pos = end
        return out

    def readinto(self, buf: Any) -> int:
        view = memoryview(buf).cast("B")
        data = self.read(len(view))
        view[: len(data)] = data
        return len(data)

    def readline(self, limit: int = -1) -> bytes:
        out = bytearray()
        while limit < 0 or len(out) < limit:
            if self._pos >= self._sealed.length:
                break
            i = self._pos // BLOCK
            block = self._block(i)
            offset = self._pos - i * BLOCK
            stop = block.find(b"\n", offset)
            end = len(block) if stop < 0 else stop + 1
            if limit >= 0:
                end = min(end, offset + limit - len(out))
            out += block[offset:end]
            self._pos = i * BLOCK + end
            if stop >= 0 and end == stop + 1:
                break
        return bytes(out)

    def seek(self, offset: int, whence: int = 0) -> int:
        if whence == 1:
            offset += self._pos
        elif whence == 2:
            offset += self._sealed.length
        if offset < 0:
            raise ValueError("negative seek position")
        self._pos = offset
        return offset

    def tell(self) -> int:
        return self._pos

    def seekable(self) -> bool:
        return True

    def readable(self) -> bool:
        return True

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        self._blocks.clear()

    @property
    def closed(self) -> bool:
        return self._fd is None


class _SealingFile:
    """A file whoosh writes: each block's MAC made as the bytes go out, recorded at close.

    Whoosh writes its files front to back; a write anywhere else (not seen in whoosh 2.7's
    writers) makes the file sealed from what is on disk at close, under the refresh lock. What
    whoosh reads back through the same handle (the column writer's temporary file, mode w+b)
    is checked against the MACs made so far, as `_VerifiedFile` does."""

    def __init__(self, storage: Any, name: str, fileobj: Any) -> None:
        self._storage = storage
        self._name = name
        self._file = fileobj
        self._key = storage.key
        self._pending = bytearray()
        self._macs = bytearray()
        self._length = 0
        self._pos = 0
        self._linear = True
        self.name = name

    def write(self, data: Any) -> int:
        if self._pos != self._file.tell():
            self._file.seek(self._pos)
        n = self._file.write(data)
        size = len(data)
        if self._linear and self._pos == self._length:
            self._pending += data
            self._length += size
            while len(self._pending) >= BLOCK:
                block = bytes(self._pending[:BLOCK])
                del self._pending[:BLOCK]
                self._macs += _mac(self._key, len(self._macs) // DIGEST, block)
        else:
            self._linear = False
            self._length = max(self._length, self._pos + size)
        self._pos += size
        return int(n) if n is not None else size

    def read(self, n: int = -1) -> bytes:
        if not self._linear:
            raise UnsealedBlock(f"index file {self.name} was read back after a write out of order")
        start = self._pos
        end = self._length if n is None or n < 0 else min(self._length, start + n)
        if end <= start:
            return b""
        self._file.flush()
        full = len(self._macs) // DIGEST * BLOCK  # the pending tail starts here
        out = bytearray()
        i = start // BLOCK
        while i * BLOCK < end:
            if i * BLOCK >= full:
                block = bytes(self._pending)
            else:
                block = os.pread(self._file.fileno(), BLOCK, i * BLOCK)
                mac = bytes(self._macs[i * DIGEST : (i + 1) * DIGEST])
                if len(block) != BLOCK or not seal._equal(_mac(self._key, i, block), mac):
                    raise UnsealedBlock(f"index file {self.name} block {i} changed on disk")
            lo = max(start, i * BLOCK) - i * BLOCK
            hi = min(end, (i + 1) * BLOCK) - i * BLOCK
            out += block[lo:hi]
            i += 1
        self._pos = end
        return bytes(out)

    def seek(self, offset: int, whence: int = 0) -> int:
        if whence == 1:
            offset += self._pos
        elif whence == 2:
            offset += self._length
        self._pos = offset
        return offset

    def tell(self) -> int:
        return self._pos

    def flush(self) -> None:
        self._file.flush()

    def close(self) -> None:
        self._file.close()
        if self._linear:
            if self._pending:
                i = len(self._macs) // DIGEST
                self._macs += _mac(self._key, i, bytes(self._pending))
            self._storage.written[self._name] = _Sealed(self._length, bytes(self._macs))
        else:
            self._storage.written[self._name] = _seal_from_disk(
                self._key, self._storage.path_of(self._name)
            )

    @property
    def closed(self) -> bool:
        return bool(self._file.closed)


def _seal_from_disk(key: bytes, path: str) -> _Sealed:
    with open(path, "rb") as fh:
        data = fh.read()
    macs = b"".join(
        _mac(key, i, data[i * BLOCK : (i + 1) * BLOCK])
        for i in range((len(data) + BLOCK - 1) // BLOCK)
    )
    return _Sealed(len(data), macs)


_CLASSES: dict[str, type] = {}


def storage_class(file_storage: type, struct_file: type, random_name: Any) -> type:
    """The sealed storage, built on whoosh's `FileStorage`, `StructFile` and `random_name`
    (given by `search/engine.py`, whoosh's one importer), made once per process."""
    known = _CLASSES.get("storage")
    if known is not None:
        return known
    FileStorage, StructFile = file_storage, struct_file

    class _Storage(FileStorage):  # type: ignore[misc,valid-type]
        def __init__(self, path: str) -> None:
            super().__init__(path, supports_mmap=False)
            self.key = _key()
            self.sealed: dict[str, _Sealed] | None = None  # blocks.json, read on first open
            self.written: dict[str, _Sealed] = {}  # sealed by this process, not yet saved

        def path_of(self, name: str) -> str:
            return os.path.join(self.folder, name)

        def _seal_of(self, name: str) -> _Sealed:
            found = self.written.get(name)
            if found is None:
                if self.sealed is None or name not in self.sealed:
                    self.sealed = _load(self.folder)  # another process committed since
                found = self.sealed.get(name)
            if found is None:
                raise UnsealedBlock(f"index file {name} has no seal from this machine")
            return found

        def open_file(self, name: str, **kwargs: Any) -> Any:
            found = self._seal_of(name)
            verified = _VerifiedFile(self.path_of(name), name, found, self.key)
            return StructFile(verified, name=name, **kwargs)

        def file_length(self, name: str) -> int:
            return self._seal_of(name).length

        def create_file(self, name: str, excl: bool = False, mode: str = "wb", **kw: Any) -> Any:
            real = super().create_file(name, excl=excl, mode=mode, **kw)
            return StructFile(_SealingFile(self, name, real.file), name=name, **kw)

        def rename_file(self, oldname: str, newname: str, safe: bool = False) -> None:
            super().rename_file(oldname, newname, safe=safe)
            moved = self.written.pop(oldname, None)
            if moved is not None:
                self.written[newname] = moved

        def temp_storage(self, name: str | None = None) -> Any:
            """whoosh's spilled posting runs and column buffers (pickled, read back during the
            same commit) sealed and checked like the index's own files."""
            folder = os.path.join(self.folder, name or f"{random_name()}.tmp")
            return type(self)(folder).create()

        def delete_file(self, name: str) -> None:
            super().delete_file(name)
            self.written.pop(name, None)

        def save(self) -> None:
            """After a commit: every file now in the folder that this machine sealed, in
            `blocks.json` (before the manifest records the folder's listing)."""
            old = _load(self.folder)
            present = set(os.listdir(self.folder))
            kept = {n: s for n, s in {**old, **self.written}.items() if n in present}
            files = {n: [s.length, s.macs.hex()] for n, s in sorted(kept.items())}
            path = os.path.join(self.folder, BLOCKS)
            data = seal.dumps(path, {"block": BLOCK, "files": files})
            if data is None:
                raise UnsealedBlock(f"no secret in {home()}: the index cannot be sealed")
            from vaultmem.core.fsio import atomic_write

            atomic_write(Path(path), data)
            self.sealed = kept
            self.written.clear()

    _CLASSES["storage"] = _Storage
    return _Storage


class _Writer:
    """whoosh's writer, whose commit also saves the new files' seals."""

    def __init__(self, writer: Any, storage: Any) -> None:
        self._writer = writer
        self._storage = storage

    def __getattr__(self, attr: str) -> Any:
        return getattr(self._writer, attr)

    def commit(self, *args: Any, **kwargs: Any) -> None:
        self._writer.commit(*args, **kwargs)
        self._storage.save()

    def cancel(self) -> None:
        with contextlib.suppress(Exception):
            self._writer.cancel()
        self._storage.written.clear()


def writer(w: Any, ix: Any) -> Any:
    """`w` (a writer on `ix`) with its commit sealing what it wrote."""
    storage = ix.storage
    return _Writer(w, storage) if hasattr(storage, "save") else w


def open_index(storage_cls: type, folder: str) -> Any:
    return storage_cls(folder).open_index()


def create_index(storage_cls: type, folder: str, schema: Any) -> Any:
    storage = storage_cls(folder)
    ix = storage.create_index(schema)
    storage.save()  # the first, empty table of contents
    return ix
