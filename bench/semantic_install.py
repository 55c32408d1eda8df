"""From `pip install 'vaultmem[semantic]'` to a paraphrase found, in a fresh venv, offline.

    python bench/semantic_install.py [--work DIR]

Times each step a new user takes (the same steps as
tests/integration/test_semantic_install.py, which checks them): the install from this
checkout through the machine's package index (here an offline mirror), the first `vaultmem
index --semantic` on a copy of example-vault/ (model checked, query encoder exported, every
document embedded), and the first hybrid recall of a question that shares no content word with
its note. Prints `uptime` before and after: the machine is shared.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
QUESTION = "why were customers unable to pay yesterday"
OUTAGE = "wiki/incident-2026-11-28.md"
NOTE = (
    "# Incident 2026-11-28\n\n"
    "The payment service went down for forty minutes after the certificate expired; "
    "checkout requests failed until the on-call engineer rotated it.\n"
)


def step(label: str, cmd: list[str], env: dict[str, str] | None = None) -> tuple[float, str]:
    start = time.perf_counter()
    res = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
    spent = time.perf_counter() - start
    if res.returncode != 0:
        raise SystemExit(f"{label} failed: {res.stderr[-600:]}")
    print(f"{label}: {spent:.1f} s", flush=True)
    return spent, res.stdout


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--work", type=Path, default=None)
    args = ap.parse_args()
    base = args.work or Path(tempfile.mkdtemp(prefix="vaultmem-install-"))
    shutil.rmtree(base / "venv", ignore_errors=True)
    print(subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())
    step("venv", [sys.executable, "-m", "venv", str(base / "venv")])
    py = str(base / "venv" / "bin" / "python")
    install, _ = step(
        "pip install '.[semantic]'", [py, "-m", "pip", "install", "-q", f"{REPO}[semantic]"]
    )
    vault = base / "vault"
    shutil.rmtree(vault, ignore_errors=True)
    shutil.copytree(REPO / "example-vault", vault, ignore=shutil.ignore_patterns(".vaultmem"))
    (vault / OUTAGE).write_text(NOTE, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("VAULTMEM_")}
    env |= {"VAULTMEM_HOME": str(base / "home"), "HF_HUB_OFFLINE": "1"}
    shutil.rmtree(base / "home", ignore_errors=True)
    cli = str(base / "venv" / "bin" / "vaultmem")
    index, out = step(
        "first vaultmem index --semantic",
        [cli, "index", "--semantic", "--json", "--vault", str(vault)],
        env,
    )
    print(f"  model: {json.loads(out)['semantic']['source']}")
    found, out = step(
        "first hybrid recall",
        [
            cli,
            "recall",
            QUESTION,
            "--mode",
            "hybrid",
            "--limit",
            "3",
            "--json",
            "--vault",
            str(vault),
        ],
        env,
    )
    paths = [h["path"] for h in json.loads(out)["hits"]]
    rank = paths.index(OUTAGE) + 1 if OUTAGE in paths else None
    print(f"  paraphrase check: {OUTAGE} at rank {rank} of {paths}")
    print(f"from installed to found: {index + found:.1f} s (install itself {install:.1f} s)")
    print(subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())
    if args.work is None:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
