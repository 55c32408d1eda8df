"""Recall through one long-lived `vaultmem mcp` server, as a runtime's session makes them:
the first call (it starts the server's watcher and walks the vault), then calls with nothing
changed in between, then calls each right after a note was edited.

    python bench/mcp_recall.py [--notes 2000] [--calls 15] [--work DIR]

The vault is synthetic (bench/synth_vault.py, keyword mode) and indexed before the server
starts. Times are wall medians from the request written to the reply read, in milliseconds;
the load average is printed with them. VAULTMEM_HOME is a temp folder.
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
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

from synth_vault import generate  # noqa: E402

QUERIES = ["kavo lomi", "rasu tevo", "mira kalo pite", "vone suda", "lika maro"]


class Server:
    def __init__(self, vault: Path, env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "vaultmem", "mcp", "--vault", str(vault), "--agent", "ella"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
        )
        self.next_id = 0
        self.ask("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                "clientInfo": {"name": "bench"}})  # fmt: skip

    def ask(self, method: str, params: dict[str, object]) -> dict[str, object]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.next_id += 1
        msg = {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}
        self.proc.stdin.write((json.dumps(msg) + "\n").encode())
        self.proc.stdin.flush()
        reply: dict[str, object] = json.loads(self.proc.stdout.readline())
        assert "result" in reply, reply
        return reply

    def recall(self, query: str) -> float:
        t0 = time.perf_counter()
        reply = self.ask("tools/call", {"name": "recall", "arguments": {"query": query}})
        took = time.perf_counter() - t0
        assert not reply["result"].get("isError"), reply  # type: ignore[attr-defined]
        return took * 1000

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--notes", type=int, default=2000)
    parser.add_argument("--calls", type=int, default=15)
    parser.add_argument("--work", type=Path, default=None)
    args = parser.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="vaultmem-mcp-recall-"))
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["VAULTMEM_HOME"] = str(work / "home")
    vault = work / f"vault-{args.notes}"
    if not (vault / "vaultmem.toml").exists():
        generate(vault, args.notes)
    vaultmem = str(Path(sys.executable).parent / "vaultmem")
    subprocess.run([vaultmem, "index", "--rebuild", "--vault", str(vault)], env=env,
                   check=True, capture_output=True)  # fmt: skip
    subprocess.run([vaultmem, "recall", "warm the page cache", "--vault", str(vault)], env=env,
                   check=True, capture_output=True)  # fmt: skip
    cold = []
    for i in range(args.calls):  # a whole `vaultmem recall` process, for comparison
        t0 = time.perf_counter()
        subprocess.run([vaultmem, "recall", QUERIES[i % 5], "--vault", str(vault), "--json"],
                       env=env, check=True, capture_output=True)  # fmt: skip
        cold.append((time.perf_counter() - t0) * 1000)
    server = Server(vault, env)
    first = server.recall(QUERIES[0])
    quiet = [server.recall(QUERIES[i % 5]) for i in range(args.calls)]
    notes = sorted(vault.glob("*/*.md"))[: args.calls]
    edited = []
    for i, note in enumerate(notes):
        with note.open("a", encoding="utf-8") as fh:
            fh.write(f"\nEdited during the benchmark, round {i}.\n")
        edited.append(server.recall(QUERIES[i % 5]))
    server.close()
    load = "{:.1f} {:.1f} {:.1f}".format(*os.getloadavg())
    print(f"{args.notes} notes; load {load} (2 cores); medians of {args.calls} calls")
    print(f"  vaultmem recall, whole process        {statistics.median(cold):8.1f} ms")
    print(f"  MCP recall, first call of a session   {first:8.1f} ms")
    print(f"  MCP recall, nothing changed           {statistics.median(quiet):8.1f} ms")
    print(f"  MCP recall, right after an edit       {statistics.median(edited):8.1f} ms")


if __name__ == "__main__":
    main()
