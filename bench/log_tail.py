"""`vaultmem log --tail 20` on a 1,000,000-entry log against the same on a 100-entry log.

The big log is generated quickly by writing well-formed entries directly (real hashes, one
real signature reused: `log --tail` parses but does not verify). Both runs are whole processes.

    python bench/log_tail.py [--entries 1000000] [--runs 15]
"""

from __future__ import annotations

import argparse
import shutil
import sys
import time
from pathlib import Path

from vaultmem.nexus import reading

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import median_ms, precompile, scratch_vault, timed, write_log


def generate(root: Path, n: int) -> float:
    """`n` entries into the live log (one signature for all: `log --tail` does not verify)."""
    start = time.perf_counter()
    write_log(root, n, body="A body line with some detail.\nAnd a second line.", sign=False)
    return time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--entries", type=int, default=1_000_000)
    ap.add_argument("--small", type=int, default=100)
    ap.add_argument("--runs", type=int, default=15)
    args = ap.parse_args()
    precompile()
    small, env = scratch_vault()
    generate(small, args.small)
    big, env_big = scratch_vault()
    took = generate(big, args.entries)
    size = (big / "nexus/live-context.md").stat().st_size
    print(f"generated {args.entries:,} entries ({size / 1e6:.0f} MB) in {took:.1f}s")
    py = sys.executable
    cmds = {
        f"{args.small} entries": (
            [py, "-m", "vaultmem", "log", "--tail", "20", "--json", "--vault", str(small)],
            env,
        ),
        f"{args.entries:,} entries": (
            [py, "-m", "vaultmem", "log", "--tail", "20", "--json", "--vault", str(big)],
            env_big,
        ),
    }
    for cmd, e in cmds.values():
        timed(cmd, e)
    samples: dict[str, list[float]] = {k: [] for k in cmds}
    for _ in range(args.runs):
        for name, (cmd, e) in cmds.items():
            samples[name].append(timed(cmd, e))
    med = {k: median_ms(v) for k, v in samples.items()}
    for name, ms in med.items():
        print(f"log --tail 20 on {name:<18} median {ms:7.1f} ms over {args.runs} runs")
    a, b = med.values()
    print(f"ratio big / small: {b / a:.2f}x (goal <= 1.5x)")
    # in-process, without start-up: the read itself

    for name, root in (("small", small), ("big", big)):
        t = time.perf_counter()
        for _ in range(50):
            reading.last_entries(root / "nexus/live-context.md", 20)
        print(f"  library tail(20) on {name}: {(time.perf_counter() - t) / 50 * 1000:.2f} ms")
    for root in (small, big):
        shutil.rmtree(root.parent, ignore_errors=True)


if __name__ == "__main__":
    main()
