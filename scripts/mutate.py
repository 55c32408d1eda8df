"""Mutation run over the checks vaultmem's trust rests on.

A mutant is a one-line change to the code that switches a check off (or weakens it). A mutant that
no test catches is a promise nobody checks. Each mutant below names the promise it breaks; the run
applies it, runs the tests most likely to catch it, then (if they all pass) the quick suite, and
puts the file back whatever happens.

    python scripts/mutate.py                 # every mutant: targeted tests, then the quick suite
    python scripts/mutate.py --list          # the mutants and whether each still applies
    python scripts/mutate.py -k verify       # only mutants whose name contains "verify"
    python scripts/mutate.py --full          # survivors are tried on the whole suite too

It prints one line per mutant (killed / SURVIVED / equivalent / stale) and writes the same as JSON to
bench/out/mutants.json. A mutant is *stale* when its line is no longer in the code: update it.
A survivor that is truly equivalent (no behaviour can tell it apart) carries `equivalent=` with the
reason, and is reported as such instead of as a failure.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable


@dataclass(frozen=True)
class Mutant:
    name: str
    path: str  # relative to the repository
    find: str  # must occur exactly once in the file
    replace: str
    promise: str  # what the mutant breaks, in words
    tests: tuple[str, ...] = ()  # pytest targets tried first (slow ones included)
    equivalent: str = ""  # why no behaviour tells it apart, when that is so


MUTANTS: list[Mutant] = [
    # --- paths: nothing is written or read outside the vault -----------------------------------
    Mutant(
        "path-dotdot",
        "vaultmem/core/vault.py",
        'if any(part == ".." for part in parts):',
        "if False:",
        "a path with '..' is refused as such",
        ("tests/test_vault.py",),
    ),
    Mutant(
        "path-symlink-out",
        "vaultmem/core/vault.py",
        "if real != self.real_root and self.real_root not in real.parents:",
        "if False:",
        "a path through a symlink out of the vault is refused",
        ("tests/test_vault.py", "tests/test_trust.py"),
    ),
    Mutant(
        "path-absolute",
        "vaultmem/core/vault.py",
        'if not text or PurePosixPath(text).is_absolute() or text.startswith("~"):',
        "if not text:",
        "an absolute or home-relative path is refused",
        ("tests/test_vault.py",),
    ),
    # --- the gate: agents propose, people decide -----------------------------------------------
    Mutant(
        "gate-acting-agent",
        "vaultmem/core/vault.py",
        "    if acting_agent:\n        raise ReviewRefusedError(",
        "    if False:\n        raise ReviewRefusedError(",
        "an acting agent cannot review",
        ("tests/test_promote.py", "tests/test_trust.py"),
    ),
    Mutant(
        "gate-agent-name",
        "vaultmem/core/vault.py",
        "if name in vault.known_agents():",
        "if False:",
        "an agent's name is never a reviewer, so nobody reviews their own proposal",
        ("tests/test_promote.py",),
    ),
    Mutant(
        "gate-listed-reviewer",
        "vaultmem/core/vault.py",
        "if name not in vault.config.reviewers:",
        "if False:",
        "only people listed under `reviewers` review",
        ("tests/test_promote.py",),
    ),
    # --- the signed logs -----------------------------------------------------------------------
    Mutant(
        "verify-hash",
        "vaultmem/nexus/verify.py",
        "if e.compute_hash() != e.hash:",
        "if False:",
        "an entry changed after it was written is reported (edited)",
        ("tests/test_log_integrity.py", "tests/test_trust.py"),
    ),
    Mutant(
        "verify-signature",
        "vaultmem/nexus/verify.py",
        "            if not ok:\n",
        "            if False:\n",
        "a signature that does not match is reported (forged)",
        ("tests/test_signing.py", "tests/test_trust.py"),
    ),
    Mutant(
        "verify-key-owner",
        "vaultmem/nexus/verify.py",
        "if pk.agent != e.agent:",
        "if False:",
        "an entry signed with another agent's key is reported (forged)",
        ("tests/test_signing.py", "tests/test_trust.py"),
    ),
    Mutant(
        "verify-device-chain",
        "vaultmem/nexus/verify.py",
        "if pk.device != entry.device_of(e.id):",
        "if False:",
        "one machine's key cannot continue another machine's chain",
        ("tests/test_verify_forgery.py",),
    ),
    Mutant(
        "verify-anchored-heads",
        "vaultmem/nexus/verify.py",
        '            elif not target.hash.removeprefix("sha256:").startswith(prefix):',
        "            elif False:",
        "a rewrite of an entry another agent anchored is reported on a fresh clone",
        ("tests/test_verify_forgery.py",),
    ),
    Mutant(
        "verify-unapproved-key",
        "vaultmem/nexus/verify.py",
        "if not pk.approved:",
        "if False:",
        "a key nobody vouched for is reported",
        ("tests/test_signing.py", "tests/test_trust.py"),
    ),
    Mutant(
        "verify-forged-id",
        "vaultmem/nexus/verify.py",
        "if e.id != entry.entry_id(e.agent, e.seq, e.log, entry.device_of(e.id)):",
        "if False:",
        "an id that does not match its agent and sequence number is reported",
        ("tests/test_log_integrity.py", "tests/test_trust.py"),
    ),
    # --- secrets -------------------------------------------------------------------------------
    Mutant(
        "secrets-github-token",
        "vaultmem/core/secrets.py",
        "ghp_",
        "ghx_",
        "a GitHub token is caught by the scanner",
        ("tests/test_secrets.py", "tests/test_secrets_corpus.py"),
    ),
    # --- the log's escaping: an agent cannot forge another agent's entry ------------------------
    Mutant(
        "entry-escape-header",
        "vaultmem/nexus/entry.py",
        "def escape_body(body: str) -> str:\n",
        "def escape_body(body: str) -> str:\n    return body\n",
        "text that looks like an entry header or metadata inside a body is escaped",
        ("tests/test_log.py", "tests/test_log_properties.py", "tests/test_trust.py"),
    ),
]


def run(args: list[str], timeout: float) -> tuple[bool, str]:
    """(passed, the last lines of the output)."""
    try:
        proc = subprocess.run(
            [PY, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", *args],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        return False, "timed out (counted as killed: the mutant hangs something)"
    lines = [ln for ln in proc.stdout.splitlines() if ln.strip()]
    failed = next((ln for ln in lines if ln.startswith("FAILED")), lines[-1] if lines else "")
    return proc.returncode == 0, failed


def try_mutant(m: Mutant, *, full: bool, timeout: float) -> dict[str, str]:
    path = ROOT / m.path
    original = path.read_text(encoding="utf-8")
    if original.count(m.find) != 1:
        return {"name": m.name, "result": "stale", "detail": f"{m.find!r} not once in {m.path}"}
    started = time.monotonic()
    try:
        path.write_text(original.replace(m.find, m.replace), encoding="utf-8")
        stages: list[list[str]] = []
        if m.tests:
            stages.append(list(m.tests))
        stages.append(["-m", "not slow", "-n", "2"])
        if full:
            stages.append(["-n", "2"])
        for stage in stages:
            passed, detail = run(stage, timeout)
            if not passed:
                return {
                    "name": m.name,
                    "result": "killed",
                    "detail": detail,
                    "seconds": f"{time.monotonic() - started:.0f}",
                }
        result = "equivalent" if m.equivalent else "SURVIVED"
        return {
            "name": m.name,
            "result": result,
            "detail": m.equivalent or m.promise,
            "seconds": f"{time.monotonic() - started:.0f}",
        }
    finally:
        path.write_text(original, encoding="utf-8")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("-k", default="", help="only mutants whose name contains this")
    ap.add_argument("--list", action="store_true", help="list the mutants and whether they apply")
    ap.add_argument("--full", action="store_true", help="try survivors on the whole suite too")
    ap.add_argument("--timeout", type=float, default=900, help="seconds per test run")
    opts = ap.parse_args()
    chosen = [m for m in MUTANTS if opts.k in m.name]
    if opts.list:
        for m in chosen:
            text = (ROOT / m.path).read_text(encoding="utf-8")
            state = "applies" if text.count(m.find) == 1 else "STALE"
            print(f"{m.name:28} {state:8} {m.path}: {m.promise}")
        return 0
    report = []
    for m in chosen:
        row = try_mutant(m, full=opts.full, timeout=opts.timeout)
        report.append({**row, "promise": m.promise, "path": m.path})
        print(f"{row['name']:28} {row['result']:10} {row.get('seconds', '-'):>5}s  {row['detail']}")
        sys.stdout.flush()
    out = ROOT / "bench" / "out"
    out.mkdir(parents=True, exist_ok=True)
    (out / "mutants.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    counts: dict[str, int] = {}
    for row in report:
        counts[row["result"]] = counts.get(row["result"], 0) + 1
    print(", ".join(f"{n} {k}" for k, n in sorted(counts.items())))
    return 1 if counts.get("SURVIVED") or counts.get("stale") else 0


if __name__ == "__main__":
    sys.exit(main())
