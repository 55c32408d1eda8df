"""A recall question's terms: the one grammar that splits it (words, `"quoted phrases"`,
`field:value` filters) and the cap on how many are searched."""

from __future__ import annotations

import re

TOKEN = re.compile(r'(?:(\w+):)?"([^"]*)"?|(\S+)')
MAX_TERMS = 32
MAX_CHARS = 2000


def cap_query(text: str, most: int = MAX_TERMS) -> tuple[str, tuple[str, ...]]:
    """The question's first `most` terms, and a warning when some were left out: each term
    walks its posting lists in every field (500 words took minutes on a large vault)."""
    terms = [m.group(0) for m in TOKEN.finditer(text[:MAX_CHARS])]
    if len(terms) <= most and len(text) <= MAX_CHARS:
        return text, ()
    return " ".join(terms[:most]), (f"the query was cut to its first {most} terms",)
