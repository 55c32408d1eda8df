"""What a sync commit holds, said for the people who read the history."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

from vaultmem.app.sync.git import git
from vaultmem.core.names import AGENT_NAME
from vaultmem.core.vault import Vault

_HEADER = re.compile(rf"^\+### \S+ · (?P<agent>{AGENT_NAME}) · ", re.MULTILINE)


def log_entries_in(root: Path, rel: str, *diff_args: str) -> Counter[str]:
    """Entry headers added to the live log in a diff, by agent."""
    proc = git(root, "diff", "--unified=0", *diff_args, "--", rel, check=False)
    return Counter(m["agent"] for m in _HEADER.finditer(proc.stdout))


def _kind(path: str, live: str) -> str | None:
    if path == live:
        return None
    if path.startswith("memory/") or "/memory/" in path:
        return "fact"
    if "/bank/" in path:
        return "bank note"
    if path.endswith("checkpoint.md"):
        return "checkpoint"
    if path.endswith("project-state.md"):
        return "project state"
    if path.endswith("keys.md"):
        return "key"
    if path.startswith("nexus/"):
        return "log file"
    return "note"


def describe(vault: Vault, root: Path) -> str:
    """A commit message for what is staged: entries by agent, then files by kind."""
    paths = git(root, "diff", "--cached", "--name-only").stdout.split("\n")
    paths = [p for p in paths if p]
    live = vault.rel(vault.live_context)
    by_agent = log_entries_in(root, live, "--cached") if live in paths else Counter()
    kinds = Counter(k for k in (_kind(p, live) for p in paths) if k)
    parts = []
    if by_agent:
        total = sum(by_agent.values())
        who = ", ".join(f"{a} {n}" for a, n in sorted(by_agent.items()))
        parts.append(f"{total} log entr{'y' if total == 1 else 'ies'} ({who})")
    parts += [f"{n} {k}{'s' if n > 1 else ''}" for k, n in sorted(kinds.items())]
    return "vaultmem sync: " + (", ".join(parts) or f"{len(paths)} files")
