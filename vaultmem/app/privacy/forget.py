"""`vaultmem forget`: the right-to-be-forgotten path removes every copy vaultmem made of a fact.

The fact note and its MEMORY.md line (`memory/facts.py`, through the gate), the bank note it was
proposed in (body and file name), the profiles (rebuilt without it), the search index (rebuilt
into a new generation, so the old segment files holding its text are deleted from disk), the
embedding store (dropped; rebuilt on the next semantic recall), receipts naming it, queued
session transcripts quoting it. What vaultmem cannot remove is said, with how: git history,
and signed log entries or digests quoting the text (append-only by design).
"""

from __future__ import annotations

import contextlib
import shutil
from typing import Any

from vaultmem.core import notes
from vaultmem.core.errors import VaultmemError
from vaultmem.core.fsio import atomic_write, read_text
from vaultmem.core.records import record
from vaultmem.core.vault import Vault
from vaultmem.memory import facts, gate


@record
class Forgotten:
    fact: facts.Fact
    index_line_removed: bool
    removed: tuple[str, ...]  # every copy removed, one line each
    kept: tuple[str, ...]  # what vaultmem cannot remove, and how to

    def to_dict(self) -> dict[str, Any]:
        return {
            "forgotten": self.fact.to_dict(),
            "index_line_removed": self.index_line_removed,
            "removed": list(self.removed),
            "kept": list(self.kept),
        }


def _markers(note: notes.Note) -> list[str]:
    """What identifies the fact's text in another file: its body and its name (long enough
    not to match ordinary words)."""
    found = [note.body.strip(), str(note.meta.get("name") or "")]
    return [m for m in found if len(m) >= 8]


def _mentions(text: str, fact_id: str, markers: list[str]) -> bool:
    return fact_id in text or any(m in text for m in markers)


def _bank_note(vault: Vault, meta: dict[str, Any]) -> str | None:
    from vaultmem.bank import review_page, store

    bank_id = str(meta.get("source_bank_id") or "")
    if not bank_id:
        return None
    try:
        path, _note = store.find_bank(vault, bank_id)
    except VaultmemError:
        return None
    with store.bank_lock(vault):
        path.unlink(missing_ok=True)
        review_page.refresh_review_page(vault)
    return f"bank note {vault.rel(path)} (its text and its file name)"


def _profiles(vault: Vault, owner: str | None, fact_id: str, markers: list[str]) -> list[str]:
    from vaultmem.app.condense import profile

    out = []
    for scope in dict.fromkeys([None, owner]):
        path = profile.profile_path(vault, scope)
        if not path.exists() or not _mentions(read_text(path), fact_id, markers):
            continue
        result = profile.build(vault, scope, rebuild=True, offline=True)
        if result.status == "empty":
            path.unlink(missing_ok=True)
        out.append(f"profile {vault.rel(path)} (rebuilt without it, offline)")
    return out


def _state_files(vault: Vault, folder: str, fact_id: str, markers: list[str]) -> list[str]:
    """Lines of JSONL files under `.vaultmem/<folder>` that name the fact or quote it, and
    whole queued sessions that quote it."""
    root = vault.state(folder)
    out: list[str] = []
    if not root.is_dir():
        return out
    for path in sorted(root.rglob("*")):
        if not path.is_file() or path.is_symlink():
            continue
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        if not _mentions(text, fact_id, markers):
            continue
        if path.suffix == ".jsonl":
            kept = [ln for ln in text.splitlines(True) if not _mentions(ln, fact_id, markers)]
            atomic_write(path, "".join(kept))
            out.append(f"{text.count(chr(10)) - len(kept)} line(s) of {vault.rel(path)}")
        else:
            path.unlink()
            out.append(f"{folder} file {vault.rel(path)}")
    return out


def _index(vault: Vault) -> list[str]:
    from vaultmem.search import refresh, vectors

    refresh.refresh(vault, wait=None, rebuild=True)  # a new generation; the old one deleted
    out = ["search index (rebuilt: the segment files that held its text are deleted)"]
    store = vault.state("vectors")
    if store.is_dir():
        vectors.forget(vault)
        shutil.rmtree(store, ignore_errors=True)
        out.append("embedding store (dropped; rebuilt on the next semantic recall)")
    return out


def _kept(vault: Vault, rel: str, fact_id: str, markers: list[str]) -> list[str]:
    out = []
    quoting = sorted(
        vault.rel(p)
        for p in vault.nexus.rglob("*.md")
        if p.is_file()
        and not p.is_symlink()
        and _mentions(p.read_text(encoding="utf-8", errors="replace"), fact_id, markers)
    )
    if quoting:
        out.append(
            f"signed log entries or digests quoting it ({', '.join(quoting)}): append-only and "
            "signed, vaultmem never rewrites them; a person can edit them out (verify will then "
            "report the edited entries)"
        )
    if (vault.root / ".git").exists():
        out.append(
            f"git history: earlier commits still hold {rel}; purge it with "
            f"git filter-repo --invert-paths --path {rel} (then force-push, and re-clone "
            "every other copy)"
        )
    return out


def forget(vault: Vault, ref: str, *, agent: str | None = None) -> Forgotten:
    """Delete a fact and every copy vaultmem made of it; say what remains and how to purge it."""
    path, note = facts.find_fact(vault, ref)
    gate.check_may_change(vault, agent, path, note.meta, "forget")
    fact_id = str(note.meta.get("id") or path.stem)
    markers = _markers(note)
    owner = gate.owner_of(vault, path)
    rel = vault.rel(path)
    result = facts.forget(vault, ref, agent=agent)
    removed = [f"memory note {rel}"]
    if result.index_line_removed:
        removed.append(f"its line in {vault.rel(vault.index_for(owner))}")
    bank = _bank_note(vault, note.meta)
    if bank:
        removed.append(bank)
    removed += _profiles(vault, owner, fact_id, markers)
    removed += _state_files(vault, "receipts", fact_id, markers)
    removed += _state_files(vault, "queue", fact_id, markers)
    with contextlib.suppress(VaultmemError):
        removed += _index(vault)
    return Forgotten(
        result.fact,
        result.index_line_removed,
        tuple(removed),
        tuple(_kept(vault, rel, fact_id, markers)),
    )
