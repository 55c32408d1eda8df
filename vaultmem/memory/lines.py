"""`MEMORY.md`: the always-loaded index, one line per fact, edited one line at a time.

`MEMORY.md` belongs to people as much as to vaultmem: lines are added, removed or moved one at a
time, never regenerated, so headings, comments and the order a person chose stay.
"""

from __future__ import annotations

import re
from pathlib import Path

from vaultmem.core.errors import IntegrityError
from vaultmem.core.vault import Vault

RETRACTED_HEADING = "## Retracted"
_WIKILINK = re.compile(r"\[\[([^\[\]|#^]+)(?:#[^\[\]|]*)?(?:\|[^\[\]]*)?\]\]")


def index_line(vault: Vault, path: Path, name: str, description: str) -> str:
    target = vault.rel(path).removesuffix(".md")
    return f"- [[{target}|{name}]] — {description}" if description else f"- [[{target}|{name}]]"


def links_to(line: str, target: str) -> bool:
    slug = target.rsplit("/", 1)[-1]
    for match in _WIKILINK.finditer(line):
        link = match.group(1).strip().removesuffix(".md")
        if link in (target, slug):
            return True
    return False


def read_index(vault: Vault, agent: str | None) -> tuple[Path, str]:
    path = vault.index_for(agent)
    if not path.exists():
        title = "Memory" if agent is None else f"Memory of {agent}"
        return path, f"# {title}\n\n"
    text = vault.read_text(path, what="memory index")
    if "\x00" in text:
        raise IntegrityError(
            f"{path}: memory index contains NUL bytes", "repair or restore the file"
        )
    return path, text


def with_line_added(text: str, line: str) -> str:
    """Add a line at the end of the active list: before '## Retracted' if there is one."""
    lines = text.splitlines()
    cut = next((i for i, ln in enumerate(lines) if ln.strip() == RETRACTED_HEADING), len(lines))
    head = lines[:cut]
    while head and not head[-1].strip():
        head.pop()
    rest = lines[cut:]
    if head and not head[-1].lstrip().startswith(("- ", "* ", "+ ")):
        head.append("")  # a list after a paragraph needs a blank line to render as a list
    out = [*head, line]
    if rest:
        out += ["", *rest]
    return "\n".join(out) + "\n"


def with_line_removed(text: str, target: str) -> tuple[str, str | None]:
    lines = text.splitlines()
    for i, ln in enumerate(lines):
        if links_to(ln, target):
            removed = lines.pop(i)
            return "\n".join(lines) + ("\n" if lines else ""), removed
    return text, None


def with_line_retracted(text: str, target: str, note: str, fallback: str) -> str:
    text, removed = with_line_removed(text, target)
    line = (removed or fallback).rstrip() + f" ({note})"
    lines = text.rstrip("\n").splitlines()
    if not any(ln.strip() == RETRACTED_HEADING for ln in lines):
        lines += ["", RETRACTED_HEADING, ""]
    lines.append(line)
    return "\n".join(lines) + "\n"


def index_targets(vault: Vault, agent: str | None) -> list[tuple[int, str, str]]:
    """(line number, link target, line) for every wikilink in a MEMORY.md."""
    path = vault.index_for(agent)
    if not path.exists():
        return []
    out = []
    for n, line in enumerate(vault.read_text(path, what="memory index").splitlines(), 1):
        for match in _WIKILINK.finditer(line):
            out.append((n, match.group(1).strip().removesuffix(".md"), line))
    return out
