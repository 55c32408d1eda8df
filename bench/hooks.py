"""What the lifecycle hooks cost: whole-process time and tokens added to the agent's context.

Times (medians of N runs, and the median ratio of each run to a bare `python -c pass` run
just before it, so a shared machine's changing load cancels out):

- `vaultmem hook session-start`            the session pack, as Claude Code runs it
- `vaultmem hook prompt`, nothing new       the common case on every user turn (goal: <= 5x)
- `vaultmem hook prompt`, 20 new entries    other agents wrote 20 entries since the last turn
- `vaultmem hook prompt`, a recall hit      the prompt names something the vault has notes on
- `vaultmem hook session-start`, resume     a resumed (or compacted) session: the delta only
- `vaultmem hook stop`                      the turn's end: the checkpoint is handed to a
                                            detached process (what the runtime waits for)
- `vaultmem hook stop`, in-line             the same work as the detached process does it
- `vaultmem hook session-end`               the session's new turns queued, local state

Tokens: a busy five-agent log (the four others write 0-3 entries each between two of ella's
turns); for each of ella's prompts, the tokens the hook adds to the turn (chars / 4, as the read
budget counts them), and how many turns get nothing added.

    python bench/hooks.py [--runs 20] [--turns 60] [--notes 10000]

`--notes N` adds N synthetic notes (bench/synth_vault.py, under `synth/`) and indexes them
first, so the prompt hook's recall gate is measured at that vault size (its cost should not
grow with it: it reads `.vaultmem/index/names.json`, not the manifest).

Run from a venv with vaultmem installed; PYTHONDONTWRITEBYTECODE is removed from the
children's environment and everything is byte-compiled first.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import precompile, scratch_vault

VAULTMEM = Path(sys.executable).parent / "vaultmem"
TRANSCRIPT = (
    Path(__file__).resolve().parent.parent / "tests/fixtures/transcripts/claude-code-session.jsonl"
)
QUIET_PROMPT = "ok, go ahead with that"
RECALL_PROMPT = "how do we handle stripe webhook retries?"
WARNED: set[str] = set()


def run_hook(
    event: str, vault: Path, agent: str, payload: dict[str, object], env: dict[str, str]
) -> tuple[float, str]:
    start = time.perf_counter()
    proc = subprocess.run(
        [str(VAULTMEM), "hook", event, "--vault", str(vault), "--agent", agent],
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    elapsed = time.perf_counter() - start
    if proc.returncode != 0 or any(
        line and not line.startswith("vaultmem: ") for line in proc.stderr.splitlines()
    ):
        raise SystemExit(f"hook {event} failed: {proc.stderr[-400:]}")
    if proc.stderr and proc.stderr not in WARNED:  # a note for the person, e.g. keyword only
        WARNED.add(proc.stderr)
        print(f"(hook {event} said: {proc.stderr.strip()})", file=sys.stderr)
    return elapsed, proc.stdout


def added_tokens(stdout: str) -> int:
    if not stdout.strip():
        return 0
    context = json.loads(stdout)["hookSpecificOutput"]["additionalContext"]
    return (len(context) + 3) // 4


def append_many(vault: Path, agents: list[str], count: int, rng: random.Random) -> None:
    from vaultmem.core.vault import Vault
    from vaultmem.nexus.log import append

    v = Vault.open(vault)
    kinds = ["note", "fix", "handoff", "question", "note", "fix"]
    for i in range(count):
        agent = rng.choice(agents)
        append(
            v,
            agent,
            f"{agent} step {i}: updated the booking flow and its tests",
            channel=rng.choice(["backend", "web", "api", "ops"]),
            type_=rng.choice(kinds),
            body="Details in the PR; nothing else changes for now." if i % 3 == 0 else "",
        )


def add_notes(vault: Path, notes: int) -> None:
    """N synthetic notes under synth/, indexed."""
    import shutil
    import tempfile

    from synth_vault import generate

    from vaultmem.core.vault import Vault
    from vaultmem.search import refresh

    with tempfile.TemporaryDirectory() as tmp:
        generate(Path(tmp), notes)
        for folder in Path(tmp).iterdir():
            if folder.is_dir():
                shutil.move(str(folder), str(vault / "synth" / folder.name))
    refresh.refresh(Vault.open(vault), wait=None)


def timings(runs: int, notes: int = 0) -> list[tuple[str, float, float]]:
    vault, env = scratch_vault()
    if notes:
        add_notes(vault, notes)
    rng = random.Random(7)
    append_many(vault, ["lyra", "ella"], 200, rng)  # a log with some history
    base = {"session_id": "bench", "cwd": str(vault), "hook_event_name": "UserPromptSubmit"}
    start = {"session_id": "bench", "hook_event_name": "SessionStart", "source": "startup"}
    run_hook("session-start", vault, "ella", start, env)  # the cursor exists from here on
    run_hook("prompt", vault, "ella", {**base, "prompt": RECALL_PROMPT, "session_id": "warm"}, env)

    def median(fn: object) -> tuple[float, float]:
        """(median ms, median ratio to a `python -c pass` run just before each sample): on a
        shared machine the load changes from one second to the next, so each sample is
        compared with its own F."""
        samples, ratios = [], []
        for _ in range(runs + 1):
            f = bare()
            took = fn()  # type: ignore[operator]
            samples.append(took)
            ratios.append(took / f)
        return statistics.median(samples[1:]) * 1000, statistics.median(ratios[1:])

    def bare() -> float:
        t = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], env=env, check=True)
        return time.perf_counter() - t

    def session_start() -> float:
        return run_hook("session-start", vault, "ella", start, env)[0]

    def nothing_new() -> float:
        took, out = run_hook("prompt", vault, "ella", {**base, "prompt": QUIET_PROMPT}, env)
        assert out == "", out
        return took

    def twenty_new() -> float:
        append_many(vault, ["lyra"], 20, rng)
        took, out = run_hook("prompt", vault, "ella", {**base, "prompt": QUIET_PROMPT}, env)
        assert "new entries" in out, out
        return took

    counter = iter(range(10**6))

    def recall_hit() -> float:
        payload = {**base, "prompt": RECALL_PROMPT, "session_id": f"s{next(counter)}"}
        took, out = run_hook("prompt", vault, "ella", payload, env)
        assert "stripe" in out.lower(), out
        return took

    def resume() -> float:
        took, out = run_hook("session-start", vault, "ella", {**start, "source": "resume"}, env)
        assert "# Session context" not in out, out
        return took

    transcript = vault.parent / "session.jsonl"
    transcript.write_bytes(TRANSCRIPT.read_bytes())
    turn_end = {"session_id": "bench", "transcript_path": str(transcript), "cwd": str(vault),
                "hook_event_name": "Stop", "stop_hook_active": False}  # fmt: skip

    def stop() -> float:
        took = run_hook("stop", vault, "ella", turn_end, env)[0]
        time.sleep(0.5)  # turns are seconds apart: the detached work is done before the next
        return took

    def stop_inline() -> float:
        t = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "vaultmem.app.hooks.background", "stop", "--vault",
             str(vault), "--agent", "ella"],
            input=json.dumps(turn_end), text=True, env=env, check=True, capture_output=True,
        )  # fmt: skip
        return time.perf_counter() - t

    def session_end() -> float:
        payload = {**turn_end, "hook_event_name": "SessionEnd", "reason": "other"}
        return run_hook("session-end", vault, "ella", payload, env)[0]

    results = [("python -c pass", *median(bare))]
    for name, fn in (
        ("hook session-start", session_start),
        ("hook session-start, resume", resume),
        ("hook prompt, nothing new", nothing_new),
        ("hook prompt, 20 new entries", twenty_new),
        ("hook prompt, a recall hit", recall_hit),
        ("hook stop (detached)", stop),
        ("hook stop, the detached work", stop_inline),
        ("hook session-end", session_end),
    ):
        results.append((name, *median(fn)))
    return results


def busy_log(turns: int) -> dict[str, float]:
    from vaultmem.app.lifecycle.scaffold import init
    from vaultmem.core.vault import Vault
    from vaultmem.nexus import keyring

    vault, env = scratch_vault()
    others = ["lyra", "nova", "mira", "tess"]
    init(vault, agents=others[1:], reviewers=[], language=None)
    v = Vault.open(vault)
    for agent in others[1:]:
        keyring.create_key(v, agent)
    rng = random.Random(11)
    start = {"session_id": "busy", "hook_event_name": "SessionStart", "source": "startup"}
    _took, out = run_hook("session-start", vault, "ella", start, env)
    pack_tokens = added_tokens(out)
    per_turn = []
    for _turn in range(turns):
        for agent in others:
            append_many(vault, [agent], rng.choice([0, 0, 1, 1, 2, 3]), rng)
        prompt = rng.choice([QUIET_PROMPT, "fix the failing checkout test", RECALL_PROMPT])
        payload = {"session_id": "busy", "prompt": prompt, "hook_event_name": "UserPromptSubmit"}
        per_turn.append(added_tokens(run_hook("prompt", vault, "ella", payload, env)[1]))
    return {
        "session-start pack": pack_tokens,
        "median per turn": statistics.median(per_turn),
        "mean per turn": statistics.mean(per_turn),
        "max per turn": max(per_turn),
        "turns with nothing added": sum(1 for t in per_turn if t == 0),
        "turns": len(per_turn),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--turns", type=int, default=60)
    parser.add_argument("--notes", type=int, default=0, help="synthetic notes to add first")
    args = parser.parse_args()
    precompile()
    results = timings(args.runs, args.notes)
    print(f"{'command':34} {'median':>9} {'x python -c pass':>17}")
    for name, ms, ratio in results:
        print(f"{name:34} {ms:7.1f}ms {ratio:16.1f}x")
    print()
    print(f"tokens added by `hook prompt` on a busy five-agent log ({args.turns} turns):")
    for name, value in busy_log(args.turns).items():
        print(f"  {name:26} {value:g}")


if __name__ == "__main__":
    main()
