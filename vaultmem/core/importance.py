"""The importance formula: how much an item (a memory, a log entry, a decision, a digest or
profile line) is worth to an agent now. The read pack cuts by it (`app.pack.importance`) and
the offline profile ranks memories by it (`app.condense.profile`).

    score = (type weight + evidence * ln(evidence count) + used * ln(1 + uses))
            * (floor + (1 - floor) * 0.5 ** (age in days / half_life_days))
"""

from __future__ import annotations

import math
from datetime import datetime
from typing import TYPE_CHECKING

from vaultmem.core import clock

if TYPE_CHECKING:
    from vaultmem.core.config import ImportanceSettings

TYPE_KEYS = frozenset(
    [
        "decision",
        "failure",
        "preference",
        "user",
        "feedback",
        "project",
        "reference",
        "fact",
        "handoff",
        "question",
        "alert",
        "fix",
        "answer",
        "state",
        "note",
        "resolve",
        "ack",
        "digest",
        "pending",
    ]
)


def score(
    settings: ImportanceSettings,
    type_: str,
    *,
    time: str | None,
    now: datetime,
    evidence: int = 1,
    used: int = 0,
) -> float:
    """An item's importance (the formula above)."""
    weight = float(getattr(settings, type_)) if type_ in TYPE_KEYS else settings.fact
    base = (
        weight
        + settings.evidence * math.log(max(evidence, 1))
        + settings.used * math.log1p(max(used, 0))
    )
    moment = clock.parse_time(time) if time else None
    if moment is None:
        return round(base, 4)
    age = max((now - moment).total_seconds() / 86400, 0.0)
    decay = settings.floor + (1 - settings.floor) * math.pow(0.5, age / settings.half_life_days)
    return round(base * decay, 4)
