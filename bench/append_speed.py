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
from _common import load_note, median_ms, precompile, scratch_vault, timed

from vaultmem.nexus import verify
from vaultmem.nexus.entry import read_file

TRIVIAL = """
import typer
app = typer.Typer()
@app.command()
def main(summary: str, channel: str = "general") -> None:
    print(summary)
app()
"""

WRITER = r"""
import sys, time
from vaultmem.core.vault import Vault
from vaultmem.nexus.log import append
v = Vault.open(sys.argv[1])
append(v, sys.argv[2], "warm-up", channel="load")  # imports, key load: not part of the rate
start = time.time()
for i in range(int(sys.argv[3])):
    append(v, sys.argv[2], f"{sys.argv[4]} {i}", channel="load")
print(start, time.time())
"""

BARE = r"""
import fcntl, os, sys, time
lock = open(sys.argv[1] + ".lock", "a+b")
start = time.time()
for i in range(int(sys.argv[2])):
    fcntl.flock(lock, fcntl.LOCK_EX)
    fd = os.open(sys.argv[1], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    os.write(fd, b"x" * 400 + b"\n")
    os.fsync(fd)
    os.close(fd)
    fcntl.flock(lock, fcntl.LOCK_UN)
print(start, time.time())
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
    print(f"({load_note()}; CPU-time ratios on the per-turn vault: bench/startup.py)")
    shutil.rmtree(root.parent, ignore_errors=True)
    shutil.rmtree(trivial.parent, ignore_errors=True)


def _run_all(cmds: list[list[str]], env: dict[str, str]) -> tuple[float, float]:
    """Start all at once; return (wall time incl. start-up, span of the timed loops)."""
    start = time.perf_counter()
    ps = [subprocess.Popen(c, env=env, stdout=subprocess.PIPE, text=True) for c in cmds]
    spans = []
    for p in ps:
        out, _ = p.communicate()
        if p.returncode != 0:
            raise SystemExit("a writer failed")
        first, last = out.split()
        spans.append((float(first), float(last)))
    wall = time.perf_counter() - start
    return wall, max(b for _, b in spans) - min(a for a, _ in spans)


def throughput(procs: int, appends: int) -> None:
    from vaultmem.core.vault import Vault

    root, env = scratch_vault()
    agents = Vault.open(root).known_agents()
    cmds = [
        [sys.executable, "-c", WRITER, str(root), agents[i % len(agents)], str(appends), f"p{i}"]
        for i in range(procs)
    ]
    wall, span = _run_all(cmds, env)
    v = Vault.open(root)
    parsed = read_file(v.live_context)
    total = procs * appends
    ok = len(parsed.entries) == total + procs and not parsed.fragments
    print(
        f"{procs} processes x {appends} appends: {len(parsed.entries) - procs}/{total} entries, "
        f"{total / span:,.0f} entries/s while all append ({total / wall:,.0f}/s counting "
        f"process start-up); lossless: {ok}; verify ok: {verify.verify(v).ok}"
    )
    bare_file = root.parent / "bare.log"
    _, bare_span = _run_all(
        [[sys.executable, "-c", BARE, str(bare_file), str(appends)] for _ in range(procs)], env
    )
    print(
        f"bare flock+write+fsync loop, same {procs} x {appends}: {total / bare_span:,.0f}/s "
        f"(vaultmem append reaches {bare_span / span:.0%} of it)"
    )
    shutil.rmtree(root.parent, ignore_errors=True)


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
