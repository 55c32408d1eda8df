"""`vaultmem verify` on a 100,000-entry live log, as a whole process, four ways:

- cold: nothing memo'd (every file parsed, every hash and signature checked);
- first run: the signatures memo'd by an earlier verify, no file memo (every file parsed and
  every hash checked: the case issue 23 measured at 36 s);
- memo'd: nothing changed since the last verify (the log's last report is repeated);
- after one append: the live file grew by one entry (archives and the live file's old bytes
  come from their records; the new entry is parsed; every chain check runs).

The log is written by `tests/_synth_log.py` (real hashes, chains and Ed25519 signatures, five
agents over a year), then rotated into monthly archives keeping the last 30 days live, the
way a year-old vault looks. With `--no-rotate` everything stays in the live file.

    python bench/verify_speed.py [--entries 100000] [--runs 3] [--no-rotate] [--keep DIR]

Medians over `--runs` interleaved runs of each. Prints the load (1-minute average) with the
figures. The synthetic log has no journal (it is not appended through `append`); a vault whose
entries were all appended on this machine also reads a journal of the same length.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))
from _common import precompile, scratch_vault  # noqa: E402

from tests._synth_log import write_log  # noqa: E402

AGENTS = ("ella", "lyra", "nova", "orion", "vega")
START = datetime(2026, 1, 1, tzinfo=UTC)


def make_vault(entries: int, rotate: bool) -> tuple[Path, dict[str, str]]:
    root, env = scratch_vault()
    toml = root / "vaultmem.toml"
    text = toml.read_text(encoding="utf-8")
    for agent in AGENTS:  # the example vault's agents plus the synthetic ones
        if f'"{agent}"' not in text:
            text = text.replace("agents = [", f'agents = ["{agent}", ', 1)
    toml.write_text(text, encoding="utf-8")
    identity = (root / "agents" / "ella" / "IDENTITY.md").read_text(encoding="utf-8")
    for agent in AGENTS:
        path = root / "agents" / agent / "IDENTITY.md"
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(identity.replace("ella", agent).replace("Ella", agent.title()))
    from vaultmem.core.vault import Vault
    from vaultmem.nexus import keyring, signing

    v = Vault.open(root)
    for agent in AGENTS:
        if signing.signer_for(v, agent) is None:
            keyring.create_key(v, agent)
    started = time.perf_counter()
    write_log(root, entries, agents=AGENTS, start=START, days=365)
    print(f"wrote {entries:,} signed entries in {time.perf_counter() - started:.1f} s")
    end = START + timedelta(days=365)
    env["VAULTMEM_NOW"] = end.isoformat(timespec="seconds").replace("+00:00", "Z")
    if rotate:
        from vaultmem.nexus.rotate import rotate as rotate_log

        res = rotate_log(Vault.open(root), keep_days=30, now=end)
        print(f"rotated {res.moved:,} entries into {len(res.files)} archives; {res.kept:,} live")
    return root, env


def verify_once(root: Path, env: dict[str, str]) -> float:
    started = time.perf_counter()
    res = subprocess.run(
        [sys.executable, "-m", "vaultmem", "verify", "--vault", str(root), "--json"],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    elapsed = time.perf_counter() - started
    if res.returncode not in (0, 5):
        raise SystemExit(f"verify failed: {res.stderr[-400:]}")
    if res.returncode == 5:
        print(f"  (verify reports problems: {res.stdout[:300]})")
    return elapsed


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--entries", type=int, default=100_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--no-rotate", action="store_true")
    ap.add_argument("--keep", help="keep the vault in this folder (made once, reused)")
    args = ap.parse_args()
    precompile()
    if args.keep and (Path(args.keep) / "vault").is_dir():
        root = Path(args.keep) / "vault"
        env = dict(os.environ, VAULTMEM_HOME=str(Path(args.keep) / "home"))
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["VAULTMEM_NOW"] = (START + timedelta(days=365)).isoformat().replace("+00:00", "Z")
    else:
        root, env = make_vault(args.entries, rotate=not args.no_rotate)
        if args.keep:
            Path(args.keep).mkdir(parents=True, exist_ok=True)
            shutil.move(str(root.parent / "home"), Path(args.keep) / "home")
            shutil.move(str(root), Path(args.keep) / "vault")
            root = Path(args.keep) / "vault"
            env["VAULTMEM_HOME"] = str(Path(args.keep) / "home")
    size = sum(p.stat().st_size for p in (root / "nexus").rglob("live-context*.md"))
    print(
        f"log: {size / 1e6:.1f} MB in {len(list((root / 'nexus').rglob('live-context*.md')))} files"
    )
    figures: dict[str, list[float]] = {k: [] for k in ("cold", "first", "memo", "append", "py")}
    verified = root / ".vaultmem" / "verified"
    loads = []
    for i in range(args.runs):  # interleaved, so drift hits every figure alike
        shutil.rmtree(verified, ignore_errors=True)
        figures["cold"].append(verify_once(root, env))
        for memo_file in verified.iterdir():  # keep the signatures, forget the files
            if memo_file.name != "signatures.txt":
                memo_file.unlink()
        figures["first"].append(verify_once(root, env))
        figures["memo"].append(verify_once(root, env))
        subprocess.run(
            [sys.executable, "-m", "vaultmem", "append", f"bench {i}", "--agent", "ella",
             "--vault", str(root)],
            env=env, check=True, capture_output=True,
        )  # fmt: skip
        figures["append"].append(verify_once(root, env))
        figures["py"].append(verify_once_pass(env))
        loads.append(os.getloadavg()[0])
    print(f"load: {statistics.median(loads):.2f} (1-min average, median; {os.cpu_count()} cores)")
    names = {
        "cold": "cold (nothing memo'd)",
        "first": "first run (signatures memo'd)",
        "memo": "memo'd (nothing changed)",
        "append": "after one append",
        "py": "python -c pass",
    }
    for key, name in names.items():
        vals = figures[key]
        print(
            f"{name:<32} median {statistics.median(vals):7.2f} s over {args.runs} runs "
            f"(min {min(vals):.2f}, max {max(vals):.2f})"
        )
    py = statistics.median(figures["py"])
    print(f"memo'd / python -c pass: {statistics.median(figures['memo']) / py:.1f}x")
    if not args.keep:
        shutil.rmtree(root.parent, ignore_errors=True)


def verify_once_pass(env: dict[str, str]) -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", "pass"], env=env, check=True)
    return time.perf_counter() - started


if __name__ == "__main__":
    main()
