"""Receipts: what each agent was shown, recorded only once it was written out."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests._cli import run_cli
from tests._layer3_helpers import fresh_vault, make_keys, set_toml
from vaultmem.app.pack import receipts
from vaultmem.core.vault import Vault
from vaultmem.nexus import log


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    root = fresh_vault(tmp_path)
    make_keys(root)
    return root


def receipt_lines(vault: Path, agent: str) -> list[dict[str, Any]]:
    path = vault / ".vaultmem" / "receipts" / f"{agent}.jsonl"
    if not path.exists():
        return []
    return [json.loads(ln)["line"] for ln in path.read_text().splitlines()]  # sealed lines


def test_read_records_what_it_showed(vault: Path) -> None:
    v = Vault.open(vault)
    h = log.append(v, "lyra", "for ella", type_="handoff", to=["ella"]).entry
    n = log.append(v, "lyra", "a note").entry
    res = run_cli("read", "--vault", str(vault), "--agent", "ella")
    assert res.exit_code == 0
    (line,) = receipt_lines(vault, "ella")
    assert line["command"] == "read" and {h.id, n.id} <= set(line["ids"])
    assert "memory/MEMORY.md" in line["paths"]
    assert receipt_lines(vault, "lyra") == []


@pytest.mark.slow
def test_a_pack_that_was_not_written_leaves_no_receipt(vault: Path) -> None:
    """A real process whose stdout fails (a full disk): no receipt, no cursor move."""
    log.append(Vault.open(vault), "lyra", "a note")
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    with open("/dev/full", "w") as full:
        proc = subprocess.run(
            [sys.executable, "-m", "vaultmem", "read", "--vault", str(vault), "--agent", "ella"],
            stdout=full,
            stderr=subprocess.PIPE,
            env=env,
            timeout=60,
        )
    assert proc.returncode != 0
    assert receipt_lines(vault, "ella") == []
    assert not (vault / ".vaultmem" / "cursors" / "ella.json").exists()
    # the same in-process, with the output failing after the pack was built
    from vaultmem.cli import hot

    def broken(_text: str) -> None:
        raise OSError(28, "No space left on device")

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(hot, "emit", broken)
        res = run_cli("read", "--vault", str(vault), "--agent", "ella")
    assert res.exit_code != 0 and receipt_lines(vault, "ella") == []
    assert run_cli("read", "--vault", str(vault), "--agent", "ella").exit_code == 0
    assert len(receipt_lines(vault, "ella")) == 1


def test_inbox_and_recall_record_too(vault: Path) -> None:
    v = Vault.open(vault)
    h = log.append(v, "lyra", "webhook handoff", type_="handoff", to=["ella"]).entry
    assert run_cli("inbox", "--vault", str(vault), "--agent", "ella").exit_code == 0
    res = run_cli("recall", "stripe webhook", "--vault", str(vault), "--agent", "ella", "--json")
    hits = json.loads(res.stdout)["hits"]
    lines = receipt_lines(vault, "ella")
    assert [ln["command"] for ln in lines] == ["inbox", "recall"]
    assert lines[0]["ids"] == [h.id]
    assert len(lines[1]["ids"]) + len(lines[1]["paths"]) == len(hits) > 0
    # recall without an agent shows nobody in particular: no receipt
    run_cli("recall", "stripe webhook", "--vault", str(vault))
    assert len(receipt_lines(vault, "ella")) == 2


def test_what_had_ella_seen_when_she_decided(vault: Path) -> None:
    v = Vault.open(vault)
    before = log.append(v, "lyra", "Gyms quote VAT-inclusive prices").entry
    run_cli("read", "--vault", str(vault), "--agent", "ella")
    with pytest.MonkeyPatch.context() as mp:  # the decision comes a moment later
        mp.setenv("VAULTMEM_NOW", "2099-01-01T00:00:00Z")
        res = run_cli(
            "decide",
            "Prices include VAT",
            "--why",
            "gyms quote it",
            "--vault",
            str(vault),
            "--agent",
            "ella",
        )
        assert res.stdout.strip() == "ella.d1"
        mp.setenv("VAULTMEM_NOW", "2099-01-02T00:00:00Z")
        after = log.append(v, "lyra", "Later news").entry
        run_cli("read", "--vault", str(vault), "--agent", "ella")
    res = run_cli(
        "receipts", "--vault", str(vault), "--agent", "ella", "--until", "ella.d1", "--json"
    )
    data = json.loads(res.stdout)
    assert before.id in data["ids"] and after.id not in data["ids"]
    assert len(data["receipts"]) == 1
    everything = json.loads(
        run_cli("receipts", "--vault", str(vault), "--agent", "ella", "--json").stdout
    )
    assert after.id in everything["ids"]
    text = run_cli("receipts", "--vault", str(vault), "--agent", "ella").stdout
    assert "read" in text and before.id in text
    bad = run_cli("receipts", "--vault", str(vault), "--agent", "ella", "--until", "soon")
    assert bad.exit_code == 2


def test_log_json_marks_what_the_reader_was_shown(vault: Path) -> None:
    v = Vault.open(vault)
    seen = log.append(v, "lyra", "first").entry
    run_cli("read", "--vault", str(vault), "--agent", "ella")
    unseen = log.append(v, "lyra", "second").entry
    res = run_cli("log", "--vault", str(vault), "--json", "--reader", "ella")
    rows = {e["id"]: e["shown"] for e in json.loads(res.stdout)["entries"]}
    assert rows == {seen.id: True, unseen.id: False}
    plain = json.loads(run_cli("log", "--vault", str(vault), "--json").stdout)["entries"]
    assert "shown" not in plain[0]


def test_receipts_rotate(vault: Path) -> None:
    set_toml(vault, "receipts", "max_bytes", "300")
    set_toml(vault, "receipts", "keep", "2")
    v = Vault.open(vault)
    for i in range(12):
        receipts.record(v, "ella", "read", [f"lyra.{i}", f"lyra.{i + 100}"])
    folder = vault / ".vaultmem" / "receipts"
    names = sorted(p.name for p in folder.iterdir())
    assert "ella.jsonl" in names and len(names) == 3  # the current file and 2 rotated
    kept = receipts.receipts(v, "ella")
    assert kept[-1].ids == ("lyra.11", "lyra.111")
    assert [r.ids[0] for r in kept] == sorted((r.ids[0] for r in kept), key=lambda s: int(s[5:]))
