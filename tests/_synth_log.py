"""A synthetic live log written straight to the file: real hashes, chains and signatures, the
mix of entry types a busy team writes (notes, fixes, handoffs and their acks, questions and
answers, alerts and their resolutions, decisions), at a steady rate over a span of days.

Used by the year-long digest test and by bench/digest.py: appending 50,000 entries one by one
(each fsynced) takes minutes; this takes seconds and verifies like appended entries.
"""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from pathlib import Path

from vaultmem.core.records import evolve
from vaultmem.core.vault import Vault
from vaultmem.nexus import entry, signing

CHANNELS = ("backend", "frontend", "api", "ops", "payments", "copy", "infra")
WORDS = [
    "checkout",
    "webhook",
    "retry",
    "invoice",
    "slot",
    "calendar",
    "capacity",
    "booking",
    "refund",
    "cents",
    "migration",
    "index",
    "cache",
    "deploy",
    "rollback",
    "strings",
    "review",
    "latency",
    "timeout",
    "queue",
    "worker",
    "schema",
]


def _text(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n)).capitalize()


def write_log(
    root: Path,
    n: int,
    *,
    agents: tuple[str, ...],
    start: datetime = datetime(2026, 1, 1, tzinfo=UTC),
    days: int = 365,
    seed: int = 14,
) -> list[entry.Entry]:
    """Replace the vault's live log with `n` signed entries spread over `days` from `start`."""
    v = Vault.open(root)
    signers = {}
    for agent in agents:
        signer = signing.signer_for(v, agent)
        assert signer is not None, f"no key for {agent}"
        signers[agent] = signer
    rng = random.Random(seed)
    step = timedelta(days=days) / n
    heads: dict[str, tuple[int, str | None]] = {a: (0, None) for a in agents}
    inbox: dict[str, list[entry.Entry]] = {a: [] for a in agents}  # handoffs to each agent
    pool: list[entry.Entry] = []  # questions and alerts anyone else may answer or resolve
    decisions = 0
    out: list[entry.Entry] = []
    for i in range(n):
        agent = agents[i % len(agents)]
        when = start + step * i + timedelta(milliseconds=rng.randrange(0, 999))
        roll = rng.random()
        acks: tuple[str, ...] = ()
        to: tuple[str, ...] = ()
        extra: dict[str, object] = {}
        body = ""
        others_open = [e for e in pool[:8] if e.agent != agent]
        if inbox[agent] and roll < 0.12:
            target = inbox[agent].pop(0)
            type_, summary, acks = "ack", "Done: " + _text(rng, 4).lower(), (target.id,)
        elif others_open and roll < 0.27:
            target = others_open[0]
            pool.remove(target)
            if target.type == "alert":
                type_, summary = "resolve", "Fixed: " + _text(rng, 5).lower()
                acks, extra = (target.id,), {"resolves": target.id}
            else:
                type_, summary, acks = "answer", _text(rng, 8), (target.id,)
        elif roll < 0.45:
            type_, summary = "note", _text(rng, 7)
        elif roll < 0.62:
            type_, summary = "fix", _text(rng, 6)
        elif roll < 0.72:
            type_, summary = "handoff", _text(rng, 6)
            others = [a for a in agents if a != agent]
            to = (rng.choice(others),)
            body = _text(rng, 20) + "."
        elif roll < 0.80:
            type_, summary = "question", _text(rng, 6) + "?"
        elif roll < 0.86:
            type_, summary = "answer", _text(rng, 8)
        elif roll < 0.90:
            type_, summary = "alert", "Alert " + _text(rng, 5).lower() + f" {i}"
        elif roll < 0.92:
            decisions += 1
            type_, summary = "decision", _text(rng, 7)
            extra = {"decision": f"{agent}.d{decisions}"}
        else:
            type_, summary = "state", f"project state: updated section '{rng.choice(WORDS)}'"
            extra = {"section": "Status"}
        seq, prev = heads[agent]
        e = entry.Entry(
            id=f"{agent}.{seq + 1}",
            agent=agent,
            seq=seq + 1,
            time=when.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
            channel=rng.choice(CHANNELS),
            type=type_,
            summary=summary,
            body=body,
            acks=acks,
            to=to,
            extra=extra,
            prev=prev,
            key=signers[agent].key_id,
        )
        digest = e.compute_hash()
        e = evolve(e, hash=digest, sig=signers[agent].sign(digest))
        heads[agent] = (seq + 1, digest)
        if type_ == "handoff":
            inbox[to[0]].append(e)
        elif type_ in ("question", "alert"):
            pool.append(e)
        out.append(e)
    header = v.live_context.read_text(encoding="utf-8").split("\n### ", 1)[0].rstrip("\n") + "\n"
    v.live_context.write_text(header + "".join(entry.render(e) for e in out), encoding="utf-8")
    return out
