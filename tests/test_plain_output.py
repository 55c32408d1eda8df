"""Output read by programs and people alike: a fact's name once in recall's title, and plain
output (a pipe, a file) that never wraps a line (issue 38, "Output")."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests._cli import run_cli, run_proc, use_engine

LONG = "agents/ella/memory/" + "a-long-fact-name-that-keeps-going-" * 3 + "test-rules.md"


@pytest.mark.parametrize("engine", ["whoosh", "fts5"])
def test_a_fact_with_aliases_is_titled_by_its_name_once(vault: Path, engine: str) -> None:
    # example-vault's capacity-per-slot.md: name "Capacity per slot", aliases ["Capacity per slot"]
    use_engine(vault, engine)
    fact = vault / "memory" / "chiara-s-review-days.md"
    text = fact.read_text(encoding="utf-8")
    fact.write_text(text.replace("aliases:\n", "aliases:\n- quokka cadence\n", 1), encoding="utf-8")
    res = run_cli("recall", "capacity per slot", "--vault", str(vault), "--json")
    assert res.exit_code == 0, res.stderr
    top = json.loads(res.stdout)["hits"][0]
    assert top["path"] == "memory/capacity-per-slot.md"
    assert top["title"] == "Capacity per slot"
    # an alias is still searched as part of the title, and shown nowhere in it
    res = run_cli("recall", "quokka cadence", "--vault", str(vault), "--json")
    hits = json.loads(res.stdout)["hits"]
    assert hits[0]["path"] == "memory/chiara-s-review-days.md"
    assert "quokka" not in hits[0]["title"]


def _long_fact(vault: Path) -> None:
    path = vault / LONG
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        "---\nname: Test rules\ntype: feedback\nid: m-0000beef\nstatus: active\n"
        "author: ella\ncreated: 2026-11-29T15:09:33Z\nupdated: 2026-11-29T15:09:33Z\n---\n\n"
        "Run the whole quokka suite before every merge, never a subset.\n",
        encoding="utf-8",
    )


def _unwrapped(stdout: str, *needles: str) -> None:
    for needle in needles:
        assert any(needle in line for line in stdout.splitlines()), (needle, stdout)


def test_memories_written_to_a_pipe_keep_every_path_on_one_line(vault: Path) -> None:
    _long_fact(vault)
    # a real process, stdout a pipe: rich used to fold the path at $COLUMNS (readline exports
    # it: 80 here under pytest) or 80 columns
    proc = run_proc("memories", "--vault", str(vault), env={"COLUMNS": "80"})
    assert proc.returncode == 0, proc.stderr
    _unwrapped(proc.stdout, LONG)
    assert max(len(line) for line in proc.stdout.splitlines()) > 80


def test_a_recall_table_in_a_file_keeps_paths_and_snippets_whole(
    vault: Path, tmp_path: Path
) -> None:
    _long_fact(vault)
    out = tmp_path / "hits.txt"
    with out.open("w", encoding="utf-8") as fh:
        import subprocess
        import sys

        done = subprocess.run(
            [sys.executable, "-m", "vaultmem", "recall", "quokka suite", "--vault", str(vault)],
            stdout=fh,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            text=True,
            timeout=120,
        )
    assert done.returncode == 0, done.stderr
    text = out.read_text(encoding="utf-8")
    _unwrapped(text, LONG, "Run the whole quokka suite before every merge, never a subset.")
    # no line padded out to the wide layout either
    assert max(len(line) for line in text.splitlines()) < 400


def test_a_terminal_keeps_its_width_and_anything_else_is_unwrapped(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import io

    from vaultmem.cli import output

    monkeypatch.setenv("COLUMNS", "50")
    assert output._Console(file=io.StringIO(), force_terminal=True).width == 50
    assert output._Console(file=io.StringIO()).width == output.UNWRAPPED
    assert output._Console(file=io.StringIO(), width=30).width == 30  # asked for: kept
