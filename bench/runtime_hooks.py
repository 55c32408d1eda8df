"""What vaultmem's hooks cost inside the real Claude Code and Codex CLIs, against a fake model API.

Claude Code: the same multi-turn session (`claude -p --input-format stream-json`, N prompts, the
"model" answering at once) in two projects: one after `vaultmem setup claude-code` with its hooks
only (the `.mcp.json` server removed: it starts beside the session, not in a turn's path), one
without anything. Per run: the time to the first turn's result (session start included), and
each later turn's time from sending the prompt to its result.

Codex: `codex exec` has no multi-turn input, so a session is `codex exec PROMPT` and then
`codex exec resume ID PROMPT` per later turn, each a new process (its SessionStart hook fires
with `resume` every turn). Two CODEX_HOMEs with the same fake model provider: one after
`vaultmem setup codex` with its hooks only (the `[mcp_servers.vaultmem]` entry removed, as for
Claude Code), one without. Per turn: the process's whole time, and the time from its
`turn.started` event to `turn.completed`. Both get `--dangerously-bypass-hook-trust` (Codex skips
hooks nobody has trusted, also in `codex exec`).

Per hook: each hook command is wrapped in a shell timer (`date +%s%N` before and after, a few ms
of its own) that logs how long the runtime's call of it took. Medians over the runs;
`python -c pass` is measured in the same run as F (on a loaded machine F grows, and every figure
with it).

    python bench/runtime_hooks.py [--runtime claude-code|codex|both] [--runs 3] [--turns 5]

Needs the CLIs pinned in tests/e2e/runtimes.txt (`.ci/run` installs them, or
`npm install --prefix ~/.cache/vaultmem-e2e/npm PACKAGE@VERSION ...`).
"""

from __future__ import annotations

import argparse
import json
import os
import re
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

from tests._cli import run_cli  # noqa: E402
from tests._fake_model_api import FakeModelAPI  # noqa: E402
from tests.e2e._runtimes import BIN, PACK, PACKAGES, ClaudeCode, Codex, Run  # noqa: E402


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


CODEX_FLAGS = (
    "--skip-git-repo-check",
    "--json",
    # the sandbox needs namespaces this container lacks; nothing here leaves 127.0.0.1
    "--dangerously-bypass-approvals-and-sandbox",
    # Codex runs a hook only once a person has trusted it: this flag stands for that
    "--dangerously-bypass-hook-trust",
)


def codex_session(
    cx: Codex, turns: int, log: Path, hooks: dict[str, list[float]], timeout: float = 300
) -> tuple[list[float], list[float]]:
    """One Codex session, turn after turn (`codex exec`, then `codex exec resume ID`): per turn
    the process's whole time, and its `turn.started` to `turn.completed`. The hook calls each
    turn adds to `log` go to `hooks`, SessionStart named by its source (the first turn's is
    `startup`, a resumed one's `resume`)."""
    whole: list[float] = []
    inner: list[float] = []
    thread = ""
    for i in range(turns):
        prompt = f"Turn {i + 1}: carry on."
        argv = [str(cx.bin), "exec", *CODEX_FLAGS]
        argv += ["resume", thread, prompt] if thread else [prompt]
        t = time.monotonic()
        started = None
        with tempfile.TemporaryFile("w+") as err:
            proc = subprocess.Popen(
                argv, cwd=cx.project, env=cx.env(), stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE, stderr=err, text=True,
            )  # fmt: skip
            assert proc.stdout is not None
            for line in proc.stdout:
                now = time.monotonic()
                data = _json(line)
                kind = data.get("type")
                if kind == "thread.started" and not thread:
                    thread = str(data["thread_id"])
                elif kind == "turn.started":
                    started = now
                elif kind == "turn.completed" and started is not None:
                    inner.append(now - started)
            proc.wait(timeout=timeout)
            whole.append(time.monotonic() - t)
            if proc.returncode != 0 or not thread:
                err.seek(0)
                raise SystemExit(f"codex exec failed ({proc.returncode}): {err.read()[-2000:]}")
        source = "startup" if i == 0 else "resume"
        for event, values in hook_times(log).items():
            name = f"{event} ({source})" if event == "SessionStart" else event
            hooks[name] += values
        log.unlink(missing_ok=True)
    return whole, inner


def without_mcp(config: Path) -> None:
    """Take setup's `[mcp_servers.vaultmem]` table out of config.toml (hooks only)."""
    text = config.read_text()
    text = re.sub(r"(?ms)^\[mcp_servers\.vaultmem\]\n.*?(?=^\[|^#|\Z)", "", text)
    config.write_text(text)


def check_pack(api: FakeModelAPI, runtime: str, since: int) -> None:
    """The hooks did their work: a session pack reached the model (else the figures are of
    hooks that failed or were skipped)."""
    if not any(PACK in json.dumps(call.body) for call in api.main_calls()[since:]):
        raise SystemExit(f"{runtime}: no session pack reached the model; the hooks did not run")


def bench_claude(api: FakeModelAPI, vault: Path, base: Path, runs: int, turns: int) -> Report:
    home = base / "home"
    with_hooks, without = base / "with-hooks", base / "without"
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
    since = len(api.main_calls())
    report = Report("Claude Code", next(p for p in PACKAGES if "claude-code" in p))
    for _ in range(runs):
        for name, project in (("without", without), ("with hooks", with_hooks)):
            run = session(api, home, project, turns)
            times = turn_times(run)
            report.first[name].append(times[0])
            report.later[name] += times[1:]
            report.whole[name].append(run.seconds)
    report.hooks = hook_times(log)
    check_pack(api, "Claude Code", since)
    return report


def bench_codex(api: FakeModelAPI, vault: Path, base: Path, runs: int, turns: int) -> Report:
    with_hooks = Codex(api, base / "home-hooks", base / "with-hooks")
    without = Codex(api, base / "home-without", base / "without")
    saved = os.environ.get("CODEX_HOME")
    os.environ["CODEX_HOME"] = str(with_hooks.codex_home)  # setup writes there
    try:
        res = run_cli(
            "setup", "codex", "--agent", "lyra", "--vault", str(vault),
            "--project", str(with_hooks.project),
        )  # fmt: skip
    finally:
        if saved is None:
            os.environ.pop("CODEX_HOME", None)
        else:
            os.environ["CODEX_HOME"] = saved
    if res.exit_code != 0:
        raise SystemExit(res.stderr)
    without_mcp(with_hooks.codex_home / "config.toml")
    log = base / "hooks.log"
    time_hooks(with_hooks.codex_home / "hooks.json", log)
    since = len(api.main_calls())
    report = Report("Codex", next(p for p in PACKAGES if "codex" in p))
    for _ in range(runs):
        for name, cx in (("without", without), ("with hooks", with_hooks)):
            whole, inner = codex_session(cx, turns, log, report.hooks)
            report.first[name].append(whole[0])
            report.later[name] += whole[1:]
            report.inner[name] += inner[1:]
            report.whole[name].append(sum(whole))
    check_pack(api, "Codex", since)
    return report


class Report:
    def __init__(self, runtime: str, package: str) -> None:
        self.runtime, self.package = runtime, package
        self.first: dict[str, list[float]] = defaultdict(list)
        self.later: dict[str, list[float]] = defaultdict(list)
        self.inner: dict[str, list[float]] = defaultdict(list)  # Codex: turn.started..completed
        self.whole: dict[str, list[float]] = defaultdict(list)
        self.hooks: dict[str, list[float]] = defaultdict(list)

    def print(self, f: float, runs: int, turns: int) -> None:
        print(f"## {self.runtime}: {self.package}, {runs} runs of {turns} turns")
        print()
        later = "each later turn"
        if self.runtime == "Codex":
            later += " (a new `codex exec resume` process)"
        head = f"| session | first turn (start included) | {later} |"
        rule = "|---|---|---|"
        if self.inner:
            head += " later turn, turn.started to turn.completed |"
            rule += "---|"
        print(head + " whole session |")
        print(rule + "---|")
        for name in ("without", "with hooks"):
            row = f"| {name} | {ms(self.first[name])} | {ms(self.later[name])} |"
            if self.inner:
                row += f" {ms(self.inner[name])} |"
            print(row + f" {ms(self.whole[name])} |")
        if self.later["without"] and self.later["with hooks"]:
            extra = statistics.median(self.later["with hooks"]) - statistics.median(
                self.later["without"]
            )
            print(f"\nper later turn: +{extra * 1000:.0f} ms with hooks")
        print()
        print(f"| hook (inside {self.runtime}) | median | x F | calls |")
        print("|---|---|---|---|")
        for hook, values in sorted(self.hooks.items()):
            x = statistics.median(values) / f
            print(f"| {hook} | {ms(values)} | {x:.1f} | {len(values)} |")
        print()


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runtime", choices=("claude-code", "codex", "both"), default="both")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--turns", type=int, default=5)
    args = parser.parse_args()
    wanted = ["claude-code", "codex"] if args.runtime == "both" else [args.runtime]
    for runtime in wanted:
        cli = "claude" if runtime == "claude-code" else "codex"
        if not BIN[cli].exists():
            raise SystemExit(f"{runtime} is not installed at {BIN[cli]}: see --help")
    precompile()
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    reports = []
    with FakeModelAPI() as api:
        for runtime in wanted:
            vault, _env = scratch_vault()  # its own: one runtime's entries are not the other's
            base = Path(tempfile.mkdtemp(prefix=f"vaultmem-runtime-bench-{runtime}-"))
            bench = bench_claude if runtime == "claude-code" else bench_codex
            reports.append(bench(api, vault, base, args.runs, args.turns))
    f = python_pass()
    load = os.getloadavg()
    print(f"F = python -c pass = {f * 1000:.1f} ms; load average {load[0]:.1f} {load[1]:.1f}")
    print()
    for report in reports:
        report.print(f, args.runs, args.turns)


if __name__ == "__main__":
    main()
