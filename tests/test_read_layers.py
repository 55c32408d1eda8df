"""`read` brings the layers together: recall hits for --query, the agent's own pending facts."""

from __future__ import annotations

import json
from pathlib import Path

from tests._cli import run_cli
from vaultmem.app.pack.build import read
from vaultmem.bank import retain
from vaultmem.core.vault import Vault


def test_query_adds_recall_hits_with_provenance(vault: Path) -> None:
    res = run_cli(
        "read",
        "--vault",
        str(vault),
        "--agent",
        "ella",
        "--peek",
        "--json",
        "--query",
        "stripe webhook",
    )
    assert res.exit_code == 0, res.stderr
    section = json.loads(res.stdout)["sections"]["recall"]
    paths = [h["path"] for h in section["data"]["hits"]]
    assert "memory/stripe-webhook-race.md" in paths
    assert "vaultmem-data" in section["text"] and "**" not in section["text"]
    plain = run_cli("read", "--vault", str(vault), "--agent", "ella", "--peek", "--json")
    assert "recall" not in json.loads(plain.stdout)["sections"]


def test_pending_facts_are_the_agents_own_and_marked(vault: Path) -> None:
    v = Vault.open(vault)
    retain.retain(v, "The staging database is reset every Sunday night", agent="ella", type_="fact")
    retain.retain(v, "Storybook runs on port 6006 in dev", agent="lyra", type_="reference")
    ella = read(v, "ella", peek=True)
    pending = {s.key: s for s in ella.sections}["pending"]
    assert "staging database" in pending.text and "Storybook" not in pending.text
    assert "unreviewed" in pending.text and pending.data["total"] == 1
    lyra = {s.key: s for s in read(v, "lyra", peek=True).sections}
    assert "Storybook" in lyra["pending"].text and "staging" not in lyra["pending"].text


def test_pending_section_absent_without_pending_facts(vault: Path) -> None:
    keys = {s.key for s in read(Vault.open(vault), "ella", peek=True).sections}
    assert "pending" not in keys and "identity" in keys


def test_query_hits_never_show_another_agents_private_notes(vault: Path) -> None:
    private = vault / "agents/lyra/memory/lyra-only.md"
    private.write_text(
        "---\nname: Lyra only\ntype: fact\nid: m-lyra0001\n---\n\nThe zebra palette is Lyra's secret.\n"
    )
    ella = {
        s.key: s for s in read(Vault.open(vault), "ella", peek=True, query="zebra palette").sections
    }
    assert "recall" not in ella or "lyra-only" not in ella["recall"].text
    lyra = {
        s.key: s for s in read(Vault.open(vault), "lyra", peek=True, query="zebra palette").sections
    }
    assert "agents/lyra/memory/lyra-only.md" in lyra["recall"].text


def test_approved_bank_note_leaves_recall_once_it_is_memory(vault: Path) -> None:
    from vaultmem.bank.review import approve
    from vaultmem.search.query import recall

    v = Vault.open(vault)
    res = retain.retain(v, "The quokka endpoint returns 418 on purpose", agent="ella", type_="fact")
    assert res.path
    before = [(h.kind, h.path) for h in recall(v, "quokka endpoint").hits]
    assert before[0] == ("bank", res.path)
    approve(
        v,
        res.id or "",
        reviewer="chiara",
        acting_agent=None,
        scope="shared",
        name="Quokka endpoint",
    )
    after = [(h.kind, h.path) for h in recall(v, "quokka endpoint").hits]
    assert after[0] == ("memory", "memory/quokka-endpoint.md")
    assert ("bank", res.path) not in after
