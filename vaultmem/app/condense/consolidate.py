"""`vaultmem consolidate`: propose merges and supersessions of approved memories for review.

The clusters come from `bank.consolidate` (word similarity, deterministic); when the semantic
extra is installed and its model is made on this machine (`vaultmem index --semantic`), pairs
of memories whose embeddings are at least `[consolidate] semantic` alike join near-duplicate
clusters too. The proposals are pending bank notes in the acting agent's bank: `promote`
shows and decides them like any other proposal. Memory itself is never changed here.
"""

from __future__ import annotations

from typing import Any

from vaultmem.bank.consolidate import Cluster, Member, find_clusters, members, propose
from vaultmem.core.records import record
from vaultmem.core.vault import Vault

NEIGHBOURS = 5  # nearest memories looked at for each memory (semantic)


@record
class ConsolidateRun:
    clusters: tuple[Cluster, ...]
    semantic: bool  # embeddings were used
    dry_run: bool

    def to_dict(self) -> dict[str, Any]:
        return {
            "clusters": [c.to_dict() for c in self.clusters],
            "semantic": self.semantic,
            "dry_run": self.dry_run,
        }


def semantic_pairs(
    vault: Vault, agent: str | None
) -> dict[str | None, list[tuple[str, str, float]]] | None:
    """Pairs of alike memories per owner, by embeddings; None when the extra or its model is
    not there (nothing is downloaded or distilled here)."""
    from vaultmem.search import embedder

    name = vault.config.recall.model
    if (
        vault.config.recall.mode == "keyword"
        or not embedder.available()
        or not embedder.ready(name)
    ):
        return None
    model = embedder.load_model(name, build=False)
    threshold = vault.config.consolidate.semantic
    out: dict[str | None, list[tuple[str, str, float]]] = {}
    for owner, group in members(vault, agent).items():
        if len(group) < 2:
            continue
        matrix = model.encode([_text(m) for m in group])
        found = []
        for i, m in enumerate(group):
            for j, cosine in embedder.nearest([(matrix, None)], matrix[i], NEIGHBOURS + 1):
                if j > i and cosine >= threshold:
                    found.append((m.id, group[j].id, cosine))
        out[owner] = found
    return out


def _text(m: Member) -> str:
    return f"{m.name}. {m.text}"


def consolidate(vault: Vault, agent: str | None, *, dry_run: bool = False) -> ConsolidateRun:
    """Find clusters and (unless `dry_run`) write one pending proposal per new cluster."""
    if not dry_run:
        agent = vault.require_agent(agent)  # whose bank the proposals go to
    elif agent:
        agent = vault.require_agent(agent)
    pairs = semantic_pairs(vault, agent)
    clusters = find_clusters(vault, agent, semantic=pairs)
    if agent:
        clusters = propose(vault, agent, clusters, dry_run=dry_run)
    return ConsolidateRun(tuple(clusters), pairs is not None, dry_run)
