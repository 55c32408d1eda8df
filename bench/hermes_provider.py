"""What vaultmem's memory provider costs a turn inside the real Hermes Agent (PyPI
`hermes-agent`, the version tests/e2e/runtimes.txt pins, in its own venv).

After `vaultmem setup hermes` in a scratch HERMES_HOME, a driver runs in Hermes's own Python and
loads the provider the way Hermes does (`plugins.memory.load_memory_provider("vaultmem")`, which
executes the plugin folder's shim), into Hermes's `MemoryManager` (agent/memory_manager.py),
then times the calls Hermes makes on a turn's path:

- `build_system_prompt()`: the session pack, once per session (and after a compression);
- `prefetch_all(message)`: once per user turn, before the model is called (agent/turn_context.py),
  on Hermes's own prefetch thread, with its join: the turn waits for exactly this. Interleaved
  with the same call on a manager without the provider (what a turn costs when
  `memory.provider` is empty: Hermes then has no manager at all, so that figure is an upper
  bound of "without"). Three kinds of turn: nothing new, one entry another agent logged since
  the last turn (appended between turns, outside the timing), a message that names a note
  (recall runs);
- `sync_all(user, assistant, messages)`: after the turn, on Hermes's background worker (off
  the turn's path; timed until the worker has finished, for the record).

Medians; `python -c pass` (F) and the load average are measured in the same run.

    python bench/hermes_provider.py [--turns 40]

Needs Hermes in $VAULTMEM_E2E_HERMES (default ~/.cache/vaultmem-e2e/hermes; `.ci/run` installs
it, or `python3 -m venv DIR && DIR/bin/pip install hermes-agent==VERSION`).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import precompile, scratch_vault  # noqa: E402

from tests._cli import run_cli  # noqa: E402
from tests.e2e._runtimes import BIN, PIP_PACKAGES  # noqa: E402

DRIVER = r"""
import json, os, statistics, sys, time
from pathlib import Path

turns = int(sys.argv[1])
out = {}
t = time.perf_counter()
from plugins.memory import load_memory_provider
from agent.memory_manager import MemoryManager
out["import_hermes_ms"] = (time.perf_counter() - t) * 1000
t = time.perf_counter()
provider = load_memory_provider("vaultmem")
out["load_provider_ms"] = (time.perf_counter() - t) * 1000
assert provider is not None, "the provider did not load"
with_p, without = MemoryManager(), MemoryManager()
with_p.add_provider(provider)
kw = dict(session_id="bench", platform="cli", hermes_home=os.environ["HERMES_HOME"],
          agent_context="primary")
with_p.initialize_all(**kw)
t = time.perf_counter()
block = with_p.build_system_prompt()
out["system_prompt_ms"] = (time.perf_counter() - t) * 1000
out["system_prompt_chars"] = len(block)
assert "# Session context for lyra" in block, block[:400]

from vaultmem.core.vault import Vault
from vaultmem.nexus.log import append
vault = Vault.open(os.environ["BENCH_VAULT"])

def timed(manager, message):
    t = time.perf_counter()
    got = manager.prefetch_all(message, session_id="bench")
    return (time.perf_counter() - t) * 1000, got

kinds = {"nothing new": [], "one new entry": [], "a recall hit": []}
bare = []
chars = {k: [] for k in kinds}
for i in range(turns):
    for kind in kinds:
        if kind == "one new entry":
            append(vault, "ella", f"Turn {i}: webhook retries tuned", type_="fix", channel="api")
        message = ("How do we store prices, in euro cents with VAT?" if kind == "a recall hit"
                   else f"Turn {i}: carry on with the checkout screen.")
        ms, got = timed(with_p, message)
        kinds[kind].append(ms)
        chars[kind].append(len(got))
        bare.append(timed(without, message)[0])
sync = []
for i in range(min(turns, 20)):
    msgs = [{"role": "user", "content": f"Turn {i}: carry on."},
            {"role": "assistant", "content": "Done."}]
    t = time.perf_counter()
    with_p.sync_all(msgs[0]["content"], "Done.", session_id="bench", messages=msgs)
    with_p._sync_executor.submit(lambda: None).result()  # the worker has run it
    sync.append((time.perf_counter() - t) * 1000)
with_p.shutdown_all()
out["prefetch_ms"] = {k: statistics.median(v) for k, v in kinds.items()}
out["prefetch_chars"] = {k: statistics.median(v) for k, v in chars.items()}
out["without_ms"] = statistics.median(bare)
out["sync_ms"] = statistics.median(sync)
print(json.dumps(out))
"""


def f_pass(python: str, runs: int = 15) -> float:
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        subprocess.run([python, "-c", "pass"], check=True)
        times.append(time.perf_counter() - t)
    return statistics.median(times) * 1000


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--turns", type=int, default=40)
    args = ap.parse_args()
    hermes = BIN["hermes"]
    python = hermes.with_name("python")
    if not python.exists():
        raise SystemExit(f"no Hermes at {hermes}: pip install {' '.join(PIP_PACKAGES)}")
    precompile()
    vault, env = scratch_vault()
    home = vault.parent / "hermes-home"
    home.mkdir()
    (home / "config.yaml").write_text(
        "model:\n  default: claude-sonnet-4-5\n  provider: anthropic\n"
    )
    res = run_cli("append", "Refund endpoint ready", "--type", "handoff", "--to", "lyra",
                  "--agent", "ella", "--vault", str(vault))  # fmt: skip
    assert res.exit_code == 0, res.stderr
    res = run_cli("setup", "hermes", "--agent", "lyra", "--vault", str(vault),
                  "--hermes-home", str(home))  # fmt: skip
    assert res.exit_code == 0, res.stderr
    env = {**env, "HERMES_HOME": str(home), "BENCH_VAULT": str(vault), "HOME": str(vault.parent)}
    load_before = os.getloadavg()
    f = f_pass(str(python))
    run = subprocess.run(
        [str(python), "-c", DRIVER, str(args.turns)], env=env, capture_output=True, text=True,
        cwd=vault.parent,
    )  # fmt: skip
    if run.returncode != 0:
        raise SystemExit(run.stderr[-3000:])
    out = json.loads(run.stdout.strip().splitlines()[-1])
    load_after = os.getloadavg()
    version = PIP_PACKAGES[0] if PIP_PACKAGES else "hermes-agent"
    print(f"{version}, {args.turns} turns of each kind; F = python -c pass = {f:.1f} ms")
    print(f"load average {load_before[0]:.1f} before, {load_after[0]:.1f} after")
    print(f"loading the provider (the shim, vaultmem's imports): {out['load_provider_ms']:.0f} ms")
    print(
        f"system prompt block (the pack, {out['system_prompt_chars']} chars): "
        f"{out['system_prompt_ms']:.1f} ms"
    )
    for kind, ms in out["prefetch_ms"].items():
        extra = ms - out["without_ms"]
        chars = out["prefetch_chars"][kind]
        print(f"prefetch, {kind}: {ms:.1f} ms ({extra:+.1f} ms vs without; {chars:.0f} chars)")
    print(f"prefetch without the provider: {out['without_ms']:.2f} ms")
    print(f"sync_turn on Hermes's worker (off the turn's path): {out['sync_ms']:.1f} ms")


if __name__ == "__main__":
    main()
