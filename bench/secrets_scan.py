"""The secret scanner on hostile input: CPU time of `scan()` per MB, medians of five runs.

The inputs are those that made the first (backtracking) scanner run for minutes (issue 22),
plus inputs dense with findings, where each finding is Python work. Prints the machine load.

    python bench/secrets_scan.py
"""

from __future__ import annotations

import os
import statistics
import time

from vaultmem.core.secrets import scan

MB = 1_000_000
INPUTS = {
    "'_'*N + ' token'": "_" * MB + " token",
    "'-'*N + ' pass'": "-" * MB + " pass",
    "'MII'*N/3": "MII" * (MB // 3),
    "'a.'*N/2 + ' ://'": "a." * (MB // 2) + " ://",
    "'mysql '*N/6": "mysql " * (MB // 6),
    "1 MB of prose": ("The deploy went out on Tuesday; see the runbook for details. " * 17000)[:MB],
    "AWS key ids, back to back": "AKIAIOSFODNN7EXAMPLE " * (MB // 21),
    "password=... lines": "password=hunter22\n" * (MB // 18),
}


def main() -> None:
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
    for name, text in INPUTS.items():
        scan(text[:10_000])
        times, found = [], 0
        for _ in range(5):
            start = time.thread_time()
            found = len(scan(text))
            times.append(time.thread_time() - start)
        med = statistics.median(times) * 1000
        print(f"{name:28s} {med:8.1f} ms CPU (min {min(times) * 1000:.1f})  {found} findings")


if __name__ == "__main__":
    main()
