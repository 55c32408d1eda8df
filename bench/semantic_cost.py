"""What semantic recall costs against keyword recall, on a synthetic vault.

    python bench/semantic_cost.py --model FOLDER [--notes 10000] [--runs 5]

FOLDER is a static model (or a sentence-transformers folder, distilled first). Measures, for
the same vault: the full index build with and without embeddings, a cold `vaultmem recall
--json` process in keyword and in hybrid mode (model loading included), a warm hybrid
`recall()` in one process (freshness walk included, and with the walk skipped as while
`vaultmem watch` runs), and the embedding store's bytes per document.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import precompile, timed

REPO = Path(__file__).resolve().parent.parent


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", required=True)
    ap.add_argument("--notes", type=int, default=10_000)
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    precompile()
    import os

    from vaultmem.core.vault import Vault
    from vaultmem.search import embedder, refresh, vectors
    from vaultmem.search.query import recall

    base = Path(tempfile.mkdtemp(prefix="vaultmem-semcost-"))
    root = base / "vault"
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
    env = dict(os.environ)
    env["VAULTMEM_HOME"] = str(base / "home")
    os.environ["VAULTMEM_HOME"] = env["VAULTMEM_HOME"]
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    v = Vault.open(root)

    t0 = time.perf_counter()
    refresh.refresh(v, wait=None, rebuild=True)
    keyword_build = time.perf_counter() - t0
    t0 = time.perf_counter()
    model = embedder.load_model(args.model)
    load_s = time.perf_counter() - t0
    shutil.rmtree(vectors.store_dir(v), ignore_errors=True)
    t0 = time.perf_counter()
    fresh = refresh.refresh(v, wait=None, rebuild=True, model=model)
    hybrid_build = time.perf_counter() - t0
    store = vectors.load_manifest(v)
    assert store is not None
    size = sum(p.stat().st_size for p in vectors.store_dir(v).iterdir())
    print(
        f"{args.notes} notes, {store.base_rows} documents; model load {load_s * 1000:.0f} ms "
        f"({model.dims} dims)"
    )
    print(
        f"full build: keyword {keyword_build:.1f} s, with embeddings {hybrid_build:.1f} s "
        f"({hybrid_build / keyword_build:.2f}x; {fresh.embedded} embedded)"
    )
    print(f"embedding store: {size / store.base_rows:.0f} bytes per document")

    queries = ["release plan review", "who owns the service", "kalomi rate tevo"]
    for mode in ("keyword", "hybrid"):
        times = []
        for i in range(args.runs):
            cmd = [sys.executable, "-m", "vaultmem", "recall", queries[i % 3], "--json"]
            cmd += ["--mode", mode, "--vault", str(root)]
            times.append(timed(cmd, env))
        print(
            f"cold `vaultmem recall --json --mode {mode}`: {statistics.median(times) * 1000:.0f} ms"
        )

    for label, trust in (("with the freshness walk", False), ("walk skipped", True)):
        times = []
        for i in range(args.runs * 4):
            t0 = time.perf_counter()
            if trust:
                # as with `vaultmem watch` running: a fresh heartbeat lets recall skip the walk
                refresh.write_heartbeat(v, pending=0, pid=os.getpid())
            recall(v, queries[i % 3], mode="hybrid")
            times.append(time.perf_counter() - t0)
        print(f"warm hybrid recall() {label}: {statistics.median(times) * 1000:.1f} ms")
    shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
