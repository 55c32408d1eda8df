"""Installed means working: a fresh virtual environment with `vaultmem[semantic]`, offline.

The wheel is built from this checkout and installed with the machine's package index (on these
machines an offline mirror; nothing reaches a model hub). Then, with no other step, the first
`vaultmem index --semantic` on a copy of example-vault/ uses the model that ships inside
vaultmem, and hybrid recall finds a note that shares no content word with the question.
How long that takes is measured by `bench/semantic_install.py`, not asserted here.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
QUESTION = "why were customers unable to pay yesterday"
OUTAGE = "wiki/incident-2026-11-28.md"
NOTE = (
    "# Incident 2026-11-28\n\n"
    "The payment service went down for forty minutes after the certificate expired; "
    "checkout requests failed until the on-call engineer rotated it.\n"
)


def fresh_install(root: Path) -> Path:
    """A new venv with this checkout's wheel and the semantic extra; its `vaultmem`."""
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet"]
    subprocess.run([*pip, f"{REPO}[semantic]"], check=True, timeout=1500)
    return venv / "bin" / "vaultmem"


def paraphrase_vault(root: Path) -> Path:
    vault = root / "vault"
    shutil.copytree(REPO / "example-vault", vault, ignore=shutil.ignore_patterns(".vaultmem"))
    (vault / OUTAGE).write_text(NOTE, encoding="utf-8")
    return vault


def offline_env(root: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("VAULTMEM_")}
    env |= {"VAULTMEM_HOME": str(root / "home"), "HF_HUB_OFFLINE": "1"}
    env.pop("PYTHONPATH", None)  # the installed wheel, never this checkout
    return env


def test_a_fresh_install_with_the_extra_finds_a_paraphrase_offline(tmp_path: Path) -> None:
    vaultmem = fresh_install(tmp_path)
    vault = paraphrase_vault(tmp_path)
    env = offline_env(tmp_path)

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(vaultmem), *args, "--vault", str(vault)],
            capture_output=True,
            text=True,
            env=env,
            timeout=300,
            cwd=tmp_path,
        )

    index = run("index", "--semantic", "--json")
    assert index.returncode == 0, index.stderr
    info = json.loads(index.stdout)["semantic"]
    # the model came with the install: the registry package's file, in this venv
    assert info["source"].startswith("all-MiniLM-L6-v2 (int8 ONNX"), info
    assert str(tmp_path / "venv") in info["source"], info
    hybrid = run("recall", QUESTION, "--mode", "hybrid", "--limit", "3", "--json")
    assert hybrid.returncode == 0, hybrid.stderr
    assert OUTAGE in [h["path"] for h in json.loads(hybrid.stdout)["hits"]]
    # found by meaning: keyword search has no word of the question to match in that note
    keyword = run("recall", QUESTION, "--mode", "keyword", "--limit", "10", "--json")
    assert OUTAGE not in [h["path"] for h in json.loads(keyword.stdout)["hits"]]
    # nothing was downloaded: all VAULTMEM_HOME/models/ holds is the query encoder's weights,
    # exported from the installed file by index --semantic
    made = sorted(p.name for p in (tmp_path / "home" / "models").rglob("*") if p.is_file())
    assert made == ["query-weights.safetensors"], made
