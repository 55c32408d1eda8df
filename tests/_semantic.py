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


def use_model(vault: Path, model: Path, mode: str = "auto", floor: float = 0.0) -> None:
    """The vault's `[recall]` table: this mode and model, and the dense floor off by default:
    a toy model's cosines are not the default model's, for which `min_similarity` is
    calibrated (the floor itself is tested with the real model: tests/test_recall_floor.py)."""
    cfg = vault / "vaultmem.toml"
    text = cfg.read_text(encoding="utf-8").split("\n[recall]\n")[0]
    table = f'\n[recall]\nmode = "{mode}"\nmodel = "{model}"\nmin_similarity = {floor}\n'
    cfg.write_text(text + table, encoding="utf-8")
