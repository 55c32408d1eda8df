"""An agent's session as the hooks remember it between events: `.vaultmem/sessions/AGENT.json`
(the session id, what was shown, where the log was read to), sealed with this machine's secret,
so session state git wrote is no state. The session-start, prompt and ending hooks read it and
write it; nothing else does."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from vaultmem.core.fsio import atomic_write

if TYPE_CHECKING:
    from vaultmem.core.vault import Vault

MAX_FILES = 20  # the files a checkpoint names, the most recent first


def _session_path(vault: Vault, agent: str) -> Path:
    return vault.state("sessions", f"{agent}.json")


def load_session(vault: Vault, agent: str) -> dict[str, Any]:
    from vaultmem.core import seal

    # sealed: session state git wrote (hits marked shown) is no state
    data = seal.read(_session_path(vault, agent))
    return data if isinstance(data, dict) else {}


def save_session(vault: Vault, agent: str, data: dict[str, Any]) -> None:
    from vaultmem.core import seal

    sealed = seal.dumps(_session_path(vault, agent), data)
    if sealed is not None:
        atomic_write(_session_path(vault, agent), sealed)
