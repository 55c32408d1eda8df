"""What changed since the index was written: the walk's answer against the manifest.

`plan` compares a walk (`walk.walk_folders`, or `walk_changed` for what a watcher saw)
with the manifest and says which files to reindex, which to drop, and which racy entries may
be trusted again; `refresh` applies it. `restamp` records new folder stamps when nothing needs
reindexing.
"""

from __future__ import annotations

import contextlib
from typing import Any

from vaultmem.core.errors import PathOutsideVaultError, VaultmemError
from vaultmem.core.locking import release, try_exclusive
from vaultmem.core.records import field, record
from vaultmem.core.vault import Vault
from vaultmem.search.documents import content_hash, read_limit, read_prefix
from vaultmem.search.manifest import (
    Manifest,
    files_now_ns,
    load_manifest,
    refresh_lock,
    save_manifest,
)

# A file whose mtime is this close to the moment it was read may be rewritten within the
# same mtime tick without its size changing; such entries carry a content hash (cf. git's
# "racily clean" entries).
RACY_NS = 2_000_000_000


@record
class Plan:
    changed: list[str]
    removed: list[str]
    skipped: dict[str, tuple[str, str]]
    current: dict[str, tuple[int, int]]
    settled: list[str] = field(default_factory=list)  # racy entries now safe to trust again
    # files whose mtime moved but whose content did not (a checkout, a copy): new stat only
    touched: dict[str, tuple[int, int]] = field(default_factory=dict)

    def empty(self, manifest: Manifest) -> bool:
        return not (self.changed or self.removed or self.settled or self.touched) and (
            self.skipped == manifest.skipped
        )


def plan(
    vault: Vault,
    manifest: Manifest,
    current: dict[str, tuple[int, int]],
    skipped: Any,
    only: frozenset[str] | None = None,  # the paths a watcher saw change: nothing else did
) -> Plan:
    if only is None and current == manifest.files:  # the common case: nothing moved
        only = frozenset()
    rels = current if only is None else [r for r in only | manifest.hashes.keys() if r in current]
    changed = []
    settled = []
    touched: dict[str, tuple[int, int]] = {}
    limit_ns: int | None = None  # by the files' clock, read once and only if needed
    max_bytes = vault.config.recall.max_file_bytes
    for rel in rels:
        size, mtime = current[rel]
        known = manifest.files.get(rel)
        if known != (size, mtime):
            if known is not None and known[0] == size and rel in manifest.sums:
                # same size, new mtime: only the content can say whether it changed
                try:
                    data, _ = read_prefix(vault, vault.root / rel, read_limit(rel, max_bytes))
                except (OSError, PathOutsideVaultError):
                    changed.append(rel)
                    continue
                if content_hash(data) == manifest.sums[rel]:
                    touched[rel] = (size, mtime)
                    continue
            changed.append(rel)
        elif rel in manifest.hashes:
            # size and mtime match, but the file was written within one mtime tick of being
            # read: only its content can say whether it changed since
            try:
                data, _ = read_prefix(vault, vault.root / rel, vault.config.recall.max_file_bytes)
            except (OSError, PathOutsideVaultError):
                changed.append(rel)
                continue
            if content_hash(data) != manifest.hashes[rel]:
                changed.append(rel)
            else:
                if limit_ns is None:
                    limit_ns = files_now_ns(vault) - RACY_NS
                if mtime < limit_ns:
                    settled.append(rel)
    removed = [r for r in (manifest.files if only is None else only) if r not in current]
    removed = [r for r in removed if r in manifest.files]
    return Plan(sorted(changed), sorted(removed), dict(skipped), current, settled, touched)


def restamp(
    vault: Vault,
    current: dict[str, tuple[int, int]],
    skipped: dict[str, tuple[str, str]],
    stamps: dict[str, list[int]],
) -> None:
    """Nothing to reindex, but some folder's stamp moved (a picture added, a folder that
    settled): record the new stamps, so that the next walk lists only what changed since.
    Only if the refresh lock is free at once and the manifest still agrees with the walk;
    never an error (a read-only vault, a full disk: the next walk lists those folders again)."""
    with contextlib.suppress(VaultmemError, OSError):
        handle = try_exclusive(refresh_lock(vault))
        if handle is None:
            return
        try:
            manifest = load_manifest(vault)
            if manifest is not None and plan(vault, manifest, current, skipped).empty(manifest):
                manifest.folders = stamps
                save_manifest(vault, manifest)
        finally:
            release(handle)
