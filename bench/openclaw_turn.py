"""What vaultmem's memory plugin costs a turn inside the real OpenClaw, against a fake model API.

Two scratch homes with the same OpenClaw config (one model provider, the fake Messages API):
one after `vaultmem setup openclaw`, one without. Each turn is one `openclaw agent --local
--agent main --message ...` process (the same session, agent:main:main, turn after turn);
the runs alternate between the two homes, and before each turn another agent (lyra) appends an
entry, so every later turn has something new to deliver.

Per turn, with the plugin: the time OpenClaw waited for each of the plugin's handlers
(`VAULTMEM_OPENCLAW_TIMINGS`: the plugin logs each handler's time, spawn of `vaultmem hook`
included): `before_prompt_build` (the first turn: session-start + prompt; later turns:
prompt) and `agent_end` (stop + session-end); and, for both homes, the whole process's wall
time (OpenClaw's own start-up dominates it; the difference is noisy at this scale). Medians;
`python -c pass` measured in the same run as F.

    python bench/openclaw_turn.py [--turns 6]

Needs OpenClaw as pinned in tests/e2e/runtimes.txt (`.ci/run` installs it).
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

from _common import load_note, precompile, scratch_vault  # noqa: E402

from tests._cli import run_cli  # noqa: E402
from tests._fake_model_api import FakeModelAPI  # noqa: E402
from tests.e2e._runtimes import BIN, NODE_BIN, PACKAGES  # noqa: E402


def config_text(url: str) -> str:
    provider = {
        "baseUrl": url,
        "apiKey": "sk-ant-bench-fake",
        "api": "anthropic-messages",
        "models": [{"id": "fake-model", "name": "Fake", "input": ["text"], "maxTokens": 8000}],
    }
    config = {
        "models": {"providers": {"fake": provider}},
        "agents": {"defaults": {"model": {"primary": "fake/fake-model"}}},
    }
    return json.dumps(config, indent=2) + "\n"


def python_pass() -> float:
    times = []
    for _ in range(7):
        t = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], check=True)
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=6)
    args = parser.parse_args()
    if not BIN["openclaw"].exists():
        raise SystemExit(f"openclaw is not installed at {BIN['openclaw']}: see --help")
    precompile()
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    vault, env = scratch_vault()
    base = Path(tempfile.mkdtemp(prefix="vaultmem-openclaw-bench-"))
    timings = base / "timings.jsonl"
    walls: dict[str, list[float]] = defaultdict(list)
    handlers: dict[str, list[float]] = defaultdict(list)
    with FakeModelAPI() as api:
        homes = {"with": base / "with", "without": base / "without"}
        for home in homes.values():
            (home / ".openclaw").mkdir(parents=True)
            (home / ".openclaw" / "openclaw.json").write_text(config_text(api.url))
        old_home = os.environ["HOME"]
        os.environ["HOME"] = str(homes["with"])  # setup writes ~/.openclaw/openclaw.json
        res = run_cli("setup", "openclaw", "--vault", str(vault), "--agent", "ella")
        os.environ["HOME"] = old_home
        if res.exit_code != 0:
            raise SystemExit(res.stderr)
        for turn in range(args.turns):
            res = run_cli(
                "append", f"Bench note {turn}", "--type", "note", "--channel", "bench",
                "--vault", str(vault), "--agent", "lyra",
            )  # fmt: skip
            order = ["with", "without"] if turn % 2 == 0 else ["without", "with"]
            for name in order:
                run_env = {
                    **env,
                    "HOME": str(homes[name]),
                    "PATH": f"{NODE_BIN}:/usr/local/bin:/usr/bin:/bin",
                    "VAULTMEM_OPENCLAW_TIMINGS": str(timings),
                }
                timings.unlink(missing_ok=True)
                t = time.perf_counter()
                done = subprocess.run(
                    [str(BIN["openclaw"]), "agent", "--local", "--agent", "main",
                     "--message", f"Turn {turn + 1}: carry on."],
                    env=run_env, cwd=homes[name], capture_output=True, text=True, timeout=300,
                )  # fmt: skip
                walls[f"{name} {'first' if turn == 0 else 'later'}"].append(time.perf_counter() - t)
                if done.returncode != 0:
                    raise SystemExit(done.stderr[-2000:])
                if name == "with":
                    phase = "first" if turn == 0 else "later"
                    for line in timings.read_text().splitlines():
                        item = json.loads(line)
                        handlers[f"{item['hook']} ({phase} turn)"].append(item["ms"])
    f = python_pass()
    version = next((p for p in PACKAGES if p.startswith("openclaw@")), "openclaw")
    print(f"{version}, {args.turns} turns")
    print(f"F = python -c pass = {f * 1000:.1f} ms; {load_note()}")
    print()
    print("| the plugin's handler | median ms | × F | runs |")
    print("|---|---|---|---|")
    for key in sorted(handlers):
        ms = statistics.median(handlers[key])
        print(f"| {key} | {ms:.0f} | {ms / (f * 1000):.1f} | {len(handlers[key])} |")
    later = [
        a + b
        for a, b in zip(
            handlers["before_prompt_build (later turn)"],
            handlers["agent_end (later turn)"],
            strict=False,
        )
    ]
    if later:
        print(f"| a later turn, both handlers | {statistics.median(later):.0f} | | {len(later)} |")
    print()
    print("| `openclaw agent --local` wall time | median s | runs |")
    print("|---|---|---|")
    for key in sorted(walls):
        print(f"| {key} | {statistics.median(walls[key]):.2f} | {len(walls[key])} |")


if __name__ == "__main__":
    main()
