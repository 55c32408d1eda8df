"""Would another full-text engine meet issue 23's index-build goal? Whoosh against SQLite FTS5.

    python bench/engine_fts5.py [--notes 10000] [--work DIR]

The same synthetic vault (`bench/synth_vault.py`), the same documents (vaultmem's own
`search.documents.read_documents`: note sections and passages, log entries), indexed twice:

- **Whoosh**, as vaultmem builds it: `vaultmem index --rebuild` as a process, its CPU time
  (user + sys of the finished child);
- **SQLite FTS5** (in the standard library's sqlite3: nothing to install), a prototype of what an
  optional engine behind `search/engine.py` would store: one row per document, title / heading /
  body columns, the `porter unicode61` tokenizer (English only: the vault's Snowball stemmers
  would need a custom tokenizer), one transaction. Its CPU time is this process's, split into
  reading the documents (the same for both engines) and the inserts.

Then one query each, cold, as a process: `vaultmem recall --json` against a `python -c` that
opens the FTS5 file and ranks by `bm25()` with column weights. Quality is not compared here:
the prototype has neither vaultmem's grouping of sections into notes nor its filters. This is
a measurement for a person's decision (the issue: "never the default without a person's
decision"), not an engine.
"""

from __future__ import annotations

import argparse
import os
import resource
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from synth_vault import generate

VAULTMEM = Path(sys.executable).parent / "vaultmem"
QUERY = "kalo mira tevo"

FTS_QUERY = r"""
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
rows = db.execute(
    "SELECT path, bm25(docs, 10.0, 5.0, 1.0) AS s FROM docs WHERE docs MATCH ? ORDER BY s LIMIT 10",
    (" OR ".join(sys.argv[2].split()),),
).fetchall()
print(len(rows))
"""


def child_cpu(cmd: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(CPU seconds, wall seconds) of one child process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(cmd, env=env, check=True, capture_output=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), wall


def own_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--notes", type=int, default=10_000)
    ap.add_argument("--work", type=Path, default=None, help="keep the vault here (reused)")
    args = ap.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="vaultmem-fts5-"))
    vault_dir = work / f"vault-{args.notes}"
    if not (vault_dir / "vaultmem.toml").is_file():
        generate(vault_dir, args.notes)
    env = {**os.environ, "VAULTMEM_HOME": str(work / "home")}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    print(f"{args.notes:,} notes; load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")

    cpu, wall = child_cpu([str(VAULTMEM), "index", "--rebuild", "--vault", str(vault_dir)], env)
    print(f"Whoosh (vaultmem index --rebuild): {cpu:.1f} s CPU, {wall:.1f} s wall")

    os.environ["VAULTMEM_HOME"] = env["VAULTMEM_HOME"]
    from vaultmem.core.vault import Vault
    from vaultmem.search.documents import read_documents

    vault = Vault.open(vault_dir)
    t0 = own_cpu()
    docs = []
    for path in sorted(vault_dir.rglob("*.md")):
        rel = path.relative_to(vault_dir).as_posix()
        if rel.startswith(".vaultmem/"):
            continue
        found = read_documents(vault, rel, 4 << 20)
        if found is not None:
            docs.extend((rel, d.title, d.heading, d.body) for d in found[0])
    t1 = own_cpu()
    db_path = work / "fts5.db"
    db_path.unlink(missing_ok=True)
    db = sqlite3.connect(db_path)
    db.execute(
        "CREATE VIRTUAL TABLE docs USING fts5(title, heading, body, path UNINDEXED, "
        "tokenize='porter unicode61 remove_diacritics 2')"
    )
    with db:
        db.executemany("INSERT INTO docs (path, title, heading, body) VALUES (?, ?, ?, ?)", docs)
    db.execute("INSERT INTO docs(docs) VALUES ('optimize')")
    db.commit()
    db.close()
    t2 = own_cpu()
    print(
        f"SQLite FTS5: {len(docs):,} documents; reading them {t1 - t0:.1f} s CPU (the same for "
        f"both engines), inserting and optimizing {t2 - t1:.1f} s CPU; "
        f"{db_path.stat().st_size / 1e6:.0f} MB"
    )

    pass_cpu = min(child_cpu([sys.executable, "-c", "pass"], env)[0] for _ in range(5))
    recall = [str(VAULTMEM), "recall", QUERY, "--json", "--vault", str(vault_dir)]
    fts = [sys.executable, "-c", FTS_QUERY, str(db_path), QUERY]
    child_cpu(recall, env)  # warm the page cache and the .pyc files
    child_cpu(fts, env)
    r_cpu = sorted(child_cpu(recall, env)[0] for _ in range(5))[2]
    f_cpu = sorted(child_cpu(fts, env)[0] for _ in range(5))[2]
    print(
        f"cold query, median of 5: vaultmem recall {r_cpu * 1000:.0f} ms CPU "
        f"({r_cpu / pass_cpu:.1f}x F); FTS5 {f_cpu * 1000:.0f} ms CPU ({f_cpu / pass_cpu:.1f}x F); "
        f"F = {pass_cpu * 1000:.0f} ms"
    )


if __name__ == "__main__":
    main()
