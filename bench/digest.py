"""Digests and compaction, measured.

1. The offline digest of a 10,000-entry month (`digest --period month --offline`), median of
   `--runs` rebuilds; and what reading the month's entries costs in it.
2. An LLM digest of the same month through the real anthropic client against the local fake
   Messages API, which answers every request with a valid `record_digest` call and counts
   usage as the API would if the prefix were cached: the marked prefix (tools + system) is a
   cache write on the first request and a cache read on every later one. Requests and the
   cached share of input tokens come from the fake server's records.
3. The read pack on a year-long log (50,000 signed entries, 5 agents) before and after
   `compact --older-than 30d` (weekly offline digests first): its size in tokens, with no
   budget and with `--budget 2000`, and the time to build it (library `read`, median);
   the live file's size; `vaultmem read` as a whole process.

    python bench/digest.py [--runs 5] [--month 10000] [--year 50000]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))
from _common import precompile  # noqa: E402

from tests._fake_anthropic import FakeAnthropic, Reply, Request, tool_call_reply  # noqa: E402
from tests._synth_log import write_log  # noqa: E402

AGENTS = ("ella", "lyra", "nova", "orion", "vega")


def vault(base: Path, n: int, *, start: datetime, days: int) -> Path:
    from vaultmem.app.lifecycle.scaffold import init
    from vaultmem.core.vault import Vault
    from vaultmem.nexus import keyring, signing

    os.environ["VAULTMEM_HOME"] = str(base / "home")
    root = base / "vault"
    init(root, agents=list(AGENTS), reviewers=["chiara"])
    v = Vault.open(root)
    for agent in AGENTS:
        if signing.signer_for(v, agent) is None:
            keyring.create_key(v, agent)
    write_log(root, n, agents=AGENTS, start=start, days=days)
    return root


def median(values: list[float]) -> float:
    return statistics.median(values)


def month_offline(args: argparse.Namespace) -> Path:
    from vaultmem.app.condense.digest import digest, log_entries
    from vaultmem.core.vault import Vault

    base = Path(tempfile.mkdtemp(prefix="vaultmem-bench-digest-"))
    root = vault(base, args.month, start=datetime(2026, 11, 1, tzinfo=UTC), days=30)
    v = Vault.open(root)
    now = datetime(2026, 12, 2, tzinfo=UTC)
    parse, runs = [], []
    for _ in range(args.runs):
        t = time.perf_counter()
        log_entries(v)
        parse.append(time.perf_counter() - t)
        t = time.perf_counter()
        run = digest(v, "ella", kind="month", offline=True, rebuild=True, now=now)
        runs.append(time.perf_counter() - t)
    (period,) = run.periods
    size = (root / period.path).stat().st_size
    print(f"## 1. offline digest of a {args.month:,}-entry month (median of {args.runs})")
    print(f"digest --period month --offline: {median(runs) * 1000:.0f} ms")
    print(f"  of which reading and parsing the log: {median(parse) * 1000:.0f} ms")
    print(f"  digest note: {period.statements} statements, {size / 1024:.1f} KiB")
    return root


def pack_figures(root: Path, env: dict[str, str], runs: int) -> dict[str, float]:
    from vaultmem.app.pack.build import read
    from vaultmem.core.vault import Vault

    v = Vault.open(root)
    read(v, "ella", peek=True)  # the coordination index, built once
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        full = read(v, "ella", peek=True)
        times.append(time.perf_counter() - t)
    small = read(v, "ella", budget=2000, peek=True)
    procs = []
    for _ in range(runs):
        t = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "vaultmem", "read", "--agent", "ella", "--peek", "--vault", str(root)],
            env=env, capture_output=True, check=True,
        )  # fmt: skip
        procs.append(time.perf_counter() - t)
    return {
        "tokens": full.tokens,
        "budget_tokens": small.tokens,
        "digest_tokens": full.sections_by_key()["digests"].tokens
        if "digests" in full.sections_by_key()
        else 0,
        "ms": median(times) * 1000,
        "proc_ms": median(procs) * 1000,
        "live_kib": v.live_context.stat().st_size / 1024,
    }


def year(args: argparse.Namespace) -> None:
    from vaultmem.app.condense.compact import compact
    from vaultmem.app.condense.digest import digest
    from vaultmem.core.vault import Vault

    base = Path(tempfile.mkdtemp(prefix="vaultmem-bench-year-"))
    root = vault(base, args.year, start=datetime(2026, 1, 1, tzinfo=UTC), days=365)
    env = dict(os.environ, VAULTMEM_NOW="2027-01-05T12:00:00Z")
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    os.environ["VAULTMEM_NOW"] = env["VAULTMEM_NOW"]
    v = Vault.open(root)
    now = datetime(2027, 1, 5, 12, tzinfo=UTC)
    before = pack_figures(root, env, args.runs)
    t = time.perf_counter()
    made = digest(v, "ella", kind="week", offline=True, now=now)
    digest_s = time.perf_counter() - t
    digested = pack_figures(root, env, args.runs)
    t = time.perf_counter()
    moved = compact(v, "30d", now=now)
    compact_s = time.perf_counter() - t
    after = pack_figures(root, env, args.runs)
    print(f"\n## 3. read pack on a year-long log ({args.year:,} entries, 5 agents)")
    print(f"weekly offline digests: {len(made.periods)} in {digest_s:.1f} s;"
          f" compact --older-than 30d: {moved.moved:,} entries moved in {compact_s:.1f} s")  # fmt: skip
    print("| | no digests | digested | compacted | compacted / no digests |")
    print("|---|---|---|---|---|")
    rows = (
        ("pack tokens, no budget", "tokens", "{:,.0f}"),
        ("  of which digests", "digest_tokens", "{:,.0f}"),
        ("pack tokens, --budget 2000", "budget_tokens", "{:,.0f}"),
        ("read() (library), ms", "ms", "{:.1f}"),
        ("`vaultmem read` process, ms", "proc_ms", "{:.0f}"),
        ("live-context.md, KiB", "live_kib", "{:,.0f}"),
    )
    for label, key, fmt in rows:
        ratio = f"{after[key] / before[key]:.2f}" if before[key] else "-"
        cells = " | ".join(fmt.format(x[key]) for x in (before, digested, after))
        print(f"| {label} | {cells} | {ratio} |")


def responder(request: Request) -> Reply:
    """A valid record_digest call citing the first id of the request, with cache usage."""
    body: Any = request.body
    prefix = len(json.dumps(body["tools"])) + len(json.dumps(body["system"]))
    content = body["messages"][0]["content"]
    first_id = content.split("\n\n", 1)[-1].split(" | ", 1)[0].lstrip("- [")
    if content.startswith("Partial digests"):
        first_id = content.split("(ids: ", 1)[1].split(",")[0].split(")")[0]
    seen = responder.seen  # type: ignore[attr-defined]
    cached = prefix // 4 if seen else 0
    responder.seen = True  # type: ignore[attr-defined]
    usage = {
        "input_tokens": len(content) // 4,
        "output_tokens": 200,
        "cache_creation_input_tokens": 0 if seen else prefix // 4,
        "cache_read_input_tokens": cached,
    }
    data = {"summary": [{"text": "A statement.", "ids": [first_id]}]}
    return tool_call_reply("record_digest", data, usage=usage)


def llm(root: Path) -> None:
    from vaultmem.app.condense.digest import digest
    from vaultmem.core.vault import Vault

    responder.seen = False  # type: ignore[attr-defined]
    fake = FakeAnthropic(responder).start()
    try:
        v = Vault.open(root)
        run = digest(
            v, "ella", kind="month", rebuild=True, api_key="sk-ant-bench", base_url=fake.url,
            now=datetime(2026, 12, 2, tzinfo=UTC),
        )  # fmt: skip
    finally:
        fake.stop()
    usage = run.usage
    total = sum(
        usage.get(k, 0)
        for k in ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")
    )
    chunks = sum(
        1 for r in fake.requests if r.body["messages"][0]["content"].startswith("Log entries")
    )
    prefix = usage.get("cache_creation_input_tokens", 0)
    print("\n## 2. LLM digest of the same month (fake Messages API)")
    print(
        f"requests: {run.requests} ({chunks} chunks of [llm] chunk_chars, {run.requests - chunks} merge)"
    )
    print(f"stable prefix (tools + system): ~{prefix:,} tokens, marked cache_control")
    print(
        f"input tokens: {total:,}; cached share: {usage.get('cache_read_input_tokens', 0) / total:.1%}"
        f" (if the prefix is cached: Haiku 4.5 caches prefixes of 4,096 tokens or more only)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--month", type=int, default=10_000)
    parser.add_argument("--year", type=int, default=50_000)
    args = parser.parse_args()
    precompile()
    root = month_offline(args)
    llm(root)
    year(args)


if __name__ == "__main__":
    main()
