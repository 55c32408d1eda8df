"""The detached child of `hook stop` and `hook pre-compact` (`app.hooks.background.detach`
starts it as `python -m vaultmem.app.hooks.detached EVENT --vault V --agent A`, its stdin the
spooled payload): the hook in-line, below the runtime's priority, after the turn has its answer.
"""

from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path

from vaultmem.app.hooks.background import DETACHED
from vaultmem.app.hooks.quick import _options, read_stdin
from vaultmem.app.hooks.run import run_hook


def run_detached(argv: list[str]) -> int:
    """The detached child: run the hook in-line on this process's stdin (the spool file)."""
    if not argv or argv[0] not in DETACHED:
        return 2
    opts = _options(argv[1:])
    if opts is None:
        return 2
    payload = read_stdin(sys.stdin)
    outcome = run_hook(argv[0], payload, vault_path=Path(opts["vault"]), agent=opts["agent"])
    if outcome.after is not None:
        outcome.after()
    return 0


if __name__ == "__main__":
    # below the runtime and the hook it waits for: on a busy machine this work yields the CPU
    with contextlib.suppress(OSError, AttributeError):
        os.nice(10)
    raise SystemExit(run_detached(sys.argv[1:]))
