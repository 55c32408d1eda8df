"""Consolidation proposals: near-duplicate or contradicting approved memories, for a person.

`find_clusters` groups active memories of one scope (the shared ones, or one agent's own;
never the two mixed) that say the same thing (word similarity at least `[consolidate]
duplicate` and no conflict, or, with the semantic extra, cosine at least `semantic`) or that
contradict each other (the same type, similarity at least `contradict`, and numbers or a
negation that differ). `propose` writes one pending bank note per cluster into the acting
agent's bank, with `consolidates: [ids]`: the text of the memory to keep (the best-evidenced
near-duplicate, or the newest of a contradiction), the others quoted as evidence. Nothing in
memory changes: approving the note (`promote`) writes the kept text as a new memory and marks
every memory of the cluster superseded by it; rejecting it leaves them, and the same cluster is
not proposed again.
"""

from __future__ import annotations

import secrets
from collections import defaultdict
from typing import Any

from vaultmem.bank import review_page, store
from vaultmem.bank.model import EVIDENCE_HEADING
from vaultmem.bank.similarity import signature, similarity
from vaultmem.core import clock, notes
from vaultmem.core.fsio import create_exclusive
from vaultmem.core.records import field, record
from vaultmem.core.vault import Vault
from vaultmem.memory import facts


@record
class Member:
    id: str
    name: str
    type: str
    text: str
    path: str
    evidence: int
    updated: str

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@record
class Cluster:
    kind: str  # "merge" or "supersede"
    owner: str | None  # None: shared memories; else the agent whose own memories they are
    members: tuple[Member, ...]  # the one to keep first
    score: float  # the weakest link that joined it
    proposal: str | None = None  # the bank note written (id), None under --dry-run
    status: str = "new"  # "new", "written", "already proposed"

    @property
    def ids(self) -> tuple[str, ...]:
        return tuple(m.id for m in self.members)

    @property
    def scope(self) -> str:
        return "shared" if self.owner is None else "agent"

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "scope": self.scope,
            "owner": self.owner,
            "members": [m.to_dict() for m in self.members],
            "score": self.score,
            "proposal": self.proposal,
            "status": self.status,
        }


@record(frozen=False)
class _Sets:
    parent: dict[str, str] = field(default_factory=dict)

    def find(self, x: str) -> str:
        while self.parent.setdefault(x, x) != x:
            self.parent[x] = self.parent[self.parent[x]]
            x = self.parent[x]
        return x

    def join(self, a: str, b: str) -> None:
        self.parent[self.find(a)] = self.find(b)


def members(vault: Vault, agent: str | None) -> dict[str | None, list[Member]]:
    """Active memories by owner (None: shared): the shared ones and `agent`'s own, never
    another agent's."""
    out: dict[str | None, list[Member]] = defaultdict(list)
    for path, owner in facts.fact_files(vault):
        if owner is not None and owner != agent:
            continue
        try:
            note = vault.read_note(path)
        except Exception:  # a broken note is for `status` to report, not a reason to stop
            continue
        meta = note.meta
        if not note.ok or not meta.get("id") or str(meta.get("status") or "active") != "active":
            continue
        try:
            evidence = max(int(str(meta.get("evidence") or 1)), 1)
        except ValueError:
            evidence = 1
        out[owner].append(
            Member(
                str(meta["id"]),
                str(meta.get("name") or path.stem),
                str(meta.get("type") or "fact"),
                note.body.strip() or str(meta.get("description") or ""),
                vault.rel(path),
                evidence,
                str(meta.get("updated") or meta.get("created") or ""),
            )
        )
    return out


def find_clusters(
    vault: Vault,
    agent: str | None,
    *,
    semantic: dict[str | None, list[tuple[str, str, float]]] | None = None,
) -> list[Cluster]:
    """Clusters of near-duplicates (merged transitively) and contradicting pairs, per scope.
    `semantic`: per owner, pairs (id, id, cosine) found by embeddings (app.consolidate)."""
    settings = vault.config.consolidate
    out: list[Cluster] = []
    for owner, group in sorted(members(vault, agent).items(), key=lambda t: t[0] or ""):
        by_id = {m.id: m for m in group}
        sigs = {m.id: signature(m.text, vault.config.language) for m in group}
        # candidate pairs share a content word: no need to compare every pair
        postings: dict[str, list[str]] = defaultdict(list)
        for m in group:
            for word in sigs[m.id].words:
                postings[word].append(m.id)
        pairs: set[tuple[str, str]] = set()
        for ids in postings.values():
            if len(ids) > 200:
                continue  # a word in most memories says nothing about duplicates
            for i, a in enumerate(ids):
                for b in ids[i + 1 :]:
                    pairs.add((a, b) if a < b else (b, a))
        sets = _Sets()
        weakest: dict[str, float] = {}
        contradictions: list[tuple[str, str, float]] = []
        for a, b in sorted(pairs):
            score = max(similarity(sigs[a], sigs[b])[0], similarity(sigs[b], sigs[a])[0])
            conflict = similarity(sigs[a], sigs[b])[1]
            if not conflict and score >= settings.duplicate:
                sets.join(a, b)
                weakest[a] = min(weakest.get(a, 1.0), score)
            elif conflict and score >= settings.contradict and by_id[a].type == by_id[b].type:
                contradictions.append((a, b, score))
        for a, b, cosine in (semantic or {}).get(owner, []):
            if a in by_id and b in by_id and not similarity(sigs[a], sigs[b])[1]:
                sets.join(a, b)
                weakest[a] = min(weakest.get(a, 1.0), round(cosine, 3))
        groups: dict[str, list[str]] = defaultdict(list)
        for m in group:
            groups[sets.find(m.id)].append(m.id)
        merged: set[str] = set()
        for ids in groups.values():
            if len(ids) < 2:
                continue
            chosen = sorted(
                (by_id[i] for i in ids),
                key=lambda m: (-m.evidence, _neg(m.updated), -len(m.text), m.id),
            )
            low = min((weakest.get(i, 1.0) for i in ids), default=1.0)
            out.append(Cluster("merge", owner, tuple(chosen), low))
            merged.update(ids)
        for a, b, score in contradictions:
            if a in merged or b in merged:
                continue
            newer = sorted((by_id[a], by_id[b]), key=lambda m: (_neg(m.updated), -m.evidence, m.id))
            out.append(Cluster("supersede", owner, tuple(newer), score))
    return out


def _neg(stamp: str) -> tuple[int, ...]:
    """Sort key that puts the newest stamp first."""
    return tuple(-ord(c) for c in stamp)


def _proposed(vault: Vault) -> set[frozenset[str]]:
    """Member sets already proposed (pending, rejected or approved) by any agent."""
    out = set()
    for path, _owner in store.bank_files(vault):
        text = path.read_text(encoding="utf-8", errors="replace")
        if "consolidates:" not in text:
            continue
        note = notes.parse(text)
        value = note.meta.get("consolidates") if note.ok else None
        if isinstance(value, list):
            out.add(frozenset(str(v) for v in value))
    return out


def _render(agent: str, cluster: Cluster, fact_id: str, stamp: str) -> str:
    keep, others = cluster.members[0], cluster.members[1:]
    meta: dict[str, Any] = {
        "name": keep.name,
        "type": keep.type,
        "status": "pending",
        "id": fact_id,
        "author": agent,
        "created": stamp,
        "updated": stamp,
        "evidence": sum(m.evidence for m in cluster.members),
        "source": [f"vaultmem consolidate {stamp[:10]}"],
        "consolidates": list(cluster.ids),
        "consolidation": cluster.kind,
        "scope": cluster.scope,
    }
    why = (
        f"near-duplicates (similarity {cluster.score:.2f})"
        if cluster.kind == "merge"
        else f"they contradict each other (similarity {cluster.score:.2f}; the newest is kept)"
    )
    quoted = [f"Approving replaces these memories with the text above: {why}.", ""]
    for m in cluster.members:
        mark = "keep" if m is keep else "replace"
        head = f"{m.id} [[{m.path.removesuffix('.md')}|{m.name}]] ({mark}; evidence {m.evidence}, updated {m.updated[:10]})"
        quoted.append(f"> {head}")
        quoted += [f"> {ln}" if ln.strip() else ">" for ln in m.text.splitlines()]
        quoted.append("")
    body = f"\n{keep.text}\n\n{EVIDENCE_HEADING}\n\n" + "\n".join(quoted).rstrip() + "\n"
    if not others:
        body = f"\n{keep.text}\n"
    return notes.render(meta, body)


def propose(vault: Vault, agent: str, clusters: list[Cluster], *, dry_run: bool) -> list[Cluster]:
    """One pending bank note per cluster not proposed before; the clusters with what was done."""
    from vaultmem.core.records import evolve

    agent = vault.require_agent(agent)
    out = []
    with store.bank_lock(vault):
        seen = _proposed(vault)
        stamp = clock.stamp()
        taken: set[str] = set()
        folder = vault.rel(vault.bank_dir(agent))
        for cluster in clusters:
            if frozenset(cluster.ids) in seen:
                out.append(evolve(cluster, status="already proposed"))
                continue
            if dry_run:
                out.append(cluster)
                continue
            fact_id = _new_id(taken)
            content = _render(agent, cluster, fact_id, stamp)
            base = f"{stamp[:10]}-consolidate-{facts.slugify(cluster.members[0].name)}"
            for n in range(1, 1000):
                path = vault.path(f"{folder}/{base if n == 1 else f'{base}-{n}'}.md")
                if create_exclusive(path, content):
                    break
            seen.add(frozenset(cluster.ids))
            out.append(evolve(cluster, proposal=fact_id, status="written"))
        if not dry_run and any(c.status == "written" for c in out):
            review_page.refresh_review_page(vault)
    return out


def _new_id(taken: set[str]) -> str:
    while True:
        candidate = f"b-{secrets.token_hex(4)}"
        if candidate not in taken:
            taken.add(candidate)
            return candidate
