"""A parsed recall question, as every full-text engine takes it: `Query`, and the words of a
question that are not searched for.

`filters.parse_query` builds a `Query` from the user's text and filters; an engine
(`engine.py`, `fts5.py`) turns it into its own query language and scores it. No engine is
imported here.
"""

from __future__ import annotations

from vaultmem.core.records import record

# words of a question that say what kind of answer is wanted, not what it is about
QUERY_STOP = frozenset(
    [
        "would",
        "could",
        "should",
        "might",
        "must",
        "shall",
        "may",
        "can",
        "will",
        "also",
        "ever",
        "yet",
        "still",
        "etc",
        "like",
        "likely",
        "kind",
        "sort",
        "many",
        "much",
        "often",
        "times",
        "time",
        "one",
        "ones",
        "someone",
        "something",
        "anything",
        "anyone",
        "thing",
        "things",
        "get",
        "got",
        "make",
        "made",
        "way",
        "ways",
        "regarding",
        "considered",
        "consider",
        "potentially",
        "probably",
        "based",
        "according",
        "whether",
        "else",
        "besides",
        "other",
        "others",
        "another",
        "what's",
        "who's",
        "how's",
    ]
)


def scored_words(words: tuple[str, ...]) -> tuple[str, ...]:
    """The plain words of a query without question filler (`QUERY_STOP`); all of them when
    nothing else is left. Each engine's `plain_terms` analyses what this keeps."""
    kept = tuple(w for w in words if w.lower().strip("?!.,;:'\"") not in QUERY_STOP)
    return kept or words


@record
class Query:
    """A parsed query, built by `filters.parse_query` (which knows no engine)."""

    words: tuple[str, ...] = ()  # plain words, OR semantics
    phrases: tuple[str, ...] = ()  # each must match
    soft_phrases: tuple[str, ...] = ()  # rank the documents holding them first
    field_words: tuple[tuple[str, str], ...] = ()  # (text field, words): scored, required
    kinds: tuple[str, ...] = ()
    types: tuple[str, ...] = ()
    agents: tuple[str, ...] = ()  # strict: written by / about this agent
    visible_to: str = ""  # an agent: shared documents plus that agent's own folder
    tags: tuple[str, ...] = ()
    ids: tuple[str, ...] = ()
    statuses: tuple[str, ...] = ()
    under: tuple[str, ...] = ()
    since: str = ""
    include_hidden: bool = False
    today: str = ""
