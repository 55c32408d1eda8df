"""Every reader is bounded: a forged 10 MB summary, a 50 MB IDENTITY.md or a 500-word query
cannot flood a pack or make recall walk every posting list (issue 22)."""

from __future__ import annotations

import json
from pathlib import Path

from tests._cli import run_cli
from tests._layer3_helpers import make_keys, set_toml
from vaultmem.search.terms import MAX_TERMS as MAX_QUERY_TERMS
from vaultmem.search.terms import cap_query


def append_huge_entry(vault: Path, *, body_words: int) -> None:
    """lyra appends the longest summary and a body of `body_words` words, in a vault loosened
    to the largest [log] max_summary and max_body it may be set to."""
    make_keys(vault, "ella", "lyra")
    set_toml(vault, "log", "max_summary", "10000")
    set_toml(vault, "log", "max_body", "10000000")
    res = run_cli(
        "append", "forged " * 1400, "--body", "-", "--type", "note", "--agent", "lyra",
        "--vault", str(vault), stdin="flood " * body_words,
    )  # fmt: skip
    assert res.exit_code == 0, res.stderr


def test_a_huge_identity_is_cut_in_the_pack_with_a_marker(vault: Path) -> None:
    identity = vault / "agents" / "ella" / "IDENTITY.md"
    identity.write_text(identity.read_text() + "\n" + "flood " * 2_000_000, encoding="utf-8")
    res = run_cli("read", "--agent", "ella", "--budget", "2000", "--vault", str(vault))
    assert res.exit_code == 0, res.stderr
    assert len(res.stdout) < 40_000
    assert "…(cut:" in res.stdout and "agents/ella/IDENTITY.md" in res.stdout


def test_a_huge_summary_and_body_are_cut_in_the_pack(vault: Path) -> None:
    """The longest summary and body a vault may be set to allow: the pack shows each entry's
    first characters and where the rest is."""
    append_huge_entry(vault, body_words=1_000_000)
    res = run_cli("read", "--agent", "ella", "--vault", str(vault))
    assert res.exit_code == 0, res.stderr
    assert len(res.stdout) < 40_000 and res.stdout.count("…(cut") >= 2


def test_query_terms_are_capped_with_a_warning(vault: Path) -> None:
    words = " ".join(f"word{n}" for n in range(500))
    capped, warning = cap_query(words)
    assert len(capped.split()) == MAX_QUERY_TERMS and warning
    assert cap_query("two words") == ("two words", ())
    res = run_cli("recall", words, "--json", "--vault", str(vault))
    assert res.exit_code == 0, res.stderr
    data = json.loads(res.stdout)
    assert any("query was cut" in w for w in data["index"]["warnings"])
    assert len(data["query"].split()) == MAX_QUERY_TERMS


def test_every_reader_of_a_huge_entry_answers_within_bounds(vault: Path) -> None:
    """One 10 MB body (a vault loosened to allow it, or a forged entry): `log --tail`, the
    session-start hook, recall and verify answer, each with bounded output (issue 22)."""
    import subprocess
    import sys

    append_huge_entry(vault, body_words=1_600_000)
    tail = run_cli("log", "--tail", "5", "--vault", str(vault))
    assert tail.exit_code == 0, tail.stderr
    assert len(tail.stdout) < 100_000
    found = run_cli("recall", "flood forged", "--vault", str(vault))
    assert found.exit_code == 0, found.stderr
    assert len(found.stdout) < 100_000
    check = run_cli("verify", "--vault", str(vault))
    assert check.exit_code == 0, check.stdout + check.stderr
    hook = subprocess.run(
        [sys.executable, "-m", "vaultmem", "hook", "session-start", "--vault", str(vault),
         "--agent", "ella"],
        input=json.dumps({"session_id": "s", "hook_event_name": "SessionStart",
                          "source": "startup", "cwd": str(vault)}),
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert hook.returncode == 0, hook.stderr
    assert 0 < len(hook.stdout) < 12_000  # Claude Code's cap on additionalContext is 10,000
    assert "forged" in hook.stdout
