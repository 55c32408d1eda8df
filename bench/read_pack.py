"""`vaultmem read` with 10 agents and 100,000 log entries, against the same with 1,000 entries:
the pack reads the log from its end (back to the agent's cursor), so it must not grow.

    python bench/read_pack.py [--entries 100000] [--runs 15]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import median_ms, precompile, timed
from log_tail import generate

AGENTS = [f"agent{i}" for i in range(10)]


def make(n: int) -> tuple[Path, dict[str, str]]:
    from vaultmem.app.scaffold import init_vault

    base = Path(tempfile.mkdtemp(prefix="vaultmem-bench-read-"))
    env = dict(os.environ)
    env["VAULTMEM_HOME"] = str(base / "home")
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    os.environ["VAULTMEM_HOME"] = env["VAULTMEM_HOME"]
    root = base / "vault"
    init_vault(root, agents=AGENTS, reviewers=["chiara"])
    generate(root, n)
    return root, env


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--entries", type=int, default=100_000)
    ap.add_argument("--small", type=int, default=1_000)
    ap.add_argument("--runs", type=int, default=15)
    args = ap.parse_args()
    precompile()
    py = sys.executable
    vaults = {n: make(n) for n in (args.small, args.entries)}
    results: dict[str, float] = {}
    for n, (root, env) in vaults.items():
        base = [py, "-m", "vaultmem", "read", "--vault", str(root), "--agent", "agent3"]
        timed([*base, "--peek"], env)
        first = [timed([*base, "--peek"], env) for _ in range(args.runs)]
        results[f"first read (no cursor), {n:,} entries"] = median_ms(first)
        timed(base, env)  # sets the cursor
        later = []
        for _ in range(args.runs):
            subprocess.run(  # something new from another agent, then the next read
                [py, "-m", "vaultmem", "append", "new", "--vault", str(root), "--agent", "agent5"],
                env=env,
                check=True,
                capture_output=True,
            )
            later.append(timed(base, env))
        results[f"read after 1 new entry (cursor), {n:,} entries"] = median_ms(later)
    for name, ms in results.items():
        print(f"{name:<50} median {ms:7.1f} ms over {args.runs} runs")
    vals = list(results.values())
    print(
        f"ratio {args.entries:,} / {args.small:,} entries: first read {vals[2] / vals[0]:.2f}x, "
        f"with cursor {vals[3] / vals[1]:.2f}x"
    )
    for root, _env in vaults.values():
        shutil.rmtree(root.parent, ignore_errors=True)


if __name__ == "__main__":
    main()
