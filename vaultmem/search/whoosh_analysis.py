"""The vault's text analysis: words, lowercased, stop words dropped, Snowball-stemmed, accents
folded, as whoosh's analysis chain (`analyzer`, pickled into a Whoosh index's schema) and as a
plain function with the same terms (`plain_analyzer`: the SQLite FTS5 engine's, and both
engines' snippet marking).
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable
from typing import Any

from vaultmem.search.whoosh_import import load, snowball, stand_ins


def analyzer(language: str) -> Any:
    """Words, lowercased, stop words dropped, Snowball-stemmed, then accents folded.

    Folding after stemming lets the stemmer see the real word (Italian stems depend on
    accents); folding at all makes `perche` find `perché`.
    """
    load()
    from whoosh.analysis import (
        CharsetFilter,
        LowercaseFilter,
        RegexTokenizer,
        StemFilter,
        StopFilter,
    )

    chain = RegexTokenizer(TOKEN_PATTERN) | LowercaseFilter()
    from whoosh.lang import NoStopWords, stopwords_for_language
    from whoosh.support.charset import accent_map as folding

    try:
        stops = set(stopwords_for_language(language))
    except NoStopWords:
        stops = set(stopwords_for_language("en"))
    # the unaccented spelling of a stop word ("perche") is a stop word too
    stops |= {w.translate(folding) for w in stops}
    chain = chain | StopFilter(stoplist=stops)
    # no stemmer for this language: unstemmed words still match
    with contextlib.suppress(Exception):
        chain = chain | StemFilter(lang=language)
    return chain | CharsetFilter(folding)


Tokens = list[tuple[str, int, int]]


# a word, as `analyzer`'s tokenizer finds it
TOKEN_PATTERN = r"\w+(?:[.'’]\w+)*"


@functools.cache
def plain_analyzer(language: str) -> Callable[[str], Tokens]:
    """`analyzer(language)` as a plain function: (term, start char, end char) of some text.

    The same tokenizer pattern, stop words (and their unaccented spellings), Snowball stemmer
    and folding table, called directly, without whoosh's analysis framework: what the SQLite
    FTS5 engine (`search/fts5.py`) indexes and queries, so its terms are Whoosh's
    (`tests/test_fts5_engine.py` compares them). Imports only whoosh's stemmer, stop lists and
    folding table (~7 ms, against ~30 ms for `whoosh_import.load()`).
    """
    import re

    with stand_ins():
        import whoosh.compat  # noqa: F401  (whoosh.lang needs it; urllib.request stood in)
    snowball()
    from whoosh.lang import NoStopWords, stopwords_for_language
    from whoosh.support.charset import accent_map as folding

    try:
        stops = set(stopwords_for_language(language))
    except NoStopWords:
        stops = set(stopwords_for_language("en"))
    stops |= {w.translate(folding) for w in stops}
    stem: Callable[[str], str] | None = None
    with contextlib.suppress(Exception):  # as analyzer(): no stemmer, unstemmed words
        from whoosh.lang import stemmer_for_language

        stem = functools.lru_cache(maxsize=50_000)(stemmer_for_language(language))
    finditer = re.compile(TOKEN_PATTERN, re.UNICODE).finditer
    frozen = frozenset(stops)

    def analyze(text: str) -> Tokens:
        out = []
        for m in finditer(text):
            word = m.group(0).lower()
            if len(word) < 2 or word in frozen:  # StopFilter's minsize 2, then its list
                continue
            if stem is not None:
                word = stem(word)
            out.append((word.translate(folding), m.start(), m.end()))
        return out

    return analyze
