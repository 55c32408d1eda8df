"""The one tag grammar: what a tag on a fact, a bank note or a decision may look like.

A tag is one word as Obsidian understands tags: letters (any script), digits, `_`, `-` and `/`
(nested tags), at most 64 characters, not starting with `-` or `/`. A leading `#` is accepted
and dropped. Anything else is refused with a message, never silently dropped.
"""

from __future__ import annotations

from collections.abc import Iterable

from vaultmem.core.errors import UsageError
from vaultmem.core.patterns import later

MAX_TAG = 64
TAG_RE = later(rf"[^\W][\w/-]{{0,{MAX_TAG - 1}}}")


def is_tag(text: str) -> bool:
    return TAG_RE.fullmatch(text) is not None


def clean_tag(tag: str) -> str:
    """A tag as written: `#Payments` → `Payments`; UsageError (exit 2) if it is not one."""
    clean = tag.removeprefix("#")  # no stripping: "ok\n" is not a tag
    if not is_tag(clean):
        raise UsageError(
            f"invalid tag {tag!r}",
            f"a tag is one word: letters, digits, '_', '-' and '/' (at most {MAX_TAG})",
        )
    return clean


def clean_tags(tags: Iterable[str]) -> tuple[str, ...]:
    """Every tag checked, duplicates dropped, order kept."""
    return tuple(dict.fromkeys(clean_tag(t) for t in tags))
