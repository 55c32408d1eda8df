"""Text similarity for dedupe: deterministic, no index and no model, the same on every machine.

Used by `retain` (is a new fact a repeat, or does it update an older one?) and by the review
screen (which memories look like this proposal?).
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

# Function words carry no meaning for dedupe; negations are kept apart because they flip it.
_STOP_WORDS = """a an the and or of to in on at for is are was were be been being it its this that
these those with as by from into onto we i you they he she our their his her us them me my your
do does did has have had will would should can could may might must shall so than then there
here about also just very all any some each when where which who whom what how"""
_NEGATION_WORDS = """not no never none nothing nobody neither nor without cannot cant dont
doesnt didnt isnt arent wasnt werent wont wouldnt shouldnt mustnt"""
_STOP = frozenset(_STOP_WORDS.split())
_NEGATIONS = frozenset(_NEGATION_WORDS.split())


@dataclass(frozen=True)
class Signature:
    """What dedupe compares: the normalised text, its content words, numbers and polarity."""

    norm: str
    words: frozenset[str]
    numbers: frozenset[str]
    negated: bool


def normalise(text: str) -> str:
    """Accent-folded, lower-case words joined by one space: 'Don't' → 'dont'."""
    folded = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    folded = re.sub(r"['’`]", "", folded.lower())
    return " ".join(re.findall(r"[a-z0-9]+", folded))


def signature(text: str) -> Signature:
    norm = normalise(text)
    tokens = norm.split()
    words = frozenset(t for t in tokens if t not in _STOP)
    return Signature(
        norm=norm,
        words=words,
        numbers=frozenset(t for t in words if any(c.isdigit() for c in t)),
        negated=any(t in _NEGATIONS for t in tokens),
    )


def similarity(new: Signature, old: Signature) -> tuple[float, bool]:
    """(score in 0..1, conflict) of a new text against an existing one.

    Score: the mean of Jaccard and containment of content words, where containment is how much
    of the *new* text the old one already says. "Store times in UTC" against "Store all times in
    UTC" scores high (nothing new); a new text that adds a detail ("... before Friday noon")
    scores lower and becomes a candidate to supersede instead of a duplicate. Containment counts
    only when the new side has 3+ content words; below that, Jaccard alone.
    `conflict` is True when the numbers differ or one side is negated and the other is not:
    such a pair is never a duplicate, at most a candidate to supersede.
    """
    if new.norm and new.norm == old.norm:
        return 1.0, False
    if not new.words or not old.words:
        return 0.0, False
    inter = len(new.words & old.words)
    jaccard = inter / len(new.words | old.words)
    containment = inter / len(new.words) if len(new.words) >= 3 else jaccard
    conflict = new.numbers != old.numbers or new.negated != old.negated
    return round((jaccard + containment) / 2, 3), conflict
