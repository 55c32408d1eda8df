"""How long a handoff takes to reach another machine when nobody types `vaultmem sync`.

    python bench/sync_handoff.py [--handoffs 8] [--turn 5] [--interval 15s]

Two clones of a bare repository (two machines, each with its own VAULTMEM_HOME). On each,
an agent takes a turn every `--turn` seconds the way a runtime drives the hooks: the prompt
hook (`vaultmem hook prompt`), then the turn's Stop (`vaultmem hook stop`). Session start and
Stop start a background `vaultmem sync` at most once per `[sync] interval`. ella on machine A
writes a handoff to lyra during some of her turns; the figure is the time from that append
to the first of lyra's prompt hooks on machine B that shows it. Goal (issue 19): p50 <= 30 s
at `[sync] interval = 15s`. Medians and p95 over `--handoffs`.
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


def vm(home: Path, *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "vaultmem", *args],
        env={**os.environ, "VAULTMEM_HOME": str(home)},
        input=stdin,
        capture_output=True,
        text=True,
        timeout=300,
    )


def must(res: subprocess.CompletedProcess[str]) -> str:
    if res.returncode != 0:
        raise SystemExit(f"{res.args[3:6]} failed ({res.returncode}): {res.stderr[-600:]}")
    return res.stdout


def git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


def payload(root: Path, transcript: Path, event: str, **extra: object) -> str:
    return json.dumps({"session_id": f"bench-{event}", "transcript_path": str(transcript),
                       "cwd": str(root), "hook_event_name": event, **extra})  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--handoffs", type=int, default=8)
    ap.add_argument("--turn", type=float, default=5.0, help="seconds between an agent's turns")
    ap.add_argument("--interval", default="15s", help="[sync] interval")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="vaultmem-handoff-"))
    a, b, bare = work / "a", work / "b", work / "origin.git"
    home_a, home_b = work / "home-a", work / "home-b"
    must(vm(home_a, "init", str(a), "--agent", "ella", "--agent", "lyra", "--reviewer",
            "chiara", "--git"))  # fmt: skip
    config = a / "vaultmem.toml"
    text = config.read_text(encoding="utf-8")
    if "[sync]" in text:
        text = text.replace("[sync]", f'[sync]\ninterval = "{args.interval}"', 1)
    else:
        text += f'\n[sync]\ninterval = "{args.interval}"\n'
    config.write_text(text, encoding="utf-8")
    must(vm(home_a, "trust", "accept", "--vault", str(a)))
    git(work, "init", "--quiet", "--bare", str(bare))
    git(a, "add", "-A")
    git(a, "-c", "user.name=b", "-c", "user.email=b@x", "commit", "--quiet", "-m", "interval")
    git(a, "remote", "add", "origin", str(bare))
    git(a, "push", "--quiet", "-u", "origin", "HEAD")
    must(vm(home_b, "clone", str(bare), str(b), "--agent", "lyra"))
    vm(home_b, "sync", "--vault", str(b))  # B's new key reaches A (exit 5: not approved yet)
    vm(home_a, "sync", "--vault", str(a))  # exit 5 too, until the approval below
    # lyra's key on B is approved by chiara, whose key lives on A: carried over like a person
    must(vm(home_a, "keys", "create", "--reviewer", "chiara", "--vault", str(a)))
    keys = json.loads(must(vm(home_b, "keys", "list", "--json", "--vault", str(b))))["keys"]
    for k in keys:
        if not k["approved"]:
            must(vm(home_a, "keys", "approve", k["key_id"], "--reviewer", "chiara", "--vault",
                    str(a)))  # fmt: skip
    must(vm(home_a, "sync", "--vault", str(a)))
    vm(home_b, "sync", "--vault", str(b))  # chiara's key arrives: a person on B accepts it
    must(vm(home_b, "trust", "accept", "--vault", str(b)))
    must(vm(home_b, "sync", "--vault", str(b)))
    transcript = work / "session.jsonl"
    transcript.write_text("", encoding="utf-8")
    for root, home, agent in ((a, home_a, "ella"), (b, home_b, "lyra")):
        must(vm(home, "hook", "session-start", "--vault", str(root), "--agent", agent,
                stdin=payload(root, transcript, "SessionStart", source="startup")))  # fmt: skip

    sent: dict[str, float] = {}
    arrived: dict[str, float] = {}
    n = 0
    next_handoff = time.monotonic()
    deadline = time.monotonic() + args.handoffs * 120
    while (
        len(arrived) < args.handoffs or len(sent) < args.handoffs
    ) and time.monotonic() < deadline:
        turn = time.monotonic()
        # ella's turn on A
        if len(sent) < args.handoffs and turn >= next_handoff:
            n += 1
            label = f"handoff-{n}-pangolin"
            must(vm(home_a, "append", f"{label} for lyra", "--type", "handoff", "--to", "lyra",
                    "--vault", str(a), "--agent", "ella"))  # fmt: skip
            sent[label] = time.monotonic()
            next_handoff = time.monotonic() + 2.5 * args.turn
        vm(home_a, "hook", "stop", "--vault", str(a), "--agent", "ella",
           stdin=payload(a, transcript, "Stop", stop_hook_active=False))  # fmt: skip
        # lyra's turn on B: what her prompt hook shows
        shown = vm(home_b, "hook", "prompt", "--vault", str(b), "--agent", "lyra",
                   stdin=payload(b, transcript, "UserPromptSubmit", prompt="what next?")).stdout  # fmt: skip
        now = time.monotonic()
        for label, t in sent.items():
            if label not in arrived and label in shown:
                arrived[label] = now - t
        vm(home_b, "hook", "stop", "--vault", str(b), "--agent", "lyra",
           stdin=payload(b, transcript, "Stop", stop_hook_active=False))  # fmt: skip
        time.sleep(max(0.0, args.turn - (time.monotonic() - turn)))
    took = sorted(arrived.values())
    if not took:
        raise SystemExit("no handoff arrived")
    p95 = took[min(len(took) - 1, int(0.95 * len(took)))]
    print(f"[sync] interval {args.interval}, a turn every {args.turn:g} s on each machine")
    print(f"  handoffs arrived   {len(took)} of {len(sent)}")
    print(f"  median latency     {statistics.median(took):6.1f} s")
    print(f"  p95                {p95:6.1f} s")
    print(f"  each               {' '.join(f'{t:.0f}' for t in took)}")


if __name__ == "__main__":
    main()
