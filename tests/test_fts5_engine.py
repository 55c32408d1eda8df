"""The optional SQLite FTS5 engine (`[recall] engine = "fts5"`): recall's behaviour on both
engines, the same terms, stored fields and filtered sets as Whoosh's, the switch between them,
and a database this machine did not write never trusted."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
from pathlib import Path

import pytest

from tests._cli import copy_example, run_cli, use_engine
from vaultmem.core.errors import ConfigError
from vaultmem.core.vault import Vault
from vaultmem.search import (
    backends,
    engine,
    fts5,
    manifest,
    question,
    refresh,
    scoring,
    whoosh_analysis,
)
from vaultmem.search.query import recall

ENGINES = ["whoosh", "fts5"]


@pytest.fixture(params=ENGINES)
def ev(request: pytest.FixtureRequest, vault: Path) -> Path:
    """example-vault on each engine."""
    return use_engine(vault, request.param)


def _v(path: Path) -> Vault:
    return Vault.open(path)


def _write(vault: Path, rel: str, text: str) -> Path:
    path = vault / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def _paths(vault: Path, query: str, **kw: object) -> list[str]:
    return [h.path for h in recall(_v(vault), query, **kw).hits]  # type: ignore[arg-type]


def _db(vault: Path) -> Path:
    m = manifest.load_manifest(_v(vault))
    assert m is not None and m.engine == "fts5"
    return manifest.index_dir(_v(vault)) / m.generation / fts5.DB


FACT = "---\nname: {n}\ndescription: {b}\ntype: fact\nid: m-{n}\nstatus: {s}\n---\n\n{b}\n"


# --- the same behaviour on both engines ------------------------------------------------------


def test_config_names_the_engine_and_refuses_an_unknown_one(vault: Path) -> None:
    assert _v(vault).config.recall.engine == "whoosh"  # the default
    assert _v(use_engine(vault, "fts5")).config.recall.engine == "fts5"
    use_engine(vault, "tantivy")
    with pytest.raises(ConfigError, match=r"\[recall\] engine must be one of 'whoosh', 'fts5'"):
        _v(vault)
    res = run_cli("recall", "stripe", "--vault", str(vault))
    assert res.exit_code != 0 and "engine" in res.stderr


def test_a_fresh_edit_and_a_delete_are_seen_at_once(ev: Path) -> None:
    assert _paths(ev, "pangolin") == []
    path = _write(ev, "wiki/Animals.md", "# Animals\n\nThe pangolin eats ants.\n")
    result = recall(_v(ev), "pangolin")
    assert [h.path for h in result.hits] == ["wiki/Animals.md"] and result.index.refreshed == 1
    path.write_text("# Animals\n\nThe aardvark eats termites.\n", encoding="utf-8")
    assert _paths(ev, "pangolin") == [] and _paths(ev, "aardvark") == ["wiki/Animals.md"]
    path.unlink()
    result = recall(_v(ev), "aardvark")
    assert result.hits == () and result.index.removed == 1


def test_hits_carry_provenance_and_snippets(ev: Path) -> None:
    hit = recall(_v(ev), "stripe webhook race").hits[0]
    assert hit.path == "memory/stripe-webhook-race.md" and hit.kind == "memory"
    assert hit.id and hit.id.startswith("m-") and hit.date and "**" in hit.snippet
    lines = (ev / hit.path).read_text().splitlines()
    assert "webhook" in "\n".join(lines[hit.line_start - 1 : hit.line_end]).lower()
    assert _paths(ev, "the of and a") == []  # stop words alone match nothing


def test_filters_kind_type_under_since_tag_and_field(ev: Path) -> None:
    assert {h.kind for h in recall(_v(ev), "capacity", kind="memory").hits} == {"memory"}
    typed = recall(_v(ev), "capacity", type_="fact").hits
    assert typed and all(h.path.startswith("memory/") for h in typed)
    assert all(h.path.startswith("wiki/") for h in recall(_v(ev), "stripe", under="wiki").hits)
    _write(ev, "wiki/old.md", "---\ndate: 2020-01-01\ntags: [zoo, Big Cats]\n---\n# Old\nokapi\n")
    _write(ev, "wiki/new.md", "---\ndate: 2030-01-01\n---\n# New\nokapi\n")
    assert _paths(ev, "okapi", since="2029-12-31") == ["wiki/new.md"]
    assert _paths(ev, "okapi tag:zoo") == ["wiki/old.md"]
    assert _paths(ev, 'okapi tag:"big cats"') == ["wiki/old.md"]
    assert _paths(ev, "title:new okapi") == ["wiki/new.md"]
    assert _paths(ev, "okapi under:nowhere") == []


def test_an_agents_private_folder_is_not_visible_to_another(ev: Path) -> None:
    _write(ev, "agents/ella/notes/x.md", "# X\nquetzal for ella\n")
    _write(ev, "agents/lyra/notes/y.md", "# Y\nquetzal for lyra\n")
    _write(ev, "wiki/z.md", "# Z\nquetzal for all\n")
    assert set(_paths(ev, "quetzal", agent="ella")) == {"agents/ella/notes/x.md", "wiki/z.md"}
    assert set(_paths(ev, "quetzal", agent="lyra")) == {"agents/lyra/notes/y.md", "wiki/z.md"}
    assert len(_paths(ev, "quetzal")) == 3


def test_retracted_rejected_and_expired_facts_are_hidden_unless_asked(ev: Path) -> None:
    _write(ev, "memory/old-rule.md", FACT.format(n="old-rule", s="retracted", b="gibbon wrong"))
    _write(ev, "memory/new-rule.md", FACT.format(n="new-rule", s="active", b="gibbon holds"))
    bank = "agents/ella/bank/2026-01-01-{}.md"
    _write(ev, bank.format("a"), FACT.format(n="a", s="rejected", b="gibbon rejected"))
    _write(ev, bank.format("b"), FACT.format(n="b", s="pending", b="gibbon pending"))
    _write(ev, bank.format("c"), "---\nstatus: approved\nvalid_until: 2001-01-01\n---\ngibbon\n")
    assert set(_paths(ev, "gibbon")) == {"memory/new-rule.md", bank.format("b")}
    assert len(_paths(ev, "gibbon", include_retracted=True)) == 5


def test_phrases_required_and_soft(ev: Path) -> None:
    _write(ev, "wiki/apart.md", "# Apart\n\nThe reserve was checked; walk-ins later.\n")
    for together in (
        _paths(ev, '"walk-in reserve"', strict=True),
        _paths(ev, 'phrase:"walk-in reserve"'),
    ):
        assert "wiki/Glossary.md" in together and "wiki/apart.md" not in together
    assert "wiki/apart.md" in _paths(ev, "walk-in reserve")
    _write(ev, "wiki/music.md", "# Music\n\nMelanie loves classical music, Vivaldi most.\n")
    _write(ev, "wiki/seasons.md", "# Playlist\n\nWe played The Four Seasons; seasons change.\n")
    _write(ev, "wiki/four.md", "# Four\n\nVivaldi wrote four concertos; Melanie sang four.\n")
    hits = _paths(ev, 'Would Melanie enjoy the song "The Four Seasons" by Vivaldi?')
    assert hits[0] == "wiki/seasons.md" and {"wiki/music.md", "wiki/four.md"} <= set(hits)
    assert _paths(ev, 'Melanie "The Winter Concerto"', strict=True) == []
    assert _paths(ev, 'Melanie phrase:"The Winter Concerto"') == []


def test_every_word_outranks_one_word_in_a_title_and_machine_notes_rank_low(ev: Path) -> None:
    filler = " ".join(["the team met to go over the plan for the release"] * 8)
    _write(ev, "wiki/answer.md", f"# Meeting notes\n{filler} zorblax {filler} quentify\n")
    _write(ev, "wiki/decoy-a.md", f"# Zorblax\nzorblax {filler}\n")
    _write(ev, "wiki/decoy-b.md", f"# Quentify\nquentify {filler}\n")
    assert _paths(ev, "zorblax quentify")[0] == "wiki/answer.md"
    _write(ev, "memory/api-keys-rotate.md", FACT.format(n="k", s="active", b="API keys rotate."))
    assert _paths(ev, "keys")[0] == "memory/api-keys-rotate.md"


def test_explain_names_each_field_and_term(ev: Path) -> None:
    _write(ev, "sessions/march-3.md", "# Session (3 March, 2023)\n\nJohn talked about lunch.\n")
    hits = recall(_v(ev), "march session", explain=True).hits
    march = next(h for h in hits if h.path == "sessions/march-3.md")
    terms = [t for t, _s in march.explain]
    assert "title:march" in terms and not any(t.startswith("heading:") for t in terms), terms
    assert all(s > 0 for _t, s in march.explain)


def test_log_entries_and_decisions(ev: Path) -> None:
    from tests._layer3_helpers import make_keys
    from vaultmem.nexus import log
    from vaultmem.nexus.decisions import decide

    v = make_keys(ev, "ella")
    log.append(v, "ella", "Deployed the wombat service", channel="ops", body="all green")
    first = decide(v, "ella", "Use wombat queues", why="they are simple")
    decide(v, "ella", "Use wombat streams", why="queues lost data", supersedes=first.decision.id)
    hits = recall(_v(ev), "wombat").hits
    logs = [h for h in hits if h.kind == "log" and "service" in h.title]
    assert len(logs) == 1 and logs[0].id and logs[0].agent == "ella"
    assert [h.title for h in hits if h.kind == "decision"] == ["Use wombat streams"]
    assert len(recall(_v(ev), "wombat", kind="decision", include_retracted=True).hits) == 2


def test_a_kept_searcher_follows_refreshes_and_rebuilds(ev: Path) -> None:
    v = _v(ev)
    assert recall(v, "stripe").hits  # opens (and keeps) a searcher
    refresh.refresh(v, wait=None, rebuild=True)  # a new generation; the old one deleted
    _write(ev, "wiki/new.md", "# New\nchinchilla\n")
    assert [h.path for h in recall(v, "chinchilla").hits] == ["wiki/new.md"]
    _write(ev, "wiki/new.md", "# New\nviscacha\n")  # the same generation, written in place
    assert [h.path for h in recall(v, "viscacha").hits] == ["wiki/new.md"]
    assert recall(v, "chinchilla").hits == ()


def test_the_cli_recall_json_on_both(ev: Path) -> None:
    res = run_cli("recall", "stripe webhook", "--vault", str(ev), "--json", "--limit", "2")
    assert res.exit_code == 0, res.stderr
    data = json.loads(res.stdout)
    assert len(data["hits"]) == 2 and data["hits"][0]["path"].endswith(".md")


# --- the same terms, stored fields and filtered sets as Whoosh ------------------------------


TEXTS = [
    "The Running dogs ran quickly, don't they? e.g. 3.14 café naïve Straße snake_case a I x",
    "Le prenotazioni della palestra sono chiuse. Perché la città è piena di turisti?",
    "Die Häuser wurden gebaut; größer als über", "les élèves étaient là, à l'école",
    "los niños están aquí", "ação não coração", "de huizen zijn groot",
]  # fmt: skip


@pytest.mark.parametrize("language", ["en", "it", "de", "fr", "es", "pt", "nl", "xx"])
def test_the_plain_analyzer_gives_whoosh_s_terms(language: str) -> None:
    chain, plain = whoosh_analysis.analyzer(language), whoosh_analysis.plain_analyzer(language)
    for text in TEXTS:
        expected = [(t.text, t.startchar, t.endchar) for t in chain(text, chars=True)]
        assert plain(text) == expected


def _both(tmp_path: Path) -> tuple[Path, Path]:
    """The same vault (example-vault and a few odd notes) on each engine, indexed."""
    base = copy_example(tmp_path / "whoosh")
    _write(base, "wiki/odd.md", "---\ntags: [Zoo, vaultmem/keys, big cats]\n---\n# Odd_Name\n"
           "snake_case e.g. don't café naïve 3.14\n\n## Sub\n\nperché città\n")  # fmt: skip
    _write(base, "agents/ella/notes/mine.md", "# Mine\nmy own quokka\n")
    other = tmp_path / "fts5"
    shutil.copytree(base, other)
    use_engine(other, "fts5")
    for root in (base, other):
        refresh.refresh(_v(root), wait=None)
    return base, other


def _whoosh_stored(root: Path) -> list[dict[str, object]]:
    v = _v(root)
    m = manifest.load_manifest(v)
    assert m is not None
    ix = engine.open_generation(v, m)
    with ix.searcher() as s:
        rows = [dict(f) for f in s.all_stored_fields()]
        terms = {
            (f, t.decode() if isinstance(t, bytes) else t)
            for f, t in ix.reader().all_terms()
            if f in scoring.TEXT_FIELDS
        }
    ix.close()
    for r in rows:
        r["lines"] = tuple(r["lines"])  # type: ignore[arg-type]
    return sorted(rows, key=lambda r: str(r["docid"])), terms  # type: ignore[return-value]


def test_terms_and_stored_fields_are_whoosh_s(tmp_path: Path) -> None:
    base, other = _both(tmp_path)
    w_rows, w_terms = _whoosh_stored(base)  # type: ignore[misc]
    db = sqlite3.connect(_db(other))
    names = ", ".join(f'"{c}"' for c in fts5.STORED)
    f_rows = sorted(
        (fts5._fields(r) for r in db.execute(f"SELECT {names} FROM docs")),
        key=lambda r: str(r["docid"]),
    )
    unescape = {v: k for k, v in fts5._ESCAPE.items()}
    f_terms = {(c, t.translate(unescape)) for t, c, _d, _n in db.execute("SELECT * FROM vocab")}
    db.close()
    assert f_rows == w_rows
    assert f_terms == w_terms
    assert ("tags", "vaultmem/keys") in f_terms and ("body", "snake_cas") in f_terms


QUERIES = [
    question.Query(words=("stripe", "webhook", "capacity")),
    question.Query(words=("quokka", "stripe"), visible_to="lyra"),
    question.Query(words=("quokka", "stripe"), visible_to="ella", kinds=("note",)),
    question.Query(words=("capacity", "slot"), types=("fact",), include_hidden=True),
    question.Query(words=("stripe",), under=("wiki",), since="2026-01-01"),
    question.Query(words=("café", "keys"), tags=("zoo", "big cats")),
    question.Query(words=("walk", "reserve"), phrases=("walk-in reserve",)),
    question.Query(words=("stripe",), field_words=(("title", "webhook race"),)),
    question.Query(words=("stripe", "race"), soft_phrases=("webhook race",)),
    question.Query(words=("capacity", "day"), statuses=("retracted",), include_hidden=True),
    question.Query(phrases=("perché città",), today="2026-11-30"),
    question.Query(words=("xyzzyplugh",)),
]


@pytest.mark.parametrize("n", range(len(QUERIES)))
def test_search_and_fetch_allow_the_same_documents_as_whoosh(tmp_path: Path, n: int) -> None:
    """Rankings differ; which documents a query, its filters and masks allow must not."""
    q = QUERIES[n]
    base, other = _both(tmp_path)
    with engine.Searcher(_v(base)) as w, fts5.Searcher(_v(other)) as f:
        found = [{h.fields["docid"] for h in s.search(q, limit=10_000)} for s in (w, f)]
        assert found[0] == found[1]
        every = [(str(d["docid"]), 1.0) for d in _whoosh_stored(base)[0]]  # type: ignore[index]
        fetched = [{h.fields["docid"] for h in s.fetch(q, every)} for s in (w, f)]
        assert fetched[0] == fetched[1]
        held = [sorted(h.phrases for h in s.fetch(q, every)) for s in (w, f)]
        assert held[0] == held[1]
        assert w.doc_count() == f.doc_count() and w.terms("Running dogs") == f.terms("Running dogs")
    # every set compared holds something, but the last query's
    assert bool(found[0]) == (n < len(QUERIES) - 1)


# --- switching, and what is never trusted ---------------------------------------------------


def test_switching_engine_rebuilds_once_with_a_warning(vault: Path) -> None:
    first = refresh.refresh(_v(vault))
    assert first.rebuilt and manifest.load_manifest(_v(vault)).engine == "whoosh"  # type: ignore[union-attr]
    use_engine(vault, "fts5")
    switched = recall(_v(vault), "stripe webhook")
    assert switched.index.rebuilt and switched.hits
    assert any("engine is now fts5" in w for w in switched.index.warnings)
    assert [p.name for p in _db(vault).parent.iterdir()] == [fts5.DB]
    gens = [p for p in manifest.index_dir(_v(vault)).iterdir() if p.name.startswith("g-")]
    assert len(gens) == 1  # the Whoosh generation is gone
    assert not recall(_v(vault), "stripe").index.rebuilt
    res = run_cli("index", "--vault", str(use_engine(vault, "whoosh")), "--json")
    assert res.exit_code == 0, res.stderr
    assert json.loads(res.stdout)["index"]["rebuilt"]
    assert manifest.load_manifest(_v(vault)).engine == "whoosh"  # type: ignore[union-attr]


def _foreign_db(path: Path, path_in_vault: str) -> None:
    """A database with fts5's own schema holding a document no note says."""
    path.unlink(missing_ok=True)
    db = sqlite3.connect(path)
    db.executescript(fts5.SCHEMA)
    db.execute("INSERT INTO meta VALUES ('schema', ?), ('language', 'en')", (str(fts5.FTS_SCHEMA),))
    db.execute(
        "INSERT INTO docs VALUES (1, ?, ?, 'note', 'Evil', '', 'section', NULL, NULL, NULL, "
        "NULL, NULL, NULL, NULL, NULL, 1, 2, 0, '-', ',,')",
        (path_in_vault + "#0", path_in_vault),
    )
    db.execute("INSERT INTO fts VALUES ('evil', '', '', '', 'zebracorn')")
    db.commit()
    db.close()


def test_a_foreign_database_is_never_opened_but_rebuilt(vault: Path) -> None:
    use_engine(vault, "fts5")
    refresh.refresh(_v(vault))
    path = _db(vault)
    _foreign_db(path, "wiki/evil.md")  # what git (or anything) could put there
    fts5.forget_searcher(_v(vault))
    result = recall(_v(vault), "zebracorn stripe")
    assert "wiki/evil.md" not in [h.path for h in result.hits] and result.hits
    assert result.index.rebuilt and result.index.warnings == (refresh.UNPROVEN,)
    with pytest.raises(manifest.UnprovenIndex):  # and the searcher refuses it on its own
        m = manifest.load_manifest(_v(vault))
        assert m is not None
        _foreign_db(_db(vault), "wiki/evil.md")
        fts5.Searcher(_v(vault))


def test_a_corrupt_database_that_passes_the_listing_is_rebuilt(vault: Path) -> None:
    use_engine(vault, "fts5")
    refresh.refresh(_v(vault))
    path = _db(vault)
    st = path.stat()
    data = bytearray(path.read_bytes())
    data[0:4096] = b"\x00garbage" * 512  # the header page, same size
    path.write_bytes(bytes(data))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))  # the listing still matches
    assert manifest.proven(_v(vault), manifest.load_manifest(_v(vault)))  # type: ignore[arg-type]
    fts5.forget_searcher(_v(vault))
    result = recall(_v(vault), "stripe webhook")
    assert result.hits and result.index.rebuilt
    assert any("could not be opened" in w for w in result.index.warnings)


def test_a_query_never_writes(vault: Path) -> None:
    use_engine(vault, "fts5")
    assert recall(_v(vault), "stripe").hits
    path = _db(vault)
    before = (path.stat().st_mtime_ns, path.stat().st_size, sorted(os.listdir(path.parent)))
    for q in ("stripe", "capacity slot", '"walk-in reserve"'):
        recall(_v(vault), q)
    after = (path.stat().st_mtime_ns, path.stat().st_size, sorted(os.listdir(path.parent)))
    assert before == after
    s = backends.engine_for(_v(vault)).searcher_for(_v(vault))
    with pytest.raises(sqlite3.OperationalError, match=r"readonly|read-only|query_only"):
        s.db.execute("INSERT INTO meta VALUES ('x', 'y')")


def test_a_required_phrase_held_by_thousands_of_documents(tmp_path: Path) -> None:
    """More candidates than fit in one statement (fts5.INLINE_IDS) are checked in Python."""
    root = tmp_path / "big"
    (root / "notes").mkdir(parents=True)
    (root / "vaultmem.toml").write_text('language = "en"\n\n[recall]\nmode = "keyword"\n')
    n = fts5.INLINE_IDS + 100
    for i in range(n):
        extra = " gamma" if i % 2 else ""
        (root / f"notes/n{i}.md").write_text(f"# Note {i}\n\nalpha beta{extra}\n")
    use_engine(root, "fts5")
    hits = recall(_v(root), 'phrase:"alpha beta" gamma', limit=n).hits
    assert len(hits) == n
    assert {h.path for h in hits[: n // 2]} == {f"notes/n{i}.md" for i in range(1, n, 2)}
