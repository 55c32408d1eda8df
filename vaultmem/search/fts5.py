"""The optional full-text engine: SQLite FTS5 (the standard library's sqlite3), behind the
interface of `search/engine.py` (`[recall] engine = "fts5"`; `search/backends.py` chooses).

One database per index generation, `g-<hex>/index.sqlite3`, two tables:

- `docs`: per document (a note section or passage, a log entry, a decision) the fields Whoosh
  stores (what a hit shows) and the columns the filters and masks read (kind, type, agent,
  owner, tags, id, status, path, date, hidden, valid_until), as plain SQL columns;
- `fts`: an FTS5 table over the *analyzed* text of title, heading, desc, tags and body. The
  vault's own analyzer (`whoosh_analysis.plain_analyzer`: its tokenizer, stop words, Snowball stemmer and
  folding) runs in Python and its terms go in space-joined under FTS5's `ascii` tokenizer, every
  ASCII character of a term but a-z and 0-9 moved into the private use area (`_tok`), so FTS5
  splits on the spaces only: terms, positions and phrases are Whoosh's. Tags are whole,
  lowercased, as Whoosh's KEYWORD field has them.

Ranking: `bm25()` (k1 1.2, b 0.75) once per column, times the field's weight in `TEXT_FIELDS`,
summed: each field's hits saturate on their own, as Whoosh's per-field leaves do (`PER_FIELD`).
Two differences remain: FTS5 normalises by the whole document's length (Whoosh: each field's,
with title, heading and tags at b 0.3), and its idf, ln((N - n + 0.5) / (n + 0.5)), gives a
term in more than half the documents (next to) nothing (Whoosh: ln(N / (n + 1)) + 1), so
scores run lower: 0.5-1.0x Whoosh's (docs/benchmarks.md). Then as Whoosh: the coverage
scaling (the idf-weighted share of the plain query terms a document holds), the machine-note
weight, soft phrases counted, required phrases and field words as an AND that the plain words'
score is added to, and a proximity bonus for adjacent query terms (an ordered two-term FTS5
phrase in the body, `PROXIMITY_BOOST` of its score).

Trust: SQLite does not unpickle, but a database file is still parsed by a C library, so the
same proof as Whoosh's holds (`manifest.proven`: the generation folder exactly as this
machine's last commit left it, never a file git brought); queries open it read-only
(`mode=ro`, `query_only`, `trusted_schema=OFF`), so a query never writes. Writes use the
rollback journal (never WAL): after a commit the folder holds the database file alone.

Why this module is long: it is a whole engine, as `engine.py` is for Whoosh (the schema, the
writer, the searcher with its query building, filters and explain); split, each half would be
meaningless without the other's schema.
"""

from __future__ import annotations

import contextlib
import heapq
import itertools
import os
import re
import sqlite3
import time
from pathlib import Path
from typing import Any

from vaultmem.core.errors import ConfigError
from vaultmem.core.vault import Vault
from vaultmem.search.manifest import (
    CURRENT,
    Manifest,
    UnprovenIndex,
    index_dir,
    load_manifest,
    proven,
)
from vaultmem.search.question import Query, scored_words
from vaultmem.search.scoring import COVERAGE_POWER, TEXT_FIELDS, RawHit, machine_weight
from vaultmem.search.whoosh_analysis import TOKEN_PATTERN, plain_analyzer

NAME = "fts5"
DB = "index.sqlite3"
FTS_SCHEMA = 1  # the tables below; another value is rebuilt, never read

# the FTS5 columns, in bm25()'s weight order
COLUMNS = ("title", "heading", "desc", "tags", "body")
# How the fields' weights enter bm25(). True: one bm25() per column, times the field's weight,
# summed (each field's hits saturate on their own, as Whoosh's per-field leaves do: a term in a
# note's title, description and body counts three times). False: one bm25() with the weights as
# column weights (FTS5's own: the weighted hits of all columns saturate together, so a second
# field adds little). Measured on LoCoMo: docs/benchmarks.md.
PER_FIELD = True


def _bm25() -> str:
    """The score expression (higher is better)."""
    if not PER_FIELD:
        return "-bm25(fts, " + ", ".join(str(TEXT_FIELDS[c]) for c in COLUMNS) + ")"
    parts = []
    for i, c in enumerate(COLUMNS):
        weights = ", ".join("1" if j == i else "0" for j in range(len(COLUMNS)))
        parts.append(f"{TEXT_FIELDS[c]} * bm25(fts, {weights})")
    return "-(" + " + ".join(parts) + ")"


# a phrase of several words, in every text column but tags (as whoosh_query.phrase_leaves)
PHRASE_COLUMNS = "{title heading desc body}"

# the proximity bonus: two query terms next to each other in the body (as engine's
# PROXIMITY_BOOST, over FTS5's bm25 of the ordered pair). Measured on LoCoMo: docs/benchmarks.md
PROXIMITY_BOOST = 0.2

# at most this many rowids are written into a query (`rowid IN (...)`); a larger set is
# checked in Python (SQLite refuses a statement over 1,000,000 bytes)
INLINE_IDS = 2000

# stored fields and idfs kept per open searcher, at most this many of each
CACHE_MAX = 50_000

# stored fields (the `docs` columns a hit's fields come from), and those set only when present
ALWAYS = ("docid", "path", "kind", "title", "heading", "unit")
OPTIONAL = ("desc", "tags", "type", "agent", "date", "status", "id", "valid_until")
STORED = (*ALWAYS, *OPTIONAL, "line_start", "line_end")
_SELECT = ", ".join(f'd."{c}"' for c in STORED)

SCHEMA = f"""
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE docs (
    rowid INTEGER PRIMARY KEY AUTOINCREMENT,  -- never reused: a rowid is one document forever
    docid TEXT NOT NULL, path TEXT NOT NULL, kind TEXT NOT NULL, title TEXT NOT NULL,
    heading TEXT NOT NULL, unit TEXT NOT NULL, "desc" TEXT, tags TEXT, type TEXT, agent TEXT,
    date TEXT, status TEXT, id TEXT, valid_until TEXT, line_start INTEGER, line_end INTEGER,
    hidden INTEGER NOT NULL, owner TEXT NOT NULL, tagset TEXT NOT NULL
);
CREATE INDEX docs_path ON docs(path);
CREATE INDEX docs_docid ON docs(docid);
CREATE VIRTUAL TABLE fts USING fts5({", ".join(COLUMNS)}, tokenize='ascii');
CREATE VIRTUAL TABLE vocab USING fts5vocab(fts, 'col');
"""

# every ASCII character but a-z and 0-9 (the ascii tokenizer's separators and its case folding)
# moved to the private use area, which the tokenizer keeps inside a token and no analyzed term
# holds (Python's \\w never matches it)
_ESCAPE = {c: 0xE000 + c for c in range(128) if not (48 <= c <= 57 or 97 <= c <= 122)}


def _tok(term: str) -> str:
    return term.translate(_ESCAPE)


def _q(term: str) -> str:
    """One term as an FTS5 string (a term never holds a double quote once escaped)."""
    return '"' + _tok(term) + '"'


def _tags(value: str) -> list[str]:
    """Whoosh's KEYWORD(commas=True, lowercase=True) terms of a tags value."""
    return [t for t in (p.strip().lower() for p in value.split(",")) if t]


def index_errors() -> tuple[type[BaseException], ...]:
    """What a damaged, foreign or swapped-away database raises when opened or read."""
    return (OSError, EOFError, ValueError, KeyError, IndexError, sqlite3.DatabaseError)


def _db_path(vault: Vault, generation: str) -> Path:
    return index_dir(vault) / generation / DB


# --- the writer side ---------------------------------------------------------------------


class Index:
    """A generation's database, for a refresh to write (what Whoosh's index object is)."""

    def __init__(self, path: Path, language: str) -> None:
        self.path = path
        self.language = language

    def close(self) -> None:
        """Nothing held open: each writer has its own connection."""


def new_generation(vault: Vault, language: str) -> tuple[Index, str]:
    generation = f"g-{os.urandom(4).hex()}"
    folder = index_dir(vault) / generation
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / DB
    db = sqlite3.connect(path, isolation_level=None)
    try:
        try:
            db.executescript(SCHEMA)
        except sqlite3.OperationalError as exc:
            if "fts5" not in str(exc):
                raise
            raise ConfigError(
                f'[recall] engine = "fts5", but this Python\'s SQLite has no FTS5 ({exc})',
                'set [recall] engine = "whoosh" in vaultmem.toml, or use a Python whose '
                "sqlite3 has FTS5",
            ) from exc
        db.executemany(
            "INSERT INTO meta VALUES (?, ?)",
            [("schema", str(FTS_SCHEMA)), ("language", language)],
        )
    finally:
        db.close()
    return Index(path, language), generation


def open_generation(vault: Vault, manifest: Manifest) -> Index:
    """The generation a refresh writes to, after proving its files are this machine's."""
    if not proven(vault, manifest):
        raise UnprovenIndex(
            f"index generation {manifest.generation} does not match what this machine wrote"
        )
    return Index(_db_path(vault, manifest.generation), manifest.language)


def open_writer(ix: Index, *, bulk: bool) -> Writer:
    return Writer(ix, bulk=bulk)


class _Terms(dict[str, str]):
    """word -> its escaped index term ("" for a stop word), computed on first sight (the
    analyzer treats every word on its own, so a word's term never depends on its context)."""

    def __init__(self, analyze: Any) -> None:
        super().__init__()
        self.analyze = analyze

    def __missing__(self, word: str) -> str:
        found = self.analyze(word)
        tok = self[word] = _tok(found[0][0]) if found else ""
        return tok


class Writer:
    """Whoosh's writer calls (`delete_by_term("path", ...)`, `add_document`, `commit`,
    `cancel`) in one SQLite transaction."""

    def __init__(self, ix: Index, *, bulk: bool) -> None:
        self.bulk = bulk
        self.analyze = plain_analyzer(ix.language)
        self._words = re.compile(TOKEN_PATTERN, re.UNICODE).findall
        self._memo = _Terms(self.analyze)
        self.db = sqlite3.connect(ix.path, timeout=30.0, isolation_level=None)
        try:
            self._check(self.db)
            if bulk:  # a new generation no manifest names yet: a crash loses nothing
                self.db.execute("PRAGMA synchronous = OFF")
                self.db.execute("PRAGMA cache_size = -65536")
            self.db.execute("BEGIN IMMEDIATE")
        except BaseException:
            self.db.close()
            raise

    @staticmethod
    def _check(db: sqlite3.Connection) -> None:
        db.execute("PRAGMA trusted_schema = OFF")
        row = db.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()
        if row is None or row[0] != str(FTS_SCHEMA):
            raise ValueError("not an index of this vaultmem version")

    def _text(self, value: str) -> str:
        """The analyzed terms of some text, escaped and space-joined (a stop word leaves two
        spaces, which FTS5 reads as one separator): each word analyzed once per writer."""
        return " ".join([self._memo[w] for w in self._words(value)]) if value else ""

    def delete_by_term(self, field: str, value: str) -> None:
        if field != "path":  # pragma: no cover - refresh deletes by path only
            raise ValueError(f"cannot delete by {field}")
        self.db.execute(
            "DELETE FROM fts WHERE rowid IN (SELECT rowid FROM docs WHERE path = ?)", (value,)
        )
        self.db.execute("DELETE FROM docs WHERE path = ?", (value,))

    def add_document(self, **f: Any) -> None:
        tags = str(f.get("tags") or "")
        lines = f.get("lines") or (0, 0)
        heading = f.get("_stored_heading", f.get("heading", ""))
        cur = self.db.execute(
            'INSERT INTO docs (docid, path, kind, title, heading, unit, "desc", tags, type, '
            "agent, date, status, id, valid_until, line_start, line_end, hidden, owner, tagset) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                f["docid"],
                f["path"],
                f["kind"],
                f.get("_stored_title", f.get("title", "")),
                heading,
                f.get("unit", "section"),
                *(f.get(name) or None for name in OPTIONAL),
                int(lines[0]),
                int(lines[1]),
                1 if f.get("hidden") == "1" else 0,
                f.get("owner", "-"),
                "," + ",".join(_tags(tags)) + ",",
            ),
        )
        self.db.execute(
            "INSERT INTO fts (rowid, title, heading, desc, tags, body) VALUES (?, ?, ?, ?, ?, ?)",
            (
                cur.lastrowid,
                self._text(f.get("title", "")),
                self._text(f.get("heading", "")),
                self._text(f.get("desc", "")),
                " ".join(_tok(t) for t in _tags(tags)),
                self._text(f.get("body", "")),
            ),
        )

    def commit(self, optimize: bool = False) -> None:
        try:
            if self.bulk or optimize:  # one b-tree per term: the fastest reads
                self.db.execute("INSERT INTO fts (fts) VALUES ('optimize')")
            self.db.execute("COMMIT")
        finally:
            self.db.close()

    def cancel(self) -> None:
        with contextlib.suppress(sqlite3.Error):
            self.db.execute("ROLLBACK")
        self.db.close()


# --- the searcher ------------------------------------------------------------------------


def _stamp(path: Path) -> tuple[int, int, int] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return (st.st_size, st.st_mtime_ns, st.st_ino)


class Searcher:
    """An open generation, read-only, with the interface of `engine.Searcher`."""

    def __init__(self, vault: Vault) -> None:
        self.vault = vault
        self.language = vault.config.language
        self._analyze = plain_analyzer(self.language)
        self.db, self.path, self.generation = self._open()
        self.stamp = _stamp(self.path)
        self._count = int(self.db.execute("SELECT count(*) FROM docs").fetchone()[0])
        # per open database (a refresh's commit changes the file, and searcher_for reopens)
        self._fields: dict[int, dict[str, Any]] = {}
        self._idfs: dict[str, float] = {}

    def _open(self) -> tuple[sqlite3.Connection, Path, str]:
        last: BaseException | None = None
        # a refresh may commit between reading the manifest and proving the folder (as in
        # engine.Searcher._open): re-read and retry before calling the index broken
        for attempt in range(4):
            manifest = load_manifest(self.vault)
            if manifest is None:
                raise FileNotFoundError("no index manifest")
            try:
                if manifest.engine != NAME:
                    raise UnprovenIndex(f"the index is a {manifest.engine} index, not {NAME}")
                if not proven(self.vault, manifest):
                    raise UnprovenIndex(
                        f"index generation {manifest.generation} does not match what this "
                        "machine wrote"
                    )
                path = _db_path(self.vault, manifest.generation)
                db = sqlite3.connect(
                    path.as_uri() + "?mode=ro", uri=True, timeout=10.0, check_same_thread=False
                )
                try:
                    db.execute("PRAGMA query_only = ON")
                    Writer._check(db)
                except BaseException:
                    db.close()
                    raise
                return db, path, manifest.generation
            except index_errors() as exc:
                last = exc
                time.sleep(0.02 * (attempt + 1))
        assert last is not None
        raise last

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> Searcher:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # the analyzer, as engine.Searcher has it

    def terms(self, text: str) -> list[str]:
        return [t for t, _s, _e in self._analyze(text)]

    def tokens(self, text: str) -> list[tuple[str, int, int]]:
        return self._analyze(text)

    def plain_terms(self, words: tuple[str, ...]) -> list[str]:
        terms = [t for w in scored_words(words) for t in self.terms(w)]
        return terms or [t for w in words for t in self.terms(w)]

    def doc_count(self) -> int:
        return self._count

    # building the FTS5 queries and the SQL filters

    def _phrase(self, phrase: str) -> str | None:
        """A phrase in any text column (one word: that term, tags included)."""
        words = self.terms(phrase)
        if not words:
            return None
        if len(words) == 1:
            return _q(words[0])
        return PHRASE_COLUMNS + ' : "' + " ".join(_tok(w) for w in words) + '"'

    def _required(self, q: Query) -> list[str] | None:
        """The parts each hit must match; None when one can match nothing."""
        out = []
        for phrase in q.phrases:
            expr = self._phrase(phrase)
            if expr:
                out.append(expr)
        for fname, text in q.field_words:
            words = self.terms(text) if fname != "tags" else [text.lower()]
            if not words:
                continue
            if fname not in COLUMNS:  # as a Whoosh term on a field it lacks
                return None
            out.append(" AND ".join(f"{fname} : {_q(w)}" for w in words))
        return out

    def _where(self, q: Query) -> tuple[str, list[Any]]:
        """The filters and masks of `q` as SQL over `docs AS d`."""
        conds: list[str] = []
        args: list[Any] = []

        def any_of(column: str, values: tuple[str, ...]) -> None:
            if values:
                conds.append(f"d.{column} IN ({', '.join('?' * len(values))})")
                args.extend(values)

        any_of("kind", q.kinds)
        any_of("type", q.types)
        any_of("agent", q.agents)
        if q.tags:
            conds.append("(" + " OR ".join(["instr(d.tagset, ?) > 0"] * len(q.tags)) + ")")
            args.extend(f",{t.lower()}," for t in q.tags)
        if q.visible_to:
            any_of("owner", (q.visible_to, "-"))
        any_of("id", q.ids)
        any_of("status", q.statuses)
        if q.under:
            parts = []
            for u in q.under:
                prefix = u.rstrip("/") + "/"
                parts.append("d.path = ? OR substr(d.path, 1, ?) = ?")
                args.extend((u, len(prefix), prefix))
            conds.append("(" + " OR ".join(parts) + ")")
        if q.since:
            conds.append("d.date >= ?")
            args.append(q.since)
        if not q.include_hidden:
            conds.append("d.hidden = 0")
            if q.today:
                conds.append("(d.valid_until IS NULL OR d.valid_until >= ?)")
                args.append(q.today)
        return " AND ".join(conds), args

    def _scores(
        self,
        expr: str,
        where: str = "",
        args: list[Any] | None = None,
        *,
        limit: int | None = None,
        among: Any = None,
    ) -> dict[int, float]:
        """rowid -> score (bm25, higher better) of the documents matching `expr` (and `where`; among `among`),
        best first when `limit` cuts."""
        sql = f"SELECT fts.rowid, {_bm25()} FROM fts"
        if where:
            sql += " CROSS JOIN docs AS d ON d.rowid = fts.rowid"  # fts drives: bm25 needs it
        sql += " WHERE fts MATCH ?"
        inline = among is not None and len(among) <= INLINE_IDS
        if inline:
            sql += f" AND fts.rowid IN ({', '.join(str(int(r)) for r in among)})"
        if where:
            sql += " AND " + where
        if limit is not None:
            sql += f" ORDER BY 2 DESC LIMIT {int(limit)}"
        found = dict(self.db.execute(sql, [expr, *(args or [])]))
        if among is not None and not inline:
            found = {r: s for r, s in found.items() if r in among}
        return found

    def _rowids(self, expr: str, among: Any) -> set[int]:
        if len(among) > INLINE_IDS:
            sql = "SELECT rowid FROM fts WHERE fts MATCH ?"
            return {r for (r,) in self.db.execute(sql, (expr,)) if r in among}
        ids = ", ".join(str(int(r)) for r in among)
        sql = f"SELECT rowid FROM fts WHERE fts MATCH ? AND rowid IN ({ids})"
        return {r for (r,) in self.db.execute(sql, (expr,))}

    def _stored(self, rowids: Any) -> dict[int, dict[str, Any]]:
        """Each document's stored fields, kept for this open database (a write reopens it)."""
        cache = self._fields
        missing = [r for r in rowids if r not in cache]
        if missing:
            if len(cache) > CACHE_MAX:
                cache.clear()
            ids = ", ".join(str(int(r)) for r in missing)
            sql = f"SELECT d.rowid, {_SELECT} FROM docs AS d WHERE d.rowid IN ({ids})"
            for row in self.db.execute(sql):
                cache[row[0]] = _fields(row[1:])
        return {r: cache[r] for r in rowids}

    def _idf(self, terms: list[str]) -> dict[str, float]:
        """Whoosh's idf of each term in the body, log(N / (df + 1)) + 1, floored at 0."""
        import math

        known = self._idfs
        missing = [t for t in terms if t not in known]
        if missing:
            df = dict.fromkeys(missing, 0)
            by_tok = {_tok(t): t for t in missing}
            marks = ", ".join("?" * len(by_tok))
            sql = f"SELECT term, doc FROM vocab WHERE col = 'body' AND term IN ({marks})"
            for tok, n in self.db.execute(sql, list(by_tok)):
                df[by_tok[tok]] = int(n)
            n = max(self._count, 1)
            if len(known) > CACHE_MAX:
                known.clear()
            known.update((t, max(math.log(n / (d + 1)) + 1.0, 0.0)) for t, d in df.items())
        return {t: known[t] for t in terms}

    # searching

    @contextlib.contextmanager
    def _snapshot(self) -> Any:
        """One read transaction: the statements of a search see one commit, never half of a
        refresh that commits meanwhile (the writer waits for it, milliseconds)."""
        self.db.execute("BEGIN")
        try:
            yield
        finally:
            self.db.execute("COMMIT")

    def search(self, q: Query, *, limit: int, explain: bool = False) -> list[RawHit]:
        """Top documents by bm25(), scaled by how much of the query each one covers."""
        if not self._count:
            return []
        with self._snapshot():
            return self._search(q, limit=limit, explain=explain)

    def _search(self, q: Query, *, limit: int, explain: bool) -> list[RawHit]:
        terms = self.plain_terms(q.words)
        unique = list(dict.fromkeys(terms))
        soft = [e for e in (self._phrase(p) for p in q.soft_phrases) if e]
        optional = [_q(t) for t in unique] + soft
        required = self._required(q)
        if required is None or not (optional or required):
            return []
        where, args = self._where(q)
        if required:
            scores = self._scores(" AND ".join(f"({r})" for r in required), where, args)
            if optional and scores:
                extra = self._scores(" OR ".join(optional), among=scores)
                scores = {r: s + extra.get(r, 0.0) for r, s in scores.items()}
            top = dict(heapq.nlargest(limit, scores.items(), key=lambda x: x[1]))
        else:
            top = self._scores(" OR ".join(optional), where, args, limit=limit)
        if not top:
            return []
        pairs = list(dict.fromkeys((a, b) for a, b in itertools.pairwise(terms) if a != b))
        if pairs and PROXIMITY_BOOST > 0:
            near = " OR ".join(f'body : "{_tok(a)} {_tok(b)}"' for a, b in pairs)
            for r, s in self._scores(near, among=top).items():
                top[r] += PROXIMITY_BOOST * s
        plain = self._idf(unique) if unique else {}
        total = sum(plain.values())
        holding = {t: self._rowids(_q(t), top) for t in plain} if total > 0 else {}
        soft_sets = [self._rowids(e, top) for e in soft]
        stored = self._stored(top)
        hits = []
        for r, raw in top.items():
            fields = stored[r]
            score = raw * machine_weight(fields)
            seen = frozenset(t for t, ids in holding.items() if r in ids)
            if total > 0 and COVERAGE_POWER:
                score *= (sum(plain[t] for t in seen) / total) ** COVERAGE_POWER
            contrib = self._explain(r, unique, pairs, q) if explain else ()
            held = sum(r in ids for ids in soft_sets)
            hits.append(RawHit(score, fields, contrib, seen, held))
        hits.sort(key=lambda h: -h.score)
        return hits

    def fetch(self, q: Query, scored: list[tuple[str, float]]) -> list[RawHit]:
        """The documents among `scored` (docid, score) that `q`'s filters, visibility and
        required phrases allow, with their stored fields; the given scores kept, best first."""
        if not scored or not self._count:
            return []
        with self._snapshot():
            return self._fetch(q, scored)

    def _fetch(self, q: Query, scored: list[tuple[str, float]]) -> list[RawHit]:
        required = self._required(q)
        if required is None:
            return []
        where, args = self._where(q)
        marks = ", ".join("?" * len(scored))
        sql = f"SELECT d.rowid, d.docid FROM docs AS d WHERE d.docid IN ({marks})"
        if where:
            sql += " AND " + where
        rows = {docid: r for r, docid in self.db.execute(sql, [d for d, _s in scored] + args)}
        if not rows:
            return []
        ids = set(rows.values())
        if required:
            ids &= self._rowids(" AND ".join(f"({r})" for r in required), ids)
        soft = [e for e in (self._phrase(p) for p in q.soft_phrases) if e]
        soft_sets = [self._rowids(e, ids) for e in soft] if ids else []
        stored = self._stored(ids) if ids else {}
        hits = []
        for docid, score in scored:
            r = rows.get(docid)
            if r is None or r not in ids:
                continue
            held = sum(r in s for s in soft_sets)
            hits.append(RawHit(score * machine_weight(stored[r]), stored[r], phrases=held))
        hits.sort(key=lambda h: -h.score)
        return hits

    def _explain(
        self, rowid: int, terms: list[str], pairs: list[tuple[str, str]], q: Query
    ) -> tuple[tuple[str, float], ...]:
        """Each query part's share of a document's score: `field:term`, `body:"a b"`, ..."""
        leaves: list[tuple[str, str, float]] = []
        for t in terms:
            for f in COLUMNS:
                leaves.append((f"{f}:{t}", f"{f} : {_q(t)}", 1.0))
        for a, b in pairs:
            leaves.append((f'body:"{a} {b}"', f'body : "{_tok(a)} {_tok(b)}"', PROXIMITY_BOOST))
        for p in (*q.phrases, *q.soft_phrases):
            expr = self._phrase(p)
            if expr and " : " in expr:
                leaves.append((f'"{" ".join(self.terms(p))}"', expr, 1.0))
        for fname, text in q.field_words:
            if fname in COLUMNS:
                for w in self.terms(text) if fname != "tags" else [text.lower()]:
                    leaves.append((f"{fname}:{w}", f"{fname} : {_q(w)}", 1.0))
        out = []
        for label, expr, boost in leaves:
            got = self._scores(expr, among=(rowid,))
            if rowid in got and got[rowid] * boost > 0:
                out.append((label, round(got[rowid] * boost, 4)))
        return tuple(sorted(out, key=lambda x: -x[1]))


def _fields(row: tuple[Any, ...]) -> dict[str, Any]:
    """A hit's stored fields, the keys Whoosh's stored fields have."""
    values = dict(zip(STORED, row, strict=True))
    out = {k: values[k] for k in ALWAYS}
    for k in OPTIONAL:
        if values[k] is not None:
            out[k] = values[k]
    out["lines"] = (values["line_start"], values["line_end"])
    return out


_OPEN: dict[str, tuple[str, Searcher]] = {}


def searcher_for(vault: Vault) -> Searcher:
    """An open searcher on the current index, kept open for the next call in this process;
    reopened (and the folder proven again) when the database file or generation changed."""
    key = str(vault.root)
    cached = _OPEN.get(key)
    if cached is not None:
        gen, s = cached
        if gen == CURRENT.get(key) and s.stamp == _stamp(s.path):
            return s
        forget_searcher(vault)
    s = Searcher(vault)
    _OPEN[key] = (s.generation, s)
    return s


def forget_searcher(vault: Vault) -> None:
    cached = _OPEN.pop(str(vault.root), None)
    if cached is not None:
        with contextlib.suppress(Exception):
            cached[1].close()
