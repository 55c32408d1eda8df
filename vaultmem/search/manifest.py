"""What the search index was built from (the stat walk that says what changed since is
`search/walk.py`).

Layout under `.vaultmem/index/`:

- `manifest.json`: the files the index was built from (path -> size, mtime_ns, a content hash
  when size and mtime cannot be trusted, problems found in the file), the whoosh generation
  in use, the vault language and the schema version. Written atomically *after* the whoosh
  commit, so a crash in between only makes the next refresh redo some files (idempotent:
  every file's documents are deleted by path before they are added again).
- `g-<hex>/`: one whoosh index ("generation"); see `vaultmem.search.engine`.
- `problems.json`: the files the index could not read cleanly, for `vaultmem status`.
- `heartbeat.json`: written by `vaultmem watch` while it keeps the index current.
- `names.json`: the words of the indexed note names, for the prompt hook (`search/vocab.py`).

Whoosh reads its TOC and stored fields with `pickle`, so a generation is opened only when its
provenance is proven: `manifest.json`, `problems.json` and `heartbeat.json` are sealed
(`core/seal.py`), and the manifest records the generation folder's listing as this machine
left it after its last commit (every file's name, size, mtime_ns and inode). `proven` compares
that listing with the folder before whoosh opens anything: a file git wrote, replaced or added
there fails it, and the folder is deleted and rebuilt from the vault's files, never opened.
"""

# the walk works on str paths, os.stat and os.path.join: a Path per file costs more than its stat

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path
from typing import Any

from vaultmem.core import seal
from vaultmem.core.errors import NotWritableError
from vaultmem.core.fsio import atomic_write, replace_cache
from vaultmem.core.locking import lock_path
from vaultmem.core.records import field, record
from vaultmem.core.vault import Vault
from vaultmem.search import vocab
from vaultmem.search.documents import LogMark

SCHEMA_VERSION = 11  # 9: how far each append-only log was indexed; 10: sealed, listing;
# 11: headings indexed without the note's title


INDEX_DIR = "index"


MANIFEST = "manifest.json"


PROBLEMS = "problems.json"


HEARTBEAT = "heartbeat.json"


# vaultmem's own sealed files in the index folder (everything else there is a generation)
OWN_FILES = (MANIFEST, PROBLEMS, HEARTBEAT, vocab.NAMES)


HEARTBEAT_MAX_AGE = 3.0  # seconds: older than this, the watcher is presumed gone


@record
class FileProblem:
    path: str
    kind: str  # broken-frontmatter, bad-encoding, truncated, binary, symlink-outside, unreadable
    message: str

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@record(frozen=False)
class Manifest:
    """What the index was built from. On disk as flat lists: it is read on every recall, and
    parsing three lists is several times faster than one small object per file."""

    generation: str
    language: str
    refreshed_at: float
    files: dict[str, tuple[int, int]]  # path -> (size, mtime_ns)
    skipped: dict[str, tuple[str, str]]
    hashes: dict[str, str] = field(default_factory=dict)  # racy entries only
    problems: dict[str, list[tuple[str, str]]] = field(default_factory=dict)
    schema: int = SCHEMA_VERSION
    # every file's content hash: a checkout, a copy or a sync tool that touches every file
    # moves mtimes, not content; equal hashes then cost a read, not a reindex
    sums: dict[str, str] = field(default_factory=dict)
    logs: dict[str, LogMark] = field(default_factory=dict)  # how far each log was indexed
    # the generation folder as this machine's last commit left it: name -> [size, mtime, inode]
    listing: dict[str, list[int]] = field(default_factory=dict)
    # every folder the last full walk went through ("" the root, "wiki/", "wiki/sub/"):
    # [mtime_ns, ctime_ns, inode] when that stamp vouches for the folder's names, else []
    folders: dict[str, list[int]] = field(default_factory=dict)

    def forget(self, rel: str) -> None:
        self.files.pop(rel, None)
        self.hashes.pop(rel, None)
        self.problems.pop(rel, None)
        self.sums.pop(rel, None)
        self.logs.pop(rel, None)

    def dump(self) -> dict[str, Any]:
        paths = sorted(self.files)
        return {
            "schema": self.schema,
            "generation": self.generation,
            "language": self.language,
            "refreshed_at": self.refreshed_at,
            "files": {
                "paths": paths,
                "sizes": [self.files[p][0] for p in paths],
                "mtimes": [self.files[p][1] for p in paths],
                "sums": [self.sums.get(p, "") for p in paths],
            },
            "hashes": dict(sorted(self.hashes.items())),
            "problems": {k: [list(x) for x in v] for k, v in sorted(self.problems.items())},
            "logs": {k: v.to_list() for k, v in sorted(self.logs.items())},
            "skipped": {k: list(v) for k, v in sorted(self.skipped.items())},
            "listing": self.listing,
            "folders": self.folders,
        }


# the generation each vault's manifest named when this process last read or wrote it
CURRENT: dict[str, str] = {}


def index_dir(vault: Vault) -> Path:
    return vault.state(INDEX_DIR)


def refresh_lock(vault: Vault) -> Path:
    return lock_path(vault, "index")


# the last manifest each process read or wrote, by file: (its stat and this machine's seal key,
# the file's first bytes: its seal, the manifest)
_LOADED: dict[str, tuple[tuple[int, int, int, bytes | None], bytes, Manifest]] = {}


# a sealed file starts with its seal, a MAC of everything after it: the same first bytes are the
# same manifest, whatever its stat says (a rewrite within one mtime tick, a reused inode)
_HEAD = len(b'{"seal":"') + seal.HEX


def _head(path: Path) -> bytes | None:
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_BINARY", 0))
    except OSError:
        return None
    try:
        return os.read(fd, _HEAD)
    except OSError:
        return None
    finally:
        os.close(fd)


def load_manifest(vault: Vault, *, shared: bool = False) -> Manifest | None:
    """The manifest; None when there is none, or when this machine did not write it.

    A process parses the file once (a cold recall reads it twice: the freshness check, then the
    searcher; a long-lived process on every recall): while its size, mtime and inode, this
    machine's seal key and the file's seal (its first bytes) stay the same, the manifest read
    before is returned, a copy of it unless `shared`. `shared`: the caller only reads it (a
    freshness check, opening the generation): the kept manifest itself, not a copy of its
    tables (10,000 notes: ~2 ms a copy).
    """
    path = index_dir(vault) / MANIFEST
    try:
        st = path.stat()
    except OSError:
        return None
    key = (st.st_size, st.st_mtime_ns, st.st_ino, seal.secret(create=True))
    cached = _LOADED.get(str(path))
    if cached is not None and cached[0] == key and _head(path) == cached[1]:
        CURRENT[str(vault.root)] = cached[2].generation
        return cached[2] if shared else _copy(cached[2])
    found, head = _parse(vault, path)
    if found is not None:
        # kept as parsed when the caller only reads it; a copy when it may change its own
        _LOADED[str(path)] = (key, head, found if shared else _copy(found))
    else:
        _LOADED.pop(str(path), None)
    return found


def _copy(m: Manifest) -> Manifest:
    """A manifest whose tables can be changed without changing `m` (a refresh edits them)."""
    return Manifest(
        generation=m.generation,
        language=m.language,
        refreshed_at=m.refreshed_at,
        files=dict(m.files),
        skipped=dict(m.skipped),
        hashes=dict(m.hashes),
        problems=dict(m.problems),
        schema=m.schema,
        sums=dict(m.sums),
        logs=dict(m.logs),
        listing=dict(m.listing),
        folders=dict(m.folders),
    )


def _parse(vault: Vault, path: Path) -> tuple[Manifest | None, bytes]:
    """The manifest in the file and the file's first bytes (its seal)."""
    try:  # os-level: an `io` file object costs several system calls more
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_BINARY", 0))
        try:
            chunks = []
            while chunk := os.read(fd, 1 << 20):
                chunks.append(chunk)
        finally:
            os.close(fd)
    except OSError:
        return None, b""
    data = b"".join(chunks)
    try:
        raw = seal.loads(path, data, key=seal.secret(create=True))
        if raw.get("schema") != SCHEMA_VERSION:
            return None, b""
        CURRENT[str(vault.root)] = str(raw["generation"])
        return Manifest(
            generation=str(raw["generation"]),
            language=str(raw["language"]),
            refreshed_at=float(raw["refreshed_at"]),
            files=dict(
                zip(
                    raw["files"]["paths"],
                    zip(raw["files"]["sizes"], raw["files"]["mtimes"], strict=True),
                    strict=True,
                )
            ),
            skipped={k: (str(v[0]), str(v[1])) for k, v in raw.get("skipped", {}).items()},
            hashes=dict(raw.get("hashes", {})),
            problems={k: [(str(a), str(b)) for a, b in v] for k, v in raw["problems"].items()},
            sums={
                p: s for p, s in zip(raw["files"]["paths"], raw["files"]["sums"], strict=True) if s
            },
            logs={
                k: LogMark(int(a), int(b), int(c), str(d))
                for k, (a, b, c, d) in raw.get("logs", {}).items()
            },
            listing={str(k): [int(x) for x in v] for k, v in raw["listing"].items()},
            folders={str(k): [int(x) for x in v] for k, v in raw.get("folders", {}).items()},
        ), data[:_HEAD]
    except (OSError, ValueError, KeyError, TypeError, IndexError, AttributeError):
        return None, b""


def unsealed(vault: Vault) -> bool:
    """Is there a manifest this machine did not write (git put it there)?"""
    path = index_dir(vault) / MANIFEST
    return path.exists() and seal.read(path, create=True) is None


def listing(folder: Path) -> dict[str, list[int]]:
    """Every entry of a generation folder: name -> [size, mtime_ns, inode]; a folder or link
    in it gets size -1 (whoosh makes neither, so it never matches a recorded listing)."""
    out: dict[str, list[int]] = {}
    with os.scandir(folder) as entries:
        for entry in entries:
            st = entry.stat(follow_symlinks=False)
            kind_ok = entry.is_file(follow_symlinks=False)
            out[entry.name] = [st.st_size if kind_ok else -1, st.st_mtime_ns, st.st_ino]
    return out


def proven(vault: Vault, manifest: Manifest) -> bool:
    """Is the manifest's generation exactly as this machine's last commit left it? One stat
    per file (a few dozen): cheap enough before every open."""
    if not manifest.listing:
        return False
    try:
        return listing(index_dir(vault) / manifest.generation) == manifest.listing
    except OSError:
        return False


def record_listing(vault: Vault, manifest: Manifest) -> None:
    """After a commit: what the generation folder now holds, for `proven`."""
    manifest.listing = listing(index_dir(vault) / manifest.generation)


def save_manifest(vault: Vault, manifest: Manifest) -> None:
    CURRENT[str(vault.root)] = manifest.generation
    folder = index_dir(vault)
    data = manifest.dump()
    sealed = seal.dumps(folder / MANIFEST, data)
    if sealed is None:
        raise NotWritableError(
            f"cannot seal the index manifest: no secret in {seal.home()}",
            "check that VAULTMEM_HOME is writable",
        )
    atomic_write(folder / MANIFEST, sealed)
    with contextlib.suppress(OSError):  # this process need not parse what it just wrote
        st = (folder / MANIFEST).stat()
        key = (st.st_size, st.st_mtime_ns, st.st_ino, seal.secret(create=True))
        _LOADED[str(folder / MANIFEST)] = (key, sealed[:_HEAD], _copy(manifest))
    # derived from the manifest and rewritten with it: no fsync (a torn one reads as absent)
    problems = [p.to_dict() for p in _manifest_problems(manifest)]
    replace_cache(folder / PROBLEMS, seal.dumps(folder / PROBLEMS, {"problems": problems}) or b"")
    # the prompt hook's note-name words, rewritten only when the set of files changed
    names = vocab.write(str(folder), data["files"]["paths"])
    if names is not None:
        replace_cache(folder / vocab.NAMES, names)


def _manifest_problems(manifest: Manifest) -> list[FileProblem]:
    out = [FileProblem(p, k, m) for p, (k, m) in manifest.skipped.items()]
    for rel, found in manifest.problems.items():
        out.extend(FileProblem(rel, k, m) for k, m in found)
    return sorted(out, key=lambda p: (p.path, p.kind))


def index_problems(vault: Vault) -> list[FileProblem]:
    """Files the last index refresh could not read cleanly (cheap: reads one small JSON file)."""
    try:
        raw = seal.read(index_dir(vault) / PROBLEMS)
        return [FileProblem(p["path"], p["kind"], p["message"]) for p in raw["problems"]]
    except (OSError, ValueError, KeyError, TypeError):
        return []


# --- the watcher's heartbeat ----------------------------------------------------------------


def heartbeat_ok(vault: Vault) -> bool:
    """True when `vaultmem watch` is running, has applied every change it saw, and says so."""
    # sealed: a heartbeat git wrote (a time in the future) would stop every refresh
    try:
        raw = seal.read(index_dir(vault) / HEARTBEAT)
        age = time.time() - float(raw["time"])
        return bool(0 <= age < HEARTBEAT_MAX_AGE and not raw["pending"])
    except (OSError, ValueError, KeyError, TypeError):
        return False


def write_heartbeat(vault: Vault, *, pending: int, pid: int) -> None:
    path = index_dir(vault) / HEARTBEAT
    data = seal.dumps(path, {"time": time.time(), "pending": pending, "pid": pid})
    if data is not None:
        atomic_write(path, data)


def clear_heartbeat(vault: Vault) -> None:
    with contextlib.suppress(OSError):
        (index_dir(vault) / HEARTBEAT).unlink()
