"""The stat walk: every markdown file of the vault with its size and mtime, compared with the
index manifest (`search/manifest.py`) to say what changed. Folder stamps (`Manifest.folders`)
let a walk skip listing a folder whose names cannot have changed; what a watcher saw
(`walk_changed`) is statted alone.
"""

# the walk works on str paths, os.stat and os.path.join: a Path per file costs more than its stat
# ruff: noqa: PTH116, PTH118

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

from vaultmem.core.vault import Vault
from vaultmem.search.manifest import MANIFEST, Manifest, files_now_ns, index_dir


def walk(vault: Vault) -> tuple[dict[str, tuple[int, int]], dict[str, tuple[str, str]]]:
    """Every markdown file in the vault -> (size, mtime_ns); plus symlinks left out, and why.

    Skips dot folders and dot files (`.vaultmem/`, `.obsidian/`, `.git/`, `.trash/`, editor and
    vaultmem temp files). Symlinks are never followed out of the vault (each is listed as
    `symlink-outside`), and links inside it are not followed at all: a link to a folder would
    loop or duplicate, and a link to a note would be indexed under the link's path, so scoped by
    where the link sits rather than by its target (`wiki/x.md -> ../agents/lyra/memory/y.md`
    would hand lyra's fact to every agent). The target is indexed once, under its own path.
    """
    files, skipped, _folders = walk_folders(vault)
    return files, skipped


Walked = tuple[dict[str, tuple[int, int]], dict[str, tuple[str, str]], dict[str, list[int]]]


# a folder's stamp vouches for its names only once its mtime (or ctime) is this much older than
# the walk: a change within the same timestamp tick could otherwise leave the stamp as it was
FOLDER_SETTLED_NS = 2_000_000_000


_BY_FD = os.stat in os.supports_dir_fd and hasattr(os, "O_DIRECTORY")


_DIR_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_NOFOLLOW", 0)


def walk_folders(vault: Vault, known: Manifest | None = None) -> Walked:
    """`walk`'s answer, and every folder's stamp (see `Manifest.folders`).

    Given `known` (the manifest in force), a folder whose stamp is the one recorded there is
    not listed again: the same stamp means the same names (adding, removing or renaming an
    entry sets the folder's mtime and ctime to now, and the stamp is recorded only when one of
    them was already older than the walk by a tick), so its notes are the manifest's, and each
    is still stat'ed (an edit in place changes only the file's own mtime). A folder holding a
    link is always listed (a link's target may change without it); so is every folder on a
    file system that does not keep folder mtimes (`_folder_mtimes_kept`).
    """
    root = str(vault.root)
    real_root = str(vault.real_root)
    skipped: dict[str, tuple[str, str]] = {}
    folders: dict[str, list[int]] = {}
    trusted = known.folders if known is not None and _folder_mtimes_kept(vault) else {}
    # the manifest's notes by folder, with their (size, mtime); `files` starts as the manifest
    # says, and each folder replaces its own entries: listed, or stat'ed where they were
    names: dict[str, list[tuple[str, tuple[int, int]]]] = {}
    below: dict[str, list[str]] = {}
    if trusted and all(trusted.values()) and _stamps_hold(root, trusted):
        # every folder's names are as the last walk left them: the notes are the manifest's,
        # and one stat pass from the root says which of them changed in place
        assert known is not None
        return _stat_known(root, known.files), skipped, dict(trusted)
    # before any folder is stat'ed, by the files' own clock (a process clock ahead of it would
    # call a folder changed a moment ago settled, and trust a stamp that proves nothing)
    started = files_now_ns(vault)
    if trusted:
        assert known is not None
        files = dict(known.files)
        for rel, seen in known.files.items():
            cut = rel.rfind("/") + 1
            names.setdefault(rel[:cut], []).append((rel[cut:], seen))
        for key in trusted:
            if key:
                below.setdefault(key[: key.rfind("/", 0, len(key) - 1) + 1], []).append(key)
    else:
        files = {}
    stack = [("", root)]
    while stack:
        prefix, folder = stack.pop()
        stamp = trusted.get(prefix)
        if stamp and _same_names(folder, prefix, stamp, names.get(prefix, ()), files):
            folders[prefix] = stamp
            stack.extend((key, os.path.join(root, key)) for key in below.get(prefix, ()))
            continue
        for name, _seen in names.pop(prefix, ()):  # listed below instead
            del files[prefix + name]
        try:
            st = os.stat(folder)  # before listing: a change after it moves the stamp
            entries = os.scandir(folder)
        except OSError:  # vanished mid-walk, or unreadable
            continue
        linked = False
        with entries:
            for entry in entries:
                name = entry.name
                if name[0] == ".":
                    continue
                rel = prefix + name
                try:
                    if entry.is_symlink():
                        linked = True
                        target = os.path.realpath(entry.path)
                        outside = target != real_root and not target.startswith(real_root + os.sep)
                        if outside and (name.lower().endswith(".md") or Path(target).is_dir()):
                            skipped[rel] = (
                                "symlink-outside",
                                f"symlink to {target}, outside the vault: not followed",
                            )
                        continue  # in the vault: its target is indexed under its own path
                    elif entry.is_dir(follow_symlinks=False):
                        stack.append((rel + "/", entry.path))
                    elif name.lower().endswith(".md"):
                        fst = entry.stat(follow_symlinks=False)
                        files[rel] = (fst.st_size, fst.st_mtime_ns)
                except OSError:  # vanished between listing and stat
                    continue
        # on Windows ctime is the creation time: only the mtime moves with the names
        oldest = st.st_mtime_ns if os.name == "nt" else min(st.st_mtime_ns, st.st_ctime_ns)
        settled = started - oldest >= FOLDER_SETTLED_NS
        folders[prefix] = (
            [st.st_mtime_ns, st.st_ctime_ns, st.st_ino] if settled and not linked else []
        )
    for prefix, gone in names.items():  # folders no longer reached (removed, unreadable)
        if prefix not in folders:
            for name, _seen in gone:
                del files[prefix + name]
    return files, skipped, folders


def _stamps_hold(root: str, stamps: dict[str, list[int]]) -> bool:
    """Does every folder still carry its stamp (one open and fstat each, as `_same_names`)?"""
    for prefix, stamp in stamps.items():
        folder = os.path.join(root, prefix) if prefix else root
        try:
            fd = os.open(folder, _DIR_FLAGS) if _BY_FD else -1
        except OSError:
            return False
        try:
            st = os.fstat(fd) if fd >= 0 else os.stat(folder)
        except OSError:
            return False
        finally:
            if fd >= 0:
                os.close(fd)
        if [st.st_mtime_ns, st.st_ctime_ns, st.st_ino] != stamp:
            return False
    return True


def _stat_known(root: str, known: dict[str, tuple[int, int]]) -> dict[str, tuple[int, int]]:
    """The manifest's notes, each stat'ed again (by its path under the root: every folder on
    the way was just found holding its names, so no step is a link): what changed in place."""
    files = dict(known)
    try:
        fd = os.open(root, _DIR_FLAGS) if _BY_FD else -1
    except OSError:
        fd = -1
    try:
        for rel, (size, mtime) in known.items():
            try:
                if fd >= 0:
                    st = os.stat(rel, dir_fd=fd, follow_symlinks=False)
                else:
                    st = os.lstat(os.path.join(root, rel))
            except OSError:  # vanished since: as a listing would say
                del files[rel]
                continue
            if st.st_mtime_ns != mtime or st.st_size != size:
                files[rel] = (st.st_size, st.st_mtime_ns)
    finally:
        if fd >= 0:
            os.close(fd)
    return files


def _same_names(
    folder: str,
    prefix: str,
    stamp: list[int],
    names: Any,
    files: dict[str, tuple[int, int]],
) -> bool:
    """Does `folder` still carry `stamp`? Then stat its notes (`names`: name, (size, mtime) as
    the manifest has them) and put in `files` what differs."""
    fd = -1
    try:
        fd = os.open(folder, _DIR_FLAGS) if _BY_FD else -1
        st = os.fstat(fd) if fd >= 0 else os.stat(folder)
    except OSError:
        return False
    try:
        if [st.st_mtime_ns, st.st_ctime_ns, st.st_ino] != stamp:
            return False
        stat_at = os.stat
        for name, (size, mtime) in names:
            try:
                if fd >= 0:
                    fst = stat_at(name, dir_fd=fd, follow_symlinks=False)
                else:
                    fst = os.lstat(os.path.join(folder, name))
            except OSError:  # vanished since: as a listing would say
                del files[prefix + name]
                continue
            if fst.st_mtime_ns != mtime or fst.st_size != size:
                files[prefix + name] = (fst.st_size, fst.st_mtime_ns)
        return True
    finally:
        if fd >= 0:
            os.close(fd)


def _folder_mtimes_kept(vault: Vault) -> bool:
    """Does this file system move a folder's mtime when its names change? The manifest was
    renamed into the index folder after it was written, so that folder is no older than it
    (a FUSE or network mount that keeps no folder mtimes fails this: every folder is listed)."""
    folder = index_dir(vault)
    try:
        return os.stat(folder).st_mtime_ns >= os.stat(folder / MANIFEST).st_mtime_ns
    except OSError:
        return False


# an event on a folder (or one the watcher could not place): only a walk can say what moved
FULL_WALK = "/"


def walk_changed(
    vault: Vault, manifest: Manifest, changed: frozenset[str]
) -> tuple[dict[str, tuple[int, int]], dict[str, tuple[str, str]]] | None:
    """`walk`'s answer when an in-process watcher says only `changed` (vault-relative paths)
    may differ from the manifest: one stat per changed path, the rest as the manifest has it.
    None when only the whole walk can tell (a folder event, a link, something unreadable)."""
    if FULL_WALK in changed:
        return None
    files = dict(manifest.files)
    for rel in changed:
        if not rel.lower().endswith(".md") or any(p[:1] == "." for p in rel.split("/")):
            continue  # walk() never lists these either
        try:
            st = (vault.root / rel).lstat()
        except FileNotFoundError:
            files.pop(rel, None)
            continue
        except OSError:
            return None
        if not stat.S_ISREG(st.st_mode):  # a link or a folder: walk() decides what it is
            return None
        files[rel] = (st.st_size, st.st_mtime_ns)
    return files, dict(manifest.skipped)
