"""The index: documents and line ranges, freshness against the manifest, bad files, rebuilds."""

from __future__ import annotations

import itertools
import json
import os
import shutil
from pathlib import Path

import pytest

from tests._cli import run_cli
from vaultmem.core.vault import Vault
from vaultmem.search import documents, engine, manifest, question, refresh, walk
from vaultmem.search.query import recall


def _v(path: Path) -> Vault:
    return Vault.open(path)


def _write(vault: Path, rel: str, text: str | bytes) -> Path:
    path = vault / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def _paths(vault: Path, query: str, **kw: object) -> list[str]:
    return [h.path for h in recall(_v(vault), query, **kw).hits]  # type: ignore[arg-type]


def _problems(vault: Path) -> dict[str, str]:
    return {p.path: p.kind for p in manifest.index_problems(_v(vault))}


# --- documents and line ranges ------------------------------------------------------------

NOTE = """---
title: Climbing walls
tags: [gym, walls]
---
Intro line about holds.

# Bouldering

Bouldering walls are short.
```
# not a heading, inside code
```

## Grades

Fontainebleau grades apply.
# Lead climbing
Ropes and quickdraws.
"""


def test_sections_have_heading_paths_and_file_line_ranges() -> None:
    docs, problems = documents.documents("wiki/walls.md", NOTE)
    assert problems == []
    lines = NOTE.splitlines()
    by_heading = {d.heading: d for d in docs}
    assert set(by_heading) == {"", "Bouldering", "Bouldering > Grades", "Lead climbing"}
    for d in docs:
        span = "\n".join(lines[d.line_start - 1 : d.line_end])
        assert span.strip() == d.body.strip()
    assert by_heading["Bouldering"].line_start == 7  # the heading line itself
    assert "# not a heading" in by_heading["Bouldering"].body
    assert by_heading["Bouldering > Grades"].line_start == 14
    assert by_heading["Lead climbing"].line_end == 18
    assert all(d.title == "Climbing walls" and d.tags == "gym,walls" for d in docs)


def test_long_sections_become_passages_plus_the_whole() -> None:
    body = "\n".join(f"line {i} " + "word " * 20 for i in range(40))
    docs, _ = documents.documents("notes/long.md", "# Long\n" + body + "\n")
    units = [d.unit for d in docs]
    assert units.count("whole") == 1 and units.count("passage") >= 4
    passages = [d for d in docs if d.unit == "passage"]
    assert passages[0].line_start == 1 and passages[-1].line_end == 41
    for a, b in itertools.pairwise(passages):
        assert b.line_start == a.line_end + 1 - documents.PASSAGE_OVERLAP


@pytest.mark.parametrize(
    ("rel", "kind", "agent"),
    [
        ("memory/x.md", "memory", ""),
        ("memory/MEMORY.md", "note", ""),
        ("agents/ella/memory/x.md", "memory", "ella"),
        ("agents/ella/IDENTITY.md", "identity", "ella"),
        ("agents/ella/bank/2026-01-01-x.md", "bank", "ella"),
        ("agents/ella/checkpoint.md", "checkpoint", "ella"),
        ("agents/ella/notes/x.md", "note", "ella"),
        ("nexus/live-context.md", "log", ""),
        ("nexus/archive/2026-01.md", "log", ""),
        ("nexus/decisions.md", "decision", ""),
        ("nexus/project-state.md", "state", ""),
        ("wiki/x.md", "note", ""),
    ],
)
def test_kind_from_the_vault_layout(rel: str, kind: str, agent: str) -> None:
    assert documents.kind_of(rel) == (kind, agent)


def test_line_ranges_point_at_the_matching_lines(vault: Path) -> None:
    text = "# Top\n\nfiller\n\n## Ropes\n\nThe zygomorphic rope is blue.\n\n## Other\n\nnothing\n"
    _write(vault, "wiki/ropes.md", text)
    hit = recall(_v(vault), "zygomorphic").hits[0]
    assert (hit.path, hit.heading) == ("wiki/ropes.md", "Top > Ropes")
    lines = text.splitlines()
    assert lines[hit.line_start - 1] == "## Ropes"
    assert any("zygomorphic" in ln for ln in lines[hit.line_start - 1 : hit.line_end])
    assert "**zygomorphic**" in hit.snippet


# --- freshness ----------------------------------------------------------------------------


def test_refresh_reindexes_only_what_changed(vault: Path) -> None:
    v = _v(vault)
    first = refresh.refresh(v)
    assert first.rebuilt and first.files > 10
    assert refresh.refresh(v).refreshed == 0
    _write(vault, "wiki/new.md", "# New\nquokka\n")
    (vault / "wiki" / "Glossary.md").unlink()
    fresh = refresh.refresh(v)
    assert (fresh.refreshed, fresh.removed, fresh.rebuilt) == (1, 1, False)
    assert refresh.refresh(v).refreshed == 0


def test_same_size_same_mtime_edit_is_caught_by_hash(vault: Path) -> None:
    path = _write(vault, "wiki/racy.md", "# Racy\nalpha wombat\n")
    assert _paths(vault, "wombat") == ["wiki/racy.md"]
    st = path.stat()
    path.write_text("# Racy\nalpha numbat\n", encoding="utf-8")  # same size
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert _paths(vault, "numbat") == ["wiki/racy.md"]
    assert _paths(vault, "wombat") == []


def test_a_touch_that_keeps_the_content_costs_a_read_not_a_reindex(vault: Path) -> None:
    """A checkout, a copy or a sync tool moves every mtime; the content hash says nothing changed,
    and an edit that keeps the size is still caught."""
    v = _v(vault)
    refresh.refresh(v)
    notes = sorted(vault.glob("wiki/*.md"))
    for i, path in enumerate(notes):
        os.utime(path, ns=(1_000_000_000 * (i + 1),) * 2)
    fresh = refresh.refresh(v)
    assert (fresh.refreshed, fresh.rebuilt) == (0, False)
    assert refresh.refresh(v).refreshed == 0  # the new mtimes were recorded
    text = notes[0].read_text(encoding="utf-8")
    swapped = text.replace("a", "e", 1)
    assert swapped != text and len(swapped) == len(text)
    notes[0].write_text(swapped, encoding="utf-8")
    os.utime(notes[0], ns=(5_000_000_000,) * 2)
    assert refresh.refresh(v).refreshed == 1


def test_language_change_rebuilds(vault: Path) -> None:
    refresh.refresh(_v(vault))
    cfg = vault / "vaultmem.toml"
    cfg.write_text(cfg.read_text().replace('language = "en"', 'language = "it"'))
    fresh = refresh.refresh(_v(vault))
    assert fresh.rebuilt and any("language" in w for w in fresh.warnings)


def test_refresh_handles_a_file_that_vanishes_after_the_walk(vault: Path) -> None:
    v = _v(vault)
    refresh.refresh(v)
    _write(vault, "wiki/ghost.md", "# Ghost\nspectral\n")
    current, skipped = walk.walk(v)
    (vault / "wiki" / "ghost.md").unlink()
    loaded = manifest.load_manifest(v)
    assert loaded is not None
    plan = refresh._plan(v, loaded, current, skipped)
    assert "wiki/ghost.md" in plan.changed
    ix = engine.open_generation(v, loaded)
    try:
        refreshed, _removed = refresh._apply(v, ix, loaded, plan, bulk=False, progress=None)
    finally:
        ix.close()
    assert refreshed == 0 and "wiki/ghost.md" not in loaded.files


# --- what people leave in a vault ---------------------------------------------------------


def test_broken_yaml_is_indexed_as_text_and_reported(vault: Path, cli: object) -> None:
    _write(vault, "wiki/broken.md", "---\ntitle: [unclosed\n---\n# Broken\nplatypus here\n")
    assert _paths(vault, "platypus") == ["wiki/broken.md"]
    assert _problems(vault)["wiki/broken.md"] == "broken-frontmatter"
    res = run_cli("status", "--vault", str(vault), "--json")
    listed = {(p["path"], p["kind"]) for p in json.loads(res.stdout)["problems"]}
    assert ("wiki/broken.md", "broken-frontmatter") in listed


def test_bad_bytes_empty_and_binary_files(vault: Path) -> None:
    _write(vault, "wiki/latin1.md", "# Caff\xe8\nespresso ristretto\n".encode("latin-1"))
    _write(vault, "wiki/empty.md", b"")
    _write(vault, "wiki/blob.md", b"\x89PNG\r\n\x1a\n\x00\x00\x00binary ocelot\x00")
    assert _paths(vault, "ristretto") == ["wiki/latin1.md"]
    assert _paths(vault, "ocelot") == []
    problems = _problems(vault)
    assert problems["wiki/latin1.md"] == "bad-encoding"
    assert problems["wiki/blob.md"] == "binary"
    assert "wiki/empty.md" not in problems


def test_huge_file_indexes_a_bounded_prefix(vault: Path) -> None:
    cfg = vault / "vaultmem.toml"
    cfg.write_text(cfg.read_text() + "max_file_bytes = 20000\n")  # into [recall], the last table
    filler = "lorem ipsum dolor sit amet\n" * 2000  # ~54 kB
    _write(vault, "wiki/huge.md", "# Huge\nearly capybara\n" + filler + "late axolotl\n")
    assert _paths(vault, "capybara") == ["wiki/huge.md"]
    assert _paths(vault, "axolotl") == []
    assert _problems(vault)["wiki/huge.md"] == "truncated"


def test_symlinks_never_lead_out_of_the_vault(vault: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text("# Secret\nnarwhal outside\n")
    os.symlink(outside / "secret.md", vault / "wiki" / "link.md")
    os.symlink(outside, vault / "wiki" / "linkdir")
    os.symlink(vault / "wiki" / "Glossary.md", vault / "wiki" / "inside-link.md")
    os.symlink(vault / "wiki", vault / "wiki" / "loop")  # a loop, inside the vault
    assert _paths(vault, "narwhal") == []
    problems = _problems(vault)
    assert problems["wiki/link.md"] == "symlink-outside"
    assert problems["wiki/linkdir"] == "symlink-outside"
    # a link inside the vault is not indexed: its target is, under its own path and owner
    assert "wiki/inside-link.md" not in walk.walk(_v(vault))[0]
    assert "wiki/Glossary.md" in walk.walk(_v(vault))[0]


# --- a broken index is rebuilt ------------------------------------------------------------


def _generation(vault: Path) -> Path:
    manifest = json.loads((vault / ".vaultmem" / "index" / "manifest.json").read_text())
    return vault / ".vaultmem" / "index" / manifest["data"]["generation"]


def test_corrupted_index_files_are_rebuilt_with_a_warning(vault: Path) -> None:
    refresh.refresh(_v(vault))
    for f in _generation(vault).iterdir():
        f.write_bytes(b"\x00garbage" * 3)
    result = recall(_v(vault), "stripe webhook")
    assert result.hits and result.index.rebuilt
    assert any("rebuilt" in w for w in result.index.warnings)


def test_missing_generation_or_garbage_manifest_is_rebuilt(vault: Path) -> None:
    refresh.refresh(_v(vault))
    shutil.rmtree(_generation(vault))
    assert recall(_v(vault), "stripe").hits
    (vault / ".vaultmem" / "index" / "manifest.json").write_text("{not json")
    result = recall(_v(vault), "stripe")
    assert result.hits and result.index.rebuilt


# --- Italian ------------------------------------------------------------------------------


def test_italian_stemming_and_accent_folding(vault: Path) -> None:
    cfg = vault / "vaultmem.toml"
    cfg.write_text(cfg.read_text().replace('language = "en"', 'language = "it"'))
    _write(vault, "note/palestra.md", "# Palestra\nLe prenotazioni della palestra sono chiuse.\n")
    _write(vault, "note/citta.md", "# Domande\nPerché la città è piena di turisti?\n")
    assert _paths(vault, "prenotazione") == ["note/palestra.md"]
    assert _paths(vault, "prenotare palestre")[0] == "note/palestra.md"
    assert _paths(vault, "citta")[:1] == ["note/citta.md"]
    assert _paths(vault, "turista")[:1] == ["note/citta.md"]
    # Italian stop words, with or without their accents, do not match everything
    assert _paths(vault, "della") == []
    assert _paths(vault, "perche") == []


# --- append-only logs: only the appended part is parsed ------------------------------------


def _log_docs(vault: Path) -> list[tuple[str, str, tuple[int, int]]]:
    v = _v(vault)
    m = manifest.load_manifest(v)
    assert m is not None
    ix = engine.open_generation(v, m)
    with ix.searcher() as s:
        rows = [
            (f["docid"], f["title"], tuple(f["lines"]))
            for f in s.all_stored_fields()
            if f["path"] == "nexus/live-context.md"
        ]
    ix.close()
    return sorted(rows)


def _rebuilt_docs(vault: Path, tmp: Path) -> list[tuple[str, str, tuple[int, int]]]:
    copy = tmp / "rebuilt"
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(vault, copy, ignore=shutil.ignore_patterns(".vaultmem"))
    refresh.refresh(_v(copy))
    return _log_docs(copy)


@pytest.mark.slow
def test_an_appended_log_is_indexed_as_a_full_rebuild_would(vault: Path, tmp_path: Path) -> None:
    """Appends, a torn tail, a completed tail, an edit in place, a glued entry: after each,
    the incrementally refreshed index holds exactly the documents a rebuild holds."""
    from tests._layer3_helpers import make_keys
    from vaultmem.nexus import log

    v = make_keys(vault, "ella", "lyra")
    live = vault / "nexus/live-context.md"
    refresh.refresh(v)
    steps = 0

    def check() -> None:
        nonlocal steps
        steps += 1
        refresh.refresh(_v(vault))
        assert _log_docs(vault) == _rebuilt_docs(vault, tmp_path), f"step {steps}"
        got = manifest.load_manifest(_v(vault))
        assert got is not None
        mark = got.logs.get("nexus/live-context.md")
        if mark is not None:  # the mark names exactly the bytes indexed
            assert mark.digest == documents.content_hash(live.read_bytes()[: mark.nbytes])

    for i in range(3):
        log.append(v, "ella", f"appended entry {i} about quokkas")
    check()
    m = manifest.load_manifest(v)
    assert m is not None and m.logs["nexus/live-context.md"].nbytes == live.stat().st_size
    before = live.read_bytes()
    # a torn tail (a writer killed mid-entry): set aside now, parsed whole once completed
    live.write_bytes(before + b"\n### 2026-11-30T10:00:00.000Z \xc2\xb7 ella \xc2\xb7 x")
    check()
    live.write_bytes(before)
    log.append(v, "lyra", "after the torn tail")
    check()
    # a person edits an old entry's summary in place: the prefix changed, the file is reparsed
    text = live.read_text(encoding="utf-8")
    live.write_text(text.replace("appended entry 0", "appended entry zero"), encoding="utf-8")
    check()
    assert any("appended entry zero" in t for _d, t, _l in _log_docs(vault))
    # a union merge that glues the other side's entry onto ours without a blank line
    other = (
        "### 2026-11-30T11:00:00.000Z · lyra · ops · note · glued on\n"
        '<!-- vaultmem {"v":1,"log":"live","id":"lyra.k2f7.1","seq":1,"prev":null,'
        '"hash":"sha256:00","key":null,"sig":null} -->\n'
    )
    with live.open("a", encoding="utf-8") as fh:
        fh.write(other)
    check()
    assert any(t == "glued on" for _d, t, _l in _log_docs(vault))


def test_a_log_bigger_than_max_file_bytes_is_indexed_to_its_newest_entry(vault: Path) -> None:
    from tests._layer3_helpers import make_keys
    from vaultmem.nexus import log

    cfg = vault / "vaultmem.toml"
    cfg.write_text(cfg.read_text() + "max_file_bytes = 1024\n", encoding="utf-8")  # into [recall]
    v = make_keys(vault, "ella")
    for i in range(30):
        log.append(v, "ella", f"entry {i} of a long log")
    log.append(v, "ella", "the newest entry mentions a pangolin")
    assert (vault / "nexus/live-context.md").stat().st_size > 4 * 1024
    assert _paths(vault, "pangolin") == ["nexus/live-context.md"]
    assert "nexus/live-context.md" not in _problems(vault)


# --- what opening the index costs ----------------------------------------------------------


def test_whoosh_is_imported_without_urllib_asyncio_or_the_english_tables(vault: Path) -> None:
    """whoosh_import.load keeps three unused imports out of a recall, and its stand-ins out of the
    process: a later `import urllib.request` is the real one, Variations still works."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from vaultmem.core.vault import Vault\n"
        "from vaultmem.search.query import recall\n"
        "assert recall(Vault.open(sys.argv[1]), 'stripe webhook').hits\n"
        "unused = ('urllib.request', 'asyncio', 'cached_property', 'whoosh.lang.morph_en')\n"
        "assert not [m for m in unused if m in sys.modules], [m for m in unused if m in sys.modules]\n"
        "import urllib.request, cached_property\n"
        "assert urllib.request.Request and urllib.request.urlopen\n"
        "assert cached_property.cached_property.__module__ == 'cached_property'\n"
        "from whoosh.query import Variations\n"
        "from whoosh.lang.morph_en import variations\n"
        "assert 'walls' in variations('wall')\n"
        "from vaultmem.search import engine\n"
        "with engine.Searcher(Vault.open(sys.argv[1])) as s:\n"
        "    assert list(Variations('body', 'webhook').docs(s.searcher))\n"
    )
    res = subprocess.run([sys.executable, "-c", code, str(vault)], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr


def test_segments_are_written_as_separate_files(vault: Path) -> None:
    """Not compound: a compound segment is copied whole into memory by every searcher."""
    refresh.refresh(_v(vault), wait=None, rebuild=True)
    _write(vault, "wiki/new.md", "# New\nA new note about webhooks.\n")
    refresh.refresh(_v(vault))
    names = [p.name for p in _generation(vault).iterdir()]
    assert names and not [n for n in names if n.endswith(".seg")], names
    assert "wiki/new.md" in _paths(vault, "new webhooks")


def test_the_manifest_is_parsed_once_per_process_and_never_served_stale(vault: Path) -> None:
    v = _v(vault)
    refresh.refresh(v)
    path = manifest.index_dir(v) / manifest.MANIFEST
    first = manifest.load_manifest(v)
    assert first is not None and manifest._LOADED[str(path)][2].files == first.files
    first.files.clear()  # a caller's edits never reach the next reader
    second = manifest.load_manifest(v)
    assert second is not None and second.files and second is not first
    # a refresh that writes a new manifest: the next load has the new file
    _write(vault, "wiki/later.md", "# Later\nText.\n")
    refresh.refresh(v)
    assert "wiki/later.md" in (manifest.load_manifest(v) or first).files
    # replaced by something this machine did not seal: none, as without the cache
    data = json.loads(path.read_bytes())["data"]
    path.write_text(json.dumps(data), encoding="utf-8")
    assert manifest.load_manifest(v) is None


def test_a_manifest_rewritten_with_the_same_stat_is_read_again(vault: Path) -> None:
    """A rewrite within one mtime tick, of the same size, on the same inode: the stat the
    cache keeps is the same, the seal at the start of the file is not."""
    from vaultmem.core import seal

    v = _v(vault)
    refresh.refresh(v)
    path = manifest.index_dir(v) / manifest.MANIFEST
    first = manifest.load_manifest(v)
    assert first is not None and manifest._LOADED[str(path)][2].files == first.files  # kept
    st = path.stat()
    data = json.loads(path.read_bytes())["data"]
    data["language"] = "xx"  # as long as "en": the same size
    sealed = seal.dumps(path, data)
    assert sealed is not None and len(sealed) == st.st_size
    with open(path, "r+b") as fh:  # in place: the same inode
        fh.write(sealed)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    after = path.stat()
    assert (after.st_size, after.st_mtime_ns, after.st_ino) == (
        st.st_size,
        st.st_mtime_ns,
        st.st_ino,
    )
    again = manifest.load_manifest(v)
    assert again is not None and again.language == "xx"


def test_a_searcher_outlives_a_merge_that_deletes_its_segments(vault: Path) -> None:
    """Another process's refresh may merge the segments an open searcher reads and delete
    their files: the searcher opened every file it needs up front."""
    v = _v(vault)
    refresh.refresh(v, wait=None, rebuild=True)
    _write(vault, "wiki/second.md", "# Second\nA second segment about webhooks.\n")
    refresh.refresh(v)
    m = manifest.load_manifest(v)
    assert m is not None
    before = set(os.listdir(_generation(vault)))
    with engine.Searcher(v) as s:
        assert len(list(s.searcher.leaf_searchers())) > 1
        ix = engine.open_generation(v, m)
        ix.writer().commit(optimize=True)  # what a merging commit elsewhere does
        ix.close()
        assert before - set(os.listdir(_generation(vault)))  # old segment files deleted
        parsed = question.Query(words=("stripe", "webhook"))
        hits = s.search(parsed, limit=20)
        assert hits and all(h.fields["path"] for h in hits)
