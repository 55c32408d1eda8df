"""`forget` forgets: after it, no trace of the fact's text is left anywhere under the vault or
`.vaultmem/`, and it says what it removed and what it cannot (issue 22)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests._cli import run_cli
from tests._layer3_helpers import make_keys

MARKER = "Zqxwv-7731"  # the private detail a person asks to have forgotten


def traces(root: Path) -> list[str]:
    """Every file under the vault (and .vaultmem/) whose bytes or name hold the marker."""
    low = MARKER.lower().encode()
    return sorted(
        str(p.relative_to(root))
        for p in root.rglob("*")
        if ".git" not in p.parts
        and (MARKER.lower() in p.name.lower() or (p.is_file() and low in p.read_bytes().lower()))
    )


def test_forget_leaves_no_trace_of_the_fact(vault: Path) -> None:
    make_keys(vault)
    v = ("--vault", str(vault))
    text = f"Chiara's private phone is {MARKER}"
    made = run_cli("retain", text, "--name", f"Phone {MARKER}", "--type", "user",
                   "--agent", "ella", "--json", *v)  # fmt: skip
    assert made.exit_code == 0, made.stderr
    approved = run_cli("promote", "approve", json.loads(made.stdout)["id"], "--reviewer",
                       "chiara", "--json", *v)  # fmt: skip
    assert approved.exit_code == 0, approved.stderr
    fact_id = json.loads(approved.stdout)["memory"]["id"]
    # every place vaultmem copies it to: profile, index, receipts, a queued session
    assert run_cli("profile", "--offline", *v).exit_code == 0
    assert MARKER in run_cli("recall", MARKER, *v).stdout
    assert run_cli("read", "--agent", "lyra", "--query", MARKER, *v).exit_code == 0
    queue = vault / ".vaultmem" / "queue" / "ella"
    queue.mkdir(parents=True)
    (queue / "20261201T100000Z-s1.json").write_text(json.dumps({"turns": [text]}))
    assert len(traces(vault)) >= 5

    refused = run_cli("forget", fact_id, "--agent", "ella", *v)
    assert refused.exit_code == 8  # an agent cannot forget shared memory
    res = run_cli("forget", fact_id, *v)
    assert res.exit_code == 0, res.stderr
    assert traces(vault) == []
    for what in ("memory note", "bank note", "profile", "search index", "queue file"):
        assert f"removed {what}" in res.stdout, res.stdout
    assert "No hits" in run_cli("recall", MARKER, *v).stdout and traces(vault) == []
    assert run_cli("verify", *v).exit_code == 0


def test_forget_names_git_history_and_how_to_purge_it(vault: Path) -> None:
    subprocess.run(["git", "init", "-q", str(vault)], check=True)
    made = run_cli("remember", f"Secret plan {MARKER}", "--name", "Plan", "--type", "project",
                   "--json", "--vault", str(vault))  # fmt: skip
    fact = json.loads(made.stdout)
    res = run_cli("forget", fact["id"], "--vault", str(vault), "--json")
    assert res.exit_code == 0, res.stderr
    kept = json.loads(res.stdout)["kept"]
    assert any("git filter-repo" in k and fact["path"] in k for k in kept)
