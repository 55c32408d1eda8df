"""The search engine: Whoosh BM25F over note sections, passages, log entries and decisions.

The only module that imports whoosh, and only inside functions, so `vaultmem status` and the
manifest code never pay for it. Queries are built as whoosh query objects directly (no query
parser): `vaultmem.search.query` turns the user's text into a `Query`, this module scores it.

Why this module is long: it is the one place whoosh is used (the schema, the writer, the
searcher and its query building); splitting it would spread whoosh over several modules.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import importlib.util
import itertools
import os
import sys
import time
import types
from collections.abc import Callable
from typing import Any

from vaultmem.core.records import record
from vaultmem.core.vault import Vault
from vaultmem.search.documents import Doc, owner_of
from vaultmem.search.manifest import CURRENT, Manifest, index_dir, load_manifest, proven

# text fields searched by plain words, with their query-time boosts
TEXT_FIELDS: dict[str, float] = {
    "title": 2.5,
    "heading": 1.5,
    "desc": 1.5,
    "tags": 1.5,
    "body": 1.0,
}


# Tuned on the LoCoMo benchmark (bench/recall_quality.py) as general knobs only; neighbouring
# values change R@5 by about +-0.002
BM25_K1 = 1.2


BM25_B = 0.75


PROXIMITY_SLOP = 1


PROXIMITY_BOOST = 0.2


COVERAGE_POWER = 0.5


# Notes vaultmem maintains for itself carry a `vaultmem/...` tag (agents/*/keys.md, Review.md):
# they hold words (key, review, agent names) that questions share with real facts, never the
# facts themselves, so their scores are scaled down (keys.md ranked 2nd for "idempotency key
# checkout" before).
MACHINE_TAG = "vaultmem/"


MACHINE_WEIGHT = 0.25


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


# --- importing whoosh ------------------------------------------------------------------------
# `_whoosh()` imports whoosh's core without what vaultmem never uses.
#
# Importing whoosh costs more than a cold `vaultmem recall` does with the index (issue 23): it
# loads ~80 modules, and a dozen of them only for features vaultmem never calls. While whoosh
# imports, `_whoosh` puts stand-ins for those in `sys.modules`:
#
# - `urllib.request` (whoosh.compat imports it for one `urlretrieve` nothing calls: http.client,
#   email, ssl), the `cached_property` package (whoosh.reading; it imports asyncio) and the
#   English morphology tables (`whoosh.lang.morph_en`, for the `Variations` query): replaced by
#   the few names whoosh takes from them (the tables load on Variations' first use);
# - `html` (whoosh takes `escape`, for highlights), `shutil` (`copyfileobj`, for compound
#   files; shutil imports bz2 and lzma) and the double-metaphone tables
#   (`whoosh.lang.dmetaphone`, for a phonetic filter): functions that import the real module
#   when first called; `hashlib` (whoosh takes `md5`, for its hash tables: hashlib loads
#   OpenSSL), the built-in module's md5;
# - `calendar`, `queue`, `random`, `tempfile`, `whoosh.sorting` and `whoosh.automata.lev`
#   (whoosh imports them whole, uses them for dates, multiprocessing writers, temp names and
#   storage, sorted or grouped results, fuzzy terms): modules that import the real one on
#   their first attribute access (`_Later`).
#
# The stand-ins are taken out of `sys.modules` right after, so nothing else in the process ever
# sees them: a later `import urllib.request` (or calendar, html, ...) gets the real module. The
# modules a search needs later (the codec, the searcher, the collectors) are imported here too,
# while the stand-ins are in place.
#
# One lasting change: `whoosh.lang.snowball` is the real package without its `__init__`, whose
# fourteen stemmers (~190 KB of bytecode) all load whenever one is asked for (opening an index
# unpickles its analyzer, which asks for one). Here each loads on first use, through the same
# `classes` table and the same names (`_snowball`).


class _Later(types.ModuleType):
    """A module imported for real on its first attribute access (then this one forwards)."""

    def __getattr__(self, attr: str) -> Any:
        name = self.__name__
        if sys.modules.get(name) is self:
            del sys.modules[name]
        real = importlib.import_module(name)
        self.__dict__.update(real.__dict__)
        return getattr(real, attr)


def _later_function(module: str, name: str) -> Any:
    def call(*args: Any, **kwargs: Any) -> Any:
        return getattr(importlib.import_module(module), name)(*args, **kwargs)

    call.__name__ = call.__qualname__ = name
    return call


def _unused(*_a: object, **_k: object) -> None:
    raise RuntimeError("not available inside vaultmem's whoosh import")


def _md5(*args: Any, **kwargs: Any) -> Any:
    """whoosh's hash tables' md5, from the built-in module (hashlib would load OpenSSL)."""
    try:
        from _md5 import md5  # type: ignore[import-not-found]
    except ImportError:  # pragma: no cover - a build without it
        from hashlib import md5
    return md5(*args, **kwargs)


# name -> what the stand-in holds: a dict of attributes, or LATER for a `_Later` module
LATER = None
STAND_INS: dict[str, dict[str, Any] | None] = {
    "urllib.request": {"urlretrieve": _unused},
    "cached_property": {"cached_property": functools.cached_property},
    "whoosh.lang.morph_en": {"variations": _unused},
    "html": {"escape": _later_function("html", "escape")},
    "whoosh.lang.dmetaphone": {
        "double_metaphone": _later_function("whoosh.lang.dmetaphone", "double_metaphone")
    },
    "hashlib": {"md5": _md5},
    "shutil": {"copyfileobj": _later_function("shutil", "copyfileobj")},
    "whoosh.sorting": LATER,
    "calendar": LATER,
    "queue": LATER,
    "random": LATER,
    "tempfile": LATER,
    "whoosh.automata.lev": LATER,
}

# whoosh/lang/snowball/__init__.py: language code -> (module, class)
SNOWBALL = {
    "da": ("danish", "DanishStemmer"),
    "nl": ("dutch", "DutchStemmer"),
    "en": ("english", "EnglishStemmer"),
    "fi": ("finnish", "FinnishStemmer"),
    "fr": ("french", "FrenchStemmer"),
    "de": ("german", "GermanStemmer"),
    "hu": ("hungarian", "HungarianStemmer"),
    "it": ("italian", "ItalianStemmer"),
    "no": ("norwegian", "NorwegianStemmer"),
    "pt": ("portugese", "PortugueseStemmer"),
    "ro": ("romanian", "RomanianStemmer"),
    "ru": ("russian", "RussianStemmer"),
    "es": ("spanish", "SpanishStemmer"),
    "sv": ("swedish", "SwedishStemmer"),
}


class _Stemmers(dict[str, Any]):
    """`whoosh.lang.snowball.classes`, each class imported when first looked up."""

    def __missing__(self, code: str) -> Any:
        module, cls = SNOWBALL[code]
        found = getattr(importlib.import_module(f"whoosh.lang.snowball.{module}"), cls)
        self[code] = found
        return found

    def __contains__(self, code: object) -> bool:
        return code in SNOWBALL

    def keys(self) -> Any:
        return SNOWBALL.keys()


def _snowball() -> None:
    """The real `whoosh.lang.snowball` package, its stemmers loaded one by one (see above)."""
    name = "whoosh.lang.snowball"
    if name in sys.modules:
        return
    spec = importlib.util.find_spec(name)
    if spec is None:  # pragma: no cover - whoosh without its stemmers
        return
    package = importlib.util.module_from_spec(spec)
    stemmers = _Stemmers()
    by_class = {cls: code for code, (_m, cls) in SNOWBALL.items()}

    def __getattr__(attr: str) -> Any:
        if attr in by_class:
            return stemmers[by_class[attr]]
        raise AttributeError(f"module {name!r} has no attribute {attr!r}")

    package.__dict__.update(classes=stemmers, __getattr__=__getattr__)
    sys.modules[name] = package
    import whoosh.lang

    whoosh.lang.snowball = package


@contextlib.contextmanager
def _stand_ins() -> Any:
    """`STAND_INS` in `sys.modules` while whoosh imports, taken out right after."""
    stubs: dict[str, types.ModuleType] = {}
    for name, attrs in STAND_INS.items():
        if name in sys.modules:
            continue  # already imported for real by someone: whoosh gets the real one
        if attrs is LATER:
            stub: types.ModuleType = _Later(name, "vaultmem: imported on first use")
        else:
            stub = types.ModuleType(name, "vaultmem: stand-in while whoosh imports")
            stub.__dict__.update(attrs)
        stubs[name] = stub
    sys.modules.update(stubs)
    try:
        yield stubs
    finally:
        for name, stub in stubs.items():
            if sys.modules.get(name) is stub:
                del sys.modules[name]


def _whoosh() -> None:
    """Import whoosh's core once, without what vaultmem never uses (see `STAND_INS`)."""
    if "whoosh.query.terms" in sys.modules:
        return
    with _stand_ins() as stubs:
        import whoosh.codec.whoosh3
        import whoosh.collectors
        import whoosh.compat
        import whoosh.query.terms
        import whoosh.reading
        import whoosh.scoring
        import whoosh.searching
    _snowball()
    if "whoosh.lang.morph_en" in stubs:
        # the Variations query still works: the real tables load on its first use
        def variations(word: str) -> Any:
            from whoosh.lang.morph_en import variations as real

            return real(word)

        whoosh.query.terms.variations = variations


def index_errors() -> tuple[type[BaseException], ...]:
    """What a damaged, half-written or swapped-away index raises when opened or read.

    Only these turn into "rebuilt from the files"; any other exception is a bug and
    propagates to the error boundary.
    """
    import pickle
    import struct
    import zlib

    _whoosh()
    from whoosh.index import IndexError as WhooshIndexError

    return (
        OSError,
        EOFError,
        ValueError,
        KeyError,
        IndexError,
        struct.error,
        pickle.UnpicklingError,
        zlib.error,
        WhooshIndexError,
    )


def analyzer(language: str) -> Any:
    """Words, lowercased, stop words dropped, Snowball-stemmed, then accents folded.

    Folding after stemming lets the stemmer see the real word (Italian stems depend on
    accents); folding at all makes `perche` find `perché`.
    """
    _whoosh()
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
    folding table (~7 ms, against ~30 ms for `_whoosh()`).
    """
    import re

    with _stand_ins():
        import whoosh.compat  # noqa: F401  (whoosh.lang needs it; urllib.request stood in)
    _snowball()
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


def schema(language: str) -> Any:
    _whoosh()
    from whoosh.fields import ID, KEYWORD, STORED, TEXT, Schema

    ana = analyzer(language)
    return Schema(
        docid=ID(stored=True, unique=True),
        path=ID(stored=True),
        kind=ID(stored=True),
        title=TEXT(analyzer=ana, stored=True),
        heading=TEXT(analyzer=ana, stored=True),
        desc=TEXT(analyzer=ana, stored=True),
        tags=KEYWORD(lowercase=True, commas=True, scorable=True, stored=True),
        type=ID(stored=True),
        agent=ID(stored=True),
        date=ID(stored=True),
        status=ID(stored=True),
        id=ID(stored=True),
        hidden=ID,
        valid_until=ID(stored=True),
        lines=STORED,
        unit=ID(stored=True),
        owner=ID,
        # not stored: snippets are read from the file itself (fresh by construction), and
        # whoosh copies every stored byte into memory each time a searcher opens
        body=TEXT(analyzer=ana, stored=False),
    )


def fields(doc: Doc, n: int) -> dict[str, Any]:
    out: dict[str, Any] = {
        "docid": f"{doc.path}#{n}",
        "path": doc.path,
        "kind": doc.kind,
        "title": doc.title,
        "heading": doc.heading,
        "body": doc.body,
        "lines": (doc.line_start, doc.line_end),
        "hidden": "1" if doc.hidden else "0",
        "unit": doc.unit,
        # whose notes these are: an agent's own folder, or "-" for what every agent shares
        "owner": owner_of(doc.path),
    }
    if doc.own_heading is not None and doc.own_heading != doc.heading:
        out["heading"] = doc.own_heading  # indexed without the title (see Doc.own_heading)
        out["_stored_heading"] = doc.heading  # shown as the whole path
    for name in ("desc", "tags", "type", "agent", "date", "status", "id", "valid_until"):
        value = getattr(doc, name)
        if value:
            out[name] = value
    return out


class UnprovenIndex(ValueError):
    """The generation folder is not as this machine's last commit left it (see
    `manifest.proven`): it is never opened, since whoosh unpickles what it reads."""


def open_generation(vault: Vault, manifest: Manifest) -> Any:
    """The one place whoosh opens an index, after proving its files are this machine's."""
    if not proven(vault, manifest):
        raise UnprovenIndex(
            f"index generation {manifest.generation} does not match what this machine wrote"
        )
    _whoosh()
    from whoosh.index import open_dir

    return open_dir(str(index_dir(vault) / manifest.generation))


def open_writer(ix: Any, *, bulk: bool) -> Any:
    # limitmb bounds whoosh's posting pool before it spills a sorted run to disk: a full build
    # streams at a bounded size (512 held 660 MB RSS at 10,000 notes); small refreshes need
    # little. Not compound: see test_segments_are_written_as_separate_files.
    return ix.writer(limitmb=128 if bulk else 32, procs=1, compound=False)


def new_generation(vault: Vault, language: str) -> tuple[Any, str]:
    _whoosh()
    from whoosh.index import create_in

    generation = f"g-{os.urandom(4).hex()}"  # not `secrets`: it loads hmac and OpenSSL
    folder = index_dir(vault) / generation
    folder.mkdir(parents=True, exist_ok=True)
    return create_in(str(folder), schema(language)), generation


@record
class RawHit:
    score: float
    fields: dict[str, Any]
    explain: tuple[tuple[str, float], ...] = ()
    matched: frozenset[str] = frozenset()  # the plain query terms this document holds
    phrases: int = 0  # how many of the query's soft (ranking, not required) phrases it holds


def machine_weight(stored: dict[str, Any]) -> float:
    tags = str(stored.get("tags") or "")
    return MACHINE_WEIGHT if any(t.startswith(MACHINE_TAG) for t in tags.split(",")) else 1.0


@record
class Query:
    """A parsed query, built by recall.py (which knows no whoosh)."""

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


class Searcher:
    """An open index generation, searched with query objects built directly (no qparser)."""

    def __init__(self, vault: Vault, opened: tuple[Any, Any, str] | None = None) -> None:
        self.vault = vault
        self.language = vault.config.language
        if opened is None:
            self.ix, self.searcher = self._open()
        else:
            self.ix, self.searcher, self.generation = opened
        self.analyzer = self.ix.schema["body"].analyzer
        # filter/mask query -> the documents it matches, for this open index only (a `set`:
        # whoosh takes one as a ready filter, where a query object is evaluated every search)
        self._sets: dict[str, set[int]] = {}
        # docnum -> stored fields: an open index's segments never change, and a long-lived
        # searcher (MCP, Warm) reads the same candidates' fields query after query
        self._stored: dict[int, dict[str, Any]] = {}

    def _open(self) -> tuple[Any, Any]:
        _whoosh()
        from whoosh import scoring

        last: BaseException | None = None
        # a refresh may swap the generation (or merge segments) between reading the
        # manifest and opening the files: re-read and retry before calling the index broken
        for attempt in range(4):
            manifest = load_manifest(self.vault)
            if manifest is None:
                raise FileNotFoundError("no index manifest")
            self.generation = manifest.generation
            try:
                ix = open_generation(self.vault, manifest)
                weighting = scoring.BM25F(
                    B=BM25_B, K1=BM25_K1, title_B=0.3, heading_B=0.3, tags_B=0.3
                )
                searcher = ix.searcher(weighting=weighting)
                _open_columns(searcher)
                return ix, searcher
            except index_errors() as exc:
                last = exc
                time.sleep(0.02 * (attempt + 1))
        assert last is not None
        raise last

    def renewed(self) -> Searcher | None:
        """This index as a refresh has since committed it, reopening only the segments that
        changed (whoosh reuses the others' open files), after the same proof as a first open;
        None when the generation moved, or it cannot be proven. This searcher is spent."""
        manifest = load_manifest(self.vault)
        if manifest is None or manifest.generation != self.generation:
            return None
        if not proven(self.vault, manifest):
            return None
        fresh = _reopened(self.ix, self.searcher)
        if fresh is None:
            return None
        _open_columns(fresh)
        return Searcher(self.vault, (self.ix, fresh, self.generation))

    def close(self) -> None:
        self.searcher.close()
        self.ix.close()

    def __enter__(self) -> Searcher:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def terms(self, text: str) -> list[str]:
        """The index terms of some text (stemmed, folded, stop words dropped), in order."""
        return [t.text for t in self.analyzer(text, mode="query")]

    def tokens(self, text: str) -> list[tuple[str, int, int]]:
        """(term, start char, end char) of some text, for marking snippets: the analyzer as a
        plain function (`plain_analyzer`, the same tokens; a third of the time on a hit's
        section, where whoosh's chain builds an object per token)."""
        return plain_analyzer(self.language)(text)

    def plain_terms(self, words: tuple[str, ...]) -> list[str]:
        """Index terms of the plain words of a query, without question filler (English).

        The index keeps these words (phrases need them); a natural question is full of them
        ("would", "kind of", "how many") and each one that a wrong page happens to repeat
        pulls it up. Dropped only when something else is left to search for.
        """
        kept = [w for w in words if w.lower().strip("?!.,;:'\"") not in QUERY_STOP]
        terms = [t for w in (kept or words) for t in self.terms(w)]
        return terms or [t for w in words for t in self.terms(w)]

    def doc_count(self) -> int:
        return int(self.searcher.doc_count())

    def _build(self, q: Query) -> tuple[Any, Any, Any, list[Any]]:
        main, flt, mask, leaves, _required = self._parts(q)
        return main, flt, mask, leaves

    def _parts(self, q: Query) -> tuple[Any, Any, Any, list[Any], list[Any]]:
        _whoosh()
        from whoosh import query as wq

        scored: list[Any] = []
        leaves: list[Any] = []
        terms = self.plain_terms(q.words)
        seen: set[str] = set()
        for term in terms:
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
        for a, b in itertools.pairwise(terms):
            if a != b and PROXIMITY_BOOST > 0:
                leaf = wq.Phrase("body", [a, b], slop=PROXIMITY_SLOP, boost=PROXIMITY_BOOST)
                leaves.append(leaf)
                scored.append(leaf)
        required: list[Any] = []
        for phrase in q.phrases:
            alts = self._phrase(phrase)
            if alts:
                leaves.extend(alts)
                required.append(wq.Or(alts))
        for phrase in q.soft_phrases:  # scored like words, and held (see _soft) ranks first
            alts = self._phrase(phrase)
            leaves.extend(alts)
            scored.extend(alts)
        for fname, text in q.field_words:
            words = self.terms(text) if fname != "tags" else [text.lower()]
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

    def _phrase(self, phrase: str) -> list[Any]:
        """A phrase in any text field (one word: that term)."""
        _whoosh()
        from whoosh import query as wq

        words = self.terms(phrase)
        if len(words) == 1:
            return [wq.Term(f, words[0], boost=b) for f, b in TEXT_FIELDS.items()]
        return [wq.Phrase(f, words, boost=2.0 * b) for f, b in TEXT_FIELDS.items() if f != "tags"]

    def _soft(self, q: Query) -> list[frozenset[int]]:
        """Per soft phrase, the documents holding it (one index pass each)."""
        _whoosh()
        from whoosh import query as wq

        # not kept in self._sets: a long-lived server sees endless different phrases
        return [
            frozenset(wq.Or(alts).docs(self.searcher))
            for alts in (self._phrase(p) for p in q.soft_phrases)
            if alts
        ]

    def search(self, q: Query, *, limit: int, explain: bool = False) -> list[RawHit]:
        """Top documents; BM25F scores scaled by how much of the query each one covers.

        OR semantics rank a document that repeats one query word above one that has all of
        them; weighting by the (idf-weighted) share of query terms matched corrects that.
        """
        if not self.searcher.doc_count():  # an empty vault (and idf would divide by zero)
            return []
        main, flt, mask, leaves = self._build(q)
        if main is None or main.__class__.__name__ == "_NullQuery":
            return []
        allow, deny = self._docs(flt), self._docs(mask)
        if allow is not None and not allow:  # whoosh reads an empty filter as no filter
            return []
        results = self.searcher.search(
            main, limit=limit, filter=allow, mask=deny or None, terms=True
        )
        plain: dict[str, float] = {}
        for term in self.plain_terms(q.words):
            plain[term] = max(float(self.searcher.idf("body", term)), 0.0)
        total = sum(plain.values())
        soft = self._soft(q)
        hits = []
        for r in results:
            stored = dict(self._fields(r.docnum))
            score = float(r.score) * machine_weight(stored)
            contrib: tuple[tuple[str, float], ...] = ()
            matched = {text for _f, text in (r.matched_terms() or ())}
            seen = {t.decode() if isinstance(t, bytes) else t for t in matched}
            if total > 0 and COVERAGE_POWER:
                share = sum(w for t, w in plain.items() if t in seen) / total
                score *= share**COVERAGE_POWER
            if explain:
                contrib = self._explain(r.docnum, leaves)
            held = sum(r.docnum in docs for docs in soft)
            hits.append(RawHit(score, stored, contrib, frozenset(seen & plain.keys()), held))
        hits.sort(key=lambda h: -h.score)
        return hits

    def fetch(self, q: Query, scored: list[tuple[str, float]]) -> list[RawHit]:
        """The documents among `scored` (docid, score) that `q`'s filters, visibility and
        required phrases allow, with their stored fields; the given scores kept, best first.

        Dense candidates pass through here so that every mode filters exactly as keyword
        search does (kinds, agents' private folders, retracted facts, `under`, ...): the same
        filter and mask queries, evaluated once per open index and kept as sets of documents.
        """
        _whoosh()
        from whoosh import query as wq

        if not scored or not self.searcher.doc_count():
            return []
        _main, flt, mask, _leaves, required = self._parts(q)
        if required:  # rare: a quoted phrase or field:words with a semantic query
            wanted = wq.Or([wq.Term("docid", docid) for docid, _s in scored])
            results = self.searcher.search(
                wq.And([wanted, *required]), limit=len(scored), filter=flt, mask=mask
            )
            allowed = {r.docnum for r in results}
        else:
            allowed = None
        allow = self._docs(flt)
        deny = self._docs(mask)
        soft = self._soft(q)
        hits = []
        for docid, score in scored:
            docnum = self.searcher.document_number(docid=docid)
            if docnum is None or (allowed is not None and docnum not in allowed):
                continue
            if (allow is not None and docnum not in allow) or (deny and docnum in deny):
                continue
            stored = dict(self._fields(docnum))
            held = sum(docnum in docs for docs in soft)
            hits.append(RawHit(score * machine_weight(stored), stored, phrases=held))
        hits.sort(key=lambda h: -h.score)
        return hits

    def _docs(self, query: Any) -> set[int] | None:
        """The documents a filter or mask query matches, worked out once per open index
        (at most 64 different ones kept: a server sees few filters, each reused)."""
        if query is None:
            return None
        key = repr(query)
        cached = self._sets.get(key)
        if cached is None:
            if len(self._sets) >= 64:
                self._sets.clear()
            cached = set(query.docs(self.searcher))
            self._sets[key] = cached
        return cached

    def _fields(self, docnum: int) -> dict[str, Any]:
        """A document's stored fields, read once per open index (at most 50,000 kept)."""
        found = self._stored.get(docnum)
        if found is None:
            if len(self._stored) >= 50_000:
                self._stored.clear()
            found = self._stored[docnum] = self.searcher.stored_fields(docnum)
        return found

    def _explain(self, docnum: int, leaves: list[Any]) -> tuple[tuple[str, float], ...]:
        out = []
        skip: tuple[type[BaseException], ...] = (*index_errors(), AttributeError)
        for leaf in leaves:
            try:
                m = leaf.matcher(self.searcher)
                if m.is_active():
                    m.skip_to(docnum)
                if m.is_active() and m.id() == docnum:
                    out.append((_leaf_label(leaf), round(float(m.score()), 4)))
            except skip:  # a leaf on a field this index lacks contributes nothing
                continue
        return tuple(sorted(out, key=lambda x: -x[1]))


def _reopened(ix: Any, searcher: Any) -> Any:
    """A whoosh searcher on the index's latest commit that keeps `searcher`'s open segment
    readers where a segment is unchanged (same id, same number of deleted documents: deletions
    only grow) and opens the others; None when whoosh's layout is not the one known here.

    Not whoosh's own `Searcher.refresh()`: whoosh-reloaded's reuse adds the old reader's
    segments to the new commit's (a merged-away segment came back) and keeps a reused
    segment's old deletions (an edited note was found under its old words)."""
    from whoosh.reading import EmptyReader, MultiReader, SegmentReader
    from whoosh.searching import Searcher as WhooshSearcher

    try:
        info = ix._read_toc()
        old = {
            r.segment().segment_id(): r
            for r, _offset in searcher.reader().leaf_readers()
            if isinstance(r, SegmentReader)
        }
        readers = []
        for segment in info.segments:
            kept = old.get(segment.segment_id())
            if kept is not None and kept.segment().deleted_count() == segment.deleted_count():
                del old[segment.segment_id()]
                readers.append(kept)
            else:
                readers.append(SegmentReader(ix.storage, info.schema, segment, info.generation))
    except (AttributeError, TypeError):
        return None
    for unused in old.values():  # merged away or changed: the spent searcher's, not ours
        with contextlib.suppress(Exception):
            unused.close()
    # a MultiReader even for one segment: it carries the new commit's generation, which
    # `up_to_date` compares (a kept segment reader still has the one it was opened in)
    reader = (
        MultiReader(readers, generation=info.generation) if readers else EmptyReader(info.schema)
    )
    return WhooshSearcher(reader, weighting=searcher.weighting, fromindex=ix)


def _open_columns(searcher: Any) -> None:
    """Open every segment's stored-fields and field-length files now.

    Segments are separate files (not compound), and whoosh opens a column's file on its first
    use: a refresh in another process that merges segments deletes the old ones' files, and a
    searcher opened before would then find its stored fields gone. An open file outlives its
    deletion, so they are all opened here; one already gone raises FileNotFoundError, which
    `_open` answers by reading the new table of contents.
    """
    _whoosh()
    from whoosh.codec.whoosh3 import LENGTHS_COLUMN, STORED_COLUMN, _lenfield

    names = searcher.schema.scorable_names()
    for sub, _offset in searcher.leaf_searchers():
        perdoc: Any = getattr(sub.reader(), "_perdoc", None)
        cached = getattr(perdoc, "_cached_reader", None)
        if cached is None:  # not a whoosh3 segment: nothing opened lazily that we know of
            continue
        if sub.reader().doc_count_all() and cached("_stored", STORED_COLUMN) is None:
            raise FileNotFoundError("a segment's stored fields were deleted by a merge")
        for name in names:
            if cached(_lenfield(name), LENGTHS_COLUMN) is None and perdoc.field_length(name):
                raise FileNotFoundError("a segment's field lengths were deleted by a merge")


_OPEN: dict[str, tuple[str, Searcher]] = {}


def searcher_for(vault: Vault) -> Searcher:
    """An open searcher on the current index, kept open for the next call in this process.

    A long-lived process (the MCP server, a benchmark, an agent embedding the library) then
    pays for opening the index once; whoosh's `up_to_date` (one directory listing) says when a
    refresh has committed since.
    """
    key = str(vault.root)
    cached = _OPEN.get(key)
    if cached is not None:
        gen, s = cached
        try:
            if gen == CURRENT.get(key):
                if s.searcher.up_to_date():
                    return s
                renewed = s.renewed()  # a commit since: reopen what changed only
                if renewed is not None:
                    _OPEN[key] = (renewed.generation, renewed)
                    return renewed
        except index_errors():  # the generation was rebuilt away: open the new one
            pass
        forget_searcher(vault)
    s = Searcher(vault)
    _OPEN[key] = (s.generation, s)
    return s


def forget_searcher(vault: Vault) -> None:
    cached = _OPEN.pop(str(vault.root), None)
    if cached is not None:
        with contextlib.suppress(Exception):
            cached[1].close()


def _leaf_label(leaf: Any) -> str:
    words = getattr(leaf, "words", None)
    if words:
        slop = getattr(leaf, "slop", 1)
        near = f"~{slop}" if slop > 1 else ""
        return f'{leaf.fieldname}:"{" ".join(words)}"{near}'
    return f"{leaf.fieldname}:{leaf.text}"
