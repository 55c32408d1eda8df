"""The note-name filter the prompt hook's recall gate reads (search/vocab.py)."""

from __future__ import annotations

import os
from pathlib import Path

from vaultmem.app.hooks import quick
from vaultmem.core.vault import Vault
from vaultmem.search import manifest, refresh, vocab


def _note(vault: Path, rel: str, text: str = "# A note\nSome text.\n") -> None:
    path = vault / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def _names(vault: Path) -> Path:
    return manifest.index_dir(Vault.open(vault)) / vocab.NAMES


def test_the_gate_reads_the_names_filter_not_the_manifest(vault: Path) -> None:
    _note(vault, "wiki/Payroll Schedule.md")
    refresh.refresh(Vault.open(vault))
    # the manifest gone: the gate still knows the names, from names.json alone
    (manifest.index_dir(Vault.open(vault)) / manifest.MANIFEST).unlink()
    assert quick.names_something(str(vault), "ella", "when does payroll run?")
    assert quick.names_something(str(vault), "ella", "the schedules for next week")
    assert not quick.names_something(str(vault), "ella", "ok, go ahead with that")
    assert not quick.names_something(str(vault), "ella", "zanzibar")


def test_an_agents_own_note_names_count_for_that_agent_only(vault: Path) -> None:
    _note(vault, "agents/lyra/memory/zebracorn-plan.md")
    refresh.refresh(Vault.open(vault))
    assert quick.names_something(str(vault), "lyra", "what about the zebracorn")
    assert not quick.names_something(str(vault), "ella", "what about the zebracorn")


def test_written_when_the_files_change_and_only_then(vault: Path) -> None:
    v = Vault.open(vault)
    refresh.refresh(v)
    assert not quick.names_something(str(vault), "ella", "kumquat harvest")
    before = _names(vault).stat()
    # an edit changes no name: the filter is not rewritten
    _note(vault, "wiki/edited.md", "# Edited\nfirst\n")
    refresh.refresh(v)
    made = _names(vault).stat()
    _note(vault, "wiki/edited.md", "# Edited\nsecond, longer\n")
    refresh.refresh(v)
    assert _names(vault).stat().st_mtime_ns == made.st_mtime_ns
    assert made.st_ino != before.st_ino  # a new file was a new name
    _note(vault, "projects/kumquat-harvest.md")
    refresh.refresh(v)
    assert quick.names_something(str(vault), "ella", "kumquat harvest")
    os.remove(vault / "projects/kumquat-harvest.md")
    refresh.refresh(v)
    assert not quick.names_something(str(vault), "ella", "kumquat harvest")


def test_an_index_without_the_filter_falls_back_to_the_manifest(vault: Path) -> None:
    _note(vault, "wiki/Payroll.md")
    refresh.refresh(Vault.open(vault))
    _names(vault).unlink()  # an index written by an earlier version
    assert quick.names_something(str(vault), "ella", "when does payroll run")
    assert not quick.names_something(str(vault), "ella", "zanzibar")


def test_the_filter_stays_small_and_rarely_errs() -> None:
    paths = [f"wiki/{a}{b}-topic.md" for a in "abcdefghij" for b in "klmnopqrst"]
    names = vocab.Names(vocab.build(sorted(paths)))
    assert names.bits == vocab.MIN_BITS
    assert all(names.holds("", w) for w in ("topic",))
    # a thousand words that are not there: Bloom false positives stay rare
    wrong = sum(names.holds("", f"absent{i:04d}") for i in range(1000))
    assert wrong <= 5
    letters = [
        "".join("abcdefghijklmnopqrstuvwxyz"[i // 26**p % 26] for p in range(4)) + "q"
        for i in range(20000)
    ]
    many = vocab.build(sorted(f"wiki/{w}.md" for w in letters))
    assert many["bits"] == 1 << 19  # 16 bits per word, a power of two
    assert all(vocab.Names(many).holds("", w) for w in letters[:500])
