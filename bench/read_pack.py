"""`vaultmem read` with 10 agents and 100,000 log entries, against the same with 1,000 entries:
the pack reads the log from its end (back to the agent's cursor), so it must not grow.

Then the inbox: 1,000 handoffs addressed to one agent, buried under 1,000 and under 100,000
later entries. Its pack holds all 1,000 (the inbox never drops) and must cost the same on both
logs: the coordination index parses only what was appended since its last use. The first read
on each log builds that index from the whole log, once; it is printed on its own.

Last, working memory: `wm set` and `wm get` as whole processes, next to `python -c pass`.

    python bench/read_pack.py [--entries 100000] [--runs 15] [--open 1000]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from vaultmem.core.records import evolve

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import load_note, median_ms, precompile, timed
from log_tail import generate

AGENTS = [f"agent{i}" for i in range(10)]


def make(n: int) -> tuple[Path, dict[str, str]]:
    from vaultmem.app.lifecycle.scaffold import init

    base = Path(tempfile.mkdtemp(prefix="vaultmem-bench-read-"))
    env = dict(os.environ)
    env["VAULTMEM_HOME"] = str(base / "home")
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    os.environ["VAULTMEM_HOME"] = env["VAULTMEM_HOME"]
    root = base / "vault"
    init(root, agents=AGENTS, reviewers=["chiara"])
    generate(root, n)
    return root, env


def generate_inbox(root: Path, open_items: int, n: int, reader: str) -> None:
    """`open_items` handoffs addressed to `reader` (by the other agents), then `n` notes: real
    hashes and chains, one real signature reused (reading parses, it does not verify)."""
    from vaultmem.core.vault import Vault
    from vaultmem.nexus import entry, signing

    v = Vault.open(root)
    writers = [a for a in v.known_agents() if a != reader]
    signer = signing.signer_for(v, writers[0])
    assert signer is not None
    sig = signer.sign("sha256:0")
    heads: dict[str, str | None] = dict.fromkeys(writers)
    seqs = dict.fromkeys(writers, 0)
    blocks = []
    for i in range(open_items + n):
        agent = writers[i % len(writers)]
        seqs[agent] += 1
        handoff = i < open_items
        e = entry.Entry(
            id=entry.entry_id(agent, seqs[agent], "live"),
            agent=agent,
            seq=seqs[agent],
            time=f"2026-{1 + i * 11 // (open_items + n):02d}-01T00:00:{i % 60:02d}.000Z",
            channel="api",
            type="handoff" if handoff else "note",
            summary=f"handoff {i} for {reader}" if handoff else f"entry number {i}",
            body="Details of the handoff, one line." if handoff else "",
            to=(reader,) if handoff else (),
            prev=heads[agent],
            key=signer.key_id,
        )
        e = evolve(e, hash=e.compute_hash(), sig=sig)
        heads[agent] = e.hash
        blocks.append(entry.render(e))
    with open(v.live_context, "a", encoding="utf-8") as fh:
        fh.write("".join(blocks))


def inbox_bench(args: argparse.Namespace) -> None:
    py = sys.executable
    reader = "agent3"
    sizes = (args.small, args.entries)
    runs: dict[int, tuple[Path, dict[str, str]]] = {}
    for n in sizes:
        base = Path(tempfile.mkdtemp(prefix="vaultmem-bench-inbox-"))
        env = dict(os.environ)
        env["VAULTMEM_HOME"] = str(base / "home")
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        os.environ["VAULTMEM_HOME"] = env["VAULTMEM_HOME"]
        from vaultmem.app.lifecycle.scaffold import init

        init(base / "vault", agents=AGENTS, reviewers=["chiara"])
        generate_inbox(base / "vault", args.open, n, reader)
        runs[n] = (base / "vault", env)
    cmds: dict[int, dict[str, list[str]]] = {}
    for n, (root, env) in runs.items():
        base = ["--vault", str(root), "--agent", reader]
        cmd = [py, "-m", "vaultmem", "read", *base, "--json"]
        start = time.perf_counter()
        out = subprocess.run(cmd, env=env, check=True, capture_output=True).stdout
        took = (time.perf_counter() - start) * 1000
        count = json.loads(out)["sections"]["inbox"]["data"]["count"]
        assert count == args.open, count
        print(f"first read, builds the coordination index, {n:,} entries: {took:7.1f} ms")
        cmds[n] = {
            "read --peek": [*cmd, "--peek"],
            "read after 1 new entry": cmd,
            "inbox --json": [py, "-m", "vaultmem", "inbox", *base, "--json"],
        }
    samples: dict[tuple[str, int], list[float]] = {}
    append = [py, "-m", "vaultmem", "append", "new", "--agent", "agent5", "--vault"]
    for _ in range(args.runs):  # interleaved, so that a busy moment hits both sizes alike
        for n, (root, env) in runs.items():
            for what, cmd in cmds[n].items():
                if what == "read after 1 new entry":
                    subprocess.run([*append, str(root)], env=env, check=True, capture_output=True)
                samples.setdefault((what, n), []).append(timed(cmd, env))
    results = {
        f"{what}, {args.open:,} open inbox items, {n:,} entries": median_ms(v)
        for (what, n), v in sorted(samples.items(), key=lambda kv: (kv[0][1], kv[0][0]))
    }
    # in-process, without start-up: bringing the index up to date and listing the inbox
    from vaultmem.app.pack.inbox import inbox as do_inbox
    from vaultmem.core.vault import Vault

    for n, (root, _env) in runs.items():
        v = Vault.open(root)
        t = time.perf_counter()
        for _ in range(20):
            do_inbox(v, reader)
        print(
            f"  library inbox() with {args.open:,} open, {n:,} entries: "
            f"{(time.perf_counter() - t) / 20 * 1000:.2f} ms"
        )
    for name, ms in results.items():
        print(f"{name:<66} median {ms:7.1f} ms over {args.runs} runs")
    for what in cmds[args.small]:
        ratio = median_ms(samples[(what, args.entries)]) / median_ms(samples[(what, args.small)])
        print(f"ratio {args.entries:,} / {args.small:,} entries, {what}: {ratio:.2f}x")
    for root, _env in runs.values():
        shutil.rmtree(root.parent, ignore_errors=True)


def wm_bench(args: argparse.Namespace) -> None:
    from _common import scratch_vault

    root, env = scratch_vault(keys=False)
    py = sys.executable
    base = ["--vault", str(root), "--agent", "ella"]
    bare = [timed([py, "-c", "pass"], env) for _ in range(args.runs)]
    timed([py, "-m", "vaultmem", "wm", "set", "warm", "x", *base], env)
    sets = [
        timed(
            [
                py,
                "-m",
                "vaultmem",
                "wm",
                "set",
                f"key-{i % 20}",
                f"value {i}",
                "--ttl",
                "2h",
                *base,
            ],
            env,
        )
        for i in range(args.runs)
    ]
    gets = [
        timed([py, "-m", "vaultmem", "wm", "get", "key-1", *base], env) for _ in range(args.runs)
    ]
    slow_env = {**env, "VAULTMEM_NO_FAST": "1"}
    typer_sets = [
        timed([py, "-m", "vaultmem", "wm", "set", "k", "v", *base], slow_env)
        for _ in range(args.runs)
    ]
    b = median_ms(bare)
    rows = {
        "python -c pass": b,
        "wm set (whole process)": median_ms(sets),
        "wm get (whole process)": median_ms(gets),
        "wm set through typer (VAULTMEM_NO_FAST=1)": median_ms(typer_sets),
    }
    for name, ms in rows.items():
        print(
            f"{name:<44} median {ms:7.1f} ms over {args.runs} runs ({ms / b:.1f}x python -c pass)"
        )
    print(f"({load_note()}; the cold read row of issue 23: bench/startup.py)")
    shutil.rmtree(root.parent, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--entries", type=int, default=100_000)
    ap.add_argument("--small", type=int, default=1_000)
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--open", type=int, default=1_000, help="open inbox items")
    ap.add_argument(
        "--only", choices=("pack", "inbox", "wm"), default=None, help="run one part only"
    )
    args = ap.parse_args()
    precompile()
    if args.only in (None, "inbox"):
        inbox_bench(args)
    if args.only in (None, "wm"):
        wm_bench(args)
    if args.only not in (None, "pack"):
        return
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
