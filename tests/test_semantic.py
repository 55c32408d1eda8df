"""Semantic and hybrid recall on a real Whoosh index and a real (tiny) static model.

The model is built here, offline, in the layout vaultmem loads (model2vec: a `tokenizer.json`
and an `embeddings` table): a word-level tokenizer over a small vocabulary, and vectors in
which a few pairs of different words (car/automobile, doctor/physician) point the same way.
That makes paraphrases with no shared word findable by meaning and by nothing else.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

np = pytest.importorskip("numpy")
pytest.importorskip("tokenizers")
pytest.importorskip("safetensors")

from tests._cli import run_cli  # noqa: E402
from tests._semantic import make_model, use_model  # noqa: E402
from vaultmem.core.errors import UnavailableError  # noqa: E402
from vaultmem.core.vault import Vault  # noqa: E402
from vaultmem.search import embedder, vectors  # noqa: E402
from vaultmem.search.query import recall  # noqa: E402


def _write(vault: Path, rel: str, text: str) -> None:
    path = vault / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


@pytest.fixture
def model(tmp_path: Path) -> Path:
    return make_model(tmp_path / "tiny-model")


@pytest.fixture
def sem_vault(vault: Path, model: Path) -> Path:
    use_model(vault, model)
    _write(vault, "wiki/garage.md", "# Garage\nThe car needs new tyres before winter.\n")
    _write(vault, "wiki/health.md", "# Health\nAppointment with the doctor on tuesday.\n")
    return vault


def _paths(vault: Path, query: str, **kw: object) -> list[str]:
    return [h.path for h in recall(Vault.open(vault), query, **kw).hits]  # type: ignore[arg-type]


def test_paraphrase_with_no_shared_word_is_found_in_hybrid_not_keyword(sem_vault: Path) -> None:
    assert "wiki/garage.md" not in _paths(sem_vault, "automobile", mode="keyword")
    hybrid = recall(Vault.open(sem_vault), "automobile", mode="hybrid", explain=True)
    assert hybrid.mode == "hybrid" and hybrid.hits[0].path == "wiki/garage.md"
    assert hybrid.hits[0].ranks == (None, 1)  # found by meaning only
    assert _paths(sem_vault, "physician", mode="semantic")[0] == "wiki/health.md"
    # the default ("auto") is hybrid once the extra is installed and the model is there
    assert recall(Vault.open(sem_vault), "automobile").mode == "hybrid"


def test_only_the_edited_file_is_embedded_again(sem_vault: Path) -> None:
    v = Vault.open(sem_vault)
    first = recall(v, "automobile", mode="hybrid")
    assert first.index.embedded > 10
    assert recall(v, "automobile", mode="hybrid").index.embedded == 0
    _write(sem_vault, "wiki/health.md", "# Health\nThe physician moved the appointment.\n")
    again = recall(v, "physician", mode="hybrid")
    assert again.index.refreshed == 1 and again.index.embedded == 1
    assert again.hits[0].path == "wiki/health.md"
    store = vectors.load_manifest(v)
    assert store is not None and store.delta_paths == ["wiki/health.md"]
    # a deleted note leaves the vectors too
    (sem_vault / "wiki/garage.md").unlink()
    assert "wiki/garage.md" not in _paths(sem_vault, "automobile", mode="semantic")


def test_a_new_model_rebuilds_the_embeddings(sem_vault: Path, tmp_path: Path) -> None:
    v = Vault.open(sem_vault)
    built = recall(v, "automobile", mode="hybrid").index.embedded
    other = make_model(tmp_path / "other-model", seed=2)
    use_model(sem_vault, other)
    res = recall(Vault.open(sem_vault), "automobile", mode="hybrid")
    assert res.index.embedded == built
    assert any("embedding model is now" in w for w in res.index.warnings)
    assert res.hits[0].path == "wiki/garage.md"


def test_a_corrupt_vector_store_is_rebuilt_with_a_warning(sem_vault: Path) -> None:
    v = Vault.open(sem_vault)
    built = recall(v, "automobile", mode="hybrid").index.embedded
    store = vectors.load_manifest(v)
    assert store is not None
    (vectors.store_dir(v) / f"{store.base}.npy").write_bytes(b"not a matrix")
    vectors.forget(v)
    _write(sem_vault, "wiki/health.md", "# Health\nMoved.\n")  # so that the store is read
    res = recall(v, "automobile", mode="hybrid")
    assert res.index.embedded == built
    assert any("embeddings rebuilt" in w for w in res.index.warnings)
    assert res.hits[0].path == "wiki/garage.md"
    (vectors.store_dir(v) / vectors.MANIFEST).write_text("{garbage", encoding="utf-8")
    res = recall(v, "automobile", mode="hybrid")
    assert any("unreadable" in w for w in res.index.warnings)
    assert res.hits[0].path == "wiki/garage.md"


def test_private_notes_are_filtered_alike_in_every_mode(sem_vault: Path) -> None:
    _write(sem_vault, "agents/lyra/notes/car.md", "# Lyra private plans\nThe car is blue.\n")
    _write(sem_vault, "agents/ella/notes/car.md", "# Ella private plans\nThe car is paid.\n")
    for mode in ("keyword", "semantic", "hybrid"):
        for query in ("automobile", "car private plans"):
            seen = set(_paths(sem_vault, query, agent="ella", mode=mode, limit=50))
            assert "agents/lyra/notes/car.md" not in seen, (mode, query)
        everyone = set(_paths(sem_vault, "car private plans", mode=mode, limit=50))
        assert "agents/lyra/notes/car.md" in everyone, mode
    assert "agents/ella/notes/car.md" in _paths(sem_vault, "automobile", agent="ella", limit=50)


def test_filters_and_required_phrases_hold_for_semantic_hits(sem_vault: Path) -> None:
    assert _paths(sem_vault, "automobile", mode="semantic", under="memory") == [] or all(
        p.startswith("memory/") for p in _paths(sem_vault, "automobile", mode="semantic")[:0]
    )
    hits = _paths(sem_vault, "automobile", mode="semantic", under="wiki")
    assert hits and all(p.startswith("wiki/") for p in hits)
    assert _paths(sem_vault, 'automobile "okapi"', mode="semantic") == []


@pytest.mark.slow
def test_keyword_mode_is_identical_to_a_keyword_only_install(sem_vault: Path) -> None:
    """--mode keyword with the extra and a model, against a process where the extra's
    libraries cannot be imported at all (as on an install without `vaultmem[semantic]`)."""
    query = "stripe webhooks tyres"
    with_extra = run_cli("recall", query, "--mode", "keyword", "--json", "--vault", str(sem_vault))
    assert with_extra.exit_code == 0, with_extra.stderr
    code = (
        "import sys\n"
        "for name in ('numpy', 'tokenizers', 'safetensors'): sys.modules[name] = None\n"
        "import importlib.util\n"
        "real = importlib.util.find_spec\n"
        "importlib.util.find_spec = lambda n, *a: None if n.split('.')[0] in "
        "('numpy', 'tokenizers', 'safetensors') else real(n, *a)\n"
        "from vaultmem.cli.app import run\n"
        "run(['recall', sys.argv[1], '--json', '--vault', sys.argv[2]])\n"
    )
    env = {**os.environ, "VAULTMEM_NO_FAST": "1"}
    res = subprocess.run(
        [sys.executable, "-c", code, query, str(sem_vault)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert res.returncode == 0, res.stderr
    ours, theirs = json.loads(with_extra.stdout), json.loads(res.stdout)
    assert ours["mode"] == theirs["mode"] == "keyword"
    assert ours["hits"] == theirs["hits"] and ours["hits"]


def test_cli_modes_explain_and_index_semantic(sem_vault: Path) -> None:
    res = run_cli(
        "recall", "automobile", "--mode", "hybrid", "--explain", "--json", "--vault", str(sem_vault)
    )
    assert res.exit_code == 0, res.stderr
    hit = json.loads(res.stdout)["hits"][0]
    assert hit["path"] == "wiki/garage.md" and hit["ranks"] == {"keyword": None, "semantic": 1}
    res = run_cli(
        "recall", "automobile", "--mode", "hybrid", "--explain", "--vault", str(sem_vault)
    )
    assert res.exit_code == 0 and "keyword rank -" in res.stdout
    assert run_cli("recall", "x", "--mode", "fuzzy", "--vault", str(sem_vault)).exit_code == 2
    res = run_cli("index", "--semantic", "--json", "--vault", str(sem_vault))
    assert res.exit_code == 0, res.stderr
    info = json.loads(res.stdout)["semantic"]
    assert info["source"].startswith("local folder") and info["dims"] == 32
    res = run_cli("index", "--semantic", "--vault", str(sem_vault))
    assert res.exit_code == 0 and "local folder" in res.stdout


def test_a_missing_model_is_exit_7_when_asked_for_and_keyword_by_default(
    vault: Path, tmp_path: Path
) -> None:
    use_model(vault, tmp_path / "no-such-model")
    res = run_cli("recall", "stripe", "--mode", "hybrid", "--vault", str(vault))
    assert res.exit_code == 7 and "index --semantic" in res.stderr
    res = run_cli("recall", "stripe", "--json", "--vault", str(vault))
    assert res.exit_code == 0 and json.loads(res.stdout)["mode"] == "keyword"


def test_store_is_small_and_stays_inside_the_vault(sem_vault: Path, tmp_path: Path) -> None:
    v = Vault.open(sem_vault)
    recall(v, "automobile", mode="hybrid")
    store = vectors.load_manifest(v)
    assert store is not None
    size = sum(p.stat().st_size for p in vectors.store_dir(v).iterdir())
    assert size / store.base_rows < 2048
    # a `.vaultmem/vectors` symlink that leads out of the vault is never written through
    outside = tmp_path / "outside"
    outside.mkdir()
    import shutil

    shutil.rmtree(vectors.store_dir(v))
    (sem_vault / ".vaultmem" / "vectors").symlink_to(outside)
    with pytest.raises(Exception, match="is a symlink"):
        recall(Vault.open(sem_vault), "automobile", mode="hybrid")
    assert list(outside.iterdir()) == []


def test_a_bert_folder_is_distilled_once_into_a_static_model(tmp_path: Path) -> None:
    """A tiny random BERT in the sentence-transformers layout: distilled, kept, reloaded."""
    from safetensors.numpy import save_file
    from tokenizers import Tokenizer, models, pre_tokenizers

    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "car", "automobile", "winter", "tyres"]
    tok = Tokenizer(models.WordLevel({w: i for i, w in enumerate(vocab)}, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    rng = np.random.default_rng(0)
    hidden, inner, layers = 8, 16, 2

    def r(*shape: int) -> object:
        return (0.3 * rng.normal(size=shape)).astype(np.float32)

    w = {
        "embeddings.word_embeddings.weight": r(len(vocab), hidden),
        "embeddings.position_embeddings.weight": r(16, hidden),
        "embeddings.token_type_embeddings.weight": r(2, hidden),
        "embeddings.LayerNorm.weight": np.ones(hidden, np.float32),
        "embeddings.LayerNorm.bias": np.zeros(hidden, np.float32),
    }
    for n in range(layers):
        p = f"encoder.layer.{n}."
        for name, (o, i) in {
            "attention.self.query": (hidden, hidden),
            "attention.self.key": (hidden, hidden),
            "attention.self.value": (hidden, hidden),
            "attention.output.dense": (hidden, hidden),
            "intermediate.dense": (inner, hidden),
            "output.dense": (hidden, inner),
        }.items():
            w[p + name + ".weight"], w[p + name + ".bias"] = r(o, i), r(o)
        for ln in ("attention.output.LayerNorm", "output.LayerNorm"):
            w[p + ln + ".weight"] = np.ones(hidden, np.float32)
            w[p + ln + ".bias"] = np.zeros(hidden, np.float32)
    bert = tmp_path / "tiny-bert"
    bert.mkdir()
    save_file(w, str(bert / "model.safetensors"))
    (bert / "tokenizer.json").write_text(tok.to_str(), encoding="utf-8")
    (bert / "config.json").write_text(
        json.dumps({"num_attention_heads": 2, "num_hidden_layers": layers}), encoding="utf-8"
    )
    assert not embedder.ready(str(bert))
    with pytest.raises(UnavailableError):
        embedder.resolve(str(bert), build=False)
    seen: list[tuple[int, int]] = []
    folder, source = embedder.resolve(str(bert), progress=lambda d, t: seen.append((d, t)))
    assert "distilled from the local folder" in source and seen[-1] == (len(vocab), len(vocab))
    assert embedder.ready(str(bert)) and folder.parent == embedder.models_dir()
    model = embedder.load_static(folder, name=str(bert), source=source)
    vecs = model.encode(["car winter", "tyres", ""])
    assert vecs.shape == (3, hidden) and abs(float(np.linalg.norm(vecs[0])) - 1) < 1e-5
    assert float(np.linalg.norm(vecs[2])) == 0.0
    # made once: the second resolve finds it kept
    assert "kept in" in embedder.resolve(str(bert))[1]


@pytest.mark.slow
def test_read_query_is_hybrid_and_plain_read_imports_no_runtime(sem_vault: Path) -> None:
    res = run_cli(
        "read", "--agent", "ella", "--query", "automobile", "--json", "--vault", str(sem_vault)
    )
    assert res.exit_code == 0, res.stderr
    assert "wiki/garage.md" in res.stdout
    code = (
        "import sys; from vaultmem.cli.app import run\n"
        "try: run(['read', '--vault', sys.argv[1], '--agent', 'ella'])\n"
        "except SystemExit: pass\n"
        "heavy = ('whoosh', 'numpy', 'tokenizers', 'safetensors')\n"
        "assert not [m for m in sys.modules if m.startswith(heavy)], 'heavy import'\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, str(sem_vault)], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
