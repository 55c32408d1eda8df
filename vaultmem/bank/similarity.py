"""Text similarity for dedupe: deterministic, no index and no model, the same on every machine.

Used by `retain` (is a new fact a repeat, or does it update an older one?) and by the review
screen (which memories look like this proposal?).
"""

from __future__ import annotations

import re
import unicodedata

from vaultmem.core.records import record

# Function words carry no meaning for dedupe: the Snowball stop-word list of the vault's language
# (core/stopwords.py, generated from the lists the index's stemmer uses). Negations are kept
# apart, because they flip the meaning: "Chiara non vuole ..." is not a repeat of "Chiara vuole
# ...". Words are accent-folded, as `normalise` folds text; French "n'" folds into the next word,
# so its "pas" / "jamais" carry the negation.
NEGATIONS: dict[str, frozenset[str]] = {
    "en": frozenset(
        [
            "not",
            "no",
            "never",
            "none",
            "nothing",
            "nobody",
            "neither",
            "nor",
            "without",
            "cannot",
            "cant",
            "dont",
            "doesnt",
            "didnt",
            "isnt",
            "arent",
            "wasnt",
            "werent",
            "wont",
            "wouldnt",
            "shouldnt",
            "mustnt",
        ]
    ),
    "it": frozenset(
        [
            "non",
            "no",
            "mai",
            "nessuno",
            "nessuna",
            "niente",
            "nulla",
            "ne",
            "neanche",
            "nemmeno",
            "neppure",
            "senza",
        ]
    ),
    "de": frozenset(
        [
            "nicht",
            "kein",
            "keine",
            "keinen",
            "keinem",
            "keiner",
            "keines",
            "nie",
            "niemals",
            "niemand",
            "nichts",
            "weder",
            "ohne",
        ]
    ),
    "fr": frozenset(["ne", "pas", "non", "jamais", "rien", "aucun", "aucune", "ni", "sans"]),
    "es": frozenset(
        [
            "no",
            "nunca",
            "jamas",
            "nada",
            "nadie",
            "ninguno",
            "ninguna",
            "ningun",
            "ni",
            "sin",
            "tampoco",
        ]
    ),
    "pt": frozenset(
        ["nao", "nunca", "jamais", "nada", "ninguem", "nenhum", "nenhuma", "nem", "sem"]
    ),
    "nl": frozenset(["niet", "geen", "nooit", "niets", "niemand", "noch", "zonder", "nergens"]),
}


def _words(language: str) -> tuple[frozenset[str], frozenset[str]]:
    """(stop words, negations) of a language; English for one vaultmem does not know."""
    from vaultmem.core.stopwords import STOPWORDS

    lang = language if language in NEGATIONS else "en"
    negations = NEGATIONS[lang]
    return STOPWORDS[lang] - negations, negations


@record
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


def signature(text: str, language: str = "en") -> Signature:
    """What dedupe compares of `text`, written in `language` (vaultmem.toml's `language`)."""
    stop, negations = _words(language)
    norm = normalise(text)
    tokens = norm.split()
    words = frozenset(t for t in tokens if t not in stop)
    return Signature(
        norm=norm,
        words=words,
        numbers=frozenset(t for t in words if any(c.isdigit() for c in t)),
        negated=any(t in negations for t in tokens),
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
