"""Recall speed on synthetic vaults: build, refresh, cold process and warm query, in one run.

    python bench/recall_speed.py [--sizes 1000 10000] [--runs 11] [--work DIR]

For each size: generates a vault (bench/synth_vault.py), then measures
- full build (library `refresh.refresh(rebuild=True)`, one run) and the index size on disk;
- refresh with nothing changed, and right after one edited note (library, medians);
- `vaultmem recall` as a whole process (cold), unchanged and right after one edited note;
- a warm `recall()` inside one process (freshness walk included) and the bare search;
and prints medians in ms and as ratios to a bare `python -c pass` measured in the same run.
Byte-compiles first and runs subprocesses without PYTHONDONTWRITEBYTECODE.
"""

from __future__ import annotations

import argparse
import compileall
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from vaultmem.search import engine, refresh

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

from synth_vault import generate  # noqa: E402


def _queries() -> list[str]:
    """Content-word queries: two or three mid-frequency words of the synthetic vocabulary
    (its most frequent words, like "the" in English, are not what people search for)."""
    import random

    from synth_vault import vocabulary

    vocab = vocabulary(random.Random(7))
    rng = random.Random(1)
    return [" ".join(rng.sample(vocab[100:3000], rng.randint(2, 3))) for _ in range(8)]


QUERIES = _queries()


TRIVIAL_TYPER = """
from typing import Annotated
import typer
app = typer.Typer()
@app.command()
def recall(query: str, limit: Annotated[int, typer.Option()] = 10, as_json: Annotated[bool, typer.Option("--json")] = False) -> None:
    print(query, limit)
app()
"""
WHOOSH_FLOOR = """
import sys
from whoosh import index, query, scoring
ix = index.open_dir(sys.argv[1])
with ix.searcher(weighting=scoring.BM25F()) as s:
    words = sys.argv[2].split()
    hits = s.search(query.Or([query.Term("body", w) for w in words]), limit=10)
    print([h["path"] for h in hits])
"""


def median_ms(fn: object, runs: int) -> float:
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()  # type: ignore[operator]
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1000


def proc(args: list[str], env: dict[str, str]) -> None:
    subprocess.run(args, env=env, check=True, stdout=subprocess.DEVNULL)


def du(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def touch_note(vault: Path, n: int) -> None:
    note = next(iter(sorted((vault / "daily").glob("*.md"))))
    with note.open("a", encoding="utf-8") as fh:
        fh.write(f"\nEdited {n} with zanzibar.\n")


def bench_size(size: int, work: Path, runs: int, env: dict[str, str], base: float) -> None:
    from vaultmem.core.vault import Vault
    from vaultmem.search.query import recall

    vault_dir = work / f"vault-{size}"
    if not (vault_dir / "vaultmem.toml").exists():
        t0 = time.perf_counter()
        generate(vault_dir, size)
        print(f"  generated {size} notes in {time.perf_counter() - t0:.1f}s", flush=True)
    vault = Vault.open(vault_dir)
    t0 = time.perf_counter()
    fresh = refresh.refresh(vault, wait=None, rebuild=True)
    build = time.perf_counter() - t0
    size_mb = du(vault_dir / ".vaultmem" / "index") / 1e6
    print(f"  full build: {build:.1f}s for {fresh.files} files; index {size_mb:.1f} MB", flush=True)

    unchanged = median_ms(lambda: refresh.refresh(vault), runs)
    counter = iter(range(10**6))

    def edited() -> None:
        touch_note(vault_dir, next(counter))
        refresh.refresh(vault)

    after_edit = median_ms(edited, runs)

    py = sys.executable
    cold_args = [py, "-m", "vaultmem", "recall", QUERIES[0], "--vault", str(vault_dir), "--json"]
    proc(cold_args, env)  # warm the OS cache
    cold = median_ms(lambda: proc(cold_args, env), runs)
    import json

    gen = json.loads((vault_dir / ".vaultmem/index/manifest.json").read_text())["generation"]
    floor_script = work / "whoosh_floor.py"
    floor_script.write_text(WHOOSH_FLOOR)
    gen_dir = str(vault_dir / ".vaultmem/index" / gen)
    whoosh_floor = median_ms(lambda: proc([py, str(floor_script), gen_dir, QUERIES[0]], env), runs)

    def cold_edited() -> None:
        touch_note(vault_dir, next(counter))
        proc(cold_args, env)

    cold_after_edit = median_ms(cold_edited, runs)
    # with `vaultmem watch` running, recall trusts its heartbeat instead of walking the vault
    watcher = subprocess.Popen(
        [py, "-m", "vaultmem", "watch", "--vault", str(vault_dir), "--json"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert watcher.stdout is not None
    watcher.stdout.readline()  # its first refresh is done
    time.sleep(1.5)  # and its first heartbeat written
    cold_watched = median_ms(lambda: proc(cold_args, env), runs)
    warm_watched = median_ms(lambda: recall(vault, QUERIES[0]), runs * 3)
    watcher.send_signal(signal.SIGTERM)  # SIGINT is ignored in background jobs
    watcher.wait(30)
    qi = iter(range(10**6))
    warm = median_ms(lambda: recall(vault, QUERIES[next(qi) % len(QUERIES)]), runs * 3)
    with engine.Searcher(vault) as s:
        from vaultmem.search.query import _search, parse_query

        parsed = [parse_query(q) for q in QUERIES]
        bare = median_ms(
            lambda: _search(s, parsed[next(qi) % len(parsed)], limit=10, explain=False), runs * 3
        )

    def row(label: str, ms: float, goal: str = "") -> None:
        print(f"  {label:42s} {ms:9.1f} ms  {ms / base:6.1f}x pass  {goal}", flush=True)

    row("refresh, nothing changed (library)", unchanged)
    row("refresh after one edited note (library)", after_edit)
    row("floor: bare whoosh open + search process", whoosh_floor)
    row("cold `vaultmem recall --json` process", cold, "goal <= 22x")
    row(
        "cold recall after one edited note",
        cold_after_edit,
        f"(+{cold_after_edit - cold:.0f} ms; goal <= +150)",
    )
    row("cold recall while `vaultmem watch` runs", cold_watched)
    row("warm recall() incl. freshness walk", warm, "goal <= 20 ms")
    row("warm recall() while `vaultmem watch` runs", warm_watched)
    row("warm search only (open searcher)", bare)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000])
    ap.add_argument("--runs", type=int, default=11)
    ap.add_argument("--work", type=Path, default=None, help="keep vaults here (reused if present)")
    args = ap.parse_args()

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
    base = median_ms(lambda: proc([sys.executable, "-c", "pass"], env), args.runs)
    print(f"python -c pass: {base:.1f} ms (median of {args.runs})", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        app = Path(tmp) / "trivial_typer.py"
        app.write_text(TRIVIAL_TYPER)
        typer_floor = median_ms(
            lambda: proc([sys.executable, str(app), "q", "--limit", "3"], env), args.runs
        )
    print(
        f"floor: trivial typer app (1 argument, 2 options): {typer_floor:.1f} ms = {typer_floor / base:.1f}x pass",
        flush=True,
    )
    with tempfile.TemporaryDirectory() as tmp:
        work = args.work or Path(tmp)
        for size in args.sizes:
            print(f"{size} notes:", flush=True)
            bench_size(size, work, args.runs, env, base)


if __name__ == "__main__":
    main()
