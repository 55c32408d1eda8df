"""What a recall is narrowed to: one `RecallFilters` value from every face, and the query text.

The faces (`vaultmem recall`, `read --query`, the MCP `recall` tool, the prompt hook) hand the
engine one `RecallFilters`; the same filters can also be written inside the query
(`kind:memory`, `under:wiki`, `phrase:"exact words"`). A new filter is a field here (and how it
narrows, in `parse_query`), its flag in `cli/cmd_recall.py` and its argument in `mcp/server.py`
(CONTRIBUTING.md, "A recall filter").

Quoted text in a natural question ("Would Melanie enjoy "The Four Seasons" by Vivaldi?") ranks
the notes that hold the phrase first but never empties the result; `phrase:"…"` in the query,
or `strict` (`--strict`), makes every quoted phrase a hard filter.
"""

from __future__ import annotations

import re
from typing import Any

from vaultmem.core import clock
from vaultmem.core.choices import choose
from vaultmem.core.errors import UsageError
from vaultmem.core.records import record
from vaultmem.search.documents import Kind
from vaultmem.search.question import Query
from vaultmem.search.terms import TOKEN as _TOKEN

FILTER_FIELDS = {
    "kind": "kinds",
    "type": "types",
    "agent": "agents",
    "tag": "tags",
    "tags": "tags",
    "id": "ids",
    "status": "statuses",
    "path": "under",
    "under": "under",
    "since": "since",
}
SCORED_FIELDS = {"title": "title", "heading": "heading", "body": "body", "description": "desc"}
STRICT_PHRASE = "phrase"  # phrase:"exact words" must match, whatever --strict says
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")


@record
class RecallFilters:
    """How a recall is narrowed, as the faces pass it (None / False: not narrowed)."""

    kind: str | None = None  # a document kind (memory, note, log, decision, ...)
    type: str | None = None  # frontmatter type of facts and bank notes
    under: str | None = None  # a vault folder or file
    since: str | None = None  # YYYY-MM-DD: documents dated on or after
    include_retracted: bool = False  # also retracted, superseded, rejected, expired
    strict: bool = False  # quoted phrases must match (otherwise they rank first)

    @classmethod
    def of(cls, **options: Any) -> RecallFilters:
        """From the faces' options (`type_` as typer and the library spell it; enums as
        their values; unknown names are a bug, TypeError)."""
        known = set(cls.__record_fields__)  # type: ignore[attr-defined]
        values: dict[str, Any] = {}
        for name, value in options.items():
            key = "type" if name == "type_" else name
            if key not in known:
                raise TypeError(f"unknown recall filter {name!r}")
            values[key] = getattr(value, "value", value)
        return cls(**values)


def parse_query(
    text: str, filters: RecallFilters | None = None, *, agent: str | None = None
) -> Query:
    """Split a query into plain words, quoted phrases and `field:value` filters, and add the
    faces' filters; `agent` is who asks (shared documents plus that agent's own folder)."""
    f = filters or RecallFilters()
    words: list[str] = []
    phrases: list[str] = []
    strict: list[str] = []
    field_words: list[tuple[str, str]] = []
    found: dict[str, list[str]] = {k: [] for k in set(FILTER_FIELDS.values())}
    for m in _TOKEN.finditer(text):
        fname, quoted, bare = m.group(1), m.group(2), m.group(3)
        if quoted is not None:
            key = (fname or "").lower()
            if key in FILTER_FIELDS:
                found[FILTER_FIELDS[key]].append(quoted)
            elif key in SCORED_FIELDS:
                field_words.append((SCORED_FIELDS[key], quoted))
            elif key == STRICT_PHRASE:
                if quoted.strip():
                    strict.append(quoted)
            else:
                if fname:
                    words.append(fname)
                if quoted.strip() and f.strict:
                    strict.append(quoted)
                elif quoted.strip():
                    # its words count as the question's words too: a note with some of them
                    # still ranks, one with the whole phrase ranks first
                    phrases.append(quoted)
                    words.extend(quoted.split())
            continue
        name, sep, value = bare.partition(":")
        key = name.lower()
        if sep and value and key in FILTER_FIELDS:
            found[FILTER_FIELDS[key]].append(value)
        elif sep and value and key in SCORED_FIELDS:
            field_words.append((SCORED_FIELDS[key], value))
        else:
            words.append(bare)
    for key, value in (
        ("kinds", f.kind),
        ("types", f.type),
        ("under", f.under),
        ("since", f.since),
    ):
        if value:
            found[key].append(value)
    for k in found["kinds"]:
        choose(Kind, k, "kind")
    since_value = ""
    if found["since"]:
        since_value = max(found["since"])
        if not _DATE.fullmatch(since_value):
            raise UsageError(f"--since {since_value!r} is not a date", "use YYYY-MM-DD")
    under_values = tuple(u.strip("/") for u in found["under"] if u.strip("/"))
    return Query(
        words=tuple(words),
        phrases=tuple(strict),
        soft_phrases=tuple(phrases),
        field_words=tuple(field_words),
        kinds=tuple(found["kinds"]),
        types=tuple(t.lower() for t in found["types"]),
        agents=tuple(found["agents"]),
        visible_to=agent or "",
        tags=tuple(t.lstrip("#") for t in found["tags"]),
        ids=tuple(found["ids"]),
        statuses=tuple(s.lower() for s in found["statuses"]),
        under=under_values,
        since=since_value,
        include_hidden=f.include_retracted,
        today=clock.today().isoformat(),
    )
