"""The words of the vault's note names, for the prompt hook's recall gate, as a Bloom filter.

`hook prompt` runs recall only when the prompt shares a word with a memory or with the name of
a note the agent may see (`app/hooks/quick.names_something`). Reading every note name from the
index manifest made that cost grow with the vault (the manifest of 50,000 notes is 4.3 MB), so
each time the manifest is written the words of its file names go into a fixed-shape filter,
`.vaultmem/index/names.json`, sealed like the manifest (`core/seal.py`):

    {"paths": "<blake2b of the sorted paths>", "bits": M, "k": K, "filter": "<base64>"}

A name word is filed under its scope: "" for notes every agent may see, the agent's name for
`agents/<agent>/...`. A lookup hashes (scope, word) to K bit positions; a miss is certain, a hit
is right but for about 1 in 1,000 (16 bits per word): a false hit only makes the hook run the
full recall, as a real one would. Reading it costs one small file whatever the vault's size.

Imports only `os`, `re`, `binascii` and `core/seal.py` (which imports `os`, `json` and the
built-in `_blake2`): the quick path loads it before anything heavy.
"""

# os.path, not pathlib: the prompt hook's quick path imports this module
# ruff: noqa: PTH118

from __future__ import annotations

import binascii
import os
import re
from typing import TYPE_CHECKING

from vaultmem.core import seal

if TYPE_CHECKING:
    from collections.abc import Iterable

try:  # the built-in module, as in core/seal.py: hashlib would load OpenSSL
    from _blake2 import blake2b
except ImportError:  # pragma: no cover - another Python implementation
    from hashlib import blake2b

NAMES = "names.json"
BITS_PER_WORD = 16
HASHES = 7
MIN_BITS = 1 << 13
PERSON = b"vaultmem-names1"

_WORD = re.compile(r"[^\W\d_]{4,}")
# words too common in prompts to say what a prompt is about
STOP = frozenset(
    [
        "about",
        "after",
        "again",
        "also",
        "been",
        "before",
        "being",
        "could",
        "does",
        "done",
        "each",
        "from",
        "have",
        "here",
        "into",
        "just",
        "like",
        "made",
        "make",
        "more",
        "most",
        "much",
        "only",
        "other",
        "over",
        "please",
        "really",
        "should",
        "some",
        "such",
        "than",
        "thanks",
        "that",
        "their",
        "them",
        "then",
        "there",
        "these",
        "they",
        "this",
        "those",
        "very",
        "want",
        "what",
        "when",
        "where",
        "which",
        "while",
        "will",
        "with",
        "would",
        "your",
        "yours",
        "able",
        "back",
        "come",
        "going",
        "know",
        "look",
        "need",
        "okay",
        "sure",
        "take",
        "tell",
        "thing",
        "think",
        "time",
        "using",
        "well",
        "work",
        "ahead",
    ]
)


def words(text: str) -> set[str]:
    """A prompt's, a title's or a note name's salient words: 4+ letters, lowercase, no
    plural s."""
    return {w.rstrip("s") for w in _WORD.findall(text.lower()) if w not in STOP}


def scope_of(rel: str) -> str | None:
    """Who may see the note at `rel`: "" for every agent, an agent's name for its own folder;
    None for a path under agents/ that names no agent folder."""
    if not rel.startswith("agents/"):
        return ""
    parts = rel.split("/")
    return parts[1] if len(parts) > 2 else None


def name_words(paths: Iterable[str]) -> set[tuple[str, str]]:
    """(scope, word) for every word of every note name (its file name without `.md`)."""
    out: set[tuple[str, str]] = set()
    for rel in paths:
        scope = scope_of(rel)
        if scope is None:
            continue
        stem = rel.rsplit("/", 1)[-1].rsplit(".", 1)[0]
        out.update((scope, w) for w in words(stem))
    return out


def _positions(scope: str, word: str, bits: int, k: int) -> list[int]:
    digest = blake2b(f"{scope}\0{word}".encode(), digest_size=16, person=PERSON).digest()
    h1 = int.from_bytes(digest[:8], "little")
    h2 = int.from_bytes(digest[8:], "little") | 1
    return [(h1 + i * h2) % bits for i in range(k)]


def fingerprint(paths: list[str]) -> str:
    """What the filter was made from: the sorted note paths, hashed."""
    joined = "\n".join(paths).encode("utf-8", "surrogateescape")
    return blake2b(joined, digest_size=16, person=PERSON).hexdigest()


def build(paths: list[str]) -> dict[str, object]:
    """The filter for these (sorted) note paths, as the JSON value written to names.json."""
    pairs = name_words(paths)
    bits = MIN_BITS
    while bits < BITS_PER_WORD * len(pairs):
        bits *= 2
    table = bytearray(bits // 8)
    for scope, word in pairs:
        for pos in _positions(scope, word, bits, HASHES):
            table[pos >> 3] |= 1 << (pos & 7)
    return {
        "paths": fingerprint(paths),
        "bits": bits,
        "k": HASHES,
        "filter": binascii.b2a_base64(bytes(table), newline=False).decode("ascii"),
    }


def path(index_folder: str) -> str:
    return os.path.join(index_folder, NAMES)


def write(index_folder: str, paths: list[str]) -> bytes | None:
    """The sealed names.json for these sorted paths; None when the file there is already
    made from exactly these paths (edits of notes change no name), or there is no secret."""
    target = path(index_folder)
    known = seal.read(target)
    if isinstance(known, dict) and known.get("paths") == fingerprint(paths):
        return None
    return seal.dumps(target, build(paths))


class Names:
    """A names.json read once: `holds(scope, word)`."""

    def __init__(self, raw: dict[str, object]) -> None:
        bits, k, table = raw["bits"], raw["k"], raw["filter"]
        if not (isinstance(bits, int) and isinstance(k, int) and isinstance(table, str)):
            raise ValueError("not a names filter")
        self.bits, self.k = bits, k
        self.table = binascii.a2b_base64(table)
        if bits <= 0 or k <= 0 or len(self.table) * 8 != bits:
            raise ValueError("not a names filter")

    def holds(self, scope: str, word: str) -> bool:
        table = self.table
        return all(
            table[pos >> 3] >> (pos & 7) & 1 for pos in _positions(scope, word, self.bits, self.k)
        )


def load(index_folder: str) -> Names | None:
    """The filter beside the manifest; None when it is missing, damaged or not sealed here."""
    raw = seal.read(path(index_folder))
    if not isinstance(raw, dict):
        return None
    try:
        return Names(raw)
    except (KeyError, ValueError, binascii.Error):
        return None
