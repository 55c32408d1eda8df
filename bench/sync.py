"""Several machines: what a sync costs, and what a pull costs the next recall.

    python bench/sync.py [--entries 100000] [--notes 1000] [--runs 5] [--layout live|rotated|both]

1. `vaultmem sync` as a whole process on a vault whose live log holds `--entries` signed
   entries (two clones of a bare repository): with nothing to do, and with 100 new entries on
   each side (the merge, the verify and the index refresh included); then `vaultmem verify`
   alone after that merge.
2. The first `vaultmem recall` after something touched every note of a `--notes` vault (a
   checkout, a copy, a sync tool) against a normal cold recall (goal: at most 2x).
3. What the sync barrier costs writers (`--part append`): the latency of each library
   `append` (p50/p95/max) in a writer process appending every 20 ms, with no sync running,
   then while the same machine runs `vaultmem sync` back to back and another clone pushes 50
   entries before each (so every sync fetches, merges and moves the working tree).

Medians over `--runs`; the machine's `python -c pass` for scale.
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
from _common import load_note, precompile, scratch_vault, timed, write_log


def vm(env: dict[str, str], *args: str, check: bool = True) -> float:
    start = time.perf_counter()
    res = subprocess.run(
        [sys.executable, "-m", "vaultmem", *args], env=env, capture_output=True, text=True
    )
    took = time.perf_counter() - start
    if check and res.returncode != 0:
        raise SystemExit(
            f"vaultmem {' '.join(args)} failed ({res.returncode}): {res.stderr[-600:]}"
        )
    return took


def git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


def big_log(root: Path, env: dict[str, str], n: int) -> None:
    """`n` properly chained and signed entries written straight into the live log."""
    os.environ["VAULTMEM_HOME"] = env["VAULTMEM_HOME"]
    write_log(root, n, body="A body line with some detail.")


def bench_sync(n: int, runs: int, *, rotated: bool) -> None:
    root, env = scratch_vault()
    base = root.parent
    big_log(root, env, n)
    if rotated:  # entries older than 30 days move to monthly archives: the live file is small
        vm(env, "log", "rotate", "--keep-days", "30", "--vault", str(root))
    git(root, "init", "--quiet")
    git(root, "add", "-A")
    git(root, "-c", "user.name=b", "-c", "user.email=b@x", "commit", "--quiet", "-m", "start")
    bare = base / "origin.git"
    git(base, "init", "--quiet", "--bare", str(bare))
    git(root, "remote", "add", "origin", str(bare))
    git(root, "push", "--quiet", "-u", "origin", "HEAD")
    other = base / "other"
    git(base, "clone", "--quiet", str(bare), str(other))
    for clone in (root, other):
        git(clone, "config", "user.name", "bench")
        git(clone, "config", "user.email", "bench@localhost")
    # the other machine: its own VAULTMEM_HOME, the same keys (copied: one person, two clones)
    env_b = dict(env)
    env_b["VAULTMEM_HOME"] = str(base / "home-b")
    shutil.copytree(env["VAULTMEM_HOME"], env_b["VAULTMEM_HOME"])
    vm(env, "sync", "--vault", str(root))  # first sync: drivers
    vm(env_b, "sync", "--vault", str(other))
    # each machine's index exists already (an agent's recall made it): not part of a sync
    vm(env, "index", "--vault", str(root))
    vm(env_b, "index", "--vault", str(other))
    # the first verify on a machine checks every signature; later ones only the new ones
    first_verify = vm(env, "verify", "--vault", str(root), check=False)
    vm(env_b, "verify", "--vault", str(other), check=False)
    nothing, bare = [], []
    for _ in range(runs):  # interleaved with python -c pass: the ratio holds as load drifts
        nothing.append(vm(env, "sync", "--vault", str(root)))
        bare.append(timed([sys.executable, "-c", "pass"], env))
    merges, verifies = [], []
    for r in range(max(1, runs // 2)):
        for side, e in ((root, env), (other, env_b)):
            agent = "ella" if side == root else "lyra"
            from vaultmem.core.vault import Vault
            from vaultmem.nexus.log import append

            os.environ["VAULTMEM_HOME"] = e["VAULTMEM_HOME"]
            v = Vault.open(side)
            for i in range(100):
                append(v, agent, f"round {r} entry {i} from {side.name}")
        vm(env_b, "sync", "--vault", str(other))  # pushes its 100
        merges.append(vm(env, "sync", "--vault", str(root)))  # pulls 100, merges, pushes 100
        verifies.append(vm(env, "verify", "--vault", str(root), check=False))
    where = "rotated into monthly archives" if rotated else "all in the live file"
    print(f"\nsync on a {n:,}-entry log, {where} (medians)")
    ratio = statistics.median(n / b for n, b in zip(nothing, bare, strict=True))
    print(f"  nothing to do                        {statistics.median(nothing) * 1000:8.0f} ms"
          f" ({ratio:.1f}x python -c pass, wall; {load_note()})")  # fmt: skip
    print(f"  100 new entries each side (merge)    {statistics.median(merges) * 1000:8.0f} ms")
    print(f"  verify after the merge               {statistics.median(verifies) * 1000:8.0f} ms")
    print(f"  verify, first run on a machine       {first_verify * 1000:8.0f} ms")


def bench_touch(notes: int, runs: int) -> None:
    from synth_vault import generate

    work = Path(tempfile.mkdtemp(prefix="vaultmem-touch-"))
    root = generate(work / "vault", notes)
    env = dict(os.environ)
    env["VAULTMEM_HOME"] = str(work / "home")
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    vm(env, "index", "--vault", str(root))
    query = ["recall", "kamilo terasu", "--json", "--vault", str(root)]
    vm(env, *query)
    normal = [vm(env, *query) for _ in range(runs)]
    after = []
    for _ in range(runs):
        now = time.time()
        for path in root.rglob("*.md"):
            os.utime(path, (now, now))
        time.sleep(2.1)  # past the racy window: as after a real checkout
        after.append(vm(env, *query))
    n_med, a_med = statistics.median(normal), statistics.median(after)
    print(f"\nrecall on {notes:,} notes (medians)")
    print(f"  cold recall                          {n_med * 1000:8.1f} ms")
    print(f"  first recall after touching all      {a_med * 1000:8.1f} ms   {a_med / n_med:.2f}x")


APPENDER = r"""
import json, sys, time
from pathlib import Path
from vaultmem.core.vault import Vault
from vaultmem.nexus.log import append
v, stop, took = Vault.open(sys.argv[1]), Path(sys.argv[2]), []
while not stop.exists():
    t = time.perf_counter()
    append(v, "ella", "while a sync runs")
    took.append(time.perf_counter() - t)
    time.sleep(0.02)
print(json.dumps(took))
"""


def _appender_latencies(root: Path, env: dict[str, str], seconds: float,
                        during: object = None) -> list[float]:  # fmt: skip
    import json

    stop = root.parent / "stop-appender"
    stop.unlink(missing_ok=True)
    proc = subprocess.Popen([sys.executable, "-c", APPENDER, str(root), str(stop)], env=env,
                            stdout=subprocess.PIPE, text=True)  # fmt: skip
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if callable(during):
            during()
        else:
            time.sleep(0.1)
    stop.write_text("stop")
    out, _ = proc.communicate(timeout=120)
    return [float(x) for x in json.loads(out)]


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000


def bench_append_during_sync(n: int, seconds: float) -> None:
    root, env = scratch_vault()
    base = root.parent
    big_log(root, env, n)
    vm(env, "init", "--git", str(root))
    bare = base / "origin.git"
    git(base, "init", "--quiet", "--bare", str(bare))
    git(root, "remote", "add", "origin", str(bare))
    git(root, "push", "--quiet", "-u", "origin", "HEAD")
    other = base / "other"
    env_b = dict(env, VAULTMEM_HOME=str(base / "home-b"))
    shutil.copytree(env["VAULTMEM_HOME"], env_b["VAULTMEM_HOME"])
    vm(env_b, "clone", str(bare), str(other))
    vm(env, "index", "--vault", str(root))
    vm(env, "sync", "--vault", str(root))
    idle = _appender_latencies(root, env, seconds)
    syncs: list[float] = []

    def one_round() -> None:
        code = (
            "import sys\nfrom vaultmem.core.vault import Vault\n"
            "from vaultmem.nexus.log import append\nv = Vault.open(sys.argv[1])\n"
            "for i in range(50): append(v, 'lyra', f'from the other clone {i}')\n"
        )
        subprocess.run([sys.executable, "-c", code, str(other)], env=env_b, check=True)
        vm(env_b, "sync", "--vault", str(other), check=False)
        syncs.append(vm(env, "sync", "--vault", str(root), check=False))

    busy = _appender_latencies(root, env, seconds, one_round)
    print(f"\nappend latency, {n:,}-entry log (library call; ms)")
    print(f"  {'':28} {'p50':>8} {'p95':>8} {'max':>8} {'appends':>8}")
    for label, took in (("no sync running", idle), ("syncs back to back", busy)):
        print(f"  {label:28} {_pct(took, 0.5):8.1f} {_pct(took, 0.95):8.1f} "
              f"{max(took) * 1000:8.1f} {len(took):8d}")  # fmt: skip
    print(f"  ({len(syncs)} syncs that merged, median {statistics.median(syncs) * 1000:.0f} ms)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--entries", type=int, default=100_000)
    parser.add_argument("--notes", type=int, default=1_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument(
        "--layout",
        choices=("live", "rotated", "both"),
        default="both",
        help="the entries all in nexus/live-context.md, or rotated into monthly archives",
    )
    parser.add_argument(
        "--part", choices=("all", "sync", "touch", "append"), default="all",
        help="one part of the benchmark only",
    )  # fmt: skip
    parser.add_argument("--seconds", type=float, default=30.0, help="for --part append")
    args = parser.parse_args()
    precompile()
    passes = []
    for _ in range(10):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], check=True)
        passes.append(time.perf_counter() - start)
    print(f"python -c pass: {statistics.median(passes) * 1000:.1f} ms")
    if args.part in ("all", "append"):
        bench_append_during_sync(min(args.entries, 20_000), args.seconds)
    if args.part in ("all", "touch"):
        bench_touch(args.notes, args.runs)
    for layout in ("live", "rotated"):
        if args.part in ("all", "sync") and args.layout in (layout, "both"):
            bench_sync(args.entries, args.runs, rotated=layout == "rotated")


if __name__ == "__main__":
    main()
