"""Layer 2 costs: the read-pack helpers (run on every `vaultmem read`) and `retain` (dedupe).

For banks of 100 and 1,000 notes (10% pending, the rest approved or rejected) it times, in one
process, `pending_count`, `pending_for_read` (newest and by query) and `pending_block`; then
`retain` of a new fact with 500 memories and the bank above to compare against. Prints medians
and the 1,000 / 100 ratio (linear in the bank size is expected: every note's frontmatter is read,
but without YAML).

    python bench/bank_speed.py [--runs 20]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import scratch_vault

from vaultmem.bank import retain, store
from vaultmem.core import notes
from vaultmem.core.vault import Vault

_VOCABULARY = (
    "booking slot capacity stripe webhook retry migration review staging deploy cache token "
    "invoice refund climbing gym member pass schedule friday tuesday backup restore index"
)
WORDS = _VOCABULARY.split()


def _text(n: int) -> str:
    picked = [WORDS[(n * 7 + i * 3) % len(WORDS)] for i in range(9)]
    return f"Fact {n}: " + " ".join(picked) + f" number {n}."


def build(bank_size: int, memories: int) -> Vault:
    root, _env = scratch_vault(keys=False)
    v = Vault.open(root)
    folder = v.bank_dir("ella")
    folder.mkdir(parents=True, exist_ok=True)
    for n in range(bank_size):
        status = "pending" if n % 10 == 0 else ("approved" if n % 3 else "rejected")
        meta = {
            "name": f"Fact {n}",
            "type": "fact",
            "status": status,
            "id": f"b-{n:08x}",
            "author": "ella",
            "created": f"2026-11-{1 + n % 28:02d}T10:00:00Z",
            "updated": "2026-11-29T10:00:00Z",
            "evidence": 1,
        }
        (folder / f"2026-11-{1 + n % 28:02d}-fact-{n}.md").write_text(
            notes.render(meta, f"\n{_text(n)}\n")
        )
    mem = v.memory_dir()
    for n in range(memories):
        meta = {"name": f"Memory {n}", "description": "d", "type": "fact", "id": f"m-{n:08x}"}
        (mem / f"memory-{n}.md").write_text(notes.render(meta, f"\n{_text(10_000 + n)}\n"))
    return v


def median_ms(fn: Callable[[], object], runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()
    results: dict[int, dict[str, float]] = {}
    for size in (100, 1000):
        v = build(size, 500)
        row = {
            "pending_count": median_ms(lambda v=v: store.pending_count(v, "ella"), args.runs),
            "pending_for_read newest": median_ms(
                lambda v=v: store.pending_for_read(v, "ella", None, 5), args.runs
            ),
            "pending_for_read query": median_ms(
                lambda v=v: store.pending_for_read(v, "ella", "stripe webhook retry", 5), args.runs
            ),
            "pending_block": median_ms(lambda v=v: store.pending_block(v, "ella"), args.runs),
        }
        counter = iter(range(1_000_000))

        def one_retain(v: Vault = v, counter: object = counter) -> None:
            k = next(counter)  # type: ignore[call-overload]
            retain.retain(v, f"A new fact {k} about gym lockers", agent="ella", type_="fact")

        row["retain (500 memories)"] = median_ms(one_retain, max(args.runs // 4, 3))
        results[size] = row
    print(f"{'operation':28} {'100 notes':>12} {'1000 notes':>12} {'ratio':>7}")
    for key in results[100]:
        a, b = results[100][key], results[1000][key]
        print(f"{key:28} {a:10.2f}ms {b:10.2f}ms {b / a:7.1f}")


if __name__ == "__main__":
    main()
