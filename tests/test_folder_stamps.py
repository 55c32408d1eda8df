"""The freshness walk's folder stamps: a settled folder whose mtime, ctime and inode are what
the manifest recorded is not listed again (its notes are still stat'ed one by one).

Tested from the side that matters: whatever happens to the files (an edit in place, a note added,
removed or renamed, a folder added or removed, a link put in a note's place, a folder's mtime
set back as `rsync -a` or `touch -r` do), the next recall sees it, and the walk's answer is the
one a full listing gives.
"""

from __future__ import annotations

import os
import random
import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from vaultmem.core.locking import exclusive
from vaultmem.core.vault import STATE_DIR, Vault
from vaultmem.search import manifest, refresh, walk
from vaultmem.search.query import recall

AGED = 100  # seconds: how far into the past `_settle` moves every folder and note


def _v(path: Path) -> Vault:
    return Vault.open(path)


def _paths(vault: Path, query: str) -> list[str]:
    return [h.path for h in recall(_v(vault), query).hits]


def _folders(vault: Path) -> Iterator[Path]:
    yield vault
    for folder, subs, _files in os.walk(vault):
        subs[:] = [s for s in subs if not s.startswith(".")]
        for s in subs:
            yield Path(folder) / s


def _settle(vault: Path) -> manifest.Manifest:
    """Every folder and note last changed AGED seconds ago, then a refresh that records the
    folders' stamps (all of them settled now): the walk's shortcut is armed."""
    refresh.refresh(_v(vault))  # the first one makes .vaultmem/ in the root folder
    then = time.time_ns() - AGED * 1_000_000_000
    for folder in _folders(vault):
        for note in folder.glob("*.md"):
            if not note.is_symlink():
                os.utime(note, ns=(then, then))
        os.utime(folder, ns=(then, then))
    refresh.refresh(_v(vault))
    found = manifest.load_manifest(_v(vault))
    assert found is not None and found.folders
    for folder in _folders(vault):  # each one armed, but those holding a link
        rel = "" if folder == vault else folder.relative_to(vault).as_posix() + "/"
        linked = any(p.is_symlink() for p in folder.iterdir())
        assert bool(found.folders[rel]) != linked, (rel, found.folders[rel])
    return found


@pytest.fixture
def listed(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The vault folders listed (os.scandir calls; the index's own folder aside)."""
    calls: list[str] = []
    real = os.scandir

    def scandir(path: str) -> object:
        if STATE_DIR not in Path(path).parts:
            calls.append(str(path))
        return real(path)

    monkeypatch.setattr(os, "scandir", scandir)
    return calls


def _same_as_a_full_listing(vault: Path) -> None:
    v = _v(vault)
    known = manifest.load_manifest(v)
    assert known is not None
    assert walk.walk_folders(v, known)[:2] == walk.walk_folders(v)[:2]


def test_an_unchanged_vault_is_checked_without_listing_a_folder(
    vault: Path, listed: list[str]
) -> None:
    known = _settle(vault)
    listed.clear()
    files, _skipped, folders = walk.walk_folders(_v(vault), known)
    assert listed == []
    assert files == known.files and folders == known.folders
    fresh = refresh.refresh(_v(vault))
    assert (fresh.refreshed, fresh.removed, fresh.stale) == (0, 0, False)


def test_an_edit_in_place_is_found_though_no_folder_changed(vault: Path, listed: list[str]) -> None:
    _settle(vault)
    note = vault / "wiki" / "Glossary.md"
    folder_before = (vault / "wiki").stat()
    with open(note, "a", encoding="utf-8") as fh:  # in place: the folder's stamp stays
        fh.write("\nA line about the zygomorphic quokka.\n")
    assert (vault / "wiki").stat().st_mtime_ns == folder_before.st_mtime_ns
    listed.clear()
    assert _paths(vault, "zygomorphic quokka") == ["wiki/Glossary.md"]
    assert listed == []  # found by its own stat, no folder listed


def test_notes_added_removed_and_renamed_in_a_settled_folder(vault: Path) -> None:
    _settle(vault)
    (vault / "wiki" / "new.md").write_text("# New\nA capybara note.\n", encoding="utf-8")
    assert _paths(vault, "capybara") == ["wiki/new.md"]
    _settle(vault)
    (vault / "wiki" / "new.md").rename(vault / "wiki" / "renamed.md")
    assert _paths(vault, "capybara") == ["wiki/renamed.md"]
    _settle(vault)
    (vault / "wiki" / "renamed.md").unlink()
    assert _paths(vault, "capybara") == []
    _same_as_a_full_listing(vault)


def test_a_note_added_behind_a_folder_mtime_set_back_is_found(vault: Path) -> None:
    """`rsync -a` and `touch -r` put a folder's old mtime back after adding to it: the ctime
    (which nothing can set back) still moves, and the folder is listed again."""
    known = _settle(vault)
    folder = vault / "memory"
    st = folder.stat()
    (folder / "synced.md").write_text("# Synced\nAn okapi arrived by rsync.\n", encoding="utf-8")
    os.utime(folder, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert folder.stat().st_mtime_ns == known.folders["memory/"][0]
    assert _paths(vault, "okapi") == ["memory/synced.md"]


def test_folders_added_and_removed_below_a_settled_one(vault: Path) -> None:
    _settle(vault)
    deep = vault / "wiki" / "deep" / "deeper"
    deep.mkdir(parents=True)
    (deep / "n.md").write_text("# Deep\nA narwhal below two new folders.\n", encoding="utf-8")
    assert _paths(vault, "narwhal") == ["wiki/deep/deeper/n.md"]
    _settle(vault)
    shutil.rmtree(vault / "wiki" / "deep")
    assert _paths(vault, "narwhal") == []
    _settle(vault)
    (vault / "wiki").rename(vault / "encyclopedia")  # every note below moves
    assert _paths(vault, "glossary") and all(
        p.startswith("encyclopedia/") for p in _paths(vault, "glossary")
    )
    _same_as_a_full_listing(vault)


def test_a_note_replaced_by_a_link_out_of_the_vault(vault: Path, tmp_path: Path) -> None:
    _settle(vault)
    outside = tmp_path / "outside.md"
    outside.write_text("# Outside\nA secret wombat.\n", encoding="utf-8")
    note = vault / "wiki" / "Glossary.md"
    note.unlink()
    note.symlink_to(outside)
    assert _paths(vault, "wombat") == []
    v = _v(vault)
    known = manifest.load_manifest(v)
    assert known is not None and "wiki/Glossary.md" not in known.files
    assert known.skipped["wiki/Glossary.md"][0] == "symlink-outside"
    assert known.folders["wiki/"] == []  # a folder holding a link is always listed
    _same_as_a_full_listing(vault)


def test_a_folder_changed_within_a_tick_of_the_walk_is_not_trusted(vault: Path) -> None:
    _settle(vault)
    (vault / "nexus" / "fresh.md").write_text("# Fresh\nJust written.\n", encoding="utf-8")
    refresh.refresh(_v(vault))
    known = manifest.load_manifest(_v(vault))
    assert known is not None
    assert known.folders["nexus/"] == []  # changed under 2 s ago: its stamp proves nothing yet
    assert known.folders["wiki/"]


@pytest.mark.parametrize("ahead_days", [400, -400])
def test_a_clock_apart_from_the_files_clock_trusts_no_fresh_folder(
    vault: Path, monkeypatch: pytest.MonkeyPatch, ahead_days: int
) -> None:
    """The process clock 400 days ahead of the file system's (a faked clock, a network mount
    whose server keeps another time) or behind it: a folder changed a moment ago is still not
    settled, and a note written within a tick is still read again, because every age is taken
    by the files' own clock, never by `time.time()`."""
    _settle(vault)
    shift = ahead_days * 86_400 * 1_000_000_000
    real_ns = time.time_ns
    monkeypatch.setattr(time, "time_ns", lambda: real_ns() + shift)
    monkeypatch.setattr(time, "time", lambda: (real_ns() + shift) / 1e9)
    (vault / "nexus" / "fresh.md").write_text("# Fresh\nJust written.\n", encoding="utf-8")
    refresh.refresh(_v(vault))
    known = manifest.load_manifest(_v(vault))
    assert known is not None
    assert known.folders["nexus/"] == []
    assert "nexus/fresh.md" in known.hashes  # written within a tick: its content is checked
    note = vault / "nexus" / "fresh.md"
    size = note.stat().st_size
    stamp = note.stat().st_mtime_ns
    note.write_text("# Fresh\nJust quokkas.\n", encoding="utf-8")  # same size, same tick
    os.utime(note, ns=(stamp, stamp))
    assert note.stat().st_size == size
    assert _paths(vault, "quokkas") == ["nexus/fresh.md"]


def test_no_shortcut_where_folder_mtimes_are_not_kept(vault: Path, listed: list[str]) -> None:
    """A stamp recorded on a file system that keeps no folder mtimes would say "unchanged"
    forever: here the stamp is made to lie, and the walk believes it only while the index folder
    shows that folder mtimes move (it is no older than the manifest renamed into it)."""
    _settle(vault)
    v = _v(vault)
    (vault / "wiki" / "unseen.md").write_text("# Unseen\nA pangolin.\n", encoding="utf-8")
    known = manifest.load_manifest(v)
    assert known is not None
    st = (vault / "wiki").stat()
    known.folders["wiki/"] = [st.st_mtime_ns, st.st_ctime_ns, st.st_ino]  # the lie
    manifest.save_manifest(v, known)
    assert "wiki/unseen.md" not in walk.walk_folders(v, known)[0]  # believed: can fail
    index = manifest.index_dir(v)
    then = (index / manifest.MANIFEST).stat().st_mtime_ns - 10_000_000_000
    os.utime(index, ns=(then, then))  # as such a file system leaves it
    listed.clear()
    assert "wiki/unseen.md" in walk.walk_folders(v, known)[0]
    assert len(listed) == len(known.folders)  # every folder listed


def test_new_stamps_are_recorded_only_when_the_lock_is_free(vault: Path) -> None:
    """Nothing to reindex but a stamp moved (a picture added): the new stamps are saved when
    the refresh lock is free at once, and a held lock is no reason to call the index stale."""
    known = _settle(vault)
    (vault / "wiki" / "picture.png").write_bytes(b"\x89PNG")
    v = _v(vault)
    with exclusive(manifest.refresh_lock(v), 1.0, what="index"):
        fresh = refresh.refresh(v)
    assert (fresh.stale, fresh.warnings, fresh.refreshed) == (False, (), 0)
    assert manifest.load_manifest(v).folders == known.folders  # type: ignore[union-attr]
    time.sleep(0.01)
    refresh.refresh(v)
    after = manifest.load_manifest(v)
    assert after is not None and after.folders["wiki/"] != known.folders["wiki/"]


def test_the_walk_with_stamps_equals_a_full_listing(vault: Path, tmp_path: Path) -> None:
    """Random changes, each after the stamps were armed: the shortcut walk and the recall see
    exactly what a full listing sees."""
    rng = random.Random(23)
    outside = tmp_path / "elsewhere.md"
    outside.write_text("# Elsewhere\n", encoding="utf-8")
    made = 0
    for step in range(24):
        _settle(vault)
        folders = [f for f in _folders(vault) if not f.is_symlink()]
        notes = [n for f in folders for n in f.glob("*.md") if not n.is_symlink()]
        op = rng.choice(["add", "edit", "remove", "rename", "mkdir", "rmdir", "link", "touch"])
        where = rng.choice(folders)
        if op == "add" or not notes:
            made += 1
            (where / f"added-{made}.md").write_text(f"# Added\nword{made}\n", encoding="utf-8")
        elif op == "edit":
            with open(rng.choice(notes), "a", encoding="utf-8") as fh:
                fh.write(f"\nedited{step}\n")
        elif op == "remove":
            rng.choice(notes).unlink()
        elif op == "rename":
            note = rng.choice(notes)
            note.rename(where / f"moved-{step}-{note.name}")
        elif op == "mkdir":
            made += 1
            (where / f"sub-{made}").mkdir()
            (where / f"sub-{made}" / "inner.md").write_text(f"# In\nword{made}\n", "utf-8")
        elif op == "rmdir" and where != vault and where.name != "nexus":
            shutil.rmtree(where)
        elif op == "link":
            (where / f"link-{step}.md").symlink_to(outside)
        else:
            (where / f"attachment-{step}.png").write_bytes(b"png")
        _same_as_a_full_listing(vault)
        fresh = refresh.refresh(_v(vault))
        assert not fresh.stale and not fresh.rebuilt, (step, op, fresh)
        known = manifest.load_manifest(_v(vault))
        assert known is not None
        assert known.files == walk.walk(_v(vault))[0], (step, op)
