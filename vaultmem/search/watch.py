"""`vaultmem watch`: keep the index current while files change. The only watchdog importer.

Events only say *that* something changed; what changed is always worked out by the same stat
walk against the manifest that every `recall` uses (`refresh.refresh`), so a missed, merged or
reordered event can never leave the index wrong. Events are debounced: a burst of changes (a
git pull, a sync client, 1,000 files) becomes one refresh once things are quiet for a moment.

While it runs, the watcher writes a heartbeat saying whether it has applied every change it
saw; `recall` then skips its own walk.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from typing import Any

from watchdog.events import FileSystemEventHandler
from watchdog.observers import Observer

from vaultmem.core.errors import LockTimeoutError
from vaultmem.core.fsio import ensure_dir
from vaultmem.core.records import record
from vaultmem.core.vault import STATE_DIR, Vault
from vaultmem.search import manifest, refresh, walk

IGNORED_DIRS = frozenset({STATE_DIR, ".obsidian", ".git", ".trash"})
HEARTBEAT_EVERY = 1.0
BARRIER_WAIT = 1.0  # seconds `Warm` waits for its barrier event before walking instead


def relevant(vault_root: str, path: str, *, is_dir: bool = False) -> bool:
    """Does a change at `path` matter to the index? (Not vaultmem's state, not editor temp files.)"""
    rel = os.path.relpath(path, vault_root)
    if rel.startswith(".."):
        return False
    parts = rel.replace(os.sep, "/").split("/")
    if any(p in IGNORED_DIRS or p.startswith(".") for p in parts):
        return False
    name = parts[-1]
    if name.endswith(("~", ".swp", ".swx", ".tmp", ".part", ".crdownload")):
        return False
    # a folder event (rename, delete) may move many notes; a non-markdown file does not matter
    return is_dir or name.lower().endswith(".md") or "." not in name


@record
class WatchEvent:
    """One refresh the watcher ran (given to the `on_refresh` callback)."""

    events: int  # file-system events folded into this refresh
    freshness: refresh.Freshness


class _Handler(FileSystemEventHandler):
    """Collects relevant events; the loop in `watch` decides when to refresh."""

    def __init__(self, root: str) -> None:
        super().__init__()
        self.root = root
        self.lock = threading.Lock()
        self.pending = 0
        self.last = 0.0
        self.paths: set[str] = set()  # what changed, for `Warm` (vault-relative)
        self.barrier = ""  # a file `Warm` writes to, to know the events before it are in
        self.seen = threading.Event()

    def dispatch(self, event: Any) -> None:
        paths = [getattr(event, "src_path", ""), getattr(event, "dest_path", "")]
        if self.barrier and os.fsdecode(paths[0]) == self.barrier:
            self.seen.set()  # every event queued before the barrier's has been handled
            return
        if getattr(event, "event_type", "") in ("opened", "closed_no_write"):
            return
        is_dir = bool(getattr(event, "is_directory", False))
        if not any(p and relevant(self.root, os.fsdecode(p), is_dir=is_dir) for p in paths):
            return
        with self.lock:
            self.pending += 1
            self.last = time.monotonic()
            # a folder's "modified" only echoes the file events inside it, which say more
            folder_echo = is_dir and getattr(event, "event_type", "") == "modified"
            for p in paths:
                if p and not folder_echo:
                    rel = os.path.relpath(os.fsdecode(p), self.root).replace(os.sep, "/")
                    self.paths.add(walk.FULL_WALK if is_dir or rel.startswith("..") else rel)

    def take(self, debounce: float) -> int:
        """The number of events to refresh for now (0 while changes are still arriving)."""
        with self.lock:
            if not self.pending or time.monotonic() - self.last < debounce:
                return 0
            n, self.pending = self.pending, 0
            return n


def watch(
    vault: Vault,
    *,
    debounce: float = 0.3,
    stop: threading.Event | None = None,
    on_refresh: Callable[[WatchEvent], None] | None = None,
    ready: threading.Event | None = None,
) -> None:
    """Refresh the index now and after every burst of changes, until `stop` is set.

    KeyboardInterrupt (Ctrl-C) propagates after the observer is stopped and the heartbeat
    removed, so callers can exit cleanly.
    """
    stop = stop or threading.Event()
    # create the state folders before watching: one appearing during the observer's own
    # recursive set-up makes watchdog warn about a duplicate watch
    manifest.index_dir(vault).mkdir(parents=True, exist_ok=True)
    ensure_dir(vault.state("locks"))
    handler = _Handler(str(vault.root))
    observer = Observer()
    observer.schedule(handler, str(vault.root), recursive=True)
    observer.start()
    try:
        fresh = refresh.refresh(vault, wait=None, trust_watcher=False)
        if on_refresh is not None:
            on_refresh(WatchEvent(0, fresh))
        if ready is not None:
            ready.set()
        beat = 0.0
        while not stop.is_set():
            n = handler.take(debounce)
            if n:
                try:
                    fresh = refresh.refresh(vault, wait=None, trust_watcher=False)
                except LockTimeoutError:
                    with handler.lock:  # try again on the next turn
                        handler.pending += n
                else:
                    if on_refresh is not None:
                        on_refresh(WatchEvent(n, fresh))
            now = time.monotonic()
            if now - beat >= HEARTBEAT_EVERY or n:
                with handler.lock:
                    pending = handler.pending
                refresh.write_heartbeat(vault, pending=pending, pid=os.getpid())
                beat = now
            stop.wait(0.05)
    finally:
        refresh.clear_heartbeat(vault)
        observer.stop()
        observer.join(timeout=5)


class Warm:
    """A vault kept warm in one long-lived process (the MCP server, an agent embedding the
    library): an in-process watcher collects the paths that change, so a recall stats only
    those (nothing at all when nothing changed) and reuses the open searcher and manifest.

        warm = Warm(vault)  # watching from here; close() (or `with`) stops it
        warm.recall("stripe webhooks", limit=5)  # what `query.recall` takes and returns

    As fresh as `recall`: inotify queues a change's event before the write returns, and
    delivers a watch's events in order, so each recall first writes a barrier file under
    `.vaultmem/locks/` and waits for its event: every change before it is then in the set.
    Until the first refresh, after a folder event, when the barrier does not come back within
    a second, and after a refresh that could not take the lock, it walks as recall does.
    """

    def __init__(self, vault: Vault) -> None:
        self.vault = vault
        manifest.index_dir(vault).mkdir(parents=True, exist_ok=True)
        ensure_dir(vault.state("locks"))
        self._handler = _Handler(str(vault.root))
        self._barrier_file = vault.state("locks") / f"warm-{os.getpid()}-{id(self)}"
        self._handler.barrier = str(self._barrier_file)
        self._observer = Observer()
        try:
            self._observer.schedule(self._handler, str(vault.root), recursive=True)
            self._observer.start()
        except OSError:  # out of inotify watches: every recall walks, as a plain one does
            self._observer = Observer()
        self._synced = False  # True once a refresh has seen everything up to the last drain

    def recall(self, query: str, *, vault: Vault | None = None, **kw: Any) -> Any:
        """`query.recall(vault, query, **kw)`; `vault` is this vault opened again (the MCP
        server re-reads vaultmem.toml per call), the one given at the start by default."""
        from vaultmem.search.query import recall

        if vault is not None and vault.root != self.vault.root:
            raise ValueError(f"{vault.root} is not the vault this Warm watches")
        synced = self._synced and self._observer.is_alive() and self._barrier()
        with self._handler.lock:
            paths = frozenset(self._handler.paths)
            self._handler.paths.clear()
        changed = paths if synced else None
        try:
            result = recall(vault or self.vault, query, changed=changed, **kw)
        except BaseException:
            self._put_back(paths)
            raise
        if result.index.stale:
            self._put_back(paths)
        else:
            self._synced = True
        return result

    def _barrier(self) -> bool:
        self._handler.seen.clear()
        try:
            self._barrier_file.write_bytes(b"barrier\n")
        except OSError:
            return False
        return self._handler.seen.wait(BARRIER_WAIT)

    def _put_back(self, paths: frozenset[str]) -> None:
        with self._handler.lock:
            self._handler.paths |= paths
        self._synced = False

    def close(self) -> None:
        if self._observer.is_alive():
            self._observer.stop()
            self._observer.join(timeout=5)
        self._barrier_file.unlink(missing_ok=True)

    def __enter__(self) -> Warm:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
