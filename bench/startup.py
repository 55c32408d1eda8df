"""Start-up cost of the commands agents run on every turn, as whole processes (issue 23's
per-turn rows), against F = this interpreter's `python -c pass`.

    python bench/startup.py [--runs 15] [--agents 5] [--entries 2000] [--facts 200]

The vault: `--agents` agents with keys, `--entries` signed log entries, `--facts` shared facts
(`_common.per_turn_vault`), made once. Every round runs each command once, in turn (so load
drift hits all alike); each figure is the median over the rounds of the command's CPU time
(user + sys, the kernel's accounting of the finished child) and of its ratio to F's run in the
same round. The load average is printed with the figures: on a busy machine the ratios grow.

| row | goal (issue 23) |
| `read` cold | <= 5x F |
| `append` cold | <= 4x F |
| `hook session-start` (Claude Code's payload) | <= 8x F |
| `hook prompt`, nothing new | <= 3x F |
| `sync`, nothing to do | <= 8x F |

`read` and `append` also run through typer (VAULTMEM_NO_FAST=1), and `--help`, for scale.
PYTHONDONTWRITEBYTECODE is removed from the children's environment and everything is
byte-compiled first: otherwise every run recompiles and the figures double.
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import REPO, per_turn_vault

GOALS = {
    "read": 5.0,
    "append": 4.0,
    "hook session-start": 8.0,
    "hook prompt (nothing new)": 3.0,
    "sync (nothing to do)": 8.0,
}


def _timed(cmd: list[str], env: dict[str, str], stdin: str | None) -> tuple[float, float]:
    """(CPU seconds, wall seconds) of one whole process: the kernel's rusage of the child
    (wait4, microseconds; os.times() counts in 10 ms ticks)."""
    with tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, env=env, stdin=subprocess.PIPE,
                                stdout=subprocess.DEVNULL, stderr=err)  # fmt: skip
        assert proc.stdin is not None
        proc.stdin.write((stdin or "").encode())
        proc.stdin.close()
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode != 0:
            err.seek(0)
            raise SystemExit(f"{' '.join(cmd)} failed: {err.read().decode()[-500:]}")
    return usage.ru_utime + usage.ru_stime, wall


def git_remote(root: Path, env: dict[str, str]) -> None:
    """The vault as a git repository with a bare remote, synced once (drivers registered)."""
    base = root.parent
    for args in (
        ["init", "--quiet"],
        ["add", "-A"],
        ["-c", "user.name=b", "-c", "user.email=b@x", "commit", "--quiet", "-m", "start"],
    ):
        subprocess.run(["git", *args], cwd=root, check=True, capture_output=True)
    bare = base / "origin.git"
    subprocess.run(["git", "init", "--quiet", "--bare", str(bare)], check=True)
    subprocess.run(["git", "remote", "add", "origin", str(bare)], cwd=root, check=True)
    subprocess.run(["git", "push", "--quiet", "-u", "origin", "HEAD"], cwd=root, check=True,
                   capture_output=True)  # fmt: skip
    for _ in range(2):  # the first commits the set-up's own files; the second finds nothing
        subprocess.run([sys.executable, "-m", "vaultmem", "sync", "--vault", str(root)],
                       env=env, check=True, capture_output=True)  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--agents", type=int, default=5)
    parser.add_argument("--entries", type=int, default=2_000)
    parser.add_argument("--facts", type=int, default=200)
    args = parser.parse_args()
    compileall.compile_dir(str(REPO / "vaultmem"), quiet=1)
    compileall.compile_dir(sysconfig.get_paths()["purelib"], quiet=1)
    root, env = per_turn_vault(args.agents, args.entries, args.facts)
    env.pop("VAULTMEM_VAULT", None)
    env.pop("VAULTMEM_AGENT", None)
    # the sync row's own vault, alike, in git with a remote: the appends of the other rows
    # would give every sync something to commit
    synced, sync_env = per_turn_vault(args.agents, args.entries, args.facts)
    git_remote(synced, sync_env)
    py = sys.executable
    vm = [py, "-m", "vaultmem"]
    v = ["--vault", str(root), "--agent", "agent0"]
    start = {"session_id": "b1", "hook_event_name": "SessionStart", "source": "startup",
             "cwd": str(root), "transcript_path": ""}  # fmt: skip
    prompt = {"session_id": "b1", "hook_event_name": "UserPromptSubmit", "cwd": str(root),
              "prompt": "what did the others change?", "transcript_path": ""}  # fmt: skip
    typer_path = {**env, "VAULTMEM_NO_FAST": "1"}
    appended = [*vm, "append", "bench entry", "--channel", "bench", *v]
    cases: dict[str, tuple[list[str], dict[str, str], str | None]] = {
        "python -c pass": ([py, "-c", "pass"], env, None),
        "read": ([*vm, "read", *v, "--peek"], env, None),
        "append": (appended, env, None),
        "hook session-start": ([*vm, "hook", "session-start", *v], env, json.dumps(start)),
        "hook prompt (nothing new)": ([*vm, "hook", "prompt", *v], env, json.dumps(prompt)),
        "sync (nothing to do)": ([*vm, "sync", "--vault", str(synced)], sync_env, None),
        "read (typer path)": ([*vm, "read", *v, "--peek"], typer_path, None),
        "append (typer path)": (appended, typer_path, None),
        "vaultmem --help": ([*vm, "--help"], env, None),
    }
    # the prompt hook has nothing new only after a read that moved the cursor
    subprocess.run([*vm, "read", *v], env=env, capture_output=True, check=True)
    for cmd, e, stdin in cases.values():  # warm the file cache and the .pyc files
        _timed(cmd, e, stdin)
    cpu: dict[str, list[float]] = {k: [] for k in cases}
    wall: dict[str, list[float]] = {k: [] for k in cases}
    ratio: dict[str, list[float]] = {k: [] for k in cases}
    loads = [os.getloadavg()[0]]
    for _ in range(args.runs):
        for name, (cmd, e, stdin) in cases.items():
            c, w = _timed(cmd, e, stdin)
            cpu[name].append(c)
            wall[name].append(w)
        for name in cases:
            ratio[name].append(cpu[name][-1] / cpu["python -c pass"][-1])
        loads.append(os.getloadavg()[0])
    shutil.rmtree(root.parent, ignore_errors=True)
    shutil.rmtree(synced.parent, ignore_errors=True)
    print(f"{args.agents} agents / {args.entries:,} entries / {args.facts} facts; "
          f"{args.runs} interleaved rounds; Python {sys.version.split()[0]}; "
          f"load average (1 min) {min(loads):.2f}-{max(loads):.2f} on "
          f"{os.cpu_count()} CPUs")  # fmt: skip
    print(f"{'command':<28}{'cpu ms':>9}{'wall ms':>9}{'x F (cpu)':>11}{'goal':>8}")
    for name in cases:
        goal = GOALS.get(name)
        print(
            f"{name:<28}{statistics.median(cpu[name]) * 1000:>9.1f}"
            f"{statistics.median(wall[name]) * 1000:>9.1f}"
            f"{statistics.median(ratio[name]):>11.2f}"
            + (f"{'<= ' + format(goal, 'g'):>8}" if goal else "")
        )


if __name__ == "__main__":
    main()
