"""A tiny static model built offline, in the layout vaultmem loads (model2vec: a
`tokenizer.json` and an `embeddings` table), for semantic-recall tests."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from vaultmem.search import embedder

SYNONYMS = [("car", "automobile"), ("doctor", "physician"), ("invoice", "bill")]
WORDS = [
    "tyres", "winter", "needs", "new", "the", "a", "appointment", "tuesday", "paid",
    "stripe", "webhooks", "okapi", "quetzal", "garden", "roses", "blue", "private", "plans",
]  # fmt: skip


def make_model(folder: Path, seed: int = 1) -> Path:
    """A static model: synonyms share a direction, every other word has its own."""
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers

    vocab = ["[UNK]", *[w for pair in SYNONYMS for w in pair], *WORDS]
    tok = Tokenizer(models.WordLevel({w: i for i, w in enumerate(vocab)}, unk_token="[UNK]"))
    tok.normalizer = normalizers.Lowercase()
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    rng = np.random.default_rng(seed)
    dims = 32
    table = rng.normal(size=(len(vocab), dims)).astype(np.float32)
    table[0] = 0.0
    for a, b in SYNONYMS:
        table[vocab.index(b)] = table[vocab.index(a)] + 0.05 * rng.normal(size=dims)
    folder.mkdir(parents=True, exist_ok=True)
    embedder.write_static(folder, table, tok.to_str().encode(), source="built by the tests")
    return folder


def use_model(vault: Path, model: Path, mode: str = "auto") -> None:
    cfg = vault / "vaultmem.toml"
    text = cfg.read_text(encoding="utf-8").split("\n[recall]\n")[0]
    cfg.write_text(text + f'\n[recall]\nmode = "{mode}"\nmodel = "{model}"\n', encoding="utf-8")
