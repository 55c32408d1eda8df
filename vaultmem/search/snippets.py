"""A hit's snippet: the lines it points at, read from the file as it is now (fresh by
construction: the index stores no body), and the line that matches the query best, its terms
marked **like this**.
"""

from __future__ import annotations

import unicodedata
from typing import TYPE_CHECKING

from vaultmem.core.errors import PathOutsideVaultError
from vaultmem.core.vault import Vault

if TYPE_CHECKING:
    from vaultmem.search import backends

SNIPPET_CHARS = 240


def lines(vault: Vault, rel: str, cache: dict[str, list[str]], start: int, end: int) -> str:
    """Lines start..end (1-based) of a vault file as it is now, for the snippet."""
    if rel not in cache:
        try:
            data = vault.read_bytes(vault.root / rel, vault.config.recall.max_file_bytes)
            cache[rel] = data.decode("utf-8", errors="replace").splitlines()
        except (OSError, PathOutsideVaultError):  # vanished (or became a link out) since
            cache[rel] = []
    return "\n".join(cache[rel][max(start, 1) - 1 : end])


def _fold(text: str) -> str:
    decomposed = unicodedata.normalize("NFKD", text.lower())
    return "".join(c for c in decomposed if not unicodedata.combining(c))


def snippet(searcher: backends.Searcher, body: str, wanted: set[str]) -> tuple[str, int]:
    """The line(s) of `body` that match the most query terms, terms marked **like this**.

    Returns the snippet and the 0-based offset of its first line within the body.
    """
    lines = body.splitlines()
    best, best_i, best_tokens = -1, 0, []
    # stems keep the start of their word: a line without any term's first letters cannot
    # match, and skipping it saves analysing (stemming) most lines of a long hit
    prefixes = {t[:3] for t in wanted}
    for i, raw in enumerate(lines):
        line = raw.replace("**", "").replace("__", "")
        if not line.strip():
            continue
        folded = line.lower() if line.isascii() else _fold(line)
        if best >= 0 and not any(p in folded for p in prefixes):
            continue
        tokens = searcher.tokens(line)
        found = {t for t, _s, _e in tokens if t in wanted}
        score = len(found) * 10 + sum(1 for t, _s, _e in tokens if t in wanted)
        if line.lstrip().startswith("#"):  # a heading says less than the text under it
            score = score // 4
        if score > best:
            best, best_i, best_tokens = score, i, tokens
        if best > 0 and i > 200 and best >= 10 * len(wanted):
            break
    if best < 0:
        return "", 0
    line = lines[best_i].replace("**", "").replace("__", "")
    marks = [(s, e) for t, s, e in best_tokens if t in wanted]
    out, pos = [], 0
    for s, e in marks:
        out.append(line[pos:s])
        out.append(f"**{line[s:e]}**")
        pos = e
    out.append(line[pos:])
    text = "".join(out).strip()
    if len(text) > SNIPPET_CHARS:
        first = text.find("**")
        start = max(0, first - SNIPPET_CHARS // 3) if first >= 0 else 0
        # never cut inside a marked term
        cut = text[start : start + SNIPPET_CHARS]
        if cut.count("**") % 2:
            cut = cut[: cut.rfind("**")]
        text = ("…" if start else "") + cut.strip() + "…"
    return text, best_i


def for_hit(searcher: backends.Searcher, text: str, title: str, wanted: set[str]) -> str:
    """The snippet a hit shows: its best line (or its title's marks, when the file is gone),
    else its first line (a semantic hit may share no word with the query)."""
    found, _offset = snippet(searcher, text or title, wanted)
    if not found and text:
        first = next((line.strip() for line in text.splitlines() if line.strip()), "")
        found = first[:SNIPPET_CHARS] + ("…" if len(first) > SNIPPET_CHARS else "")
    return found
