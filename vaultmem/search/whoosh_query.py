"""A `Query` as whoosh query objects, built directly (no query parser): the scored leaves (each
term in every text field, the proximity pairs, the phrases), what each hit must match, and the
filter and mask queries that narrow and hide. `engine.Searcher` runs them.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

from vaultmem.search.question import Query
from vaultmem.search.scoring import PROXIMITY_BOOST, PROXIMITY_SLOP, TEXT_FIELDS
from vaultmem.search.whoosh_import import load

Terms = Callable[[str], list[str]]


def parts(q: Query, terms: Terms, plain: list[str]) -> tuple[Any, Any, Any, list[Any], list[Any]]:
    """(main query, filter, mask, every scored or required leaf, the required parts) of `q`;
    `terms` analyses text into index terms, `plain` is the query's plain terms
    (`Searcher.plain_terms`)."""
    load()
    from whoosh import query as wq

    scored: list[Any] = []
    leaves: list[Any] = []
    seen: set[str] = set()
    for term in plain:
        if term in seen:
            continue
        seen.add(term)
        for fname, boost in TEXT_FIELDS.items():
            leaf = wq.Term(fname, term, boost=boost)
            leaves.append(leaf)
            scored.append(leaf)
    # two query words next to each other in the text too (stop words aside): a small
    # bonus, as in sequential-dependence models; the words alone already scored
    # (on LoCoMo: R@1 +0.011, MRR +0.006, R@5 +0.004)
    for a, b in itertools.pairwise(plain):
        if a != b and PROXIMITY_BOOST > 0:
            leaf = wq.Phrase("body", [a, b], slop=PROXIMITY_SLOP, boost=PROXIMITY_BOOST)
            leaves.append(leaf)
            scored.append(leaf)
    required: list[Any] = []
    for phrase in q.phrases:
        alts = phrase_leaves(phrase, terms)
        if alts:
            leaves.extend(alts)
            required.append(wq.Or(alts))
    for phrase in q.soft_phrases:  # scored like words, and held (see _soft) ranks first
        alts = phrase_leaves(phrase, terms)
        leaves.extend(alts)
        scored.extend(alts)
    for fname, text in q.field_words:
        words = terms(text) if fname != "tags" else [text.lower()]
        if words:
            group = [wq.Term(fname, w, boost=TEXT_FIELDS.get(fname, 1.0)) for w in words]
            leaves.extend(group)
            required.append(wq.And(group))
    if required:
        main = wq.AndMaybe(wq.And(required), wq.Or(scored)) if scored else wq.And(required)
    else:
        main = wq.Or(scored) if scored else wq.NullQuery
    filters: list[Any] = []

    def any_of(fname: str, values: tuple[str, ...]) -> None:
        if values:
            filters.append(wq.Or([wq.Term(fname, v) for v in values]))

    any_of("kind", q.kinds)
    any_of("type", q.types)
    any_of("agent", q.agents)
    any_of("tags", tuple(t.lower() for t in q.tags))
    if q.visible_to:
        any_of("owner", (q.visible_to, "-"))
    any_of("id", q.ids)
    any_of("status", q.statuses)
    if q.under:
        filters.append(
            wq.Or(
                [
                    wq.Or([wq.Term("path", u), wq.Prefix("path", u.rstrip("/") + "/")])
                    for u in q.under
                ]
            )
        )
    if q.since:
        filters.append(wq.TermRange("date", q.since, None))
    mask = None
    if not q.include_hidden:
        masks = [wq.Term("hidden", "1")]
        if q.today:
            masks.append(wq.TermRange("valid_until", None, q.today, endexcl=True))
        mask = wq.Or(masks)
    flt = wq.And(filters) if filters else None
    return main, flt, mask, leaves, required


def phrase_leaves(phrase: str, terms: Terms) -> list[Any]:
    """A phrase in any text field (one word: that term)."""
    load()
    from whoosh import query as wq

    words = terms(phrase)
    if len(words) == 1:
        return [wq.Term(f, words[0], boost=b) for f, b in TEXT_FIELDS.items()]
    return [wq.Phrase(f, words, boost=2.0 * b) for f, b in TEXT_FIELDS.items() if f != "tags"]


def leaf_label(leaf: Any) -> str:
    """How `--explain` names a leaf: `body:word`, or `body:"two words"~slop`."""
    words = getattr(leaf, "words", None)
    if words:
        slop = getattr(leaf, "slop", 1)
        near = f"~{slop}" if slop > 1 else ""
        return f'{leaf.fieldname}:"{" ".join(words)}"{near}'
    return f"{leaf.fieldname}:{leaf.text}"
