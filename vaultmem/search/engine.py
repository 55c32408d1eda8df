"""The Whoosh engine (the default `[recall] engine`, beside `fts5.py` behind `backends.py`):
the schema, a generation's creation, writer and proven opening, and the searcher.

Whoosh is imported only inside functions, after `whoosh_import.load()`, so `vaultmem status`
and the manifest code never pay for it. `filters.parse_query` turns the user's text into a
`question.Query`; `whoosh_query` builds whoosh query objects from it (no query parser), and
this module runs them and scores the hits (`scoring`). The analysis chain is
`whoosh_analysis`'s. Those four modules and `whoosh_import` are the only whoosh importers.
"""

from __future__ import annotations

import contextlib
import os
import time
from typing import Any

from vaultmem.core.vault import Vault
from vaultmem.search import whoosh_query
from vaultmem.search.documents import Doc, owner_of
from vaultmem.search.manifest import (
    CURRENT,
    Manifest,
    UnprovenIndex,
    index_dir,
    load_manifest,
    proven,
)
from vaultmem.search.question import Query, scored_words
from vaultmem.search.scoring import BM25_B, BM25_K1, COVERAGE_POWER, RawHit, machine_weight
from vaultmem.search.whoosh_analysis import analyzer, plain_analyzer
from vaultmem.search.whoosh_import import load


def index_errors() -> tuple[type[BaseException], ...]:
    """What a damaged, half-written or swapped-away index raises when opened or read.

    Only these turn into "rebuilt from the files"; any other exception is a bug and
    propagates to the error boundary.
    """
    import pickle
    import struct
    import zlib

    load()
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


def schema(language: str) -> Any:
    load()
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
    if doc.name is not None and doc.name != doc.title:
        out["_stored_title"] = doc.name  # indexed with its aliases, shown as the name alone
    if doc.own_heading is not None and doc.own_heading != doc.heading:
        out["heading"] = doc.own_heading  # indexed without the title (see Doc.own_heading)
        out["_stored_heading"] = doc.heading  # shown as the whole path
    for name in ("desc", "tags", "type", "agent", "date", "status", "id", "valid_until"):
        value = getattr(doc, name)
        if value:
            out[name] = value
    return out


def open_generation(vault: Vault, manifest: Manifest) -> Any:
    """The one place whoosh opens an index, after proving its files are this machine's."""
    if not proven(vault, manifest):
        raise UnprovenIndex(
            f"index generation {manifest.generation} does not match what this machine wrote"
        )
    from vaultmem.search import index_seal  # every byte whoosh reads, MAC-checked first

    return index_seal.open_index(_sealed_storage(), str(index_dir(vault) / manifest.generation))


def _sealed_storage() -> type:
    """`search/index_seal.py`'s storage, on whoosh's classes (imported here, whoosh's module)."""
    load()
    from whoosh.filedb.filestore import FileStorage
    from whoosh.filedb.structfile import StructFile
    from whoosh.util import random_name

    from vaultmem.search import index_seal

    return index_seal.storage_class(FileStorage, StructFile, random_name)


def open_writer(ix: Any, *, bulk: bool) -> Any:
    # limitmb bounds whoosh's posting pool before it spills a sorted run to disk: a full build
    # streams at a bounded size (512 held 660 MB RSS at 10,000 notes); small refreshes need
    # little. Not compound: see test_segments_are_written_as_separate_files.
    from vaultmem.search import index_seal  # the commit seals the files it wrote

    return index_seal.writer(ix.writer(limitmb=128 if bulk else 32, procs=1, compound=False), ix)


def new_generation(vault: Vault, language: str) -> tuple[Any, str]:
    from vaultmem.search import index_seal

    generation = f"g-{os.urandom(4).hex()}"  # not `secrets`: it loads hmac and OpenSSL
    folder = index_dir(vault) / generation
    folder.mkdir(parents=True, exist_ok=True)
    return index_seal.create_index(_sealed_storage(), str(folder), schema(language)), generation


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
        load()
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
        terms = [t for w in scored_words(words) for t in self.terms(w)]
        return terms or [t for w in words for t in self.terms(w)]

    def doc_count(self) -> int:
        return int(self.searcher.doc_count())

    def _build(self, q: Query) -> tuple[Any, Any, Any, list[Any]]:
        main, flt, mask, leaves, _required = self._parts(q)
        return main, flt, mask, leaves

    def _parts(self, q: Query) -> tuple[Any, Any, Any, list[Any], list[Any]]:
        return whoosh_query.parts(q, self.terms, self.plain_terms(q.words))

    def _soft(self, q: Query) -> list[frozenset[int]]:
        """Per soft phrase, the documents holding it (one index pass each)."""
        load()
        from whoosh import query as wq

        # not kept in self._sets: a long-lived server sees endless different phrases
        return [
            frozenset(wq.Or(alts).docs(self.searcher))
            for alts in (whoosh_query.phrase_leaves(p, self.terms) for p in q.soft_phrases)
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
        load()
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
                    out.append((whoosh_query.leaf_label(leaf), round(float(m.score()), 4)))
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
    load()
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
