"""Recall: a question in, the few right places in the vault out, with where they came from.

Every call first brings the index up to date with the files (`refresh.refresh`), so a note saved
in Obsidian a second ago is found. Plain words rank with BM25F under OR semantics (natural
questions share few words with their answer, so AND finds almost nothing); `"quoted phrases"`
rank first (`phrase:"..."` must match); `field:value` filters. Sections of one note make one hit
(the best section, with support from the others); log entries and decisions stay apart.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from vaultmem.core.errors import UsageError
from vaultmem.core.records import evolve, field, record
from vaultmem.core.vault import Vault
from vaultmem.search import backends, refresh, snippets
from vaultmem.search.documents import read_limit
from vaultmem.search.filters import RecallFilters, parse_query
from vaultmem.search.modes import (
    AUTO_EMBED_FILES,
    MODES,
    embedded,
    load_model,
    no_store,
    resolve_mode,
    why_keyword,
)
from vaultmem.search.question import Query
from vaultmem.search.scoring import RawHit
from vaultmem.search.terms import cap_query

__all__ = [
    "AUTO_EMBED_FILES",
    "MODES",
    "Hit",
    "RecallFilters",
    "RecallResult",
    "load_model",
    "parse_query",
    "recall",
    "resolve_mode",
]

if TYPE_CHECKING:
    from vaultmem.search.embedder import Model

# how much the other matching sections of a note add to its best section's score
SECTION_SUPPORT = 0.05
# how much a long section's score as a whole adds to its best passage's
WHOLE_WEIGHT = 1.0
# documents fetched per hit asked for, before sections are grouped into notes
CANDIDATES = 5
_ENTRY_KINDS = ("log", "decision")
# Exact lookups (identifiers, rare terms): for a query of at most this many distinct terms, a
# note that holds more of them ranks above one that holds fewer, whatever the fields (OR
# semantics and BM25F otherwise let one word in a title beat a note with all the words).
ALL_TERMS_MAX = 3
# ...unless the query is a question ("when did Melanie paint a sunrise?"): questions keep
# plain OR ranking (on LoCoMo conversations 0-4 the rule cost R@1 0.003 on questions).
QUESTIONS_EXEMPT = 1
_QUESTION = re.compile(
    r"^\s*(who|whom|whose|what|when|where|which|why|how|did|does|do|is|are|was|were|has|have|"
    r"can|could|would|should|will)\b",
    re.IGNORECASE,
)
# Hybrid: a calibrated score mix, (1 - w) * keyword score / best keyword score
# + w * cosine rescaled over the dense candidates. Chosen on LoCoMo conversations 0-4 only,
# with the default model (all-MiniLM-L6-v2): w 0.2 gave R@1 0.747 / MRR 0.827 there against
# keyword's 0.741 / 0.821 (0.1: 0.737 / 0.821; 0.3: 0.747 / 0.826, R@5 -0.010; 0.5: 0.697).
# Reciprocal rank fusion lost R@1 at every k and weight tried (k 10-60, w 0.3-0.5: 0.63-0.70):
# keyword search is far ahead at rank 1 on these questions (dense alone: R@1 0.439), so ranks
# alone throw away how sure it is.
SEMANTIC_WEIGHT = 0.2
# nearest documents taken from the embedding store before filters and grouping into notes
# (each costs a docid lookup in the index: 200 cost ~30 ms at 10,000 notes, 60 ~9 ms)
DENSE_CANDIDATES = 100
# keyword documents fetched at least, whatever the limit: a note's sections compete for these
# places, and at 50 a note ranked 8-10 by plain BM25 was missing (LoCoMo R@10 0.959 -> 0.964
# on conversations 0-4 with 200)
KEYWORD_CANDIDATES = 200
# A document that keyword search does not find (no word of the question in it) is shown by the
# hybrid and semantic modes only when its cosine with the question reaches `[recall]
# min_similarity`: below it a nearest neighbour is as near as any note is to nonsense ("zephyrquill"
# found 7 notes at 0.19-0.20). Keyword hits are never held to it. The floor is on the score that
# ranks, the cosine times the machine-note weight (search/scoring.py).


@record
class Hit:
    rank: int
    score: float
    path: str
    kind: str
    title: str
    heading: str
    line_start: int
    line_end: int
    snippet: str
    id: str | None
    agent: str | None
    date: str | None
    explain: tuple[tuple[str, float], ...] = ()
    # with --explain: this hit's rank in keyword search and in semantic search (None: absent)
    ranks: tuple[int | None, int | None] = (None, None)
    # with --explain: the cosine with the question (None: not among the dense candidates)
    similarity: float | None = None
    priority: int = 0  # what orders before the score: see Ranked

    def to_dict(self, *, explain: bool = False) -> dict[str, Any]:
        out: dict[str, Any] = {
            "rank": self.rank,
            "score": self.score,
            "path": self.path,
            "kind": self.kind,
            "title": self.title,
            "heading": self.heading,
            "line_start": self.line_start,
            "line_end": self.line_end,
            "snippet": self.snippet,
            "id": self.id,
            "agent": self.agent,
            "date": self.date,
            "priority": self.priority,
        }
        if explain:
            out["explain"] = [{"term": t, "score": s} for t, s in self.explain]
            out["ranks"] = {"keyword": self.ranks[0], "semantic": self.ranks[1]}
            out["similarity"] = self.similarity
        return out


@record
class RecallResult:
    query: str
    index: refresh.Freshness
    hits: tuple[Hit, ...] = field(default_factory=tuple)
    explain: bool = False
    mode: str = "keyword"

    def to_dict(self) -> dict[str, Any]:
        return {
            "query": self.query,
            "mode": self.mode,
            "index": self.index.to_dict(),
            "hits": [h.to_dict(explain=self.explain) for h in self.hits],
        }


def recall(
    vault: Vault,
    query: str,
    *,
    limit: int = 10,
    filters: RecallFilters | None = None,
    agent: str | None = None,
    explain: bool = False,
    mode: str | None = None,
    progress: refresh.ProgressFn | None = None,
    changed: frozenset[str] | None = None,  # from an in-process watcher (watch.Warm)
    **options: Any,
) -> RecallResult:
    """Ranked hits for `query`, after bringing the index up to date with the files.

    `filters` narrows the search (`RecallFilters`; its fields may also be given one by one,
    `kind="memory"`, as the faces' options are); `agent` is who asks (shared documents plus
    that agent's own folder). `mode`: keyword (BM25F), semantic (embeddings) or hybrid (both,
    fused); None follows `[recall] mode`. `progress` is called while the embeddings are built.
    """
    if limit < 1:
        raise UsageError(f"--limit must be at least 1, got {limit}", "e.g. --limit 5")
    if not query.strip():
        raise UsageError(
            "recall needs a question or some words", 'e.g. vaultmem recall "stripe webhooks"'
        )
    query, cut = cap_query(query)
    if options:
        base = {k: v for k, v in (filters or RecallFilters()).__dict__.items()}
        filters = RecallFilters.of(**{**base, **options})
    parsed = parse_query(query, filters, agent=agent)
    wanted = resolve_mode(vault, mode)
    auto = (mode or vault.config.recall.mode).lower() == "auto"
    not_embedded = (
        f"not embedded for this model yet: keyword search only (run `vaultmem index --semantic "
        f"--vault {vault.root}` once; later edits are embedded by recall itself)"
    )
    fresh: refresh.Freshness | None = None
    too_big = False
    if auto and wanted != "keyword" and no_store(vault):
        # nothing embedded yet: the model (onnxruntime: ~0.5 s, 250 MB) is loaded only if the
        # vault is small enough to embed now, so this recall costs what a keyword one does
        fresh = refresh.refresh(vault, model=None, embed_progress=progress, changed=changed)
        too_big, wanted = (True, "keyword") if fresh.files > AUTO_EMBED_FILES else (False, wanted)
    model, used, notes = load_model(vault, wanted, progress=progress, fallback=auto)
    if auto and used == "keyword" and not notes:
        notes = why_keyword(vault)
        if too_big and not notes:
            assert fresh is not None
            notes = (f"the vault's {fresh.files} files are {not_embedded}",)
    waiting = None
    if auto and model is not None and not embedded(vault, model):
        waiting, model = model, None  # embedded below only if the vault is small
    if fresh is None:
        fresh = refresh.refresh(vault, model=model, embed_progress=progress, changed=changed)
    if waiting is not None:
        if fresh.files <= AUTO_EMBED_FILES:
            model = waiting
            fresh = refresh.refresh(vault, model=model, embed_progress=progress)
        else:
            used = "keyword"
            notes = (*notes, f"the vault's {fresh.files} files are {not_embedded}")
    if notes or cut:
        fresh = _with_warnings(fresh, (*notes, *cut))

    def run() -> list[Hit]:
        searcher = backends.engine_for(vault).searcher_for(vault)
        return _search(
            searcher,
            parsed,
            limit=limit,
            explain=explain,
            model=model,
            mode=used,
            floor=vault.config.recall.min_similarity,
        )

    try:
        try:
            hits = run()
        except backends.index_errors(vault):
            # another process may have swapped the generation under us: open it afresh once
            backends.forget_searcher(vault)
            hits = run()
    except backends.index_errors(vault) as exc:
        # crash mid-commit, truncated files, another whoosh version: the files are the truth
        backends.forget_searcher(vault)
        rebuilt = refresh.refresh(vault, wait=None, rebuild=True, model=model)
        fresh = _with_warnings(
            rebuilt,
            (f"index could not be opened ({type(exc).__name__}): rebuilt from the files",),
        )
        hits = run()
    if any(h.id and h.kind in ("log", "decision") for h in hits):  # else nothing to check
        from vaultmem.nexus.shown import ShowCheck  # entries failing verification: left out, said

        check, cap = ShowCheck(vault), vault.config.recall.max_file_bytes
        hits = [
            evolve(h, rank=n)
            for n, h in enumerate(
                (h for h in hits if not (h.id and h.kind in ("log", "decision")) or check.lines_ok(
                    h.path, h.line_start, h.line_end, h.id, read_limit(h.path, cap))), 1
            )
        ]  # fmt: skip
        if check.failed:
            fresh = _with_warnings(fresh, (check.note(),))
            check.save()
    return RecallResult(query=query, index=fresh, hits=tuple(hits), explain=explain, mode=used)


def _with_warnings(fresh: refresh.Freshness, extra: tuple[str, ...]) -> refresh.Freshness:
    return refresh.Freshness(**{**fresh.__dict__, "warnings": (*fresh.warnings, *extra)})


# (score, best document, priority): the priority orders first, the score within it (a hit's
# `priority` in --json says so). It is the query's soft phrases the note holds (x PHRASE_FIRST),
# plus for a short lookup the query terms it holds.
Ranked = list[tuple[float, RawHit, int]]
# + keyword and dense ranks, and the dense score (the cosine, weighted; None: no dense rank)
Fused = list[tuple[float, RawHit, int | None, int | None, int, float | None]]
PHRASE_FIRST = 1000


def _group(raw: list[RawHit], *, support: bool, short: bool = False) -> Ranked:
    """Sections of one note make one hit (log entries and decisions stay apart), best first.

    Keyword scores add up (the best section, some support from the others, the whole long
    section); a cosine does not, so semantic hits keep their best document's. For a `short`
    query (see ALL_TERMS_MAX) notes that hold more of its terms come first.
    """
    groups: dict[str, list[RawHit]] = {}
    for h in raw:
        groups.setdefault(_group_key(h), []).append(h)
    scored: Ranked = []
    for members in groups.values():
        held = len(frozenset().union(*(m.matched for m in members))) if short else 0
        held += PHRASE_FIRST * max(m.phrases for m in members)
        if not support:
            scored.append((members[0].score, members[0], held))
            continue
        parts = [m for m in members if m.fields.get("unit") != "whole"]
        wholes = [m for m in members if m.fields.get("unit") == "whole"]
        best = parts[0] if parts else wholes[0]
        score = best.score + SECTION_SUPPORT * sum(m.score for m in parts[1:])
        if wholes:
            score += WHOLE_WEIGHT * wholes[0].score
        scored.append((score, best, held))
    scored.sort(key=lambda x: (-x[2], -x[0]))
    return scored


def _group_key(h: RawHit) -> str:
    f = h.fields
    return str(f["docid"] if f.get("kind") in _ENTRY_KINDS else f["path"])


def _dense(searcher: backends.Searcher, parsed: Query, model: Model) -> Ranked:
    from vaultmem.search import vectors

    text = " ".join((*parsed.words, *parsed.phrases, *(t for _f, t in parsed.field_words)))
    store = vectors.open_vectors(searcher.vault)
    if store is None or not text.strip():
        return []
    raw = searcher.fetch(parsed, store.nearest(model.encode_query([text])[0], DENSE_CANDIDATES))
    return _group(raw, support=False)


def _fuse(keyword: Ranked, dense: Ranked, floor: float = 0.0) -> Fused:
    """The calibrated mix of both rankings (see SEMANTIC_WEIGHT), with each side's rank.

    Keyword scores are divided by the best one, cosines rescaled between the best and the
    last dense candidate; the terms a note holds (short queries) still order first. A note
    only the dense side found is left out below `floor` (see `[recall] min_similarity`).
    """
    kw = {_group_key(h): (i, s, h, held) for i, (s, h, held) in enumerate(keyword, start=1)}
    dn = {_group_key(h): (i, s, h, held) for i, (s, h, held) in enumerate(dense, start=1)}
    top = max((s for s, _h, _held in keyword), default=0.0) or 1.0
    hi = dense[0][0] if dense else 1.0
    lo = dense[-1][0] if dense else 0.0
    span = hi - lo if hi > lo else 1.0
    out = []
    for key in kw.keys() | dn.keys():
        k = kw.get(key)
        d = dn.get(key)
        if k is None and d is not None and floor and d[1] < floor:
            continue
        score = (1 - SEMANTIC_WEIGHT) * (k[1] / top if k else 0.0) + SEMANTIC_WEIGHT * (
            (d[1] - lo) / span if d else 0.0
        )
        held = max(k[3] if k else 0, d[3] if d else 0)
        best = k[2] if k else d[2]  # type: ignore[index]
        cosine = d[1] if d else None
        out.append((score, best, k[0] if k else None, d[0] if d else None, held, cosine))
    out.sort(key=lambda x: (-x[4], -x[0], x[2] or 10**9))
    # back on the keyword scale (x the best keyword score): thresholds set for BM25F scores,
    # such as the prompt hook's [hooks] recall_min_score, keep their meaning in hybrid mode
    return [(s * top, h, kr, dr, held, c) for s, h, kr, dr, held, c in out]


def _search(
    searcher: backends.Searcher,
    parsed: Query,
    *,
    limit: int,
    explain: bool,
    model: Model | None = None,
    mode: str = "keyword",
    floor: float = 0.0,
) -> list[Hit]:
    ranked: Fused
    keyword: Ranked = []
    if mode != "semantic":
        raw = searcher.search(
            parsed, limit=max(limit * CANDIDATES, KEYWORD_CANDIDATES), explain=explain
        )
        text = " ".join(parsed.words)
        question = bool(QUESTIONS_EXEMPT) and ("?" in text or bool(_QUESTION.match(text)))
        short = not question and 1 < len(set(searcher.plain_terms(parsed.words))) <= ALL_TERMS_MAX
        keyword = _group(raw, support=True, short=short)
    if model is None or mode == "keyword":
        ranked = [(s, h, i, None, held, None) for i, (s, h, held) in enumerate(keyword, start=1)]
    elif mode == "semantic":
        dense = _dense(searcher, parsed, model)
        ranked = [
            (s, h, None, i, held, s)
            for i, (s, h, held) in enumerate(dense, start=1)
            if not floor or s >= floor
        ]
    else:
        ranked = _fuse(keyword, _dense(searcher, parsed, model), floor)
    wanted: set[str] = set()
    for w in (*parsed.words, *parsed.phrases, *(t for _f, t in parsed.field_words)):
        wanted.update(searcher.terms(w))
    hits = []
    files: dict[str, list[str]] = {}
    for rank, (score, h, kw_rank, dense_rank, held, cosine) in enumerate(ranked[:limit], start=1):
        f = h.fields
        start, end = f.get("lines") or (0, 0)
        text = snippets.lines(searcher.vault, f["path"], files, int(start), int(end))
        snippet = snippets.for_hit(searcher, text, f.get("title") or "", wanted)
        hits.append(
            Hit(
                rank=rank,
                score=round(score, 4),
                path=f["path"],
                kind=f.get("kind", "note"),
                title=f.get("title", ""),
                heading=f.get("heading", ""),
                line_start=int(start),
                line_end=int(end),
                snippet=snippet,
                id=f.get("id") or None,
                agent=f.get("agent") or None,
                date=f.get("date") or None,
                explain=h.explain,
                ranks=(kw_rank, dense_rank),
                priority=held,
                similarity=None if cosine is None else round(cosine, 4),
            )
        )
    return hits
