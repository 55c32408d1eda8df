"""`vaultmem append` as a whole process, against a trivial typer app and `python -c pass`, and
append throughput of 1, 4 and 8 writer processes through the library API (lossless check).

    python bench/append_speed.py [--runs 20] [--procs 1,4,8] [--appends 300] [--rounds 3]
                                 [--against CHECKOUT]

`--against` runs the same writers, interleaved round by round, on another checkout's code
(a worktree of main, say) and prints the ratio of the medians.

Throughput rounds are interleaved (1, 4, 8, 1, 4, 8, ...) so that the load other processes put
on the machine drifts over all writer counts alike; the figure quoted is the median round.
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


def _run_all(
    cmds: list[list[str]], env: dict[str, str], code: str | None = None
) -> tuple[float, float]:
    """Start all at once; return (wall time incl. start-up, span of the timed loops). `code`:
    a checkout whose `vaultmem` the writers import instead of this one."""
    cwd = tempfile.mkdtemp(prefix="vaultmem-bench-cwd-")  # `-c` puts the cwd first on sys.path
    if code is not None:
        env = dict(env, PYTHONPATH=code)
    start = time.perf_counter()
    ps = [subprocess.Popen(c, env=env, cwd=cwd, stdout=subprocess.PIPE, text=True) for c in cmds]
    spans = []
    for p in ps:
        out, _ = p.communicate()
        if p.returncode != 0:
            raise SystemExit("a writer failed")
        first, last = out.split()
        spans.append((float(first), float(last)))
    wall = time.perf_counter() - start
    return wall, max(b for _, b in spans) - min(a for a, _ in spans)


def throughput(procs: int, appends: int, code: str | None = None) -> tuple[float, bool]:
    """One round: `procs` writers x `appends` each on a fresh vault; (entries/s, lossless)."""
    from vaultmem.core.vault import Vault

    root, env = scratch_vault()
    agents = Vault.open(root).known_agents()
    cmds = [
        [sys.executable, "-c", WRITER, str(root), agents[i % len(agents)], str(appends), f"p{i}"]
        for i in range(procs)
    ]
    _wall, span = _run_all(cmds, env, code)
    v = Vault.open(root)
    parsed = read_file(v.live_context)
    total = procs * appends
    ok = len(parsed.entries) == total + procs and not parsed.fragments and verify.verify(v).ok
    shutil.rmtree(root.parent, ignore_errors=True)
    return total / span, ok


def bare(procs: int, appends: int) -> float:
    """The floor: a bare flock + write + fsync loop in the same processes."""
    base = Path(tempfile.mkdtemp(prefix="vaultmem-bench-"))
    _, span = _run_all(
        [[sys.executable, "-c", BARE, str(base / "bare.log"), str(appends)] for _ in range(procs)],
        dict(os.environ),
    )
    shutil.rmtree(base, ignore_errors=True)
    return procs * appends / span


def throughputs(counts: list[int], appends: int, rounds: int, against: str | None) -> None:
    rates: dict[int, list[float]] = {n: [] for n in counts}
    others: dict[int, list[float]] = {n: [] for n in counts}
    floors: dict[int, list[float]] = {n: [] for n in counts}
    lossless = True
    for _ in range(rounds):
        for n in counts:
            rate, ok = throughput(n, appends)
            rates[n].append(rate)
            if against:
                others[n].append(throughput(n, appends, against)[0])
            floors[n].append(bare(n, appends))
            lossless = lossless and ok
    print(f"load: {os.getloadavg()[0]:.2f} (1-min average, {os.cpu_count()} cores)")
    for n in counts:
        med = statistics.median(rates[n])
        floor = statistics.median(floors[n])
        print(
            f"{n} writer(s) x {appends} appends: median {med:,.0f} appends/s over {rounds} "
            f"rounds (min {min(rates[n]):,.0f}, max {max(rates[n]):,.0f}); bare "
            f"flock+write+fsync loop {floor:,.0f}/s"
        )
        if against:
            other = statistics.median(others[n])
            print(f"  {against}: median {other:,.0f} appends/s; this / that: {med / other:.2f}x")
    print(f"lossless (every entry in the log, verify ok) in every round: {lossless}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--procs", default="1,4,8", help="writer counts, comma-separated")
    ap.add_argument("--appends", type=int, default=300, help="appends per writer")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--no-startup", action="store_true", help="throughput only")
    ap.add_argument("--against", help="another checkout to compare with, interleaved")
    args = ap.parse_args()
    if not args.no_startup:
        startup(args.runs)
    throughputs([int(n) for n in args.procs.split(",")], args.appends, args.rounds, args.against)


if __name__ == "__main__":
    main()
