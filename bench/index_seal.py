"""What the index's block seals cost (search/index_seal.py): a searcher opened and queried
through the sealed storage against whoosh's own FileStorage on the same generation.

    python bench/index_seal.py [--notes 10000] [--runs 15] [--work DIR]

Builds (or, with `--work` and an index already there, reuses) a synthetic vault
(bench/synth_vault.py) and its index, then, in one process, alternating the two each run:
open the generation, open a searcher, run three questions (`engine.Searcher.search`, limit 10,
the hits' stored fields read as recall reads them), close. Prints the median wall time of each,
their difference, how many blocks and bytes the sealed run checked, the time to read and check
`blocks.json`, the index's size, and the load (`os.getloadavg`). The sealed run is the one
every recall and prompt hook now pays once per process (a long-lived server once per
generation and file).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
QUESTIONS = ("kalo mira tevo", "how does the suna pipeline retry", "ravo delivery notes")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--notes", type=int, default=10_000)
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--work", type=Path, default=None)
    args = ap.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="vm-seal-bench-"))
    vault, home = work / "vault", work / "home"
    os.environ["VAULTMEM_HOME"] = str(home)
    if not (vault / "vaultmem.toml").exists():
        subprocess.run(
            [sys.executable, str(BENCH / "synth_vault.py"), str(vault), "--notes", str(args.notes)],
            check=True,
            capture_output=True,
        )
    from vaultmem.core.vault import Vault
    from vaultmem.search import engine, index_seal, manifest, refresh

    v = Vault.open(vault)
    started = time.perf_counter()
    refresh.refresh(v)
    built = time.perf_counter() - started
    m = manifest.load_manifest(v)
    assert m is not None and m.engine == "whoosh"
    folder = str(manifest.index_dir(v) / m.generation)
    size = sum(e.stat().st_size for e in os.scandir(folder))
    words = [engine.Query(words=tuple(q.split())) for q in QUESTIONS]

    def run(sealed: bool) -> tuple[float, int]:
        engine.load()
        from whoosh import scoring
        from whoosh.index import open_dir

        t0 = time.perf_counter()
        ix = index_seal.open_index(engine._sealed_storage(), folder) if sealed else open_dir(folder)
        weighting = scoring.BM25F(B=engine.BM25_B, K1=engine.BM25_K1)
        s = engine.Searcher(v, (ix, ix.searcher(weighting=weighting), m.generation))
        for q in words:
            for hit in s.search(q, limit=10):
                assert hit.fields.get("path")
        checked = 0
        if sealed:
            checked = sum(len(f._blocks) for f in _open_verified())
        s.close()
        return time.perf_counter() - t0, checked

    run(True)
    run(False)  # warm the page cache and the imports
    plain, sealed, blocks = [], [], []
    for _ in range(args.runs):
        t, _n = run(False)
        plain.append(t)
        t, n = run(True)
        sealed.append(t)
        blocks.append(n)
    t0 = time.perf_counter()
    for _ in range(50):
        index_seal._load(folder)
    load_ms = (time.perf_counter() - t0) / 50 * 1000
    p, s_ = statistics.median(plain) * 1000, statistics.median(sealed) * 1000
    print(f"notes: {args.notes}  index: {size / 1e6:.1f} MB  (built/refreshed in {built:.1f} s)")
    print(f"load: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"open + 3 searches, whoosh FileStorage: {p:.2f} ms (median of {args.runs})")
    print(f"open + 3 searches, sealed storage:     {s_:.2f} ms")
    print(f"difference: {s_ - p:+.2f} ms ({s_ / p:.2f}x)")
    n = int(statistics.median(blocks))
    print(f"blocks checked: {n} ({n * index_seal.BLOCK / 1e6:.2f} MB at most)")
    print(f"blocks.json read and checked: {load_ms:.3f} ms")


def _open_verified() -> list[Any]:
    """The sealed files a searcher holds open (whoosh's readers keep them as attributes)."""
    import gc

    from vaultmem.search import index_seal

    return [o for o in gc.get_objects() if isinstance(o, index_seal._VerifiedFile) and not o.closed]


if __name__ == "__main__":
    main()
