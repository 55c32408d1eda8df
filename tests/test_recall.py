"""recall(): never stale, filters, phrases, hidden facts, log entries and decisions, the CLI."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from tests._cli import run_cli, use_engine
from vaultmem.core.errors import LockTimeoutError, UsageError
from vaultmem.core.locking import exclusive
from vaultmem.core.vault import Vault
from vaultmem.search import manifest, refresh
from vaultmem.search.query import RecallFilters, parse_query, recall


def _v(path: Path) -> Vault:
    return Vault.open(path)


def _write(vault: Path, rel: str, text: str) -> Path:
    path = vault / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def _paths(vault: Path, query: str, **kw: object) -> list[str]:
    return [h.path for h in recall(_v(vault), query, **kw).hits]  # type: ignore[arg-type]


FACT = """---
name: {name}
description: {desc}
type: {type}
id: {id}
status: {status}
---

{body}
"""


def _fact(vault: Path, rel: str, *, status: str = "active", body: str, type_: str = "fact") -> None:
    stem = rel.rsplit("/", 1)[-1][:-3]
    _write(
        vault,
        rel,
        FACT.format(
            name=stem, desc=body[:40], type=type_, id=f"m-{stem}", status=status, body=body
        ),
    )


# --- never stale --------------------------------------------------------------------------


def test_note_written_to_disk_is_found_by_the_very_next_recall(vault: Path) -> None:
    assert _paths(vault, "pangolin") == []  # builds the index
    _write(vault, "wiki/Animals.md", "# Animals\n\nThe pangolin eats ants.\n")
    result = recall(_v(vault), "pangolin")
    assert [h.path for h in result.hits] == ["wiki/Animals.md"]
    assert result.index.refreshed == 1 and not result.index.stale


def test_edit_and_deletion_are_reflected_at_once(vault: Path) -> None:
    path = _write(vault, "wiki/Animals.md", "# Animals\n\nThe pangolin eats ants.\n")
    assert _paths(vault, "pangolin") == ["wiki/Animals.md"]
    path.write_text("# Animals\n\nThe aardvark eats termites, at length.\n", encoding="utf-8")
    assert _paths(vault, "pangolin") == []
    assert _paths(vault, "aardvark") == ["wiki/Animals.md"]
    path.unlink()
    result = recall(_v(vault), "aardvark")
    assert result.hits == () and result.index.removed == 1


def test_hits_carry_provenance(vault: Path) -> None:
    hit = recall(_v(vault), "stripe webhook race").hits[0]
    assert hit.path == "memory/stripe-webhook-race.md" and hit.kind == "memory"
    assert hit.id and hit.id.startswith("m-") and hit.date and hit.rank == 1
    lines = (vault / hit.path).read_text().splitlines()
    assert "webhook" in "\n".join(lines[hit.line_start - 1 : hit.line_end]).lower()
    assert "**" in hit.snippet


def test_stop_words_do_not_drown_results(vault: Path) -> None:
    assert _paths(vault, "what is the capacity of a slot")[0] == "memory/capacity-per-slot.md"
    assert _paths(vault, "the of and a") == []


def test_one_hit_per_note_but_each_log_entry_its_own(vault: Path) -> None:
    sections = "\n".join(f"## Part {i}\n\nmarmoset number {i}\n" for i in range(5))
    _write(vault, "wiki/Monkeys.md", "# Monkeys\n\n" + sections)
    assert _paths(vault, "marmoset") == ["wiki/Monkeys.md"]


def test_reused_searcher_follows_refreshes_and_rebuilds(vault: Path) -> None:
    v = _v(vault)
    assert recall(v, "stripe").hits  # opens (and keeps) a searcher
    refresh.refresh(v, wait=None, rebuild=True)  # a new generation; the old one is deleted
    _write(vault, "wiki/new.md", "# New\nchinchilla\n")
    assert [h.path for h in recall(v, "chinchilla").hits] == ["wiki/new.md"]
    assert recall(v, "stripe").hits


def test_a_kept_searcher_reopens_only_what_changed_and_answers_as_a_new_one(vault: Path) -> None:
    """After each commit the kept searcher is renewed (the unchanged segments' readers kept,
    the rest opened), never served stale: edits, deletes and whoosh's segment merges over a
    dozen refreshes answer exactly as a searcher opened from scratch does."""
    from vaultmem.search import engine

    v = _v(vault)
    refresh.refresh(v)
    first = engine.searcher_for(v)
    words = ["stripe", "capacity", "zorblax", "quendel", "webhook"]
    for i in range(12):
        _write(vault, f"wiki/n{i % 4}.md", f"# N\n{words[2 + i % 2]} round {i}\n")
        if i % 5 == 4:
            (vault / "wiki" / f"n{i % 4}.md").unlink()
        refresh.refresh(v)
        kept = engine.searcher_for(v)
        assert kept.ix is first.ix  # renewed, not opened again
        with engine.Searcher(v) as new:
            assert kept.doc_count() == new.doc_count()
            for word in words:
                q = parse_query(word)
                got = [(h.fields["docid"], round(h.score, 6)) for h in kept.search(q, limit=20)]
                want = [(h.fields["docid"], round(h.score, 6)) for h in new.search(q, limit=20)]
                assert got == want, (i, word)
    assert _paths(vault, "quendel round 11")[0] == "wiki/n3.md"


def test_empty_vault_has_no_hits(tmp_path: Path) -> None:
    (tmp_path / "vaultmem.toml").write_text('language = "en"\n')
    result = recall(_v(tmp_path), "anything")
    assert result.hits == () and result.index.files == 0 and not result.index.warnings


# --- query syntax and filters -------------------------------------------------------------


def test_parse_query_splits_words_phrases_and_filters() -> None:
    q = parse_query('stripe "walk-in reserve" kind:memory tag:#gym title:capacity under:wiki/')
    # a quoted phrase ranks (its words count as words too); it is not required
    assert q.words == ("stripe", "walk-in", "reserve") and q.soft_phrases == ("walk-in reserve",)
    assert q.phrases == ()
    assert q.kinds == ("memory",) and q.tags == ("gym",) and q.under == ("wiki",)
    assert q.field_words == (("title", "capacity"),)
    strict = parse_query('stripe "walk-in reserve"', RecallFilters(strict=True))
    assert strict.phrases == ("walk-in reserve",) and strict.words == ("stripe",)
    assert parse_query('phrase:"walk-in reserve"').phrases == ("walk-in reserve",)
    with pytest.raises(UsageError):
        parse_query("x", RecallFilters(kind="nonsense"))
    with pytest.raises(UsageError):
        parse_query("x", RecallFilters(since="last tuesday"))


def test_recall_filters_are_one_value_from_every_face() -> None:
    from vaultmem.search.documents import Kind

    f = RecallFilters.of(kind=Kind.MEMORY, type_="decision", under="wiki", strict=True)
    assert f == RecallFilters(kind="memory", type="decision", under="wiki", strict=True)
    with pytest.raises(TypeError, match="unknown recall filter"):
        RecallFilters.of(colour="blue")


def test_strict_phrases_need_the_words_together(vault: Path) -> None:
    _write(vault, "wiki/apart.md", "# Apart\n\nThe reserve was checked; walk-ins later.\n")
    for together in (
        _paths(vault, '"walk-in reserve"', strict=True),
        _paths(vault, 'phrase:"walk-in reserve"'),
    ):
        assert "wiki/Glossary.md" in together and "wiki/apart.md" not in together
    assert "wiki/apart.md" in _paths(vault, "walk-in reserve")


def test_a_quoted_title_in_a_question_ranks_first_and_never_empties(vault: Path) -> None:
    """Issue 24: "Would Melanie likely enjoy the song "The Four Seasons" by Vivaldi?" got 0
    hits, because a quoted phrase was a hard filter even when no note held it."""
    _write(vault, "wiki/music.md", "# Music\n\nMelanie loves classical music, Vivaldi most.\n")
    _write(
        vault,
        "wiki/seasons.md",
        "# Playlist\n\nThe team played The Four Seasons at the party; seasons change.\n",
    )
    _write(
        vault,
        "wiki/four.md",
        "# Four\n\nVivaldi wrote four concertos, one a season; Melanie sang four songs.\n",
    )
    question = 'Would Melanie likely enjoy the song "The Four Seasons" by Vivaldi?'
    hits = _paths(vault, question)
    assert hits[0] == "wiki/seasons.md"  # the only note holding the phrase
    assert {"wiki/music.md", "wiki/four.md"} <= set(hits)  # the others still rank
    assert _paths(vault, 'Would Melanie enjoy "The Winter Concerto" by Vivaldi?')  # held nowhere
    assert _paths(vault, 'Melanie "The Winter Concerto"', strict=True) == []
    assert _paths(vault, 'Melanie phrase:"The Winter Concerto"') == []
    # the command line: quoted text ranks by default, --strict filters
    res = run_cli("recall", question, "--json", "--vault", str(vault))
    assert res.exit_code == 0 and json.loads(res.stdout)["hits"][0]["path"] == "wiki/seasons.md"
    res = run_cli("recall", '"The Winter Concerto"', "--strict", "--json", "--vault", str(vault))
    assert res.exit_code == 0 and json.loads(res.stdout)["hits"] == []


def test_filters_kind_type_under_since_tag_and_field(vault: Path) -> None:
    assert set(h.kind for h in recall(_v(vault), "capacity", kind="memory").hits) == {"memory"}
    typed = recall(_v(vault), "capacity", type_="fact").hits
    assert typed and all(h.path.startswith("memory/") for h in typed)
    assert all(h.path.startswith("wiki/") for h in recall(_v(vault), "stripe", under="wiki").hits)
    _write(vault, "wiki/old.md", "---\ndate: 2020-01-01\ntags: [zoo]\n---\n# Old\nokapi\n")
    _write(vault, "wiki/new.md", "---\ndate: 2030-01-01\n---\n# New\nokapi\n")
    assert _paths(vault, "okapi", since="2029-12-31") == ["wiki/new.md"]
    assert _paths(vault, "okapi tag:zoo") == ["wiki/old.md"]
    assert _paths(vault, "title:new okapi") == ["wiki/new.md"]
    assert _paths(vault, "okapi under:nowhere") == []


def test_agent_sees_shared_notes_and_its_own_folder(vault: Path) -> None:
    _write(vault, "agents/ella/notes/x.md", "# X\nquetzal for ella\n")
    _write(vault, "agents/lyra/notes/y.md", "# Y\nquetzal for lyra\n")
    _write(vault, "wiki/z.md", "# Z\nquetzal for all\n")
    seen = set(_paths(vault, "quetzal", agent="ella"))
    assert seen == {"agents/ella/notes/x.md", "wiki/z.md"}
    assert len(_paths(vault, "quetzal")) == 3


def test_a_filter_nothing_matches_shows_nothing_not_everything(tmp_path: Path) -> None:
    # whoosh reads an empty set of allowed documents as "no filter": an agent with no notes of
    # its own, in a vault with nothing shared, must not see another agent's private folder
    (tmp_path / "vaultmem.toml").write_text('language = "en"\n')
    _write(tmp_path, "agents/lyra/notes/secret.md", "# Secret\nquetzal plans of lyra\n")
    assert _paths(tmp_path, "quetzal") == ["agents/lyra/notes/secret.md"]
    assert _paths(tmp_path, "quetzal", agent="ella") == []  # the same open searcher, reused
    assert _paths(tmp_path, "quetzal", agent="lyra") == ["agents/lyra/notes/secret.md"]


def test_retracted_and_expired_are_hidden_unless_asked(vault: Path) -> None:
    _fact(vault, "memory/old-rule.md", status="retracted", body="The gibbon rule was wrong.")
    _fact(vault, "memory/new-rule.md", body="The gibbon rule now holds.")
    _fact(vault, "agents/ella/bank/2026-01-01-a.md", status="rejected", body="gibbon rejected")
    _fact(vault, "agents/ella/bank/2026-01-01-b.md", status="pending", body="gibbon pending")
    bank_expired = "---\nstatus: approved\nvalid_until: 2001-01-01\n---\ngibbon stale\n"
    _write(vault, "agents/ella/bank/2026-01-01-c.md", bank_expired)
    visible = set(_paths(vault, "gibbon"))
    assert visible == {"memory/new-rule.md", "agents/ella/bank/2026-01-01-b.md"}
    everything = set(_paths(vault, "gibbon", include_retracted=True))
    assert len(everything) == 5


def test_explain_lists_what_contributed(vault: Path) -> None:
    hit = recall(_v(vault), "stripe webhook", explain=True).hits[0]
    terms = [t for t, _s in hit.explain]
    assert any(t.startswith("title:") for t in terms) and all(s > 0 for _t, s in hit.explain)
    assert "explain" in recall(_v(vault), "stripe", explain=True).to_dict()["hits"][0]
    assert "explain" not in recall(_v(vault), "stripe").to_dict()["hits"][0]


# --- log entries and decisions ------------------------------------------------------------


def test_log_entries_and_decisions_are_one_document_each(vault: Path) -> None:
    from tests._layer3_helpers import make_keys
    from vaultmem.nexus import log
    from vaultmem.nexus.decisions import decide

    # a copy of example-vault: a person approves the new key (an unapproved key's entries
    # fail verification, and recall leaves them out)
    v = make_keys(vault, "ella")
    log.append(v, "ella", "Deployed the wombat service", channel="ops", body="all green")
    log.append(v, "ella", "Unrelated note about lunch", channel="general")
    first = decide(v, "ella", "Use wombat queues", why="they are simple")
    decide(v, "ella", "Use wombat streams", why="queues lost data", supersedes=first.decision.id)
    hits = recall(_v(vault), "wombat").hits
    # decide() also announces each decision on the live log: those are log entries too
    logs = [h for h in hits if h.kind == "log" and "service" in h.title]
    decisions = [h for h in hits if h.kind == "decision"]
    assert len(logs) == 1 and logs[0].id and logs[0].agent == "ella" and logs[0].date
    assert logs[0].title == "Deployed the wombat service"
    text = (vault / "nexus/live-context.md").read_text().splitlines()
    assert "wombat" in "\n".join(text[logs[0].line_start - 1 : logs[0].line_end])
    assert [d.title for d in decisions] == ["Use wombat streams"]  # superseded one hidden
    every = recall(_v(vault), "wombat", kind="decision", include_retracted=True).hits
    assert len(every) == 2


# --- concurrency and locks ----------------------------------------------------------------


def test_recall_while_another_process_refreshes_searches_the_last_index(vault: Path) -> None:
    refresh.refresh(_v(vault))
    _write(vault, "wiki/new.md", "# New\nmeerkat\n")
    with exclusive(manifest.refresh_lock(_v(vault)), 1.0, what="index"):
        result = recall(_v(vault), "stripe meerkat")
        assert result.index.stale and result.index.warnings and result.hits
        assert "wiki/new.md" not in [h.path for h in result.hits]
    assert _paths(vault, "meerkat") == ["wiki/new.md"]


def test_index_command_times_out_with_exit_6(vault: Path) -> None:
    cfg = vault / "vaultmem.toml"
    cfg.write_text(cfg.read_text().replace("lock_timeout = 10.0", "lock_timeout = 0.2"))
    refresh.refresh(_v(vault))
    _write(vault, "wiki/new.md", "# New\nmeerkat\n")
    with exclusive(manifest.refresh_lock(_v(vault)), 1.0, what="index"):
        res = run_cli("index", "--vault", str(vault))
        assert res.exit_code == 6, res.stderr
        with pytest.raises(LockTimeoutError):
            refresh.refresh(_v(vault), wait=None)


def _recall_loop(vault: str, rounds: int, out: object) -> None:
    errors = []
    for i in range(rounds):
        try:
            result = recall(Vault.open(vault), f"lemur {i % 7} stripe")
            assert result.hits
        except Exception as exc:  # pragma: no cover - reported to the parent
            errors.append(f"{type(exc).__name__}: {exc}")
    out.put(errors)  # type: ignore[attr-defined]


@pytest.mark.slow
@pytest.mark.parametrize("engine", ["whoosh", "fts5"])
def test_concurrent_recalls_during_writes_never_error_or_hang(vault: Path, engine: str) -> None:
    """Readers in three processes while the index is refreshed under them (FTS5: read-only
    connections and a refresh writing the same database in place)."""
    import multiprocessing as mp

    use_engine(vault, engine)
    ctx = mp.get_context("spawn")
    refresh.refresh(_v(vault))
    queue = ctx.Queue()
    procs = [ctx.Process(target=_recall_loop, args=(str(vault), 25, queue)) for _ in range(3)]
    for p in procs:
        p.start()
    deadline = time.monotonic() + 60
    n = 0
    while any(p.is_alive() for p in procs) and time.monotonic() < deadline:
        rel = f"wiki/lemur-{n % 5}.md"
        if n % 3 == 2:
            (vault / rel).unlink(missing_ok=True)
        else:
            _write(vault, rel, f"# Lemur {n}\n\nlemur {n % 7} sighting {n}\n")
        n += 1
        time.sleep(0.01)
    results = [queue.get(timeout=30) for _ in procs]
    for p in procs:
        p.join(timeout=10)
        assert p.exitcode == 0
    assert results == [[], [], []]
    # and the index matches the files afterwards
    expected = {f"wiki/{p.name}" for p in (vault / "wiki").glob("lemur-*.md")}
    assert set(_paths(vault, "lemur sighting", limit=50)) == expected


# --- CLI ----------------------------------------------------------------------------------


def test_cli_recall_json_contract(vault: Path) -> None:
    res = run_cli("recall", "stripe webhook", "--vault", str(vault), "--json", "--limit", "2")
    assert res.exit_code == 0, res.stderr
    data = json.loads(res.stdout)
    assert set(data) == {"query", "mode", "index", "hits"} and data["query"] == "stripe webhook"
    assert data["mode"] == "keyword"  # no model made on this machine: keyword by default
    assert {"files", "refreshed", "age_seconds", "stale"} <= set(data["index"])
    assert len(data["hits"]) == 2
    keys = {"rank", "score", "path", "kind", "title", "heading", "line_start", "line_end"}
    assert keys | {"snippet", "id", "agent", "date", "priority"} == set(data["hits"][0])


def test_cli_recall_table_and_errors(vault: Path) -> None:
    res = run_cli("recall", "stripe", "--vault", str(vault), "--explain")
    assert res.exit_code == 0 and "Stripe" in res.stdout and "index:" in res.stderr
    assert run_cli("recall", "x", "--vault", str(vault), "--kind", "bogus").exit_code == 2
    assert run_cli("recall", "x", "--vault", str(vault), "--limit", "0").exit_code == 2


def test_cli_index_and_rebuild(vault: Path) -> None:
    (vault / "wiki" / "bad.md").write_bytes(b"\xff\xfe bad \n")
    res = run_cli("index", "--rebuild", "--vault", str(vault))
    assert res.exit_code == 0 and "Rebuilt index" in res.stdout and "bad-encoding" in res.stdout
    res = run_cli("index", "--vault", str(vault), "--json")
    data = json.loads(res.stdout)
    assert data["index"]["refreshed"] == 0 and data["problems"][0]["path"] == "wiki/bad.md"


def test_append_and_read_do_not_import_whoosh(vault: Path) -> None:
    import subprocess
    import sys

    code = (
        "import sys; from vaultmem.cli.app import run\n"
        "try: run(['read', '--vault', sys.argv[1], '--agent', 'ella'])\n"
        "except SystemExit: pass\n"
        "heavy = ('whoosh', 'watchdog', 'numpy', 'tokenizers', 'safetensors')\n"
        "assert not [m for m in sys.modules if m.startswith(heavy)]\n"
    )
    env = {**os.environ, "VAULTMEM_VAULT": str(vault)}
    res = subprocess.run([sys.executable, "-c", code, str(vault)], env=env, capture_output=True)
    assert res.returncode == 0, res.stderr


def test_machine_notes_do_not_outrank_facts(vault: Path) -> None:
    """keys.md (tagged vaultmem/keys) says "keys" a dozen times and holds no fact."""
    _fact(vault, "memory/api-keys-rotate.md", body="The API keys of the provider rotate yearly.")
    assert _paths(vault, "keys")[0] == "memory/api-keys-rotate.md"
    assert _paths(vault, "who rotates the keys")[0] == "memory/api-keys-rotate.md"
    # asked for by what it is, it is still found first
    assert _paths(vault, "signing keys")[0].endswith("/keys.md")


def test_a_note_with_every_word_outranks_one_word_in_a_title(vault: Path) -> None:
    filler = " ".join(["the team met to go over the plan for the release"] * 8)
    _write(vault, "wiki/answer.md", f"# Meeting notes\n{filler} zorblax {filler} quentify\n")
    _write(vault, "wiki/decoy-a.md", f"# Zorblax\nzorblax {filler}\n")
    _write(vault, "wiki/decoy-b.md", f"# Quentify\nquentify {filler}\n")
    _write(vault, "wiki/decoy-c.md", f"# Malvoro overview\nmalvoro {filler}\n")
    assert _paths(vault, "zorblax quentify")[0] == "wiki/answer.md"
    _write(vault, "wiki/answer3.md", f"# Notes\n{filler} zorblax {filler} quentify malvoro\n")
    assert _paths(vault, "zorblax quentify malvoro")[0] == "wiki/answer3.md"
    # the phrase itself is nowhere: strict finds nothing, a plain quote still ranks the words
    assert _paths(vault, '"zorblax quentify"', strict=True) == []
    assert _paths(vault, '"zorblax quentify"')[0] == "wiki/answer.md"


@pytest.mark.parametrize("query", ["", "   "])
def test_an_empty_question_is_a_usage_error(vault: Path, query: str) -> None:
    from tests._cli import run_cli

    res = run_cli("recall", query, "--vault", str(vault))
    assert res.exit_code == 2 and "recall needs a question" in res.stderr and res.stdout == ""


def test_the_table_names_the_title_once_then_the_heading_under_it(vault: Path) -> None:
    """Issue 25: a hit showed "Stripe integration › Stripe integration > Webhooks"."""
    (vault / "wiki" / "gateway.md").write_text(
        "# Zanzibar gateway\n\nWe pay through it.\n\n## Retries\n\nZanzibar retries 5 times.\n",
        encoding="utf-8",
    )
    res = run_cli("recall", "zanzibar retries", "--vault", str(vault), "--mode", "keyword")
    assert res.exit_code == 0, res.stderr
    flat = " ".join(res.stdout.replace("│", " ").split())
    assert "Zanzibar gateway › Retries" in flat, res.stdout
    assert "Zanzibar gateway › Zanzibar gateway" not in flat
    data = json.loads(run_cli("recall", "zanzibar retries", "--vault", str(vault), "--json").stdout)
    assert data["hits"][0]["heading"] == "Zanzibar gateway > Retries"  # the JSON keeps the path


def test_json_says_why_a_lower_score_ranks_first(vault: Path) -> None:
    """Issue 25: scores in --json did not explain the order (…0.72, 6.87…): a short lookup
    ranks notes holding more of its words first. `priority` carries that, and hits are in
    (priority, score) order."""
    (vault / "wiki" / "queue.md").write_text(
        "# Queue\n\nQueue queue queue. The queue worker drains the queue. Queue retries.\n"
    )
    (vault / "wiki" / "long.md").write_text(
        "# Worker notes\n\nA long page about deploys, staging, billing, invoices, customers, "
        "support, on-call rotation, dashboards and alerts; the queue once, by zephyr.\n"
    )
    res = run_cli("recall", "queue zephyr", "--vault", str(vault), "--json", "--mode", "keyword")
    hits = json.loads(res.stdout)["hits"]
    assert [h["path"] for h in hits[:2]] == ["wiki/long.md", "wiki/queue.md"]
    assert hits[0]["score"] < hits[1]["score"]  # the score alone does not explain it
    assert hits[0]["priority"] > hits[1]["priority"]
    order = [(-h["priority"], -h["score"]) for h in hits]
    assert order == sorted(order)


def test_a_title_counts_once_not_again_in_every_heading(vault: Path) -> None:
    """A note's title is in the title field; its sections' headings used to repeat it, so a
    word of a dated title (a month) counted three times (title, heading, body) and outranked
    notes holding the question's own words (LoCoMo: 'What did John attend with his colleagues
    in March 2023?' found March sessions first, the April one that says 'my colleagues and I
    went to a convention last month' 17th). A section's own heading still matches, and a hit
    still shows the whole heading path."""
    _write(vault, "sessions/march-3.md", "# Session (3 March, 2023)\n\nJohn talked about lunch.\n")
    _write(vault, "wiki/stripe.md", "# Stripe integration\n\n## Webhooks\n\nRetries back off.\n")
    hits = recall(_v(vault), "march session", explain=True, mode="keyword").hits
    march = next(h for h in hits if h.path == "sessions/march-3.md")
    terms = [t for t, _s in march.explain]
    assert "title:march" in terms and not any(t.startswith("heading:") for t in terms), terms
    hits = recall(_v(vault), "stripe webhooks", explain=True, mode="keyword").hits
    stripe = next(h for h in hits if h.path == "wiki/stripe.md" and "Webhooks" in h.heading)
    terms = [t for t, _s in stripe.explain]
    assert "heading:webhook" in terms and "heading:stripe" not in terms, terms
    assert stripe.heading == "Stripe integration > Webhooks"
