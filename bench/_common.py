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
        from vaultmem.nexus import keyring

        v = Vault.open(root)
        for agent in v.known_agents():
            keyring.create_key(v, agent)
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


def load_note() -> str:
    """The machine's load, to print with every figure (ratios grow on a busy machine)."""
    one, five, _ = os.getloadavg()
    return f"load average {one:.2f} (1 min), {five:.2f} (5 min) on {os.cpu_count()} CPUs"


def write_log(
    root: Path,
    n: int,
    *,
    types: tuple[str, ...] = ("note",),
    body: str = "A body line with some detail.\nAnd a second line.",
    sign: bool = True,
) -> None:
    """Append `n` entries straight to the vault's live log, spread over its agents and over
    2026: real ids, hashes and chains. `sign`: each signed with its agent's key on this
    machine (VAULTMEM_HOME), so verify passes; otherwise one signature stands in for all, for a
    log only read (a million entries in seconds). Every fourth entry has `body`."""
    from vaultmem.core.records import evolve
    from vaultmem.core.vault import Vault
    from vaultmem.nexus import entry, signing

    v = Vault.open(root)
    agents = v.known_agents()
    signers = {a: signing.signer_for(v, a) for a in agents}
    assert all(signers.values()), "every agent needs a key on this machine"
    stand_in = signers[agents[0]].sign("sha256:0")  # type: ignore[union-attr]
    heads: dict[str, str | None] = dict.fromkeys(agents)
    seqs = dict.fromkeys(agents, 0)
    with open(v.live_context, "a", encoding="utf-8") as fh:
        buf: list[str] = []
        for i in range(n):
            agent = agents[i % len(agents)]
            signer = signers[agent]
            assert signer is not None
            seqs[agent] += 1
            e = entry.Entry(
                id=entry.entry_id(agent, seqs[agent], "live"),
                agent=agent,
                seq=seqs[agent],
                time=f"2026-{1 + i * 11 // n:02d}-01T00:{i // 60 % 60:02d}:{i % 60:02d}.000Z",
                channel=("backend", "frontend", "ops")[i % 3],
                type=types[i % len(types)],
                summary=f"entry number {i} about the booking service",
                body="" if i % 4 else body,
                prev=heads[agent],
                key=signer.key_id,
            )
            digest = e.compute_hash()
            e = evolve(e, hash=digest, sig=signer.sign(digest) if sign else stand_in)
            heads[agent] = e.hash
            buf.append(entry.render(e))
            if len(buf) >= 5_000:
                fh.write("".join(buf))
                buf.clear()
        fh.write("".join(buf))


def per_turn_vault(
    agents: int = 5, entries: int = 2_000, facts: int = 200
) -> tuple[Path, dict[str, str]]:
    """The vault the per-turn figures are taken on (issue 23): `agents` agents with keys,
    `entries` signed log entries spread over them (real chains, real signatures), and `facts`
    shared memory notes with their MEMORY.md lines."""
    from vaultmem.app.lifecycle.scaffold import init
    from vaultmem.core.vault import Vault
    from vaultmem.memory.facts import remember

    base = Path(tempfile.mkdtemp(prefix="vaultmem-bench-turn-"))
    env = dict(os.environ)
    env["VAULTMEM_HOME"] = str(base / "home")
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    os.environ["VAULTMEM_HOME"] = env["VAULTMEM_HOME"]
    root = base / "vault"
    names = [f"agent{i}" for i in range(agents)]
    init(root, agents=names, reviewers=["chiara"])
    write_log(root, entries, types=("note", "fix", "question"))
    v = Vault.open(root)
    for i in range(facts):
        remember(
            v,
            f"Fact {i}: the booking service retries webhook {i} at most three times.",
            name=f"fact-{i}",
            type_=("project", "reference", "feedback", "user")[i % 4],
            description=f"webhook retry rule {i}",
        )
    return root, env
