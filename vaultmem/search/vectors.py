"""The embedding store: one vector per indexed document, derived state like the Whoosh index.

Layout under `.vaultmem/vectors/` (written only through `atomic_write`, inside the vault):

- `manifest.json`: the model's fingerprint and size, the files the vectors were made from
  (path -> size, mtime_ns, content hash, exactly as the index manifest had them), and the two
  segments in use. Each segment's rows are named in `<segment>.ids.json` (document ids
  `path#n`, the Whoosh `docid`), read only to search.
- `base-<hex>.npy`: the vectors as of the last full write (float16);
  `delta-<hex>.npy`: the vectors of the files changed since. A file's rows live in the delta
  once it changed; the base keeps rows for the others. When the delta grows past a quarter of
  the base they are merged, so an edit rewrites a small file, not the whole store.

The store follows the index: `sync` runs inside the index refresh (under its lock), after the
Whoosh commit and before the index manifest is saved, re-embeds the files the refresh
reindexed plus any whose recorded state differs from the index manifest's (a store that
lagged, a crash in between), and drops the files the index dropped. A different model
rebuilds it; a store that cannot be read is rebuilt with a warning.

Nothing here is ever unpickled (`np.load(allow_pickle=False)`), and the store is trusted only
as this machine wrote it: the manifest is sealed (`core/seal.py`) and records each segment
file's size, mtime_ns and inode, checked before the segment is read. A store git wrote, or
whose segments were replaced, is rebuilt from the files with a warning.
"""

from __future__ import annotations

import contextlib
import json
import secrets
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vaultmem.core import environment, seal
from vaultmem.core.errors import NotWritableError
from vaultmem.core.fsio import atomic_write
from vaultmem.core.records import field, record
from vaultmem.core.vault import Vault
from vaultmem.search import embedder
from vaultmem.search.documents import Doc, read_documents

if TYPE_CHECKING:
    from vaultmem.search.manifest import Manifest

SCHEMA = 1
FOLDER = "vectors"
MANIFEST = "manifest.json"
MERGE_SHARE = 0.25  # merge the delta into the base past this share of the base's rows
MERGE_MIN = 2000
EMBED_BATCH = 64  # documents per call to the model: the progress bar moves this often

ProgressFn = Callable[[int, int], None]
FileState = tuple[int, int, str]


def store_dir(vault: Vault, *, writing: bool = False) -> Path:
    """Where the store lives, checked like every state path (`Vault.state`: a symlinked
    `.vaultmem` or `vectors` folder is refused, exit 8). `writing` is kept for callers."""
    return vault.state(FOLDER)


def doc_text(doc: Doc) -> str:
    """What a document's vector is made from: its names and its text."""
    return "\n".join(x for x in (doc.title, doc.heading, doc.desc, doc.body) if x)


@record(frozen=False)
class StoreManifest:
    model: str  # fingerprint
    dims: int
    files: dict[str, FileState]
    base: str = ""
    base_rows: int = 0
    delta: str = ""
    delta_rows: int = 0
    delta_paths: list[str] = field(default_factory=list)  # files whose rows are in the delta
    written_at: float = 0.0
    # each segment file as this machine wrote it: name -> [size, mtime_ns, inode]
    stats: dict[str, list[int]] = field(default_factory=dict)

    def dump(self) -> dict[str, Any]:
        paths = sorted(self.files)
        return {
            "schema": SCHEMA,
            "model": self.model,
            "dims": self.dims,
            "written_at": self.written_at,
            "files": {
                "paths": paths,
                "state": [list(self.files[p]) for p in paths],
            },
            "base": self.base,
            "base_rows": self.base_rows,
            "delta": self.delta,
            "delta_rows": self.delta_rows,
            "delta_paths": self.delta_paths,
            "stats": self.stats,
        }


_MANIFESTS: dict[str, tuple[tuple[int, int, int], StoreManifest]] = {}


def load_manifest(vault: Vault) -> StoreManifest | None:
    """The store's manifest; None when there is none; ValueError when it is unreadable.

    Kept per process while the file is the same (it is only ever replaced, never edited)."""
    path = store_dir(vault) / MANIFEST
    try:
        st = path.stat()
    except FileNotFoundError:
        return None
    key = (st.st_ino, st.st_mtime_ns, st.st_size)
    cached = _MANIFESTS.get(str(path))
    if cached is not None and cached[0] == key:
        return cached[1]
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    manifest = _parse(seal.loads(path, data, key=seal.secret()))
    _MANIFESTS[str(path)] = (key, manifest)
    return manifest


def _parse(raw: Any) -> StoreManifest:
    if raw is None:
        raise ValueError(
            "vector store manifest unreadable, or not written by vaultmem on this machine"
        )
    try:
        if raw.get("schema") != SCHEMA:
            raise ValueError(f"schema {raw.get('schema')!r}")
        files = {
            p: (int(s[0]), int(s[1]), str(s[2]))
            for p, s in zip(raw["files"]["paths"], raw["files"]["state"], strict=True)
        }
        return StoreManifest(
            model=str(raw["model"]),
            dims=int(raw["dims"]),
            files=files,
            base=str(raw["base"]),
            base_rows=int(raw["base_rows"]),
            delta=str(raw["delta"]),
            delta_rows=int(raw["delta_rows"]),
            delta_paths=[str(x) for x in raw["delta_paths"]],
            written_at=float(raw.get("written_at", 0.0)),
            stats={str(k): [int(x) for x in v] for k, v in raw["stats"].items()},
        )
    except (OSError, ValueError, KeyError, TypeError, IndexError) as exc:
        raise ValueError(f"vector store manifest unreadable ({exc})") from exc


@record(frozen=False)
class Vectors:
    """The store as committed: every row's document id, and per segment its matrix
    (memory-mapped) and the rows that no longer count (their file moved to the delta)."""

    model: str
    ids: list[str]
    segments: list[tuple[Any, list[int] | None]]
    key: tuple[str, str]  # the segment files: a new pair means the store changed

    def hold(self) -> None:
        self.segments = [(embedder.in_memory(m), dead) for m, dead in self.segments]

    def nearest(self, query: Any, k: int) -> list[tuple[str, float]]:
        return [(self.ids[i], score) for i, score in embedder.nearest(self.segments, query, k)]

    def live(self, dims: int, drop: set[str]) -> tuple[list[str], Any]:
        """The live rows, without the files in `drop`: ids and one matrix (for writes)."""
        ids: list[str] = []
        parts = []
        offset = 0
        for matrix, dead in self.segments:
            dead_rows = set(dead or ())
            rows = [
                i
                for i in range(len(matrix))
                if i not in dead_rows and _path_of(self.ids[offset + i]) not in drop
            ]
            ids += [self.ids[offset + i] for i in rows]
            parts.append(embedder.take(matrix, rows))
            offset += len(matrix)
        return ids, embedder.stack(parts, dims)


def _path_of(docid: str) -> str:
    return docid.rsplit("#", 1)[0]


def _stat(path: Path) -> list[int]:
    st = path.lstat()
    return [st.st_size, st.st_mtime_ns, st.st_ino]


def _segment(
    folder: Path, name: str, rows: int, dims: int, stats: dict[str, list[int]]
) -> tuple[list[str], Any]:
    if not name:
        return [], embedder.stack([], dims)
    for suffix in (".ids.json", ".npy"):
        if stats.get(name + suffix) != _stat(folder / (name + suffix)):
            raise ValueError(f"{name}{suffix} is not the file this machine wrote")
    ids = json.loads((folder / (name + ".ids.json")).read_bytes())
    if not isinstance(ids, list) or len(ids) != rows:
        raise ValueError(f"{name}.ids.json: {rows} rows expected")
    return [str(x) for x in ids], embedder.from_file(folder / (name + ".npy"), rows, dims)


def read(vault: Vault, manifest: StoreManifest) -> Vectors:
    """The committed store: the base (less the rows of files now in the delta), the delta."""
    folder = store_dir(vault)
    stats = manifest.stats
    base_ids, base = _segment(folder, manifest.base, manifest.base_rows, manifest.dims, stats)
    delta_ids, delta = _segment(folder, manifest.delta, manifest.delta_rows, manifest.dims, stats)
    moved = set(manifest.delta_paths)
    dead = [i for i, d in enumerate(base_ids) if _path_of(d) in moved]
    return Vectors(
        manifest.model,
        base_ids + delta_ids,
        [(base, dead), (delta, None)],
        (manifest.base, manifest.delta),
    )


_OPEN: dict[str, Vectors] = {}


def open_vectors(vault: Vault) -> Vectors | None:
    """The store as last committed, kept in memory for the next call in this process."""
    manifest = load_manifest(vault)
    if manifest is None:
        return None
    key = str(vault.root)
    cached = _OPEN.get(key)
    if cached is not None and cached.key == (manifest.base, manifest.delta):
        # asked again in this process (the MCP server, a library user): hold the vectors in
        # memory rather than mapped, the product is then a third faster
        cached.hold()
        return cached
    vectors = read(vault, manifest)
    _OPEN[key] = vectors
    return vectors


@record
class SyncReport:
    embedded: int  # documents embedded now
    files: int  # files whose documents were (re)embedded now
    removed: int  # files dropped
    rebuilt: bool
    warnings: tuple[str, ...] = ()


def _state(manifest: Manifest, rel: str) -> FileState:
    # the digest of what was indexed (`sums`, kept for every file), not the same-tick hash
    # (`hashes`), which a later refresh drops once the file has settled: comparing that
    # re-embedded files that had not changed
    size, mtime = manifest.files[rel]
    return (int(size), int(mtime), manifest.sums.get(rel) or manifest.hashes.get(rel, ""))


def sync(
    vault: Vault,
    index: Manifest,
    model: embedder.Model,
    *,
    reindexed: dict[str, list[Doc]] | None = None,
    progress: ProgressFn | None = None,
) -> SyncReport:
    """Bring the store in line with the index manifest. Callers hold the index refresh lock."""
    reindexed = reindexed or {}
    warnings: tuple[str, ...] = ()
    try:
        current = load_manifest(vault)
    except ValueError as exc:
        current = None
        warnings = (f"{exc}: embeddings rebuilt from the files",)
    if current is not None and (current.model != model.fingerprint or current.dims != model.dims):
        warnings = (*warnings, f"embedding model is now {model.name}: embeddings rebuilt")
        current = None
    old: Vectors | None = None
    if current is not None:
        try:
            old = read(vault, current)
        except (OSError, ValueError) as exc:
            warnings = (
                *warnings,
                f"vector store unreadable ({type(exc).__name__}): embeddings rebuilt from the files",
            )
            current = None
    rebuilt = current is None
    known = current.files if current is not None else {}
    changed = sorted(
        rel for rel in index.files if rel in reindexed or known.get(rel) != _state(index, rel)
    )
    removed = sorted(rel for rel in known if rel not in index.files)
    if current is not None and not changed and not removed:
        return SyncReport(0, 0, 0, False, warnings)
    max_bytes = vault.config.recall.max_file_bytes
    new_ids: list[str] = []
    texts: list[str] = []
    for rel in changed:
        docs = reindexed.get(rel)
        if docs is None:
            read_back = read_documents(vault, rel, max_bytes)
            docs = read_back[0] if read_back is not None else []
        for n, doc in enumerate(docs):
            if doc.unit == "whole":  # its passages have vectors; the whole would be cut short
                continue
            new_ids.append(f"{rel}#{n}")
            texts.append(doc_text(doc))
    parts = []
    if progress is not None:
        progress(0, len(texts))
    for start in range(0, len(texts), EMBED_BATCH):
        parts.append(model.encode(texts[start : start + EMBED_BATCH]))
        if progress is not None:
            progress(min(len(texts), start + EMBED_BATCH), len(texts))
    fresh = embedder.stack(parts, model.dims)
    files = {rel: state for rel, state in known.items() if rel in index.files}
    for rel in changed:
        files[rel] = _state(index, rel)
    _write(vault, current, old, files, set(changed) | set(removed), new_ids, fresh, model)
    return SyncReport(len(new_ids), len(changed), len(removed), rebuilt, warnings)


def _put(folder: Path, name: str, ids: list[str], matrix: Any) -> None:
    atomic_write(folder / (name + ".npy"), embedder.to_bytes(matrix))
    atomic_write(folder / (name + ".ids.json"), json.dumps(ids, ensure_ascii=False))


def _write(
    vault: Vault,
    current: StoreManifest | None,
    old: Vectors | None,
    files: dict[str, FileState],
    touched: set[str],
    new_ids: list[str],
    fresh: Any,
    model: embedder.Model,
) -> None:
    folder = store_dir(vault, writing=True)
    token = secrets.token_hex(4)
    manifest = StoreManifest(model.fingerprint, model.dims, files, written_at=time.time())
    if current is None or old is None:
        manifest.base, manifest.base_rows = f"base-{token}", len(new_ids)
        _put(folder, manifest.base, new_ids, fresh)
    else:
        in_delta = set(current.delta_paths)
        delta_rows = current.delta_rows + len(new_ids)
        if delta_rows > max(MERGE_MIN, MERGE_SHARE * current.base_rows):
            ids, matrix = old.live(model.dims, touched)
            manifest.base, manifest.base_rows = f"base-{token}", len(ids) + len(new_ids)
            _put(folder, manifest.base, ids + new_ids, embedder.stack([matrix, fresh], model.dims))
        else:
            # the delta keeps the rows of the files it already held that did not change now
            delta_ids, delta = _segment(
                folder, current.delta, current.delta_rows, model.dims, current.stats
            )
            keep = [i for i, d in enumerate(delta_ids) if _path_of(d) not in touched]
            ids = [delta_ids[i] for i in keep] + new_ids
            manifest.base, manifest.base_rows = current.base, current.base_rows
            manifest.delta, manifest.delta_rows = f"delta-{token}", len(ids)
            # removed files stay listed until the next merge: their base rows are dead
            manifest.delta_paths = sorted(in_delta | touched)
            matrix = embedder.stack([embedder.take(delta, keep), fresh], model.dims)
            _put(folder, manifest.delta, ids, matrix)
    for name in (manifest.base, manifest.delta):
        for suffix in (".ids.json", ".npy") if name else ():
            manifest.stats[name + suffix] = _stat(folder / (name + suffix))
    sealed = seal.dumps(folder / MANIFEST, manifest.dump())
    if sealed is None:
        raise NotWritableError(
            f"cannot seal the vector store's manifest: no secret in {environment.home()}",
            "check that VAULTMEM_HOME is writable",
        )
    atomic_write(folder / MANIFEST, sealed)
    _drop_unused(folder, {manifest.base, manifest.delta})


def _drop_unused(folder: Path, keep: set[str]) -> None:
    # a reader that read the previous manifest may still be loading an old segment: give it
    # a moment by keeping segments written in the last few seconds
    with contextlib.suppress(OSError):
        # by the files' clock (the manifest was just written), never the process's
        cutoff = (folder / MANIFEST).stat().st_mtime - 5.0
        for child in folder.iterdir():
            segment = child.name.split(".", 1)[0]
            if child.name != MANIFEST and segment not in keep:
                with contextlib.suppress(OSError):
                    if child.stat().st_mtime < cutoff:
                        child.unlink()


def forget(vault: Vault) -> None:
    _OPEN.pop(str(vault.root), None)


def in_line(vault: Vault, manifest: Manifest, model: embedder.Model) -> bool:
    """True when the embedding store was made by `model` from exactly the indexed files."""
    try:
        store = load_manifest(vault)
    except ValueError:
        return False
    if store is None or store.model != model.fingerprint:
        return False
    key = (store.written_at, store.base, store.delta, manifest.generation, manifest.refreshed_at)
    if _IN_LINE.get(str(vault.root)) == key:
        return True
    ok = len(store.files) == len(manifest.files) and all(
        store.files.get(rel) == (size, mtime, manifest.hashes.get(rel, ""))
        for rel, (size, mtime) in manifest.files.items()
    )
    if ok:
        _IN_LINE[str(vault.root)] = key
    return ok


# the last store write found in line with an index manifest (generation, write time), per vault
_IN_LINE: dict[str, tuple[float, str, str, str, float]] = {}
