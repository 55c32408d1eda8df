"""What vaultmem's hooks cost inside the real Claude Code CLI, against a fake model API.

The same multi-turn session (`claude -p --input-format stream-json`, N prompts, the "model"
answering at once) in two projects: one after `vaultmem setup claude-code` with its hooks only
(the `.mcp.json` server removed: it starts beside the session, not in a turn's path), one
without anything. Per run: the time to the first turn's result (session start included), and
each later turn's time from sending the prompt to its result. Per hook: each hook command is
wrapped in a shell timer (`date +%s%N` before and after, a few ms of its own) that logs how long
Claude Code's call of it took. Medians over the runs; `python -c pass` is measured in the same
run as F (on a loaded machine F grows, and every figure with it).

    python bench/runtime_hooks.py [--runs 3] [--turns 5]

Needs the CLI from tests/e2e/npm-packages.txt (`.ci/run` installs it, or
`npm install --prefix ~/.cache/vaultmem-e2e/npm @anthropic-ai/claude-code@VERSION`).
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
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import precompile, scratch_vault  # noqa: E402

from tests._fake_model_api import FakeModelAPI  # noqa: E402
from tests.e2e._runtimes import BIN, PACKAGES, ClaudeCode, Run  # noqa: E402


def session(api: FakeModelAPI, home: Path, project: Path, turns: int) -> Run:
    cc = ClaudeCode(api, home, project)
    cc.extra_env = {"MCP_CONNECTION_NONBLOCKING": "true"}  # Claude Code's default
    return cc.turns(*(f"Turn {i + 1}: carry on." for i in range(turns)), timeout=300)


def turn_times(run: Run) -> list[float]:
    """Seconds from each prompt sent to its result (the first includes the session start)."""
    results = [at for at, line in run.stamps if _type(line) == "result"]
    return [end - start for start, end in zip(run.sent, results, strict=False)]


def time_hooks(settings: Path, log: Path) -> None:
    """Wrap each hook command of `settings` in a shell timer that appends `EVENT START END`
    (nanoseconds) to `log`; stdin, stdout and the exit code pass through."""
    data = json.loads(settings.read_text())
    for event, groups in data["hooks"].items():
        for group in groups:
            for hook in group["hooks"]:
                cmd = hook["command"]
                hook["command"] = (
                    f"s=$(date +%s%N); {cmd}; r=$?; "
                    f'echo "{event} $s $(date +%s%N)" >> {log}; exit $r'
                )
    settings.write_text(json.dumps(data, indent=2))


def hook_times(log: Path) -> dict[str, list[float]]:
    out: dict[str, list[float]] = defaultdict(list)
    if log.exists():
        for line in log.read_text().splitlines():
            event, start, end = line.split()
            out[event].append((int(end) - int(start)) / 1e9)
    return out


def _json(line: str) -> dict[str, object]:
    try:
        data = json.loads(line)
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


def _type(line: str) -> object:
    return _json(line).get("type")


def python_pass(runs: int = 10) -> float:
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], check=True)
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def ms(values: list[float]) -> str:
    return f"{statistics.median(values) * 1000:.0f} ms" if values else "-"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--turns", type=int, default=5)
    args = parser.parse_args()
    if not BIN["claude"].exists():
        raise SystemExit(f"Claude Code is not installed at {BIN['claude']}: see --help")
    precompile()
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    vault, _env = scratch_vault()
    base = Path(tempfile.mkdtemp(prefix="vaultmem-runtime-bench-"))
    home = base / "home"
    with_hooks, without = base / "with-hooks", base / "without"
    from tests._cli import run_cli

    with FakeModelAPI() as api:
        ClaudeCode(api, home, with_hooks)  # the folders
        res = run_cli(
            "setup", "claude-code", "--agent", "ella", "--vault", str(vault),
            "--project", str(with_hooks),
        )  # fmt: skip
        if res.exit_code != 0:
            raise SystemExit(res.stderr)
        (with_hooks / ".mcp.json").unlink()
        log = base / "hooks.log"
        time_hooks(with_hooks / ".claude" / "settings.json", log)
        without.mkdir(parents=True, exist_ok=True)
        first: dict[str, list[float]] = defaultdict(list)
        later: dict[str, list[float]] = defaultdict(list)
        whole: dict[str, list[float]] = defaultdict(list)
        for _ in range(args.runs):
            for name, project in (("without", without), ("with hooks", with_hooks)):
                run = session(api, home, project, args.turns)
                times = turn_times(run)
                first[name].append(times[0])
                later[name] += times[1:]
                whole[name].append(run.seconds)
    hooks = hook_times(log)
    f = python_pass()
    version = next(p for p in PACKAGES if "claude-code" in p)
    print(f"{version}, {args.runs} runs of "
          f"{args.turns} turns; F = python -c pass = {f * 1000:.1f} ms")  # fmt: skip
    print()
    print("| session | first turn (start included) | each later turn | whole session |")
    print("|---|---|---|---|")
    for name in ("without", "with hooks"):
        print(f"| {name} | {ms(first[name])} | {ms(later[name])} | {ms(whole[name])} |")
    print()
    print("| hook (inside Claude Code) | median | x F | calls |")
    print("|---|---|---|---|")
    for hook, values in sorted(hooks.items()):
        print(f"| {hook} | {ms(values)} | {statistics.median(values) / f:.1f} | {len(values)} |")


if __name__ == "__main__":
    main()
