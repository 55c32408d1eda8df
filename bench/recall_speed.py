"""Recall speed on synthetic vaults: the rows of issue 23's table, at each size asked for.

    python bench/recall_speed.py [--sizes 10000] [--runs 7] [--work DIR] [--engine fts5]
    python bench/recall_speed.py --sizes 10000 50000 --work /tmp/rs   # 50k: building takes minutes
    python bench/recall_speed.py --work /tmp/rs --keep-index   # again, without rebuilding

For each size: generates a vault (bench/synth_vault.py, keyword mode), then prints, as CPU time
(user + sys of the process, from wait4) and as a ratio to F = this venv's `python -c pass`:

- `hook prompt`, nothing new (the quick path's recall gate at this vault size);
- `vaultmem recall` cold (a whole process), and its peak RSS;
- the full index build (`vaultmem index --rebuild`, one run): CPU and peak RSS;
- a warm `recall()` in one process, nothing changed: the plain library call (it walks the
  vault) and `search.watch.Warm` (an in-process watcher, what a long-lived server holds);
- a warm recall right after an `append` (Warm).

Whole-process rows are paired and interleaved (F, command, F, command, ...): each ratio is the
command's CPU over the F run just before it, and the median of those ratios is printed, so a
shared machine's changing load cancels out. In-process rows are medians of wall times. The load
(`os.getloadavg`) is printed with each size. Byte-compiles first and runs the children without
PYTHONDONTWRITEBYTECODE; VAULTMEM_HOME is a temp folder, or `--work`'s `home/` (the index is
sealed with that home's secret: a new home would rebuild it). `--keep-index` skips the build
row when the vault already has an index (the other rows are unchanged). `--engine` sets
`[recall] engine` (whoosh, the default, or fts5) in the vault's config before anything is built.
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

from synth_vault import generate  # noqa: E402

QUERIES = ["kavo lomi", "rasu tevo", "mira kalo pite", "vone suda", "lika maro"]
QUIET_PROMPT = "ok, go ahead with the plan"


def run(args: list[str], env: dict[str, str], stdin: str = "") -> tuple[float, float]:
    """(CPU seconds, peak RSS in MB) of one whole process."""
    proc = subprocess.Popen(
        args, env=env, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    assert proc.stdin is not None and proc.stderr is not None
    proc.stdin.write(stdin.encode())
    proc.stdin.close()
    err = proc.stderr.read()
    _pid, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"{args} failed: {err.decode()[-400:]}")
    return usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def paired(args: list[str], env: dict[str, str], runs: int, stdin: str = "") -> dict[str, float]:
    floor = [sys.executable, "-c", "pass"]
    run(floor, env)
    run(args, env, stdin)  # warm-up: OS cache
    cpus, ratios, rss, fs = [], [], [], []
    for _ in range(runs):
        f, _ = run(floor, env)
        cpu, mb = run(args, env, stdin)
        cpus.append(cpu)
        fs.append(f)
        ratios.append(cpu / f if f else 0.0)
        rss.append(mb)
    return {
        "ms": statistics.median(cpus) * 1000,
        "ratio": statistics.median(ratios),
        "rss": statistics.median(rss),
        "f_ms": statistics.median(fs) * 1000,
    }


def median_ms(fn: object, runs: int) -> float:
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()  # type: ignore[operator]
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1000


def prepare_hook(vault_dir: Path, env: dict[str, str]) -> None:
    """A signed log entry and ella's read cursor: `hook prompt` then has nothing new."""
    from vaultmem.core.vault import Vault
    from vaultmem.nexus import keyring, signing
    from vaultmem.nexus.log import append

    v = Vault.open(vault_dir)
    if signing.signer_for(v, "ella") is None:
        keyring.create_key(v, "ella")
    append(v, "ella", "bench: started", channel="ops")
    payload = {"session_id": "bench", "hook_event_name": "SessionStart", "source": "startup"}
    vaultmem = str(Path(sys.executable).parent / "vaultmem")
    hook = [vaultmem, "hook", "session-start", "--vault", str(vault_dir), "--agent", "ella"]
    run(hook, env, json.dumps(payload))


def set_engine(vault_dir: Path, name: str) -> None:
    """`[recall] engine = NAME` (the synthetic vault's config ends with its [recall] table)."""
    cfg = vault_dir / "vaultmem.toml"
    lines = [
        ln for ln in cfg.read_text(encoding="utf-8").splitlines() if not ln.startswith("engine")
    ]
    cfg.write_text("\n".join(lines) + f'\nengine = "{name}"\n', encoding="utf-8")


def bench_size(
    size: int, work: Path, runs: int, env: dict[str, str], engine: str, keep: bool
) -> None:
    from vaultmem.core.vault import Vault
    from vaultmem.nexus.log import append
    from vaultmem.search.query import recall
    from vaultmem.search.watch import Warm

    vault_dir = work / f"vault-{size}"
    if not (vault_dir / "vaultmem.toml").exists():
        t0 = time.perf_counter()
        generate(vault_dir, size)
        print(f"  generated {size} notes in {time.perf_counter() - t0:.1f}s", flush=True)
    set_engine(vault_dir, engine)
    vaultmem = str(Path(sys.executable).parent / "vaultmem")
    f_build, _ = run([sys.executable, "-c", "pass"], env)
    built = None
    if not (keep and (vault_dir / ".vaultmem" / "index" / "manifest.json").exists()):
        built = run([vaultmem, "index", "--rebuild", "--vault", str(vault_dir)], env)
    prepare_hook(vault_dir, env)
    load = "load {:.1f} {:.1f} {:.1f}".format(*os.getloadavg())

    def row(label: str, ms: float, ratio: float | None, extra: str = "") -> None:
        r = f"{ratio:6.1f}x F" if ratio is not None else " " * 8
        print(f"  {label:44s} {ms:9.1f} ms  {r}  {extra}", flush=True)

    print(f"  ({load}; F = python -c pass; engine {engine})", flush=True)
    hook_args = [vaultmem, "hook", "prompt", "--vault", str(vault_dir), "--agent", "ella"]
    quiet = json.dumps({"session_id": "bench", "prompt": QUIET_PROMPT})
    h = paired(hook_args, env, runs, quiet)
    row("hook prompt, nothing new (CPU)", h["ms"], h["ratio"], "goal <= 3x F")
    cold_args = [vaultmem, "recall", QUERIES[0], "--vault", str(vault_dir), "--json"]
    c = paired(cold_args, env, runs)
    goal = "goal <= 12x F" if size <= 10000 else "goal <= 20x F, <= 80 MB"
    row("recall cold (CPU)", c["ms"], c["ratio"], f"peak RSS {c['rss']:.0f} MB; {goal}")
    if built is not None:
        build_cpu, build_rss = built
        row(
            "index build (CPU, one run)",
            build_cpu * 1000,
            build_cpu / f_build if f_build else None,
            f"peak RSS {build_rss:.0f} MB; goal 10k <= 8.1 s, 50k <= 60 s, <= 300 MB",
        )
    else:
        print("  index build: skipped (--keep-index, an index was there)", flush=True)
    print(f"  (F median {c['f_ms']:.1f} ms CPU)", flush=True)

    vault = Vault.open(vault_dir)
    qi = iter(range(10**6))
    recall(vault, QUERIES[0])
    plain = median_ms(lambda: recall(vault, QUERIES[next(qi) % len(QUERIES)]), runs * 3)
    row("warm recall(), library, nothing changed", plain, None, "(walks the vault each call)")
    with Warm(vault) as warm:
        warm.recall(QUERIES[0])
        for q in QUERIES:
            warm.recall(q)
        same = median_ms(lambda: warm.recall(QUERIES[0]), runs * 3)
        other = median_ms(lambda: warm.recall(QUERIES[next(qi) % len(QUERIES)]), runs * 3)
        row("warm Warm.recall(), nothing changed", same, None, "goal <= 5 ms (same query)")
        row("warm Warm.recall(), nothing changed", other, None, "(a different query each time)")
        counter = iter(range(10**6))
        times = []
        for _ in range(runs):
            append(vault, "ella", f"bench entry {next(counter)}", channel="ops")
            t0 = time.perf_counter()
            found = warm.recall(QUERIES[1])
            times.append(time.perf_counter() - t0)
            assert found.index.refreshed == 1, found.index
        row("Warm.recall() right after an append", statistics.median(times) * 1000, None,
            "goal <= 10 ms")  # fmt: skip
    from vaultmem.search import refresh

    note = sorted((vault_dir / "wiki").rglob("*.md"))[0]
    original = note.read_text(encoding="utf-8")
    refresh.refresh(vault)
    same = median_ms(lambda: refresh.refresh(vault), runs * 3)
    row("refresh(), nothing changed (library)", same, None, "(the stat walk)")
    times = []
    for i in range(runs):
        note.write_text(original + f"\nedited {i} kavo lomi\n", encoding="utf-8")
        t0 = time.perf_counter()
        fresh = refresh.refresh(vault)
        times.append(time.perf_counter() - t0)
        assert fresh.refreshed == 1, fresh
    row("refresh() after one edited note (library)", statistics.median(times) * 1000, None)
    note.write_text(original, encoding="utf-8")
    refresh.refresh(vault)
    index = vault_dir / ".vaultmem" / "index"
    size_mb = sum(p.stat().st_size for p in index.rglob("*") if p.is_file()) / 1e6
    print(f"  index on disk: {size_mb:.1f} MB", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[10000])
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--work", type=Path, default=None, help="keep vaults here (reused if present)")
    ap.add_argument(
        "--engine", default="whoosh", choices=("whoosh", "fts5"), help="[recall] engine"
    )
    ap.add_argument(
        "--keep-index", action="store_true", help="with --work: do not rebuild an index there"
    )
    args = ap.parse_args()

    if args.work is not None:  # the vaults' indexes are sealed with this home's secret
        home = str(args.work / "home")
        os.makedirs(home, exist_ok=True)
    else:
        home = tempfile.mkdtemp(prefix="vaultmem-bench-home-")
    os.environ["VAULTMEM_HOME"] = home
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env.pop("VAULTMEM_VAULT", None)
    import vaultmem

    compileall.compile_dir(Path(vaultmem.__file__).parent, quiet=1)
    subprocess.run(
        [sys.executable, "-m", "compileall", "-q", sys.prefix],
        env=env,
        check=False,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    with tempfile.TemporaryDirectory() as tmp:
        work = args.work or Path(tmp)
        for size in args.sizes:
            print(f"{size} notes:", flush=True)
            bench_size(size, work, args.runs, env, args.engine, args.keep_index)


if __name__ == "__main__":
    main()
