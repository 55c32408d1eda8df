"""What a hostile remote plants under `.vaultmem/`: a Whoosh generation whose TOC unpickles a
payload (shared by tests/test_local_state.py and tests/integration/test_hostile_local_state.py)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any


class Payload:
    """Runs `touch MARKER` when unpickled (what a hostile Whoosh TOC carries)."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[Any, tuple[str]]:
        return (os.system, (f"touch {self.marker}",))


def evil_generation(folder: Path, marker: Path) -> None:
    """A Whoosh generation whose TOC unpickles `Payload`, written with whoosh's own code."""
    from whoosh.filedb.filestore import FileStorage
    from whoosh.index import TOC

    from vaultmem.search import engine

    folder.mkdir(parents=True, exist_ok=True)
    TOC(engine.schema("en"), [Payload(marker)], 1).write(FileStorage(str(folder)), "MAIN")
