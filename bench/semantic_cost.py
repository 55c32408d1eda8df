"""What semantic recall costs against keyword recall, on a synthetic vault.

    python bench/semantic_cost.py [--model all-MiniLM-L6-v2] [--notes 10000] [--runs 7]
        [--work DIR]

For the same vault: the full index build with and without embeddings (the embeddings are a
real build, every document through the model; `--work` keeps the vault so a second run reuses
it), a cold `vaultmem recall --json` process in keyword and in hybrid mode, interleaved
(hybrid's query through the numpy encoder `vaultmem index --semantic` exports, and through
onnxruntime without it), each process's peak memory, a warm hybrid `recall()` in one process
(with the freshness walk, and with it skipped as while `vaultmem watch` runs) and the store's
bytes per document. Prints `uptime` before and after: the machine is shared.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import precompile

REPO = Path(__file__).resolve().parent.parent
QUERIES = ["release plan review", "who owns the service", "kalomi rate tevo"]


def uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def cold(cmd: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(seconds, peak MB) of one process. The peak comes from /usr/bin/time: a child's own
    rusage would count the memory of this (large) process it was forked from."""
    timer = shutil.which("time") or "/usr/bin/time"
    start = time.perf_counter()
    res = subprocess.run([timer, "-f", "%M", *cmd], env=env, capture_output=True, check=False)
    elapsed = time.perf_counter() - start
    if res.returncode != 0:
        raise SystemExit(f"{cmd} failed: {res.stderr.decode()[-400:]}")
    return elapsed, int(res.stderr.decode().strip().splitlines()[-1]) / 1024


def project(v: object, model: object, keyword_build: float, sample: int) -> None:
    """A sample through the real model, the store from a stand-in of the same width."""
    import json

    import numpy as np

    from vaultmem.search import embedder, manifest, refresh, vectors
    from vaultmem.search.documents import read_documents

    index = manifest.load_manifest(v)  # type: ignore[arg-type]
    assert index is not None
    texts: list[str] = []
    for rel in sorted(index.files):
        found = read_documents(v, rel, 2_000_000)  # type: ignore[arg-type]
        texts += [vectors.doc_text(d) for d in (found[0] if found else []) if d.unit != "whole"]
    rng = np.random.default_rng(1)
    picked = [texts[i] for i in rng.choice(len(texts), size=min(sample, len(texts)), replace=False)]
    t0 = time.perf_counter()
    model.encode(picked)  # type: ignore[attr-defined]
    rate = len(picked) / (time.perf_counter() - t0)
    print(
        f"full build: keyword {keyword_build:.1f} s; embeddings {len(texts)} documents at "
        f"{rate:.1f} a second (a sample of {len(picked)}): {len(texts) / rate:.0f} s more, projected"
    )
    stand_in = Path(tempfile.mkdtemp()) / "stand-in"
    stand_in.mkdir()
    dims = int(model.dims)  # type: ignore[attr-defined]
    table = rng.normal(size=(30522, dims)).astype(np.float32)
    tokenizer = (embedder.PACKAGED / "tokenizer.json").read_bytes()
    embedder.write_static(stand_in, table, tokenizer, source="stand-in for timings")
    fake = embedder.load_static(stand_in, name="stand-in", source="stand-in")
    refresh.refresh(v, wait=None, model=fake)  # type: ignore[arg-type]
    path = vectors.store_dir(v) / vectors.MANIFEST  # type: ignore[arg-type]
    raw = json.loads(path.read_text(encoding="utf-8"))
    raw["model"] = model.fingerprint  # type: ignore[attr-defined]
    path.write_text(json.dumps(raw), encoding="utf-8")
    shutil.rmtree(stand_in.parent, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default="all-MiniLM-L6-v2")
    ap.add_argument("--notes", type=int, default=10_000)
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--work", type=Path, default=None, help="keep the vault here (reused)")
    ap.add_argument(
        "--sample",
        type=int,
        default=0,
        help="embed only this many documents with the model (its throughput projects the full "
        "build) and fill the store with a stand-in model of the same width, for the query "
        "timings: they do not depend on the vectors' values",
    )
    args = ap.parse_args()
    precompile()
    print(uptime())
    base = args.work or Path(tempfile.mkdtemp(prefix="vaultmem-semcost-"))
    root = base / "vault"
    env = dict(os.environ)
    env["VAULTMEM_HOME"] = str(base / "home")
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    os.environ["VAULTMEM_HOME"] = env["VAULTMEM_HOME"]
    from vaultmem.core.vault import Vault
    from vaultmem.search import embedder, refresh, vectors
    from vaultmem.search.query import recall

    fresh_vault = not (root / "vaultmem.toml").is_file()
    if fresh_vault:
        subprocess.run(
            [
                sys.executable,
                str(REPO / "bench" / "synth_vault.py"),
                str(root),
                "--notes",
                str(args.notes),
            ],
            check=True,
            stdout=subprocess.DEVNULL,
        )
        (root / "vaultmem.toml").write_text(
            f'language = "en"\n\n[recall]\nmodel = "{args.model}"\n', encoding="utf-8"
        )
    v = Vault.open(root)
    keyword_build = 0.0
    if fresh_vault or vectors.load_manifest(v) is None:
        t0 = time.perf_counter()
        refresh.refresh(v, wait=None, rebuild=True)
        keyword_build = time.perf_counter() - t0
    t0 = time.perf_counter()
    model = embedder.load_model(args.model)
    load_s = time.perf_counter() - t0
    done = embedder.prepare(model)
    store = vectors.load_manifest(v)
    if args.sample and (store is None or fresh_vault):
        shutil.rmtree(vectors.store_dir(v), ignore_errors=True)
        project(v, model, keyword_build, args.sample)
    elif store is None or fresh_vault:
        shutil.rmtree(vectors.store_dir(v), ignore_errors=True)
        t0 = time.perf_counter()
        fresh = refresh.refresh(v, wait=None, model=model)
        embed_build = time.perf_counter() - t0
        print(
            f"full build: keyword {keyword_build:.1f} s; embeddings {embed_build:.1f} s more "
            f"({fresh.embedded} documents, {fresh.embedded / embed_build:.1f} a second)"
        )
    else:
        print(f"full build: keyword {keyword_build:.1f} s; embeddings reused from {root}")
    store = vectors.load_manifest(v)
    assert store is not None
    size = sum(p.stat().st_size for p in vectors.store_dir(v).iterdir())
    rows = store.base_rows + store.delta_rows
    print(
        f"{args.notes} notes, {rows} vectors ({model.dims} dims, {size / rows:.0f} bytes each); "
        f"model load in-process {load_s * 1000:.0f} ms; {done or 'query encoder already there'}"
    )

    def command(mode: str, i: int) -> list[str]:
        query = QUERIES[i % 3]
        return [
            sys.executable,
            "-m",
            "vaultmem",
            "recall",
            query,
            "--json",
            "--mode",
            mode,
            "--vault",
            str(root),
        ]

    weights = embedder.models_dir() / embedder._slug(args.model) / "query-weights.safetensors"
    stash = weights.with_suffix(".off")
    times: dict[str, list[tuple[float, float]]] = {"keyword": [], "hybrid": [], "onnx": []}
    for i in range(args.runs):  # interleaved: the machine's load moves
        times["keyword"].append(cold(command("keyword", i), env))
        times["hybrid"].append(cold(command("hybrid", i), env))
        if weights.is_file():
            weights.rename(stash)
            try:
                times["onnx"].append(cold(command("hybrid", i), env))
            finally:
                stash.rename(weights)
    kw = statistics.median(t for t, _m in times["keyword"])
    for label, found in times.items():
        if found:
            med = statistics.median(t for t, _m in found)
            peak = max(m for _t, m in found)
            print(
                f"cold recall --mode {label:8}: {med * 1000:.0f} ms ({med / kw:.2f}x keyword), "
                f"peak memory {peak:.0f} MB"
            )
    for label, trust in (("with the freshness walk", False), ("walk skipped", True)):
        warm: dict[str, list[float]] = {"keyword": [], "hybrid": []}
        for i in range(args.runs * 3):
            for mode, found in warm.items():
                t0 = time.perf_counter()
                if trust:  # as with `vaultmem watch` running: a fresh heartbeat skips the walk
                    refresh.write_heartbeat(v, pending=0, pid=os.getpid())
                recall(v, QUERIES[i % 3], mode=mode)
                found.append(time.perf_counter() - t0)
        print(
            f"warm recall() {label}: keyword {statistics.median(warm['keyword']) * 1000:.1f} ms, "
            f"hybrid {statistics.median(warm['hybrid']) * 1000:.1f} ms"
        )
    print(uptime())
    if args.work is None:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
