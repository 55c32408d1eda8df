"""How keyword hits are scored, the same for every full-text engine (`engine.py`, `fts5.py`).

The fields' boosts, the BM25 knobs, the proximity bonus, the coverage weight and the damping of
vaultmem's own notes, and `RawHit`, what an engine's search returns before recall groups it.
No engine is imported here.
"""

from __future__ import annotations

from typing import Any

from vaultmem.core.records import record

# text fields searched by plain words, with their query-time boosts
TEXT_FIELDS: dict[str, float] = {
    "title": 2.5,
    "heading": 1.5,
    "desc": 1.5,
    "tags": 1.5,
    "body": 1.0,
}


# Tuned on the LoCoMo benchmark (bench/recall_quality.py) as general knobs only; neighbouring
# values change R@5 by about +-0.002
BM25_K1 = 1.2


BM25_B = 0.75


PROXIMITY_SLOP = 1


PROXIMITY_BOOST = 0.2


COVERAGE_POWER = 0.5


# Notes vaultmem maintains for itself carry a `vaultmem/...` tag (agents/*/keys.md, Review.md):
# they hold words (key, review, agent names) that questions share with real facts, never the
# facts themselves, so their scores are scaled down (keys.md ranked 2nd for "idempotency key
# checkout" before).
MACHINE_TAG = "vaultmem/"


MACHINE_WEIGHT = 0.25


@record
class RawHit:
    score: float
    fields: dict[str, Any]
    explain: tuple[tuple[str, float], ...] = ()
    matched: frozenset[str] = frozenset()  # the plain query terms this document holds
    phrases: int = 0  # how many of the query's soft (ranking, not required) phrases it holds


def machine_weight(stored: dict[str, Any]) -> float:
    tags = str(stored.get("tags") or "")
    return MACHINE_WEIGHT if any(t.startswith(MACHINE_TAG) for t in tags.split(",")) else 1.0
