"""The folders `vaultmem setup` made on this machine (`VAULTMEM_HOME/setup-folders.json`):
`--remove` takes away a folder it left empty only when setup made it, so an empty `.cursor/`
or `.claude/` the person had stays (issue 22)."""

from __future__ import annotations

import json
from pathlib import Path

from vaultmem.core.fsio import atomic_write


def ancestors(path: Path) -> list[Path]:
    """The two folders above a file setup writes (`.cursor/rules`, `.claude`, ...)."""
    return [path.parent, path.parent.parent]


def folders_file() -> Path:
    from vaultmem.core.environment import home_dir

    return home_dir() / "setup-folders.json"


def recorded() -> set[str]:
    """The folders setup made on this machine: the only ones `--remove` may take away."""
    try:
        data = json.loads(folders_file().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return set()
    return {f for f in data if isinstance(f, str)} if isinstance(data, list) else set()


def record(folders: list[str], *, add: bool) -> None:
    known = recorded()
    known = known | set(folders) if add else known - set(folders)
    atomic_write(folders_file(), json.dumps(sorted(known), indent=1) + "\n")
