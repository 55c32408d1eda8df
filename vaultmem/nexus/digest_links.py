"""Digest links: where the entries a digest cites are now, written after its signed part.

A digest is signed once, but `log rotate` and `compact` move its entries to the archives
later: a link in the signed text would then point at a note that no longer holds the entry
(or, written ahead, at an archive that does not exist yet, which a click in Obsidian creates
empty). So the links to the entries follow the metadata line, outside the signed text, and
vaultmem rewrites them whenever entries move (`relink`). They only say where an entry is,
which the log itself shows; nothing in them is read back.
"""

from __future__ import annotations

import re

from vaultmem.core.errors import VaultmemError
from vaultmem.core.fsio import atomic_write
from vaultmem.core.locking import exclusive, lock_path
from vaultmem.core.vault import Vault
from vaultmem.nexus.digests import META_RE, digest_files, parse

_LOG_ID = re.compile(rb'^<!-- vaultmem \{.*?"id":"([^"]+)"', re.MULTILINE)

WHERE_HEADING = "## Where the entries are"


def entry_homes(vault: Vault) -> dict[str, str]:
    """Where each entry of the live log and its archives is: id -> the file's vault-relative
    path without `.md` (a wikilink target), the newest file when an id is in two (a rotation
    cut short)."""
    from vaultmem.nexus.log import chain_files

    out: dict[str, str] = {}
    for path in chain_files(vault, "live"):
        try:
            data = path.read_bytes()
        except OSError:
            continue
        target = vault.rel(path).removesuffix(".md")
        for m in _LOG_ID.findall(data):
            out[m.decode("utf-8", "replace")] = target
    return out


def where_part(cited: list[str], homes: dict[str, str]) -> str:
    """The links to the cited entries, one line per file that holds some, in the order of the
    files' names (archives by month, then the live log); ids not logged any more are said."""
    from vaultmem.nexus.entry import block_id

    by_file: dict[str, list[str]] = {}
    for entry_id in cited:
        by_file.setdefault(homes.get(entry_id, ""), []).append(entry_id)
    if not by_file:
        return ""
    lines = [
        WHERE_HEADING,
        "",
        "Links to the entries cited above, where they are now: vaultmem rewrites this list when "
        "entries move (`vaultmem log rotate`, `vaultmem compact`); it is not part of the signed "
        "digest.",
        "",
    ]
    for target in sorted(t for t in by_file if t):
        name = target.rsplit("/", 1)[-1]
        links = ", ".join(f"[[{target}#^{block_id(i)}|{i}]]" for i in by_file[target])
        lines.append(f"- in [[{target}|{name}]]: {links}")
    if "" in by_file:
        lines.append(f"- in no log file any more: {', '.join(f'`{i}`' for i in by_file[''])}")
    return "\n".join(lines) + "\n"


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
