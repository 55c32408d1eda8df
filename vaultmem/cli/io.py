"""Output helpers every command uses. No typer here: the fast path (cli/fast.py) needs them."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # costs nothing at start-up
    from vaultmem.core.vault import Vault


def open_vault(vault: Path | None, *, lenient: bool = False) -> Vault:
    """`lenient` for what must work with a broken vaultmem.toml (sync, verify, trust)."""
    from vaultmem.core.vault import Vault

    return Vault.open(vault, lenient=lenient)


def emit_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, ensure_ascii=False, indent=2, default=str) + "\n")


def emit(text: str) -> None:
    sys.stdout.write(text if text.endswith("\n") else text + "\n")


def warn(message: str) -> None:
    """A diagnostic for people: stderr, never stdout."""
    sys.stderr.write(f"warning: {message}\n")


def read_text_arg(text: str) -> str:
    """TEXT arguments accept '-' for standard input."""
    if text == "-":
        return sys.stdin.read()
    return text
