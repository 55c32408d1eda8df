"""Shared set-up for the layer-3 benchmarks: a throwaway vault copy and VAULTMEM_HOME."""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
EXAMPLE = REPO / "example-vault"


def scratch_vault(keys: bool = True) -> tuple[Path, dict[str, str]]:
    """A copy of example-vault in a temp dir, a private VAULTMEM_HOME, keys for every agent."""
    base = Path(tempfile.mkdtemp(prefix="vaultmem-bench-"))
    root = base / "vault"
    shutil.copytree(EXAMPLE, root, ignore=shutil.ignore_patterns(".vaultmem"))
    # start from empty logs and no keys: the example's own entries would be foreign to this run
    from vaultmem.core.templates import template

    for rel in ("nexus/live-context.md", "nexus/decisions.md"):
        (root / rel).write_text(template(rel), encoding="utf-8")
    for path in [*root.glob("agents/*/keys.md"), *root.glob("agents/*/checkpoint.md")]:
        path.unlink()
    env = dict(os.environ)
    env["VAULTMEM_HOME"] = str(base / "home")
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    os.environ["VAULTMEM_HOME"] = env["VAULTMEM_HOME"]
    if keys:
        from vaultmem.core.vault import Vault
        from vaultmem.nexus import signing

        v = Vault.open(root)
        for agent in v.known_agents():
            signing.create_key(v, agent)
    return root, env


def precompile() -> None:
    """Byte-compile the package and the venv first: start-up numbers are off ~2x otherwise."""
    subprocess.run(
        [sys.executable, "-m", "compileall", "-q", str(REPO / "vaultmem")],
        check=False,
        capture_output=True,
    )


def timed(cmd: list[str], env: dict[str, str], cwd: Path | None = None) -> float:
    start = time.perf_counter()
    res = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, check=False)
    elapsed = time.perf_counter() - start
    if res.returncode != 0:
        raise SystemExit(f"{cmd} failed: {res.stderr.decode()[-400:]}")
    return elapsed


def median_ms(values: list[float]) -> float:
    return statistics.median(values) * 1000
