"""The index manifest's delta: a refresh that changes a few files writes only what changed, a
fresh process reads the base and the delta as one manifest, and a delta that is not this
machine's or not for this base is never applied."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from vaultmem.core import seal
from vaultmem.core.vault import Vault
from vaultmem.search import manifest, refresh
from vaultmem.search.query import recall


def _v(path: Path) -> Vault:
    return Vault.open(path)


def _write(vault: Path, rel: str, text: str) -> Path:
    path = vault / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def _fresh(vault: Path) -> manifest.Manifest:
    """The manifest as another process reads it (nothing kept from this one)."""
    manifest._LOADED.clear()
    found = manifest.load_manifest(_v(vault))
    assert found is not None
    return found


def _files(vault: Path) -> tuple[Path, Path]:
    folder = manifest.index_dir(_v(vault))
    return folder / manifest.MANIFEST, folder / manifest.DELTA


def _stat_row(path: Path) -> tuple[int, int]:
    st = path.stat()
    return (st.st_size, st.st_mtime_ns)


def test_one_edit_writes_a_delta_and_a_fresh_reader_sees_it(vault: Path) -> None:
    refresh.refresh(_v(vault))
    base, delta = _files(vault)
    before = base.read_bytes()
    edited = _write(vault, "wiki/Glossary.md", "# Glossary\nA capybara is a unit of patience.\n")
    added = _write(vault, "wiki/new.md", "# New\nThe okapi runbook.\n")
    (vault / "wiki" / "Stripe integration.md").unlink()
    fresh = refresh.refresh(_v(vault))
    assert fresh.refreshed == 2 and fresh.removed == 1
    assert base.read_bytes() == before  # the 1-row-per-file base is not rewritten
    assert delta.exists()
    raw = seal.read(delta)
    assert raw is not None and set(raw["changed"]) == {"wiki/Glossary.md", "wiki/new.md"}
    assert raw["removed"] == ["wiki/Stripe integration.md"]
    found = _fresh(vault)
    assert found.files["wiki/Glossary.md"] == _stat_row(edited)
    assert found.files["wiki/new.md"] == _stat_row(added)
    assert "wiki/Stripe integration.md" not in found.files
    assert found.sums["wiki/new.md"]
    # the manifest as read is what the walk finds: nothing to do, nothing reindexed
    manifest._LOADED.clear()
    again = refresh.refresh(_v(vault))
    assert again.refreshed == 0 and again.removed == 0
    assert [h.path for h in recall(_v(vault), "capybara patience").hits] == ["wiki/Glossary.md"]


def test_a_removed_file_stays_removed_for_a_fresh_reader(vault: Path) -> None:
    _write(vault, "wiki/gone.md", "# Gone\nThe wombat page.\n")
    refresh.refresh(_v(vault))
    refresh.refresh(_v(vault), rebuild=True)  # a base that holds wiki/gone.md
    (vault / "wiki" / "gone.md").unlink()
    assert refresh.refresh(_v(vault)).removed == 1
    raw = seal.read(_files(vault)[1])
    assert raw is not None and raw["removed"] == ["wiki/gone.md"]
    assert "wiki/gone.md" not in _fresh(vault).files
    manifest._LOADED.clear()
    assert refresh.refresh(_v(vault)).removed == 0
    assert recall(_v(vault), "wombat").hits == ()


def test_many_changes_write_the_base_again(vault: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    refresh.refresh(_v(vault))
    base, delta = _files(vault)
    _write(vault, "wiki/one.md", "# One\nfirst change\n")
    refresh.refresh(_v(vault))
    assert delta.exists()
    before = base.read_bytes()
    monkeypatch.setattr(manifest, "DELTA_MIN", 3)
    monkeypatch.setattr(manifest, "DELTA_SHARE", 10**6)
    for i in range(5):
        _write(vault, f"wiki/many-{i}.md", f"# Many {i}\nchange number {i}\n")
    refresh.refresh(_v(vault))
    assert base.read_bytes() != before and not delta.exists()
    found = _fresh(vault)
    assert {f"wiki/many-{i}.md" for i in range(5)} | {"wiki/one.md"} <= found.files.keys()


def test_a_delta_for_another_base_is_never_applied(
    vault: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    refresh.refresh(_v(vault))
    _write(vault, "wiki/one.md", "# One\nthe zebrafish version\n")
    refresh.refresh(_v(vault))
    _base, delta = _files(vault)
    old_delta = delta.read_bytes()  # names the base it was written on
    monkeypatch.setattr(manifest, "DELTA_MIN", 3)
    monkeypatch.setattr(manifest, "DELTA_SHARE", 10**6)
    one = _write(vault, "wiki/one.md", "# One\nthe second, longer, okapi version\n")
    for i in range(4):
        _write(vault, f"wiki/many-{i}.md", f"# Many {i}\nchange number {i}\n")
    refresh.refresh(_v(vault))  # a new base, in the same generation
    assert not delta.exists()
    delta.write_bytes(old_delta)  # left behind by a crash, or put back
    found = _fresh(vault)
    assert found.files["wiki/one.md"] == _stat_row(one)  # the base's row, not the old delta's
    manifest._LOADED.clear()
    assert refresh.refresh(_v(vault)).refreshed == 0
    assert recall(_v(vault), "zebrafish").hits == ()


def test_a_delta_this_machine_did_not_seal_is_ignored(vault: Path) -> None:
    """From the attacker's side: a delta planted under .vaultmem/ (a hand-run `git pull` of a
    hostile remote) that vouches for a stale row, so that a changed note would never be
    reindexed, or that drops a note from the index. It is not sealed with this machine's
    secret: the manifest is the base alone, and the changed note is found."""
    refresh.refresh(_v(vault))
    base, delta = _files(vault)
    note = _write(vault, "wiki/Glossary.md", "# Glossary\nThe quokka protocol.\n")
    raw = json.loads(base.read_bytes())["data"]
    size, mtime = _stat_row(note)
    planted = {
        **{k: raw[k] for k in ("schema", "generation", "language", "refreshed_at", "hashes")},
        **{k: raw[k] for k in ("problems", "logs", "skipped", "listing", "folders")},
        "base": raw["base"],
        "changed": {"wiki/Glossary.md": [size, mtime, "0" * 64]},
        "removed": ["wiki/Stripe integration.md"],
    }
    delta.write_text(json.dumps({"seal": "0" * 64, "data": planted}) + "\n", encoding="utf-8")
    manifest._LOADED.clear()
    assert [h.path for h in recall(_v(vault), "quokka protocol").hits] == ["wiki/Glossary.md"]
    assert "wiki/Stripe integration.md" in {h.path for h in recall(_v(vault), "stripe").hits}
