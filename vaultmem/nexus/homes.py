"""Where each entry of the signed log is now (`entry_homes`: the live log or the archive that
holds it), and the links a digest carries to the entries it cites (`where_part`), which
`digests.write` puts after a digest's signed part and `digest_links.relink` rewrites when
entries move."""

from __future__ import annotations

import re

from vaultmem.core.vault import Vault

_LOG_ID = re.compile(rb'^<!-- vaultmem \{.*?"id":"([^"]+)"', re.MULTILINE)

WHERE_HEADING = "## Where the entries are"


def entry_homes(vault: Vault) -> dict[str, str]:
    """Where each entry of the live log and its archives is: id -> the file's vault-relative
    path without `.md` (a wikilink target), the newest file when an id is in two (a rotation
    cut short)."""
    out: dict[str, str] = {}
    for path in vault.chain_files("live"):
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
