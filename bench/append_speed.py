"""`vaultmem append` as a whole process, against a trivial typer app and `python -c pass`, and
append throughput of 8 processes x 500 appends through the library API (lossless check).

    python bench/append_speed.py [--runs 20] [--procs 8] [--appends 500]
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import median_ms, precompile, scratch_vault, timed

TRIVIAL = """
import typer
app = typer.Typer()
@app.command()
def main(summary: str, channel: str = "general") -> None:
    print(summary)
app()
"""

WRITER = r"""
import sys
from vaultmem.vault import Vault
from vaultmem.log import append
v = Vault.open(sys.argv[1])
for i in range(int(sys.argv[3])):
    append(v, sys.argv[2], f"{sys.argv[4]} {i}", channel="load")
"""


def startup(runs: int) -> None:
    precompile()
    root, env = scratch_vault()
    trivial = Path(tempfile.mkdtemp()) / "trivial.py"
    trivial.write_text(TRIVIAL)
    py = sys.executable
    cmds = {
        "python -c pass": [py, "-c", "pass"],
        "trivial typer app": [py, str(trivial), "hello"],
        "vaultmem append": [
            py,
            "-m",
            "vaultmem",
            "append",
            "bench entry",
            "--channel",
            "bench",
            "--agent",
            "ella",
            "--vault",
            str(root),
        ],
    }
    for cmd in cmds.values():  # warm caches and .pyc files
        timed(cmd, env)
    samples: dict[str, list[float]] = {k: [] for k in cmds}
    for _ in range(runs):  # interleaved, so drift hits all three alike
        for name, cmd in cmds.items():
            samples[name].append(timed(cmd, env))
    med = {k: median_ms(v) for k, v in samples.items()}
    for name, ms in med.items():
        print(f"{name:<20} median {ms:7.1f} ms over {runs} runs")
    print(
        f"append / trivial typer app: {med['vaultmem append'] / med['trivial typer app']:.2f}x (goal <= 1.4x)"
    )
    print(f"append / python -c pass:    {med['vaultmem append'] / med['python -c pass']:.2f}x")
    shutil.rmtree(root.parent, ignore_errors=True)
    shutil.rmtree(trivial.parent, ignore_errors=True)


def throughput(procs: int, appends: int) -> None:
    from vaultmem import log, logcheck
    from vaultmem.vault import Vault

    root, env = scratch_vault()
    agents = Vault.open(root).known_agents()
    start = time.perf_counter()
    ps = [
        subprocess.Popen(
            [
                sys.executable,
                "-c",
                WRITER,
                str(root),
                agents[i % len(agents)],
                str(appends),
                f"p{i}",
            ],
            env=env,
        )
        for i in range(procs)
    ]
    for p in ps:
        if p.wait() != 0:
            raise SystemExit("a writer failed")
    elapsed = time.perf_counter() - start
    v = Vault.open(root)
    parsed = log.read_file(v.live_context)
    total = procs * appends
    ok = len(parsed.entries) == total and not parsed.fragments
    print(
        f"{procs} processes x {appends} appends: {len(parsed.entries)}/{total} entries "
        f"in {elapsed:.2f}s = {total / elapsed:,.0f} entries/s (includes process start-up); "
        f"lossless: {ok}; verify ok: {logcheck.verify(v).ok}"
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--procs", type=int, default=8)
    ap.add_argument("--appends", type=int, default=500)
    args = ap.parse_args()
    startup(args.runs)
    throughput(args.procs, args.appends)


if __name__ == "__main__":
    main()
