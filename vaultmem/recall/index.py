"""The search index: derived entirely from the vault's markdown files, never stale.

This is the only module that imports whoosh, and it imports it lazily (inside functions), so
`vaultmem status` can read the index's problem list without paying for whoosh.

Layout under `.vaultmem/index/`:

- `manifest.json`: the files the index was built from (path -> size, mtime_ns, a content hash
  when size and mtime cannot be trusted, problems found in the file), the whoosh generation
  in use, the vault language and the schema version. Written atomically *after* the whoosh
  commit, so a crash in between only makes the next refresh redo some files (idempotent:
  every file's documents are deleted by path before they are added again).
- `g-<hex>/`: one whoosh index ("generation"). A rebuild writes a new generation and then
  switches the manifest to it, so searchers never see a half-built index.
- `problems.json`: the files the index could not read cleanly, for `vaultmem status`.
- `heartbeat.json`: written by `vaultmem watch` while it keeps the index current.

Freshness without a daemon: `refresh()` walks the vault with `os.scandir` (one stat per file),
compares with the manifest and reindexes only what was added, changed or removed. Refreshes
are serialised by a lock file; a recall that cannot get the lock at once searches the last
committed index and says so, instead of waiting.
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import json
import os
import secrets
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from vaultmem.core.errors import LockTimeoutError
from vaultmem.core.fsio import atomic_write
from vaultmem.core.locking import exclusive, lock_path, release, try_exclusive
from vaultmem.core.vault import Vault
from vaultmem.recall.documents import Doc, kind_of, read_documents, read_prefix

SCHEMA_VERSION = 6
INDEX_DIR = "index"
MANIFEST = "manifest.json"
PROBLEMS = "problems.json"
HEARTBEAT = "heartbeat.json"
HEARTBEAT_MAX_AGE = 3.0  # seconds: older than this, the watcher is presumed gone
# A file whose mtime is this close to the moment it was read may be rewritten within the
# same mtime tick without its size changing; such entries carry a content hash (cf. git's
# "racily clean" entries).
RACY_NS = 2_000_000_000

# text fields searched by plain words, with their query-time boosts
TEXT_FIELDS: dict[str, float] = {
    "title": 2.5,
    "heading": 1.5,
    "desc": 1.5,
    "tags": 1.5,
    "body": 1.0,
}
# Tuned on the LoCoMo benchmark (bench/recall_quality.py) as general knobs only; neighbouring
# values change R@5 by about +-0.002
BM25_K1 = 1.2
BM25_B = 0.75
PROXIMITY_SLOP = 1
PROXIMITY_BOOST = 0.2
COVERAGE_POWER = 0.5
# words of a question that say what kind of answer is wanted, not what it is about
QUERY_STOP = frozenset(
    [
        "would",
        "could",
        "should",
        "might",
        "must",
        "shall",
        "may",
        "can",
        "will",
        "also",
        "ever",
        "yet",
        "still",
        "etc",
        "like",
        "likely",
        "kind",
        "sort",
        "many",
        "much",
        "often",
        "times",
        "time",
        "one",
        "ones",
        "someone",
        "something",
        "anything",
        "anyone",
        "thing",
        "things",
        "get",
        "got",
        "make",
        "made",
        "way",
        "ways",
        "regarding",
        "considered",
        "consider",
        "potentially",
        "probably",
        "based",
        "according",
        "whether",
        "else",
        "besides",
        "other",
        "others",
        "another",
        "what's",
        "who's",
        "how's",
    ]
)
ProgressFn = Callable[[int, int], None]


# --- results --------------------------------------------------------------------------------


@dataclass(frozen=True)
class FileProblem:
    path: str
    kind: str  # broken-frontmatter, bad-encoding, truncated, binary, symlink-outside, unreadable
    message: str

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass(frozen=True)
class Freshness:
    """What the freshness check did before a search (part of the `recall --json` contract)."""

    files: int  # markdown files in the index after this check
    refreshed: int  # files (re)indexed now: added or changed
    removed: int  # files dropped from the index now
    checked_by: str  # "walk" (stat walk vs manifest) or "watcher" (trusted its heartbeat)
    stale: bool  # True when changes were seen but another process held the refresh lock
    rebuilt: bool  # True when the index was (re)built from scratch
    age_seconds: float  # since the index was last written (nothing changed since then)
    refreshed_at: str  # ISO time the index was last written
    duration_ms: float
    warnings: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        out = dict(self.__dict__)
        out["warnings"] = list(self.warnings)
        return out


@dataclass
class _Manifest:
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

    def forget(self, rel: str) -> None:
        self.files.pop(rel, None)
        self.hashes.pop(rel, None)
        self.problems.pop(rel, None)

    def dump(self) -> str:
        paths = sorted(self.files)
        return json.dumps(
            {
                "schema": self.schema,
                "generation": self.generation,
                "language": self.language,
                "refreshed_at": self.refreshed_at,
                "files": {
                    "paths": paths,
                    "sizes": [self.files[p][0] for p in paths],
                    "mtimes": [self.files[p][1] for p in paths],
                },
                "hashes": dict(sorted(self.hashes.items())),
                "problems": {k: [list(x) for x in v] for k, v in sorted(self.problems.items())},
                "skipped": {k: list(v) for k, v in sorted(self.skipped.items())},
            },
            ensure_ascii=False,
            separators=(",", ":"),
        )


# the generation each vault's manifest named when this process last read or wrote it
_CURRENT: dict[str, str] = {}


# --- locations ------------------------------------------------------------------------------


def index_dir(vault: Vault) -> Path:
    return vault.state_dir / INDEX_DIR


def _lock(vault: Vault) -> Path:
    return lock_path(vault.state_dir, "index")


def _load_manifest(vault: Vault) -> _Manifest | None:
    try:
        raw = json.loads((index_dir(vault) / MANIFEST).read_bytes())
        if raw.get("schema") != SCHEMA_VERSION:
            return None
        _CURRENT[str(vault.root)] = str(raw["generation"])
        return _Manifest(
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
        )
    except (OSError, ValueError, KeyError, TypeError, IndexError):
        return None


def _save_manifest(vault: Vault, manifest: _Manifest) -> None:
    _CURRENT[str(vault.root)] = manifest.generation
    folder = index_dir(vault)
    atomic_write(folder / MANIFEST, manifest.dump())
    problems = [p.to_dict() for p in _manifest_problems(manifest)]
    atomic_write(folder / PROBLEMS, json.dumps({"problems": problems}, ensure_ascii=False))


def _manifest_problems(manifest: _Manifest) -> list[FileProblem]:
    out = [FileProblem(p, k, m) for p, (k, m) in manifest.skipped.items()]
    for rel, found in manifest.problems.items():
        out.extend(FileProblem(rel, k, m) for k, m in found)
    return sorted(out, key=lambda p: (p.path, p.kind))


def index_problems(vault: Vault) -> list[FileProblem]:
    """Files the last index refresh could not read cleanly (cheap: reads one small JSON file)."""
    try:
        raw = json.loads((index_dir(vault) / PROBLEMS).read_bytes())
        return [FileProblem(p["path"], p["kind"], p["message"]) for p in raw["problems"]]
    except (OSError, ValueError, KeyError, TypeError):
        return []


# --- the stat walk --------------------------------------------------------------------------


def walk(vault: Vault) -> tuple[dict[str, tuple[int, int]], dict[str, tuple[str, str]]]:
    """Every markdown file in the vault -> (size, mtime_ns); plus symlinks left out, and why.

    Skips dot folders and dot files (`.vaultmem/`, `.obsidian/`, `.git/`, `.trash/`, editor and
    vaultmem temp files). Symlinks are never followed out of the vault, and links to folders
    are not followed at all (no loops, no duplicates).
    """
    root = str(vault.root)
    real_root = str(vault.real_root)
    files: dict[str, tuple[int, int]] = {}
    skipped: dict[str, tuple[str, str]] = {}
    stack = [("", root)]
    while stack:
        prefix, folder = stack.pop()
        try:
            entries = os.scandir(folder)
        except OSError:  # vanished mid-walk, or unreadable
            continue
        with entries:
            for entry in entries:
                name = entry.name
                if name[0] == ".":
                    continue
                rel = prefix + name
                try:
                    if entry.is_symlink():
                        target = os.path.realpath(entry.path)
                        if target != real_root and not target.startswith(real_root + os.sep):
                            if name.lower().endswith(".md") or Path(target).is_dir():
                                skipped[rel] = (
                                    "symlink-outside",
                                    f"symlink to {target}, outside the vault: not followed",
                                )
                            continue
                        if not name.lower().endswith(".md") or not Path(target).is_file():
                            continue
                        st = Path(entry.path).stat()
                        files[rel] = (st.st_size, st.st_mtime_ns)
                    elif entry.is_dir(follow_symlinks=False):
                        stack.append((rel + "/", entry.path))
                    elif name.lower().endswith(".md"):
                        st = entry.stat(follow_symlinks=False)
                        files[rel] = (st.st_size, st.st_mtime_ns)
                except OSError:  # vanished between listing and stat
                    continue
    return files, skipped


# --- whoosh ---------------------------------------------------------------------------------


def analyzer(language: str) -> Any:
    """Words, lowercased, stop words dropped, Snowball-stemmed, then accents folded.

    Folding after stemming lets the stemmer see the real word (Italian stems depend on
    accents); folding at all makes `perche` find `perché`.
    """
    from whoosh.analysis import (
        CharsetFilter,
        LowercaseFilter,
        RegexTokenizer,
        StemFilter,
        StopFilter,
    )

    chain = RegexTokenizer(r"\w+(?:[.'’]\w+)*") | LowercaseFilter()
    from whoosh.lang import NoStopWords, stopwords_for_language
    from whoosh.support.charset import accent_map as folding

    try:
        stops = set(stopwords_for_language(language))
    except NoStopWords:
        stops = set(stopwords_for_language("en"))
    # the unaccented spelling of a stop word ("perche") is a stop word too
    stops |= {w.translate(folding) for w in stops}
    chain = chain | StopFilter(stoplist=stops)
    # no stemmer for this language: unstemmed words still match
    with contextlib.suppress(Exception):
        chain = chain | StemFilter(lang=language)
    return chain | CharsetFilter(folding)


def schema(language: str) -> Any:
    from whoosh.fields import ID, KEYWORD, STORED, TEXT, Schema

    ana = analyzer(language)
    return Schema(
        docid=ID(stored=True, unique=True),
        path=ID(stored=True),
        kind=ID(stored=True),
        title=TEXT(analyzer=ana, stored=True),
        heading=TEXT(analyzer=ana, stored=True),
        desc=TEXT(analyzer=ana, stored=True),
        tags=KEYWORD(lowercase=True, commas=True, scorable=True, stored=True),
        type=ID(stored=True),
        agent=ID(stored=True),
        date=ID(stored=True),
        status=ID(stored=True),
        id=ID(stored=True),
        hidden=ID,
        valid_until=ID(stored=True),
        lines=STORED,
        unit=ID(stored=True),
        owner=ID,
        # not stored: snippets are read from the file itself (fresh by construction), and
        # whoosh copies every stored byte into memory each time a searcher opens
        body=TEXT(analyzer=ana, stored=False),
    )


def _fields(doc: Doc, n: int) -> dict[str, Any]:
    out: dict[str, Any] = {
        "docid": f"{doc.path}#{n}",
        "path": doc.path,
        "kind": doc.kind,
        "title": doc.title,
        "heading": doc.heading,
        "body": doc.body,
        "lines": (doc.line_start, doc.line_end),
        "hidden": "1" if doc.hidden else "0",
        "unit": doc.unit,
        # whose notes these are: an agent's own folder, or "-" for what every agent shares
        "owner": kind_of(doc.path)[1] or "-",
    }
    for name in ("desc", "tags", "type", "agent", "date", "status", "id", "valid_until"):
        value = getattr(doc, name)
        if value:
            out[name] = value
    return out


def _open_generation(vault: Vault, generation: str) -> Any:
    from whoosh.index import open_dir

    return open_dir(str(index_dir(vault) / generation))


def _writer(ix: Any, *, bulk: bool) -> Any:
    # limitmb=512 was the fastest setting measured for a full build; small refreshes need little
    return ix.writer(limitmb=512 if bulk else 64, procs=1)


def _hash(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


# --- refresh --------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Plan:
    changed: list[str]
    removed: list[str]
    skipped: dict[str, tuple[str, str]]
    current: dict[str, tuple[int, int]]
    settled: list[str] = field(default_factory=list)  # racy entries now safe to trust again

    def empty(self, manifest: _Manifest) -> bool:
        return not (self.changed or self.removed or self.settled) and (
            self.skipped == manifest.skipped
        )


def _plan(
    vault: Vault, manifest: _Manifest, current: dict[str, tuple[int, int]], skipped: Any
) -> _Plan:
    changed = []
    settled = []
    limit_ns = time.time_ns() - RACY_NS
    for rel, (size, mtime) in current.items():
        if manifest.files.get(rel) != (size, mtime):
            changed.append(rel)
        elif rel in manifest.hashes:
            # size and mtime match, but the file was written within one mtime tick of being
            # read: only its content can say whether it changed since
            try:
                data, _ = read_prefix(vault.root / rel, vault.config.recall.max_file_bytes)
            except OSError:
                changed.append(rel)
                continue
            if _hash(data) != manifest.hashes[rel]:
                changed.append(rel)
            elif mtime < limit_ns:
                settled.append(rel)
    removed = [rel for rel in manifest.files if rel not in current]
    return _Plan(sorted(changed), sorted(removed), dict(skipped), current, settled)


def _apply(
    vault: Vault,
    ix: Any,
    manifest: _Manifest,
    plan: _Plan,
    *,
    bulk: bool,
    progress: ProgressFn | None,
) -> tuple[int, int]:
    """Reindex changed files and drop removed ones in one whoosh commit; update the manifest."""
    max_bytes = vault.config.recall.max_file_bytes
    writer = _writer(ix, bulk=bulk)
    refreshed = removed = 0
    try:
        for rel in plan.removed:
            writer.delete_by_term("path", rel)
            manifest.forget(rel)
            removed += 1
        total = len(plan.changed)
        for n, rel in enumerate(plan.changed):
            if not bulk:
                writer.delete_by_term("path", rel)
            read = read_documents(vault, rel, max_bytes)
            if read is None:  # vanished since the walk
                if rel in manifest.files:
                    manifest.forget(rel)
                    removed += 1
                continue
            docs, problems, data = read
            for i, doc in enumerate(docs):
                writer.add_document(**_fields(doc, i))
            size, mtime = plan.current[rel]
            now_ns = time.time_ns()
            racy = now_ns - mtime < RACY_NS or len(data) != size
            manifest.forget(rel)
            manifest.files[rel] = (size, mtime)
            if racy:
                manifest.hashes[rel] = _hash(data)
            if problems:
                manifest.problems[rel] = problems
            refreshed += 1
            if progress is not None and (n % 50 == 0 or n == total - 1):
                progress(n + 1, total)
        writer.commit(optimize=False)
    except BaseException:
        writer.cancel()
        raise
    manifest.skipped = plan.skipped
    return refreshed, removed


def _new_generation(vault: Vault, language: str) -> tuple[Any, str]:
    from whoosh.index import create_in

    generation = f"g-{secrets.token_hex(4)}"
    folder = index_dir(vault) / generation
    folder.mkdir(parents=True, exist_ok=True)
    return create_in(str(folder), schema(language)), generation


def _drop_other_generations(vault: Vault, keep: str) -> None:
    folder = index_dir(vault)
    with contextlib.suppress(OSError):
        for child in folder.iterdir():
            if child.is_dir() and child.name.startswith("g-") and child.name != keep:
                shutil.rmtree(child, ignore_errors=True)


def _rebuild_locked(
    vault: Vault, progress: ProgressFn | None, walked: tuple[Any, Any] | None = None
) -> tuple[_Manifest, int]:
    current, skipped = walked or walk(vault)
    language = vault.config.language
    ix, generation = _new_generation(vault, language)
    manifest = _Manifest(generation, language, time.time(), {}, {})
    plan = _Plan(sorted(current), [], skipped, current)
    if progress is not None:
        progress(0, len(plan.changed))
    refreshed, _ = _apply(vault, ix, manifest, plan, bulk=True, progress=progress)
    ix.close()
    manifest.refreshed_at = time.time()
    _save_manifest(vault, manifest)
    _drop_other_generations(vault, generation)
    return manifest, refreshed


def _heartbeat_ok(vault: Vault) -> bool:
    """True when `vaultmem watch` is running, has applied every change it saw, and says so."""
    try:
        raw = json.loads((index_dir(vault) / HEARTBEAT).read_bytes())
        return bool(time.time() - float(raw["time"]) < HEARTBEAT_MAX_AGE and not raw["pending"])
    except (OSError, ValueError, KeyError, TypeError):
        return False


def write_heartbeat(vault: Vault, *, pending: int, pid: int) -> None:
    atomic_write(
        index_dir(vault) / HEARTBEAT,
        json.dumps({"time": time.time(), "pending": pending, "pid": pid}),
    )


def clear_heartbeat(vault: Vault) -> None:
    with contextlib.suppress(OSError):
        (index_dir(vault) / HEARTBEAT).unlink()


def _freshness(
    manifest: _Manifest,
    started: float,
    *,
    refreshed: int = 0,
    removed: int = 0,
    checked_by: str = "walk",
    stale: bool = False,
    rebuilt: bool = False,
    warnings: tuple[str, ...] = (),
) -> Freshness:
    now = time.time()
    at = manifest.refreshed_at
    return Freshness(
        files=len(manifest.files),
        refreshed=refreshed,
        removed=removed,
        checked_by=checked_by,
        stale=stale,
        rebuilt=rebuilt,
        age_seconds=round(max(0.0, now - at), 3),
        refreshed_at=datetime.fromtimestamp(at, UTC)
        .isoformat(timespec="seconds")
        .replace("+00:00", "Z"),
        duration_ms=round((time.perf_counter() - started) * 1000, 1),
        warnings=warnings,
    )


def _usable(manifest: _Manifest | None, vault: Vault) -> bool:
    return (
        manifest is not None
        and manifest.language == vault.config.language
        and (index_dir(vault) / manifest.generation).is_dir()
    )


def refresh(
    vault: Vault,
    *,
    wait: float | None = 0.0,
    rebuild: bool = False,
    progress: ProgressFn | None = None,
    trust_watcher: bool = True,
) -> Freshness:
    """Bring the index up to date with the files; return what was done.

    `wait`: how long to wait for another process's refresh. 0 (what `recall` uses) means do
    not wait: search the last committed index and report `stale`. None waits for the
    configured lock timeout and raises LockTimeoutError (exit 6) after it.
    With no index yet (or an unusable one) every caller waits, since there is nothing to search.
    """
    started = time.perf_counter()
    manifest = _load_manifest(vault)
    if not rebuild and _usable(manifest, vault):
        assert manifest is not None
        if trust_watcher and _heartbeat_ok(vault):
            return _freshness(manifest, started, checked_by="watcher")
        current, skipped = walk(vault)
        plan = _plan(vault, manifest, current, skipped)
        if plan.empty(manifest):
            return _freshness(manifest, started)
        if wait == 0.0:
            handle = try_exclusive(_lock(vault))
            if handle is None:
                return _freshness(
                    manifest,
                    started,
                    stale=True,
                    warnings=(
                        f"{len(plan.changed) + len(plan.removed)} changed file(s) not yet "
                        "indexed: another process is refreshing; searched the last committed "
                        "index",
                    ),
                )
            try:
                # the walk just made is as recent as one made now: do not stat everything twice
                walked = (current, skipped)
                return _refresh_locked(vault, started, progress, rebuild=False, walked=walked)
            finally:
                release(handle)
    timeout = vault.config.log.lock_timeout if wait is None or wait == 0.0 else wait
    try:
        with exclusive(_lock(vault), timeout, what="index"):
            return _refresh_locked(vault, started, progress, rebuild=rebuild)
    except LockTimeoutError:
        if wait is None or not _usable(_load_manifest(vault), vault):
            raise
        manifest = _load_manifest(vault)
        assert manifest is not None
        return _freshness(
            manifest,
            started,
            stale=True,
            warnings=("another process is refreshing; searched the last committed index",),
        )


def _refresh_locked(
    vault: Vault,
    started: float,
    progress: ProgressFn | None,
    *,
    rebuild: bool,
    walked: tuple[dict[str, tuple[int, int]], dict[str, tuple[str, str]]] | None = None,
) -> Freshness:
    # re-read under the lock: whoever held it may have done our work already
    manifest = _load_manifest(vault)
    warnings: tuple[str, ...] = ()
    if not rebuild and manifest is not None and manifest.language != vault.config.language:
        warnings = (f"vault language is now {vault.config.language}: index rebuilt",)
        rebuild = True
    if not rebuild and manifest is not None and _usable(manifest, vault):
        current, skipped = walked or walk(vault)
        plan = _plan(vault, manifest, current, skipped)
        if plan.empty(manifest):
            return _freshness(manifest, started)
        for rel in plan.settled:
            manifest.hashes.pop(rel, None)
        if not (plan.changed or plan.removed or plan.skipped != manifest.skipped):
            _save_manifest(vault, manifest)  # only racy entries settled: nothing to reindex
            return _freshness(manifest, started)
        try:
            ix = _open_generation(vault, manifest.generation)
        except Exception as exc:
            warnings = (
                f"index could not be opened ({type(exc).__name__}): rebuilt from the files",
            )
        else:
            try:
                refreshed, removed = _apply(
                    vault, ix, manifest, plan, bulk=False, progress=progress
                )
                manifest.refreshed_at = time.time()
                _save_manifest(vault, manifest)
                return _freshness(manifest, started, refreshed=refreshed, removed=removed)
            except Exception as exc:
                if isinstance(exc, LockTimeoutError | KeyboardInterrupt):
                    raise
                warnings = (
                    f"index could not be updated ({type(exc).__name__}: {exc}): rebuilt from "
                    "the files",
                )
            finally:
                ix.close()
    elif (
        manifest is None
        and index_dir(vault).is_dir()
        and any(p.name.startswith("g-") for p in index_dir(vault).iterdir())
    ):
        warnings = warnings or ("index manifest missing or from another version: rebuilt",)
    manifest, refreshed = _rebuild_locked(vault, progress)
    return _freshness(manifest, started, refreshed=refreshed, rebuilt=True, warnings=warnings)


# --- searching ------------------------------------------------------------------------------


@dataclass(frozen=True)
class RawHit:
    score: float
    fields: dict[str, Any]
    explain: tuple[tuple[str, float], ...] = ()


@dataclass(frozen=True)
class Query:
    """A parsed query, built by recall.py (which knows no whoosh)."""

    words: tuple[str, ...] = ()  # plain words, OR semantics
    phrases: tuple[str, ...] = ()  # each must match
    field_words: tuple[tuple[str, str], ...] = ()  # (text field, words): scored, required
    kinds: tuple[str, ...] = ()
    types: tuple[str, ...] = ()
    agents: tuple[str, ...] = ()  # strict: written by / about this agent
    visible_to: str = ""  # an agent: shared documents plus that agent's own folder
    tags: tuple[str, ...] = ()
    ids: tuple[str, ...] = ()
    statuses: tuple[str, ...] = ()
    under: tuple[str, ...] = ()
    since: str = ""
    include_hidden: bool = False
    today: str = ""


class Searcher:
    """An open index generation, searched with query objects built directly (no qparser)."""

    def __init__(self, vault: Vault) -> None:
        self.vault = vault
        self.language = vault.config.language
        self.ix, self.searcher = self._open()
        self.analyzer = self.ix.schema["body"].analyzer

    def _open(self) -> tuple[Any, Any]:
        from whoosh import scoring

        last: Exception | None = None
        # a refresh may swap the generation (or merge segments) between reading the
        # manifest and opening the files: re-read and retry before calling the index broken
        for attempt in range(4):
            manifest = _load_manifest(self.vault)
            if manifest is None:
                raise FileNotFoundError("no index manifest")
            self.generation = manifest.generation
            try:
                ix = _open_generation(self.vault, manifest.generation)
                weighting = scoring.BM25F(
                    B=BM25_B, K1=BM25_K1, title_B=0.3, heading_B=0.3, tags_B=0.3
                )
                return ix, ix.searcher(weighting=weighting)
            except Exception as exc:
                last = exc
                time.sleep(0.02 * (attempt + 1))
        assert last is not None
        raise last

    def close(self) -> None:
        self.searcher.close()
        self.ix.close()

    def __enter__(self) -> Searcher:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def terms(self, text: str) -> list[str]:
        """The index terms of some text (stemmed, folded, stop words dropped), in order."""
        return [t.text for t in self.analyzer(text, mode="query")]

    def tokens(self, text: str) -> list[tuple[str, int, int]]:
        """(term, start char, end char) of some text, for marking snippets."""
        return [(t.text, t.startchar, t.endchar) for t in self.analyzer(text, chars=True)]

    def plain_terms(self, words: tuple[str, ...]) -> list[str]:
        """Index terms of the plain words of a query, without question filler (English).

        The index keeps these words (phrases need them); a natural question is full of them
        ("would", "kind of", "how many") and each one that a wrong page happens to repeat
        pulls it up. Dropped only when something else is left to search for.
        """
        kept = [w for w in words if w.lower().strip("?!.,;:'\"") not in QUERY_STOP]
        terms = [t for w in (kept or words) for t in self.terms(w)]
        return terms or [t for w in words for t in self.terms(w)]

    def doc_count(self) -> int:
        return int(self.searcher.doc_count())

    def _build(self, q: Query) -> tuple[Any, Any, Any, list[Any]]:
        from whoosh import query as wq

        scored: list[Any] = []
        leaves: list[Any] = []
        terms = self.plain_terms(q.words)
        seen: set[str] = set()
        for term in terms:
            if term in seen:
                continue
            seen.add(term)
            for fname, boost in TEXT_FIELDS.items():
                leaf = wq.Term(fname, term, boost=boost)
                leaves.append(leaf)
                scored.append(leaf)
        # two query words next to each other in the text too (stop words aside): a small
        # bonus, as in sequential-dependence models; the words alone already scored
        # (on LoCoMo: R@1 +0.011, MRR +0.006, R@5 +0.004)
        for a, b in itertools.pairwise(terms):
            if a != b and PROXIMITY_BOOST > 0:
                leaf = wq.Phrase("body", [a, b], slop=PROXIMITY_SLOP, boost=PROXIMITY_BOOST)
                leaves.append(leaf)
                scored.append(leaf)
        required: list[Any] = []
        for phrase in q.phrases:
            words = self.terms(phrase)
            if not words:
                continue
            if len(words) == 1:
                alts = [wq.Term(f, words[0], boost=b) for f, b in TEXT_FIELDS.items()]
            else:
                alts = [
                    wq.Phrase(f, words, boost=2.0 * b)
                    for f, b in TEXT_FIELDS.items()
                    if f != "tags"
                ]
            leaves.extend(alts)
            required.append(wq.Or(alts))
        for fname, text in q.field_words:
            words = self.terms(text) if fname != "tags" else [text.lower()]
            if words:
                group = [wq.Term(fname, w, boost=TEXT_FIELDS.get(fname, 1.0)) for w in words]
                leaves.extend(group)
                required.append(wq.And(group))
        if required:
            main = wq.AndMaybe(wq.And(required), wq.Or(scored)) if scored else wq.And(required)
        else:
            main = wq.Or(scored) if scored else wq.NullQuery
        filters: list[Any] = []

        def any_of(fname: str, values: tuple[str, ...]) -> None:
            if values:
                filters.append(wq.Or([wq.Term(fname, v) for v in values]))

        any_of("kind", q.kinds)
        any_of("type", q.types)
        any_of("agent", q.agents)
        any_of("tags", tuple(t.lower() for t in q.tags))
        if q.visible_to:
            any_of("owner", (q.visible_to, "-"))
        any_of("id", q.ids)
        any_of("status", q.statuses)
        if q.under:
            filters.append(
                wq.Or(
                    [
                        wq.Or([wq.Term("path", u), wq.Prefix("path", u.rstrip("/") + "/")])
                        for u in q.under
                    ]
                )
            )
        if q.since:
            filters.append(wq.TermRange("date", q.since, None))
        mask = None
        if not q.include_hidden:
            masks = [wq.Term("hidden", "1")]
            if q.today:
                masks.append(wq.TermRange("valid_until", None, q.today, endexcl=True))
            mask = wq.Or(masks)
        flt = wq.And(filters) if filters else None
        return main, flt, mask, leaves

    def search(self, q: Query, *, limit: int, explain: bool = False) -> list[RawHit]:
        """Top documents; BM25F scores scaled by how much of the query each one covers.

        OR semantics rank a document that repeats one query word above one that has all of
        them; weighting by the (idf-weighted) share of query terms matched corrects that.
        """
        if not self.searcher.doc_count():  # an empty vault (and idf would divide by zero)
            return []
        main, flt, mask, leaves = self._build(q)
        if main is None or main.__class__.__name__ == "_NullQuery":
            return []
        results = self.searcher.search(main, limit=limit, filter=flt, mask=mask, terms=True)
        plain: dict[str, float] = {}
        for term in self.plain_terms(q.words):
            plain[term] = max(float(self.searcher.idf("body", term)), 0.0)
        total = sum(plain.values())
        hits = []
        for r in results:
            score = float(r.score)
            contrib: tuple[tuple[str, float], ...] = ()
            if total > 0 and COVERAGE_POWER:
                matched = {text for _f, text in (r.matched_terms() or ())}
                seen = {t.decode() if isinstance(t, bytes) else t for t in matched}
                share = sum(w for t, w in plain.items() if t in seen) / total
                score *= share**COVERAGE_POWER
            if explain:
                contrib = self._explain(r.docnum, leaves)
            hits.append(RawHit(score, dict(r.fields()), contrib))
        hits.sort(key=lambda h: -h.score)
        return hits

    def _explain(self, docnum: int, leaves: list[Any]) -> tuple[tuple[str, float], ...]:
        out = []
        for leaf in leaves:
            try:
                m = leaf.matcher(self.searcher)
                if m.is_active():
                    m.skip_to(docnum)
                if m.is_active() and m.id() == docnum:
                    out.append((_leaf_label(leaf), round(float(m.score()), 4)))
            except Exception:  # a leaf on a field absent from this index: contributes nothing
                continue
        return tuple(sorted(out, key=lambda x: -x[1]))


_OPEN: dict[str, tuple[str, Searcher]] = {}


def searcher_for(vault: Vault) -> Searcher:
    """An open searcher on the current index, kept open for the next call in this process.

    A long-lived process (the MCP server, a benchmark, an agent embedding the library) then
    pays for opening the index once; whoosh's `up_to_date` (one directory listing) says when a
    refresh has committed since.
    """
    key = str(vault.root)
    cached = _OPEN.get(key)
    if cached is not None:
        gen, s = cached
        try:
            if gen == _CURRENT.get(key) and s.searcher.up_to_date():
                return s
        except Exception:  # the generation was rebuilt away: open the new one
            pass
        forget_searcher(vault)
    s = Searcher(vault)
    _OPEN[key] = (s.generation, s)
    return s


def forget_searcher(vault: Vault) -> None:
    cached = _OPEN.pop(str(vault.root), None)
    if cached is not None:
        with contextlib.suppress(Exception):
            cached[1].close()


def _leaf_label(leaf: Any) -> str:
    words = getattr(leaf, "words", None)
    if words:
        slop = getattr(leaf, "slop", 1)
        near = f"~{slop}" if slop > 1 else ""
        return f'{leaf.fieldname}:"{" ".join(words)}"{near}'
    return f"{leaf.fieldname}:{leaf.text}"


def today() -> str:
    return datetime.now(UTC).date().isoformat()
