"""What the search index was built from, and the stat walk that says what changed since.

Layout under `.vaultmem/index/`:

- `manifest.json`: the files the index was built from (path -> size, mtime_ns, a content hash
  when size and mtime cannot be trusted, problems found in the file), the whoosh generation
  in use, the vault language and the schema version. Written atomically *after* the whoosh
  commit, so a crash in between only makes the next refresh redo some files (idempotent:
  every file's documents are deleted by path before they are added again).
- `manifest.delta.json`: what changed since `manifest.json` was written (the rows of the
  files that changed or went, and every small table whole), naming the base it applies to.
  A refresh after an append or one edit writes this, not the 10,000-row base; once it holds a
  tenth of the files, the base is written again. A delta that names another base is ignored.
- `g-<hex>/`: one index ("generation"): Whoosh's files (`vaultmem.search.engine`), or one
  SQLite FTS5 database (`vaultmem.search.fts5`), as the manifest's `engine` says.
- `problems.json`: the files the index could not read cleanly, for `vaultmem status`.
- `heartbeat.json`: written by `vaultmem watch` while it keeps the index current.
- `names.json`: the words of the indexed note names, for the prompt hook (`search/vocab.py`).

Whoosh reads its TOC and stored fields with `pickle`, so a generation is opened only when its
provenance is proven: `manifest.json`, `problems.json` and `heartbeat.json` are sealed
(`core/seal.py`), and the manifest records the generation folder's listing as this machine
left it after its last commit (every file's name, size, mtime_ns and inode). `proven` compares
that listing with the folder before whoosh opens anything: a file git wrote, replaced or added
there fails it, and the folder is deleted and rebuilt from the vault's files, never opened.

The stat walk the manifest is compared with is `search/walk.py`.
"""

# the walk works on str paths, os.stat and os.path.join: a Path per file costs more than its stat

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path
from typing import Any

from vaultmem.core import environment, seal
from vaultmem.core.errors import NotWritableError
from vaultmem.core.fsio import atomic_write, fs_now_ns, replace_cache
from vaultmem.core.locking import lock_path
from vaultmem.core.records import field, record
from vaultmem.core.vault import Vault
from vaultmem.search import vocab
from vaultmem.search.logdocs import LogMark

SCHEMA_VERSION = 13  # 9: how far each append-only log was indexed; 10: sealed, listing;
# 11: headings indexed without the note's title; 12: a title stored without the aliases;
# 13: whoosh's files block-sealed (index_seal.py)


INDEX_DIR = "index"


MANIFEST = "manifest.json"


PROBLEMS = "problems.json"


HEARTBEAT = "heartbeat.json"


DELTA = "manifest.delta.json"


# vaultmem's own sealed files in the index folder (everything else there is a generation)
OWN_FILES = (MANIFEST, DELTA, PROBLEMS, HEARTBEAT, vocab.NAMES)


# a delta holds at most this share of the files (and at least DELTA_MIN rows) before the base
# is written again: loading pays for the delta's rows on every recall
DELTA_SHARE = 10


DELTA_MIN = 64


HEARTBEAT_MAX_AGE = 3.0  # seconds: older than this, the watcher is presumed gone


@record
class FileProblem:
    path: str
    kind: str  # broken-frontmatter, bad-encoding, truncated, binary, symlink-outside, unreadable
    message: str

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@record
class Base:
    """`manifest.json` as written: a delta is what differs from these tables (never edited)."""

    id: str
    generation: str
    files: dict[str, tuple[int, int]]
    sums: dict[str, str]


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
    # (set and dropped together with the file's row in `files`: see `dump_delta`)
    sums: dict[str, str] = field(default_factory=dict)
    logs: dict[str, LogMark] = field(default_factory=dict)  # how far each log was indexed
    # the generation folder as this machine's last commit left it: name -> [size, mtime, inode]
    listing: dict[str, list[int]] = field(default_factory=dict)
    # every folder the last full walk went through ("" the root, "wiki/", "wiki/sub/"):
    # [mtime_ns, ctime_ns, inode] when that stamp vouches for the folder's names, else []
    folders: dict[str, list[int]] = field(default_factory=dict)
    # the base on disk this manifest was read from or last written as (None: write a base)
    base: Base | None = field(default=None, repr=False, compare=False)
    # the full-text engine that wrote the generation (`[recall] engine`): another one rebuilds
    engine: str = "whoosh"

    def forget(self, rel: str) -> None:
        self.files.pop(rel, None)
        self.hashes.pop(rel, None)
        self.problems.pop(rel, None)
        self.sums.pop(rel, None)
        self.logs.pop(rel, None)

    def dump(self, base_id: str = "") -> dict[str, Any]:
        paths = sorted(self.files)
        return {
            **self._small(),
            "base": base_id,
            "files": {
                "paths": paths,
                "sizes": [self.files[p][0] for p in paths],
                "mtimes": [self.files[p][1] for p in paths],
                "sums": [self.sums.get(p, "") for p in paths],
            },
        }

    def dump_delta(self, base: Base) -> dict[str, Any] | None:
        """What differs from `base`: the changed and removed files' rows, the small tables
        whole; None when that is too much for a delta (or the generation moved)."""
        if base.generation != self.generation:
            return None
        limit = max(DELTA_MIN, len(self.files) // DELTA_SHARE)
        # a refresh replaces the row of each file it reindexes, so an unchanged row is the very
        # object the base holds: one identity test per file, then equality for the few left
        # (a file's sum is set and dropped with its row, so the rows say where sums moved too)
        was = base.files
        moved = {p for p, v in self.files.items() if was.get(p) is not v and was.get(p) != v}
        added = sum(1 for p in moved if p not in was)
        gone = len(was) - (len(self.files) - added)  # files = (was and still here) + added
        removed = was.keys() - self.files.keys() if gone else set()
        if len(moved) + len(removed) > limit:
            return None
        changed = {p: [*self.files[p], self.sums.get(p, "")] for p in sorted(moved)}
        return {**self._small(), "base": base.id, "changed": changed, "removed": sorted(removed)}

    def _small(self) -> dict[str, Any]:
        return {
            "schema": self.schema,
            "generation": self.generation,
            "language": self.language,
            "refreshed_at": self.refreshed_at,
            "hashes": dict(sorted(self.hashes.items())),
            "problems": {k: [list(x) for x in v] for k, v in sorted(self.problems.items())},
            "logs": {k: v.to_list() for k, v in sorted(self.logs.items())},
            "skipped": {k: list(v) for k, v in sorted(self.skipped.items())},
            "listing": self.listing,
            "folders": self.folders,
            "engine": self.engine,
        }


# the generation each vault's manifest named when this process last read or wrote it
CURRENT: dict[str, str] = {}


class UnprovenIndex(ValueError):
    """The generation folder is not as this machine's last commit left it (see `proven`): it
    is never opened, by either engine (whoosh unpickles what it reads)."""


def index_dir(vault: Vault) -> Path:
    return vault.state(INDEX_DIR)


def files_now_ns(vault: Vault) -> int:
    """Now by the clock that stamps the vault's files (`fsio.fs_now_ns`), read in the index
    folder (`.vaultmem/` before there is one): the walk lists neither, so the probe moves no
    stamp. Every "changed within a tick" judgement compares a file's mtime with this."""
    folder = index_dir(vault)
    return fs_now_ns(folder if folder.is_dir() else folder.parent)


def refresh_lock(vault: Vault) -> Path:
    return lock_path(vault, "index")


# the last base each process read or wrote, by file: (its stat and this machine's seal key, its
# first bytes: its seal, the base)
_LOADED: dict[str, tuple[tuple[int, int, int, bytes | None], bytes, Manifest]] = {}


# a sealed file starts with its seal, a MAC of everything after it: the same first bytes are the
# same base whatever its stat says (a rewrite within one mtime tick, a freed inode reused)
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


def load_manifest(vault: Vault) -> Manifest | None:
    """The manifest (the base with its delta applied); None when there is none, or when this
    machine did not write it.

    A process parses the base once (a cold recall reads the manifest twice: the freshness
    check, then the searcher; a long-lived process on every recall): while its size, mtime and
    inode, this machine's seal key and the base's seal (its first bytes) stay the same, a copy
    of the base read before is used. The delta is small and read every time.
    """
    folder = index_dir(vault)
    path = folder / MANIFEST
    try:
        st = path.stat()
    except OSError:
        return None
    key = (st.st_size, st.st_mtime_ns, st.st_ino, seal.secret(create=True))
    cached = _LOADED.get(str(path))
    if cached is not None and cached[0] == key and _head(path) == cached[1]:
        found: Manifest | None = _copy(cached[2])
    else:
        found, head = _parse(vault, path)
        if found is not None:
            _LOADED[str(path)] = (key, head, _copy(found))
        else:
            _LOADED.pop(str(path), None)
    if found is None:
        return None
    _apply_delta(found, folder / DELTA)
    CURRENT[str(vault.root)] = found.generation
    return found


def _apply_delta(m: Manifest, path: Path) -> None:
    """`m` (a base just read) brought up to date by the delta, when there is one for it."""
    raw = seal.read(path)  # absent, unsealed or torn: the base alone, as when none was written
    if not isinstance(raw, dict) or m.base is None or raw.get("base") != m.base.id:
        return
    try:
        if raw.get("schema") != SCHEMA_VERSION or raw.get("generation") != m.generation:
            return
        small = _small_tables(raw)
        changed = {str(p): (int(a), int(b), str(c)) for p, (a, b, c) in raw["changed"].items()}
        removed = [str(p) for p in raw["removed"]]
    except (ValueError, KeyError, TypeError, AttributeError):
        return
    for p in removed:
        m.files.pop(p, None)
        m.sums.pop(p, None)
    for p, (size, mtime, digest) in changed.items():
        m.files[p] = (size, mtime)
        if digest:
            m.sums[p] = digest
        else:
            m.sums.pop(p, None)
    m.refreshed_at = float(raw["refreshed_at"])
    m.skipped, m.hashes, m.problems, m.logs, m.listing, m.folders = small


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
        base=m.base,
        engine=m.engine,
    )


Small = tuple[
    dict[str, tuple[str, str]],
    dict[str, str],
    dict[str, list[tuple[str, str]]],
    dict[str, LogMark],
    dict[str, list[int]],
    dict[str, list[int]],
]


def _small_tables(raw: dict[str, Any]) -> Small:
    """skipped, hashes, problems, logs, listing and folders, as a base or a delta holds them."""
    return (
        {k: (str(v[0]), str(v[1])) for k, v in raw.get("skipped", {}).items()},
        dict(raw.get("hashes", {})),
        {k: [(str(a), str(b)) for a, b in v] for k, v in raw["problems"].items()},
        {
            k: LogMark(int(a), int(b), int(c), str(d))
            for k, (a, b, c, d) in raw.get("logs", {}).items()
        },
        {str(k): [int(x) for x in v] for k, v in raw["listing"].items()},
        {str(k): [int(x) for x in v] for k, v in raw.get("folders", {}).items()},
    )


def _parse(vault: Vault, path: Path) -> tuple[Manifest | None, bytes]:
    """The base in the file, and the file's first bytes (its seal)."""
    data = seal.read_bytes(path)
    if data is None:
        return None, b""
    try:
        raw = seal.loads(path, data, key=seal.secret(create=True))
        if raw.get("schema") != SCHEMA_VERSION:
            return None, b""
        paths = raw["files"]["paths"]
        files = dict(
            zip(paths, zip(raw["files"]["sizes"], raw["files"]["mtimes"], strict=True), strict=True)
        )
        sums = {p: s for p, s in zip(paths, raw["files"]["sums"], strict=True) if s}
        skipped, hashes, problems, logs, listed, folders = _small_tables(raw)
        generation = str(raw["generation"])
        base_id = str(raw.get("base") or "")
        return (
            Manifest(
                generation=generation,
                language=str(raw["language"]),
                refreshed_at=float(raw["refreshed_at"]),
                files=files,
                skipped=skipped,
                hashes=hashes,
                problems=problems,
                sums=sums,
                logs=logs,
                listing=listed,
                folders=folders,
                base=Base(base_id, generation, dict(files), dict(sums)) if base_id else None,
                engine=str(raw.get("engine", "whoosh")),  # a generation's engine never changes
            ),
            data[:_HEAD],
        )
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
    """Write what `manifest` says: as a delta on the base it came from when little changed,
    else as a new base (the old delta then names a base that is gone, and is ignored)."""
    CURRENT[str(vault.root)] = manifest.generation
    folder = index_dir(vault)
    base = manifest.base
    delta = manifest.dump_delta(base) if base is not None else None
    paths_moved = True
    if delta is not None and base is not None:
        _seal_and_write(folder / DELTA, delta)
        paths_moved = bool(delta["removed"]) or any(p not in base.files for p in delta["changed"])
    else:
        base_id = os.urandom(6).hex()
        data = manifest.dump(base_id)
        head = _seal_and_write(folder / MANIFEST, data)[:_HEAD]
        manifest.base = Base(
            base_id, manifest.generation, dict(manifest.files), dict(manifest.sums)
        )
        with contextlib.suppress(OSError):  # this process need not parse what it just wrote
            st = (folder / MANIFEST).stat()
            key = (st.st_size, st.st_mtime_ns, st.st_ino, seal.secret(create=True))
            _LOADED[str(folder / MANIFEST)] = (key, head, _copy(manifest))
        with contextlib.suppress(FileNotFoundError):  # names the old base: ignored if left
            (folder / DELTA).unlink()
    # derived from the manifest and rewritten with it: no fsync (a torn one reads as absent)
    problems = [p.to_dict() for p in _manifest_problems(manifest)]
    replace_cache(folder / PROBLEMS, seal.dumps(folder / PROBLEMS, {"problems": problems}) or b"")
    # the prompt hook's note-name words, rewritten only when the set of files changed
    if paths_moved:
        names = vocab.write(str(folder), sorted(manifest.files))
        if names is not None:
            replace_cache(folder / vocab.NAMES, names)


def _seal_and_write(path: Path, data: dict[str, Any]) -> bytes:
    sealed = seal.dumps(path, data)
    if sealed is None:
        raise NotWritableError(
            f"cannot seal the index manifest: no secret in {environment.home()}",
            "check that VAULTMEM_HOME is writable",
        )
    atomic_write(path, sealed)
    return sealed


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
