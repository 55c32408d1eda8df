"""What Obsidian-native links cost (issue 25), measured.

1. `relink` — the digests' links to where their entries are — on a year-long log (50,000
   signed entries, 5 agents) with its 53 weekly offline digests: what every `log rotate`,
   `compact` and `digest` now adds (median of `--runs`, nothing to change), then the
   `compact --older-than 30d` that moves eleven months and rewrites those links (one run).
2. `upgrade` m005 on the same log written without block ids: the block id lines for 50,000
   entries (one run), and that every hash is what it was.
3. `vaultmem append --body -` with a diff piped in (the fence rule runs), as a whole process,
   against `python -c pass` (medians, ratio).

    python bench/obsidian_links.py [--runs 5] [--year 50000]
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))
from _common import precompile  # noqa: E402
from digest import vault  # noqa: E402

DIFF = "diff --git a/a.py b/a.py\n--- a/a.py\n+++ b/a.py\n@@ -1 +1 @@\n-x = 1\n+x = 2\n" * 20


def links(args: argparse.Namespace) -> Path:
    from vaultmem.app.condense.compact import compact
    from vaultmem.app.condense.digest import digest
    from vaultmem.core.vault import Vault
    from vaultmem.nexus.digest_links import relink

    base = Path(tempfile.mkdtemp(prefix="vaultmem-bench-links-"))
    root = vault(base, args.year, start=datetime(2026, 1, 1, tzinfo=UTC), days=365)
    os.environ["VAULTMEM_NOW"] = "2027-01-05T12:00:00Z"
    now = datetime(2027, 1, 5, 12, tzinfo=UTC)
    v = Vault.open(root)
    made = digest(v, "ella", kind="week", offline=True, now=now)
    runs = []
    for _ in range(args.runs):
        t = time.perf_counter()
        changed = relink(v)
        runs.append(time.perf_counter() - t)
        assert changed == [], changed
    print(
        f"relink, nothing to change: {statistics.median(runs) * 1000:.0f} ms median "
        f"({len(made.periods)} digests, {args.year:,} entries)"
    )
    t = time.perf_counter()
    moved = compact(v, "30d", now=now)
    print(
        f"compact --older-than 30d: {time.perf_counter() - t:.2f} s for {moved.moved:,} entries "
        f"into {len(moved.files)} archives, links rewritten"
    )
    return root


def upgrade_cost(root: Path) -> None:
    from vaultmem.app.lifecycle.upgrade import m005_obsidian_links
    from vaultmem.core.vault import Vault
    from vaultmem.nexus import entry

    v = Vault.open(root)
    files = v.chain_files("live")
    before = []
    for path in files:
        text = path.read_text(encoding="utf-8")
        old = re.sub(r"\n\^[A-Za-z0-9-]+\n(<!-- vaultmem )", r"\n\1", text)
        path.write_text(old, encoding="utf-8")
        before += [e.hash for e in entry.parse_entries(old)]
    t = time.perf_counter()
    changes = m005_obsidian_links(v, False)
    took = time.perf_counter() - t
    after = [e.hash for p in files for e in entry.parse_entries(p.read_text(encoding="utf-8"))]
    assert after == before, "a hash changed"
    added = sum(
        int(m.replace(",", "")) for c in changes for m in re.findall(r"for ([\d,]+) entr", c)
    )
    print(
        f"upgrade m005: {took:.2f} s for {added:,} block ids in {len(files)} files; hashes unchanged"
    )


def append_cost(args: argparse.Namespace, root: Path) -> None:
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env.pop("VAULTMEM_NOW", None)
    cmd = [sys.executable, "-m", "vaultmem", "append", "A diff", "--body", "-", "--agent", "ella",
           "--vault", str(root)]  # fmt: skip
    base_cmd = [sys.executable, "-c", "pass"]
    times: dict[str, list[float]] = {"append": [], "pass": []}
    for _ in range(args.runs + 1):  # interleaved; the first pair warms up
        for name, c in (("append", cmd), ("pass", base_cmd)):
            t = time.perf_counter()
            res = subprocess.run(c, env=env, input=DIFF.encode(), capture_output=True, check=False)
            times[name].append(time.perf_counter() - t)
            if res.returncode:
                raise SystemExit(res.stderr.decode()[-400:])
    a, p = (statistics.median(times[k][1:]) for k in ("append", "pass"))
    print(
        f"append --body - (a diff): {a * 1000:.0f} ms median, python -c pass {p * 1000:.0f} ms, x{a / p:.1f}"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--year", type=int, default=50_000)
    args = ap.parse_args()
    precompile()
    root = links(args)
    upgrade_cost(root)
    append_cost(args, root)


if __name__ == "__main__":
    main()
