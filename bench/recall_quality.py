"""Recall quality on LoCoMo: every query through the library `recall()`, one index, all 10 conversations.

    python bench/recall_quality.py [--data ../shared/data/locomo] [--work DIR] [--limit 10]

Builds the LoCoMo vault with the data set's own converter (the data stays where it is; the
vault goes to a temporary folder or --work), adds a `vaultmem.toml`, runs the 1,536 queries
through `vaultmem.recall.query.recall` and scores the ranked note paths with the data set's
`score.py` (R@1, R@5, R@10, MRR@10, overall and per category).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DEFAULT_DATA = (REPO / ".." / "shared" / "data" / "locomo").resolve()


def build_vault(data: Path, work: Path) -> tuple[Path, Path]:
    vault = work / "vault"
    queries = work / "queries.jsonl"
    if not (vault / "vaultmem.toml").is_file():
        subprocess.run(
            [
                sys.executable,
                str(data / "locomo_to_vault.py"),
                "--vault",
                str(vault),
                "--queries",
                str(queries),
            ],
            check=True,
            stdout=subprocess.DEVNULL,
        )
        (vault / "vaultmem.toml").write_text('language = "en"\n', encoding="utf-8")
    return vault, queries


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA, help="the LoCoMo folder")
    ap.add_argument("--work", type=Path, default=None, help="where to build the vault (kept)")
    ap.add_argument("--limit", type=int, default=10)
    ap.add_argument("--by-conv", action="store_true", help="also score per conversation")
    args = ap.parse_args()

    from vaultmem.core.vault import Vault
    from vaultmem.recall.query import recall

    with tempfile.TemporaryDirectory() as tmp:
        work = args.work or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        vault_dir, queries_path = build_vault(args.data, work)
        vault = Vault.open(vault_dir)
        started = time.perf_counter()
        first = recall(vault, "warm up", limit=1)
        build_s = time.perf_counter() - started
        rows = [json.loads(line) for line in queries_path.read_text().splitlines() if line]
        results = work / "results.jsonl"
        times = []
        with results.open("w", encoding="utf-8") as out:
            for q in rows:
                t0 = time.perf_counter()
                res = recall(vault, q["question"], limit=args.limit)
                times.append(time.perf_counter() - t0)
                paths = [h.path for h in res.hits]
                out.write(
                    json.dumps({"question_index": q["question_index"], "ranked_paths": paths})
                    + "\n"
                )
        times.sort()
        print(
            f"vault: {vault_dir} ({first.index.files} notes, index built in {build_s:.1f}s); "
            f"{len(rows)} queries, median recall() {times[len(times) // 2] * 1000:.1f} ms"
        )
        cmd = [sys.executable, str(args.data / "score.py"), str(queries_path), str(results)]
        if args.by_conv:
            cmd.append("--by-conv")
        subprocess.run(cmd, check=True)


if __name__ == "__main__":
    main()
