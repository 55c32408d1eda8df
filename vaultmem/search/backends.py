"""Which full-text engine a vault's recall uses, `[recall] engine`: the one place that chooses.

Whoosh (`search/engine.py`) is the default; SQLite FTS5 (`search/fts5.py`, the standard
library's sqlite3) is optional. Both modules offer the same calls (`new_generation`,
`open_generation`, `open_writer`, `index_errors`, `searcher_for`, `forget_searcher`, and a
`Searcher` with `search`, `fetch`, `terms`, `tokens`, `plain_terms`, `doc_count`); refresh and
recall take the module `engine_for` returns and never ask which it is. The manifest records the
engine that wrote the index: another one in the config makes it stale, and it is rebuilt.
"""

from __future__ import annotations

import importlib
import sys
from typing import TYPE_CHECKING, Any

from vaultmem.core.vault import Vault

if TYPE_CHECKING:
    from vaultmem.search import engine, fts5

    Searcher = engine.Searcher | fts5.Searcher

MODULES = {"whoosh": "vaultmem.search.engine", "fts5": "vaultmem.search.fts5"}


def name(vault: Vault) -> str:
    return vault.config.recall.engine


def engine_for(vault: Vault) -> Any:
    """The engine module of this vault's `[recall] engine` (imported on first use)."""
    return importlib.import_module(MODULES[name(vault)])


def index_errors(vault: Vault) -> tuple[type[BaseException], ...]:
    """What this vault's engine raises for a damaged or swapped-away index."""
    found: tuple[type[BaseException], ...] = engine_for(vault).index_errors()
    return found


def forget_searcher(vault: Vault) -> None:
    """Close the searchers this process keeps open on the vault, whichever engine's."""
    for module in MODULES.values():
        loaded = sys.modules.get(module)
        if loaded is not None:
            loaded.forget_searcher(vault)
