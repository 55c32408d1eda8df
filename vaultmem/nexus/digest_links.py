"""Digest links: where the entries a digest cites are now, written after its signed part.

A digest is signed once, but `log rotate` and `compact` move its entries to the archives
later: a link in the signed text would then point at a note that no longer holds the entry
(or, written ahead, at an archive that does not exist yet, which a click in Obsidian creates
empty). So the links to the entries follow the metadata line, outside the signed text, and
vaultmem rewrites them whenever entries move (`relink`). They only say where an entry is,
which the log itself shows; nothing in them is read back.
"""

from __future__ import annotations

from vaultmem.core.errors import VaultmemError
from vaultmem.core.fsio import atomic_write
from vaultmem.core.locking import exclusive, lock_path
from vaultmem.core.vault import Vault
from vaultmem.nexus.digests import META_RE, digest_files, parse
from vaultmem.nexus.homes import entry_homes, where_part


def relink(vault: Vault, dry_run: bool = False) -> list[str]:
    """Rewrite the links after each digest's metadata line to where its entries are now; the
    signed part stays byte for byte. Returns the digests changed (or, dry run, to change)."""
    files = digest_files(vault)
    if not files:
        return []
    homes = entry_homes(vault)
    changed: list[str] = []
    with exclusive(lock_path(vault, "digests"), vault.config.log.lock_timeout, what="digests"):
        for path in files:
            try:
                text = vault.read_text(path, what="digest")
            except VaultmemError:
                continue  # verify reports it
            found = list(META_RE.finditer(text))
            note = parse(text, vault.rel(path))
            if not found or note.meta is None:
                continue  # no signed part to link from: verify reports it
            end = found[-1].end()
            head = text[:end] + "\n"
            where = where_part(note.cited, homes)
            new = head + (f"\n{where}" if where else "")
            if new != text:
                changed.append(vault.rel(path))
                if not dry_run:
                    atomic_write(path, new)
    return changed
