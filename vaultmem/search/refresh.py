"""Freshness without a daemon: every recall first brings the index up to date with the files.

`refresh()` walks the vault with `os.scandir` (one stat per file), compares with the manifest and
reindexes only what was added, changed or removed. Refreshes are serialised by a lock file; a
recall that cannot get the lock at once searches the last committed index and says so, instead
of waiting. While `vaultmem watch` runs and says it is current (its heartbeat), the walk is
skipped.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from vaultmem.core.errors import (
    DiskFullError,
    LockTimeoutError,
    NotWritableError,
    VaultmemError,
)
from vaultmem.core.locking import exclusive, release, try_exclusive
from vaultmem.core.records import record
from vaultmem.core.vault import Vault
from vaultmem.search import backends
from vaultmem.search.documents import (
    Doc,
    Kind,
    content_hash,
    kind_of,
    read_documents,
)
from vaultmem.search.engine import fields
from vaultmem.search.logdocs import read_log
from vaultmem.search.manifest import (
    OWN_FILES,
    Manifest,
    files_now_ns,
    heartbeat_ok,
    index_dir,
    load_manifest,
    proven,
    record_listing,
    refresh_lock,
    save_manifest,
    unsealed,
)
from vaultmem.search.manifest import clear_heartbeat as clear_heartbeat  # for `watch`
from vaultmem.search.manifest import write_heartbeat as write_heartbeat
from vaultmem.search.plan import RACY_NS
from vaultmem.search.plan import Plan as _Plan
from vaultmem.search.plan import plan as _plan
from vaultmem.search.plan import restamp as _restamp
from vaultmem.search.walk import walk_changed, walk_folders

if TYPE_CHECKING:
    from vaultmem.search.embedder import Model

ProgressFn = Callable[[int, int], None]


@record
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
    embedded: int = 0  # documents (re)embedded now (semantic recall only)

    def to_dict(self) -> dict[str, Any]:
        out = dict(self.__dict__)
        out["warnings"] = list(self.warnings)
        return out


def _apply(
    vault: Vault,
    ix: Any,
    manifest: Manifest,
    plan: _Plan,
    *,
    bulk: bool,
    progress: ProgressFn | None,
    collect: dict[str, list[Doc]] | None = None,
) -> tuple[int, int]:
    """Reindex changed files and drop removed ones in one whoosh commit; update the manifest.

    `collect` receives each reindexed file's documents (the embedding store reuses them)."""
    max_bytes = vault.config.recall.max_file_bytes
    writer = backends.engine_for(vault).open_writer(ix, bulk=bulk)
    refreshed = removed = 0
    # before any file is read, by the files' own clock: one written within a tick of it is racy
    now_ns = files_now_ns(vault)
    try:
        for rel in plan.removed:
            writer.delete_by_term("path", rel)
            manifest.forget(rel)
            removed += 1
        total = len(plan.changed)
        for n, rel in enumerate(plan.changed):
            first, mark = 0, None
            if kind_of(rel)[0] == Kind.LOG:
                # an append-only log: only what was appended since the last refresh
                log_read = read_log(vault, rel, max_bytes, manifest.logs.get(rel))
                read = None
                if log_read is not None:
                    read = (log_read.docs, log_read.problems, log_read.data)
                    first, mark = log_read.first, log_read.mark
            else:
                read = read_documents(vault, rel, max_bytes)
            if not bulk and first == 0:
                writer.delete_by_term("path", rel)
            if read is None:  # vanished since the walk
                if rel in manifest.files:
                    manifest.forget(rel)
                    removed += 1
                continue
            docs, problems, data = read
            if collect is not None and first == 0:
                collect[rel] = docs  # appended to: the embedding store reads the whole file
            for i, doc in enumerate(docs, start=first):
                writer.add_document(**fields(doc, i))
            size, mtime = plan.current[rel]
            racy = now_ns - mtime < RACY_NS or len(data) != size
            manifest.forget(rel)
            manifest.files[rel] = (size, mtime)
            digest = mark.digest if mark is not None else content_hash(data)
            manifest.sums[rel] = digest
            if racy:
                manifest.hashes[rel] = digest
            if problems:
                manifest.problems[rel] = problems
            if mark is not None:
                manifest.logs[rel] = mark
            refreshed += 1
            if progress is not None and (n % 50 == 0 or n == total - 1):
                progress(n + 1, total)
        writer.commit(optimize=False)
    except BaseException:
        writer.cancel()
        raise
    record_listing(vault, manifest)
    manifest.skipped = plan.skipped
    return refreshed, removed


def _drop_other_generations(vault: Vault, keep: str) -> None:
    """Everything in the index folder but the new generation and vaultmem's own sealed files:
    what git or anything else put there is deleted, never opened."""
    folder = index_dir(vault)
    with contextlib.suppress(OSError):
        for child in folder.iterdir():
            if child.name == keep or child.name in OWN_FILES:
                continue
            if child.is_dir() and not child.is_symlink():
                import shutil  # here: a rebuild needs it, a recall does not (bz2, lzma)

                shutil.rmtree(child, ignore_errors=True)
            elif child.name.startswith(("g-", "_")) or child.is_symlink():
                child.unlink(missing_ok=True)


def _rebuild_locked(
    vault: Vault,
    progress: ProgressFn | None,
    walked: tuple[Any, Any] | None = None,
    semantic: _Semantic | None = None,
) -> tuple[Manifest, int, _Synced]:
    stamps: dict[str, list[int]] = {}
    if walked is None:
        current, skipped, stamps = walk_folders(vault)
    else:
        current, skipped = walked
    language = vault.config.language
    ix, generation = backends.engine_for(vault).new_generation(vault, language)
    manifest = Manifest(
        generation, language, time.time(), {}, {}, folders=stamps, engine=backends.name(vault)
    )
    plan = _Plan(sorted(current), [], skipped, current)
    if progress is not None:
        progress(0, len(plan.changed))
    collected: dict[str, list[Doc]] = {}
    refreshed, _ = _apply(
        vault, ix, manifest, plan, bulk=True, progress=progress, collect=collected
    )
    ix.close()
    synced = _sync(vault, manifest, semantic, collected)
    manifest.refreshed_at = time.time()
    save_manifest(vault, manifest)
    _drop_other_generations(vault, generation)
    return manifest, refreshed, synced


@record
class _Semantic:
    """What the embedding store needs from a refresh: the model, and a progress callback."""

    model: Model
    progress: ProgressFn | None = None


@record
class _Synced:
    embedded: int = 0
    warnings: tuple[str, ...] = ()


def _sync(
    vault: Vault,
    manifest: Manifest,
    semantic: _Semantic | None,
    collected: dict[str, list[Doc]] | None = None,
) -> _Synced:
    """Bring the embedding store in line with `manifest` (under the refresh lock)."""
    if semantic is None:
        return _Synced()
    from vaultmem.search import vectors

    report = vectors.sync(
        vault, manifest, semantic.model, reindexed=collected, progress=semantic.progress
    )
    return _Synced(report.embedded, report.warnings)


def _vectors_in_line(vault: Vault, manifest: Manifest, model: Model) -> bool:
    from vaultmem.search import vectors

    return vectors.in_line(vault, manifest, model)


def _freshness(
    manifest: Manifest,
    started: float,
    *,
    refreshed: int = 0,
    removed: int = 0,
    checked_by: str = "walk",
    stale: bool = False,
    rebuilt: bool = False,
    warnings: tuple[str, ...] = (),
    synced: _Synced | None = None,
) -> Freshness:
    now = time.time()
    if synced is not None:
        warnings = (*warnings, *synced.warnings)
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
        embedded=synced.embedded if synced is not None else 0,
    )


def _usable(manifest: Manifest | None, vault: Vault) -> bool:
    return (
        manifest is not None
        and manifest.language == vault.config.language
        and manifest.engine == backends.name(vault)
        and proven(vault, manifest)
    )


UNPROVEN = (
    "the index's files are not what vaultmem on this machine wrote (changed by git or another "
    "program?): deleted and rebuilt from the files, never opened"
)


def refresh(vault: Vault, **kw: Any) -> Freshness:
    """`_refresh`; on a read-only vault or a full disk, the index as it is, saying so."""
    try:
        return _refresh(vault, **kw)
    except (NotWritableError, DiskFullError, PermissionError) as exc:
        manifest = load_manifest(vault)
        if kw.get("rebuild") or manifest is None or not _usable(manifest, vault):
            raise
        why = f"{exc.message if isinstance(exc, VaultmemError) else exc}: searched the index as is"
        return _freshness(manifest, time.perf_counter(), stale=True, warnings=(why,))


def _refresh(
    vault: Vault,
    *,
    wait: float | None = 0.0,
    rebuild: bool = False,
    progress: ProgressFn | None = None,
    trust_watcher: bool = True,
    model: Model | None = None,
    embed_progress: ProgressFn | None = None,
    changed: frozenset[str] | None = None,
) -> Freshness:
    """Bring the index (and, given a `model`, the embedding store) up to date with the files.

    `changed`: from an in-process watcher (`watch.Warm`), the only paths that may have
    changed since this process's last refresh: they are stat'ed instead of the whole vault.

    `wait`: how long to wait for another process's refresh. 0 (what `recall` uses) means do
    not wait: search the last committed index and report `stale`. None waits for the
    configured lock timeout and raises LockTimeoutError (exit 6) after it.
    With no index yet (or an unusable one) every caller waits, since there is nothing to search.
    """
    started = time.perf_counter()
    semantic = _Semantic(model, embed_progress) if model is not None else None
    manifest = load_manifest(vault)
    if not rebuild and _usable(manifest, vault):
        assert manifest is not None
        in_line = model is None or _vectors_in_line(vault, manifest, model)
        if in_line and (changed == frozenset() or (trust_watcher and heartbeat_ok(vault))):
            return _freshness(manifest, started, checked_by="watcher")
        partial = changed and walk_changed(vault, manifest, changed)
        stamps = None
        if partial:
            current, skipped = partial
        else:
            current, skipped, stamps = walk_folders(vault, manifest)
        plan = _plan(vault, manifest, current, skipped, changed if partial else None)
        if plan.empty(manifest) and in_line:
            if stamps is not None and stamps != manifest.folders:
                _restamp(vault, current, skipped, stamps)
            return _freshness(manifest, started)
        if wait == 0.0:
            handle = try_exclusive(refresh_lock(vault))
            if handle is None:
                pending = len(plan.changed) + len(plan.removed)
                return _freshness(
                    manifest,
                    started,
                    stale=True,
                    warnings=(
                        f"{pending} changed file(s) not yet indexed: another process is "
                        "refreshing; searched the last committed index",
                    )
                    if pending
                    else ("another process is refreshing; searched the last committed index",),
                )
            try:
                # the walk just made is as recent as one made now: do not stat everything twice
                walked = (current, skipped)
                return _refresh_locked(
                    vault, started, progress, rebuild=False, walked=walked, semantic=semantic,
                    changed=changed if partial else None, stamps=stamps,
                )  # fmt: skip
            finally:
                release(handle)
    timeout = vault.config.log.lock_timeout if wait is None or wait == 0.0 else wait
    try:
        with exclusive(refresh_lock(vault), timeout, what="index"):
            return _refresh_locked(vault, started, progress, rebuild=rebuild, semantic=semantic)
    except LockTimeoutError:
        if wait is None or not _usable(load_manifest(vault), vault):
            raise
        manifest = load_manifest(vault)
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
    semantic: _Semantic | None = None,
    changed: frozenset[str] | None = None,
    stamps: dict[str, list[int]] | None = None,  # the folders of the full walk in `walked`
) -> Freshness:
    # re-read under the lock: whoever held it may have done our work already (and what the
    # watcher saw is stat'ed again over the manifest now in force)
    manifest = load_manifest(vault)
    if changed and manifest is not None:
        walked = walk_changed(vault, manifest, changed)
        changed = changed if walked else None
        stamps = None
    warnings: tuple[str, ...] = ()
    if not rebuild and manifest is not None and manifest.language != vault.config.language:
        warnings = (f"vault language is now {vault.config.language}: index rebuilt",)
        rebuild = True
    if not rebuild and manifest is not None and manifest.engine != backends.name(vault):
        warnings = (f"[recall] engine is now {backends.name(vault)}: index rebuilt",)
        rebuild = True
    eng = backends.engine_for(vault)
    if not rebuild and manifest is not None and _usable(manifest, vault):
        if walked is None:
            current, skipped, stamps = walk_folders(vault, manifest)
        else:
            current, skipped = walked
        plan = _plan(vault, manifest, current, skipped, changed if walked else None)
        if stamps is not None:  # a full walk: what the manifest will say of every folder
            restamped = stamps != manifest.folders
            manifest.folders = stamps
        else:
            restamped = False
        if plan.empty(manifest):
            synced = _sync(vault, manifest, semantic)
            if restamped:
                save_manifest(vault, manifest)
            return _freshness(manifest, started, synced=synced)
        for rel in plan.settled:
            manifest.hashes.pop(rel, None)
        manifest.files.update(plan.touched)
        now_ns = files_now_ns(vault) if plan.touched else 0
        for rel, (_size, mtime) in plan.touched.items():
            if now_ns - mtime < RACY_NS:  # touched within a tick: check the content next time
                manifest.hashes[rel] = manifest.sums[rel]
        if not (plan.changed or plan.removed or plan.skipped != manifest.skipped):
            synced = _sync(vault, manifest, semantic)
            save_manifest(vault, manifest)  # only racy entries settled: nothing to reindex
            return _freshness(manifest, started, synced=synced)
        try:
            ix = eng.open_generation(vault, manifest)
        except eng.index_errors() as exc:
            warnings = (
                f"index could not be opened ({type(exc).__name__}): rebuilt from the files",
            )
        else:
            try:
                collected: dict[str, list[Doc]] = {}
                refreshed, removed = _apply(
                    vault, ix, manifest, plan, bulk=False, progress=progress, collect=collected
                )
                if semantic is not None:
                    # the new listing first: embedding takes a while, and until the manifest
                    # names it no reader may open the generation just committed
                    save_manifest(vault, manifest)
                synced = _sync(vault, manifest, semantic, collected)
                manifest.refreshed_at = time.time()
                save_manifest(vault, manifest)
                return _freshness(
                    manifest, started, refreshed=refreshed, removed=removed, synced=synced
                )
            except eng.index_errors() as exc:
                warnings = (
                    f"index could not be updated ({type(exc).__name__}: {exc}): rebuilt from "
                    "the files",
                )
            finally:
                ix.close()
    elif (manifest is None and unsealed(vault)) or (
        not rebuild and manifest is not None and not proven(vault, manifest)
    ):
        warnings = warnings or (UNPROVEN,)
    elif (
        manifest is None
        and index_dir(vault).is_dir()
        and any(p.name.startswith("g-") for p in index_dir(vault).iterdir())
    ):
        warnings = warnings or ("index manifest missing or from another version: rebuilt",)
    manifest, refreshed, synced = _rebuild_locked(vault, progress, semantic=semantic)
    return _freshness(
        manifest, started, refreshed=refreshed, rebuilt=True, warnings=warnings, synced=synced
    )
