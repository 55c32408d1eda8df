"""Make a static embedding model from a sentence-transformers BERT folder, explicitly.

    python -m vaultmem.search.distil BERT_FOLDER OUT_FOLDER [--dims 256] [--threads 1]

Never run by recall or indexing: a person asks for it (the README's semantic section), to trade
quality for speed on a very large vault (the default transformer embeds ~10 documents a second
on two cores; a static model, millions). Every vocabulary token goes through the transformer as
`[CLS] token [SEP]`, mean-pooled (the model2vec recipe); then the principal components are kept
and frequent tokens weighted down (SIF), and the table is stored as int8 with one scale per row.

Cost on a 2-core machine: about 110 s of CPU for a 30,522-token vocabulary, because the linear
layers are one 2-D matrix product each ((tokens x 3) x hidden, not a batch of 3-D products: 9x
less CPU for the same output) and BLAS runs on `--threads` threads (default 1: a shared machine
loses more to oversubscription than it gains). Progress goes to stderr with a unit and an ETA.
The output is written to a temporary folder next to OUT_FOLDER and renamed into place; an
interrupted run leaves nothing behind.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from vaultmem.search.bert import bert_forward

BATCH = 512
DIMS = 256
# Frequent tokens say little: each token's vector is scaled by SIF / (SIF + p), p its
# probability under a Zipf law over the vocabulary order (BERT's word pieces come roughly in
# frequency order after the first WORDS_FROM ids: special and single characters). model2vec
# does the same. On LoCoMo conversations 0-4, dense R@1 0.18 without, 0.28 with (1e-4).
SIF = 1e-4
WORDS_FROM = 1996

ProgressFn = Callable[[int, int], None]


def token_vectors(folder: Path, *, progress: ProgressFn | None = None) -> Any:
    """(vocab, hidden) float32: each token as `[CLS] token [SEP]`, mean-pooled."""
    import numpy as np
    from safetensors.numpy import load_file

    weights = load_file(str(folder / "model.safetensors"))
    # some exports prefix every name with the architecture ("bert.")
    weights = {k.removeprefix("bert."): v.astype(np.float32) for k, v in weights.items()}
    cfg = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    cls, sep = special_ids(folder)
    table = weights["embeddings.word_embeddings.weight"]
    vocab = table.shape[0]
    out = np.zeros(table.shape, np.float32)
    for start in range(0, vocab, BATCH):
        ids = np.arange(start, min(vocab, start + BATCH))
        seq = np.stack([np.full_like(ids, cls), ids, np.full_like(ids, sep)], 1)
        out[start : start + len(ids)] = bert_forward(weights, cfg, seq, np.ones_like(seq)).mean(1)
        if progress is not None:
            progress(start + len(ids), vocab)
    return out


def zipf_weights(vocab: int) -> Any:
    import numpy as np

    rank = np.maximum(np.arange(vocab) - (WORDS_FROM - 1), 1).astype(np.float64)
    p = (1.0 / rank) / (1.0 / rank).sum()
    return (SIF / (SIF + p)).astype(np.float32)


def reduce_dims(table: Any, dims: int) -> Any:
    import numpy as np

    centred = table - table.mean(0)
    dims = min(dims, table.shape[1])
    # the covariance is small (hidden x hidden): its eigenvectors are the principal axes
    values, vectors = np.linalg.eigh(centred.T @ centred)
    axes = vectors[:, np.argsort(values)[::-1][:dims]]
    return (centred @ axes).astype(np.float32)


def special_ids(folder: Path) -> tuple[int, int]:
    """The ids of [CLS] and [SEP] (BERT's 101 and 102 unless the tokenizer says otherwise)."""
    with contextlib.suppress(OSError, ValueError, KeyError, TypeError):
        raw = json.loads((folder / "tokenizer.json").read_text(encoding="utf-8"))
        vocab = raw["model"]["vocab"]
        return int(vocab["[CLS]"]), int(vocab["[SEP]"])
    return 101, 102


def distil(folder: Path, *, dims: int = DIMS, progress: ProgressFn | None = None) -> Any:
    """The static table of a BERT folder: token vectors, principal components, SIF weights."""
    table = token_vectors(folder, progress=progress)
    return reduce_dims(table, dims) * zipf_weights(len(table))[:, None]


def make(bert: Path, out: Path, *, dims: int = DIMS, progress: ProgressFn | None = None) -> Path:
    """Distil `bert` into a static model folder `out` (written aside, then renamed)."""
    from vaultmem.search import embedder

    if out.exists():
        raise FileExistsError(f"{out} exists: remove it or choose another folder")
    table = distil(bert, dims=dims, progress=progress)
    tmp = out.with_name(f".{out.name}.tmp-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    try:
        embedder.write_static(
            tmp,
            table,
            (bert / "tokenizer.json").read_bytes(),
            source=f"distilled from {bert.name} ({dims} dims, SIF {SIF}, int8)",
        )
        tmp.rename(out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return out


class Progress:
    """`distilling: 12,288 / 30,522 tokens (40%), 25 s left` on stderr, at most twice a
    second (a new line each time off a terminal, one line rewritten on one)."""

    def __init__(self, unit: str = "tokens") -> None:
        self.unit = unit
        self.started = time.monotonic()
        self.shown = 0.0
        self.tty = sys.stderr.isatty()

    def __call__(self, done: int, total: int) -> None:
        now = time.monotonic()
        if done < total and now - self.shown < 0.5:
            return
        self.shown = now
        spent = now - self.started
        left = spent / done * (total - done) if done else 0.0
        line = (
            f"distilling: {done:,} / {total:,} {self.unit} ({100 * done // max(total, 1)}%), "
            f"{left:.0f} s left"
        )
        end = "\n" if done >= total or not self.tty else ""
        print(("\r" if self.tty else "") + line, end=end, file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m vaultmem.search.distil", description=__doc__.split("\n")[0]
    )
    ap.add_argument("bert", type=Path, help="a sentence-transformers BERT folder")
    ap.add_argument("out", type=Path, help="the static model folder to create")
    ap.add_argument("--dims", type=int, default=DIMS)
    ap.add_argument("--threads", type=int, default=1, help="BLAS threads (default 1)")
    args = ap.parse_args(argv)
    # BLAS reads its thread count when numpy is first imported: set it before that
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = str(max(1, args.threads))
    try:
        out = make(args.bert, args.out, dims=args.dims, progress=Progress())
    except (OSError, ValueError, KeyError) as exc:
        print(f"Error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted: nothing was written", file=sys.stderr)
        return 130
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
