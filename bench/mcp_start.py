"""How soon `vaultmem mcp` answers a runtime: spawn to the `initialize` reply, and to the
`tools/list` reply after it, as a runtime starts the server beside each session (Claude Code's
`claude -p` gives it about a second before its first request).

Each round runs `python -c pass` (F), then the server, interleaved, so a shared machine's load
moves both; medians of wall times and the median ratio to F are printed, with the load.

    python bench/mcp_start.py [--runs 15]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

from _common import median_ms, precompile, scratch_vault

INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "b"}},
}
LIST = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}


def serve_once(vault: str, env: dict[str, str]) -> tuple[float, float]:
    start = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "vaultmem", "mcp", "--vault", vault, "--agent", "ella"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
    )
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write((json.dumps(INIT) + "\n").encode())
    proc.stdin.flush()
    reply = json.loads(proc.stdout.readline())
    assert reply["result"]["serverInfo"]["name"] == "vaultmem", reply
    initialized = time.perf_counter() - start
    proc.stdin.write((json.dumps(LIST) + "\n").encode())
    proc.stdin.flush()
    assert "tools" in json.loads(proc.stdout.readline())["result"]
    listed = time.perf_counter() - start
    proc.stdin.close()
    proc.wait(timeout=30)
    return initialized, listed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    precompile()
    root, env = scratch_vault()
    floor, init, listed = [], [], []
    for _ in range(args.runs):
        t = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], env=env, check=True)
        floor.append(time.perf_counter() - t)
        a, b = serve_once(str(root), env)
        init.append(a)
        listed.append(b)
    ratio = [i / f for i, f in zip(init, floor, strict=True)]
    print(f"load average {os.getloadavg()[0]:.1f} (2 cores); {args.runs} interleaved rounds")
    print(f"python -c pass                 {median_ms(floor):7.1f} ms")
    print(
        f"spawn -> initialize reply      {median_ms(init):7.1f} ms"
        f"   x{statistics.median(ratio):.1f} python -c pass"
    )
    print(f"spawn -> tools/list reply      {median_ms(listed):7.1f} ms")


if __name__ == "__main__":
    main()
