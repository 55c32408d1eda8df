"""Static embedding models (the model2vec recipe): one vector per token, a text is the
normalised mean of its tokens' vectors. Microseconds per text; weaker than a transformer
(README, layer 4). A model is a folder in the model2vec layout (`model.safetensors` with an
`embeddings` table, `tokenizer.json`); an int8 table with one float32 scale a row (`embeddings`
I8 + `scales` F32) is read too, as `python -m vaultmem.search.distil` writes it.

numpy, tokenizers and safetensors are imported inside functions only.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from vaultmem.core.errors import UnavailableError
from vaultmem.core.fsio import atomic_write
from vaultmem.core.records import record

MODEL_FILE = "model.safetensors"
TOKENIZER_FILE = "tokenizer.json"
INFO_FILE = "vaultmem-model.json"


@record(frozen=False)
class StaticModel:
    """One vector per token; a text is the normalised mean of its tokens' vectors."""

    name: str  # the setting it was resolved from
    source: str  # where it came from, for people
    fingerprint: str  # changes when the vectors would change: the store rebuilds then
    table: Any  # numpy (vocab, dims), float or int8 (memory-mapped)
    tokenizer: Any
    scales: Any = None  # numpy (vocab,) float32 for an int8 table

    @property
    def dims(self) -> int:
        return int(self.table.shape[1])

    def encode_query(self, texts: Sequence[str]) -> Any:
        return self.encode(texts)

    def encode(self, texts: Sequence[str]) -> Any:
        """(len(texts), dims) float32, rows of unit length (all zeros for a text of no token)."""
        import numpy as np

        out = np.zeros((len(texts), self.dims), dtype=np.float32)
        if not texts:
            return out
        encodings = self.tokenizer.encode_batch(list(texts), add_special_tokens=False)
        lengths = np.array([len(e.ids) for e in encodings])
        rows = np.flatnonzero(lengths)
        if len(rows):
            ids = np.concatenate([encodings[i].ids for i in rows])
            vecs = np.asarray(self.table[ids], dtype=np.float32)
            if self.scales is not None:
                vecs *= self.scales[ids, None]
            # one gather from the (memory-mapped) table, then the sum of each text's run
            sums = np.add.reduceat(vecs, np.concatenate([[0], np.cumsum(lengths[rows])[:-1]]))
            out[rows] = sums / lengths[rows, None]
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        np.divide(out, norms, out=out, where=norms > 0)
        return out


_DTYPES = {"F32": ("<f4", 4), "F16": ("<f2", 2), "F64": ("<f8", 8), "I8": ("i1", 1)}


def _tensors(path: Path) -> dict[str, Any]:
    """The tensors of a safetensors file, memory-mapped (the format is an 8-byte header
    length, a JSON header, then raw little-endian data): a query reads the few rows it needs
    instead of the whole table."""
    import numpy as np

    with open(path, "rb") as fh:
        length = int.from_bytes(fh.read(8), "little")
        if not 0 < length < 100_000_000:
            raise ValueError("not a safetensors file")
        header = json.loads(fh.read(length))
    out = {}
    for name, entry in header.items():
        if name == "__metadata__" or not isinstance(entry, dict):
            continue
        if entry.get("dtype") not in _DTYPES:
            continue
        dtype, size = _DTYPES[entry["dtype"]]
        shape = tuple(int(x) for x in entry["shape"])
        start, end = (int(x) for x in entry["data_offsets"])
        count = 1
        for n in shape:
            count *= n
        if end - start != count * size:
            raise ValueError(f"{name} of shape {shape} does not fit its bytes")
        out[name] = np.memmap(path, dtype=dtype, mode="r", offset=8 + length + start, shape=shape)
    return out


def _map_table(path: Path) -> tuple[Any, Any]:
    """(table, per-row scales or None) of a static model file."""
    tensors = _tensors(path)
    table = tensors.get("embeddings")
    if table is None or len(table.shape) != 2:
        raise ValueError("no 2-D 'embeddings' table")
    scales = tensors.get("scales")
    if table.dtype.kind == "i":
        if scales is None or scales.shape != (table.shape[0],):
            raise ValueError("an int8 'embeddings' table needs one 'scales' value a row")
        scales = scales.astype("<f4")
    else:
        scales = None
    return table, scales


def load_static(folder: Path, *, name: str, source: str) -> StaticModel:
    from tokenizers import Tokenizer

    try:
        table, scales = _map_table(folder / MODEL_FILE)
        tokenizer = Tokenizer.from_file(str(folder / TOKENIZER_FILE))
    except Exception as exc:  # a half-copied or foreign folder
        raise UnavailableError(
            f"embedding model {name!r} at {folder} cannot be loaded ({type(exc).__name__}: {exc})",
            "check the [recall] model setting (a static model in the model2vec layout), or "
            "delete a fetched model to have `vaultmem index --semantic` fetch it again",
        ) from exc
    tokenizer.no_truncation()
    tokenizer.no_padding()
    stat = (folder / MODEL_FILE).stat()
    import hashlib  # here: hashlib loads OpenSSL, and recall imports this module

    digest = hashlib.blake2b(digest_size=8)
    digest.update(f"{name}:{stat.st_size}:{table.shape}:{table.dtype}".encode())
    digest.update(table[:: max(1, len(table) // 64)].tobytes())
    return StaticModel(name, source, digest.hexdigest(), table, tokenizer, scales)


def write_static(folder: Path, table: Any, tokenizer_json: bytes, *, source: str) -> None:
    """Write a static model folder: the table as int8 with one scale a row (a quarter of
    float32; the cosines move by less than 0.01), the tokenizer, where it came from."""
    import numpy as np
    from safetensors.numpy import save

    table = np.asarray(table, dtype=np.float32)
    peak = np.abs(table).max(axis=1)
    scales = np.where(peak > 0, peak / 127.0, 1.0).astype(np.float32)
    quantised = np.clip(np.rint(table / scales[:, None]), -127, 127).astype(np.int8)
    atomic_write(folder / MODEL_FILE, save({"embeddings": quantised, "scales": scales}))
    atomic_write(folder / TOKENIZER_FILE, tokenizer_json)
    atomic_write(folder / INFO_FILE, json.dumps({"source": source, "dims": int(table.shape[1])}))
