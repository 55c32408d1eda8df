"""Multi-file writes that land together or not at all: an intent, written before, removed after.

A write that changes several files (a fact note and its MEMORY.md line; an approval's memory
and its bank note's mark; a state section and its `state` log entry) records what it is about
to do in `.vaultmem/intents/<kind>-<token>.json` (fsynced) and removes the record once every
file landed. A process killed in between leaves the record: the next command of that kind (and
`vaultmem repair`) completes or undoes the step from it, and `verify` reports it until then.
Each layer recovers its own kinds (`memory.facts`, `bank.review`, `nexus.state`).

An agent can edit this folder like any file of the vault: recovery only ever finishes a step
whose files say it was begun (ids and stamps recorded here must match the notes), never more.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vaultmem.core import seal
from vaultmem.core.fsio import atomic_write, fsync_dir

if TYPE_CHECKING:
    from vaultmem.core.vault import Vault

FOLDER = "intents"


def _folder(vault: Vault) -> Path:
    return vault.state(FOLDER)


class Intent:
    """One recorded step: `update` adds what the step learned on the way (the note it made)."""

    def __init__(self, path: Path, data: dict[str, Any]) -> None:
        self.path, self.data = path, data

    def update(self, **more: Any) -> None:
        self.data.update(more)
        # sealed: recovery acts on a record only when this machine wrote it (a record git
        # wrote could name a note for `repair` to remove)
        sealed = seal.dumps(self.path, self.data)
        atomic_write(self.path, sealed if sealed is not None else b"{}\n")


@contextlib.contextmanager
def intent(vault: Vault, kind: str, data: dict[str, Any]) -> Iterator[Intent]:
    """Record `data` before the block, remove it after. An exception the block raised went
    through the block's own clean-up, so the record goes too; only a kill leaves it."""
    step = Intent(_folder(vault) / f"{kind}-{os.urandom(6).hex()}.json", {"kind": kind, **data})
    step.update()
    try:
        yield step
    finally:
        done(step.path)


def done(path: Path) -> None:
    with contextlib.suppress(OSError):
        path.unlink(missing_ok=True)
        fsync_dir(path.parent)


def pending(vault: Vault, kind: str | None = None) -> list[tuple[Path, dict[str, Any]]]:
    """The half-done steps left by killed processes, oldest first (unreadable ones skipped)."""
    folder = _folder(vault)
    if not folder.is_dir():
        return []
    out = []
    for path in sorted(folder.glob("*.json"), key=lambda p: p.stat().st_mtime_ns):
        if path.is_symlink() or (kind and not path.name.startswith(f"{kind}-")):
            continue
        data = seal.read(path)
        if isinstance(data, dict) and data.get("kind") == path.name.split("-", 1)[0]:
            out.append((path, data))
    return out
