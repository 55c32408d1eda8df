"""Semantic and hybrid recall on a real Whoosh index and a real (tiny) static model.

The model is built here, offline, in the layout vaultmem loads (model2vec: a `tokenizer.json`
and an `embeddings` table): a word-level tokenizer over a small vocabulary, and vectors in
which a few pairs of different words (car/automobile, doctor/physician) point the same way.
That makes paraphrases with no shared word findable by meaning and by nothing else.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

np = pytest.importorskip("numpy")
pytest.importorskip("tokenizers")
pytest.importorskip("safetensors")

from tests._cli import run_cli  # noqa: E402
from tests._semantic import make_model, use_model  # noqa: E402
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


def test_auto_never_embeds_a_large_vault_inside_a_recall(
    vault: Path, model: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Embedding every document takes minutes with a transformer: "auto" embeds a small vault
    in its first recall, and searches a larger one by keyword (saying which command embeds
    it) until the store exists; edits are then embedded by recall itself."""
    from vaultmem.search import query

    use_model(vault, model)
    monkeypatch.setattr(query, "AUTO_EMBED_FILES", 100)
    small = recall(Vault.open(vault), "automobile")  # 34 files: embedded right away
    assert small.mode == "hybrid" and small.index.embedded > 10
    monkeypatch.setattr(query, "AUTO_EMBED_FILES", 10)
    big = vault.parent / "big"
    shutil.copytree(vault, big, ignore=shutil.ignore_patterns(".vaultmem"))
    res = run_cli("recall", "automobile", "--json", "--vault", str(big))
    assert res.exit_code == 0 and json.loads(res.stdout)["mode"] == "keyword"
    assert f"vaultmem index --semantic --vault {big}" in res.stderr
    assert vectors.load_manifest(Vault.open(big)) is None  # nothing embedded
    assert run_cli("index", "--semantic", "--vault", str(big)).exit_code == 0
    _write(big, "wiki/health.md", "# Health\nThe physician moved the appointment.\n")
    again = recall(Vault.open(big), "physician")
    assert again.mode == "hybrid" and again.index.embedded == 1
    assert again.hits[0].path == "wiki/health.md"
    # an empty vault has nothing to embed and nothing to warn about
    empty = vault.parent / "empty"
    empty.mkdir()
    (empty / "vaultmem.toml").write_text('language = "en"\n', encoding="utf-8")
    assert recall(Vault.open(empty), "anything").index.warnings == ()


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
    assert _paths(sem_vault, 'automobile phrase:"okapi"', mode="semantic") == []
    assert _paths(sem_vault, 'automobile "okapi"', mode="semantic", strict=True) == []
    # a soft phrase no note holds leaves the semantic hits alone
    assert "wiki/garage.md" in _paths(sem_vault, 'automobile "okapi"', mode="semantic")


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


def _tiny_bert(folder: Path) -> Path:
    """A tiny random BERT in the sentence-transformers layout."""
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
    folder.mkdir()
    save_file(w, str(folder / "model.safetensors"))
    (folder / "tokenizer.json").write_text(tok.to_str(), encoding="utf-8")
    (folder / "config.json").write_text(
        json.dumps({"num_attention_heads": 2, "num_hidden_layers": layers}), encoding="utf-8"
    )
    return folder


def _reference_forward(w: dict[str, object], cfg: dict[str, object], ids: object) -> object:
    """BERT as the papers write it: per-example 3-D products (einsum), for comparison."""
    from vaultmem.search.bert import _gelu, _layer_norm

    eps = 1e-12
    x = (
        w["embeddings.word_embeddings.weight"][ids]  # type: ignore[index]
        + w["embeddings.position_embeddings.weight"][: ids.shape[1]][None]  # type: ignore[index, attr-defined]
        + w["embeddings.token_type_embeddings.weight"][0]  # type: ignore[index]
    )
    x = _layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"], eps)
    heads = int(cfg["num_attention_heads"])  # type: ignore[call-overload]
    width = x.shape[-1] // heads
    b, n = ids.shape  # type: ignore[attr-defined]
    for layer in range(int(cfg["num_hidden_layers"])):  # type: ignore[call-overload]
        p = f"encoder.layer.{layer}."

        def lin(h: object, name: str, p: str = p) -> object:
            return np.einsum("bld,od->blo", h, w[p + name + ".weight"]) + w[p + name + ".bias"]  # type: ignore[operator]

        q, k, v = (
            lin(x, f"attention.self.{m}").reshape(b, n, heads, width)  # type: ignore[attr-defined]
            for m in ("query", "key", "value")
        )
        att = np.einsum("bqhd,bkhd->bhqk", q, k) / np.sqrt(width)
        att = np.exp(att - att.max(-1, keepdims=True))
        att /= att.sum(-1, keepdims=True)
        ctx = np.einsum("bhqk,bkhd->bqhd", att, v).reshape(b, n, heads * width)
        x = _layer_norm(
            x + lin(ctx, "attention.output.dense"),
            w[p + "attention.output.LayerNorm.weight"],
            w[p + "attention.output.LayerNorm.bias"],
            eps,
        )
        x = _layer_norm(
            x + lin(_gelu(lin(x, "intermediate.dense")), "output.dense"),
            w[p + "output.LayerNorm.weight"],
            w[p + "output.LayerNorm.bias"],
            eps,
        )
    return x


def test_the_2d_forward_pass_computes_what_bert_computes(tmp_path: Path) -> None:
    from safetensors.numpy import load_file

    from vaultmem.search.bert import bert_forward

    bert = _tiny_bert(tmp_path / "tiny-bert")
    w = load_file(str(bert / "model.safetensors"))
    cfg = json.loads((bert / "config.json").read_text(encoding="utf-8"))
    ids = np.array([[2, 4, 3], [2, 7, 3], [2, 5, 6]])
    ours = bert_forward(w, cfg, ids, np.ones_like(ids))
    assert ours.shape == (3, 3, 8)
    assert float(np.abs(ours - _reference_forward(w, cfg, ids)).max()) < 1e-5


def test_a_bert_folder_is_refused_at_recall_and_distilled_only_when_asked(
    vault: Path, tmp_path: Path
) -> None:
    """Recall never distils: it exits 7 with the command that does; that command shows its
    progress with a unit and an ETA, and its output is a model recall then uses."""
    bert = _tiny_bert(tmp_path / "tiny-bert")
    use_model(vault, bert)
    assert not embedder.ready(str(bert))
    res = run_cli("recall", "car", "--mode", "hybrid", "--vault", str(vault))
    assert res.exit_code == 7 and "python -m vaultmem.search.distil" in res.stderr
    assert not embedder.models_dir().exists()  # nothing made behind the user's back
    res = run_cli("recall", "car", "--json", "--vault", str(vault))  # auto: keyword, warned
    assert res.exit_code == 0 and json.loads(res.stdout)["mode"] == "keyword"
    assert "distil" in res.stderr
    out = tmp_path / "made"
    proc = subprocess.run(
        [sys.executable, "-m", "vaultmem.search.distil", str(bert), str(out), "--dims", "4"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert "8 / 8 tokens (100%)" in proc.stderr and " s left" in proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["made", "tiny-bert", "vault"]  # no temp
    model = embedder.load_static(out, name="made", source="test")
    assert model.dims == 4 and model.scales is not None
    vecs = model.encode(["car winter", "tyres", ""])
    assert abs(float(np.linalg.norm(vecs[0])) - 1) < 1e-5 and float(np.linalg.norm(vecs[2])) == 0
    # an existing output folder is never overwritten
    again = subprocess.run(
        [sys.executable, "-m", "vaultmem.search.distil", str(bert), str(out)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert again.returncode == 2 and "exists" in again.stderr
    use_model(vault, out, mode="hybrid")
    assert run_cli("recall", "car", "--vault", str(vault)).exit_code == 0


@pytest.mark.slow
def test_read_query_is_hybrid_and_plain_read_imports_no_runtime(sem_vault: Path) -> None:
    assert run_cli("index", "--semantic", "--vault", str(sem_vault)).exit_code == 0
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


def test_hybrid_scores_stay_on_the_keyword_scale(sem_vault: Path) -> None:
    """Thresholds set for BM25F scores (the prompt hook's [hooks] recall_min_score, 12) keep
    their meaning when the default mode becomes hybrid."""
    v = Vault.open(sem_vault)
    keyword = recall(v, "stripe webhooks", mode="keyword").hits
    hybrid = recall(v, "stripe webhooks", mode="hybrid").hits
    assert keyword and hybrid and keyword[0].score > 1.0
    assert 0.8 * keyword[0].score - 1e-3 <= hybrid[0].score <= keyword[0].score + 1e-3
