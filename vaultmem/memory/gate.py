"""The one gate for memory: agents propose, people decide.

An acting agent (`--agent` / VAULTMEM_AGENT) may write, supersede, retract or forget only its
own memory (`agents/<agent>/memory/`, notes it wrote). Shared memory and anything a person wrote
changes through the bank: the agent proposes with `retain`, a person reviews with `promote`.
Like `resolve_reviewer`, a guard against an agent following instructions literally (an agent
that edits files directly is caught by review and by `verify`), not a sandbox.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from vaultmem.core.errors import RefusedError

if TYPE_CHECKING:
    from pathlib import Path

    from vaultmem.core.vault import Vault

PROPOSE = "propose it instead: vaultmem retain TEXT --type T --agent {agent} (a person reviews it with vaultmem promote)"


def owner_of(vault: Vault, path: Path) -> str | None:
    """The agent whose memory folder holds `path`, or None for shared memory."""
    parts = vault.rel(path).split("/")
    return parts[1] if parts[0] == "agents" and len(parts) > 3 else None


def refuse_shared_write(agent: str | None, scope: str) -> None:
    if agent and scope != "agent":
        raise RefusedError(
            f"refused: an agent ({agent}) cannot write shared memory",
            PROPOSE.format(agent=agent) + "; or keep it as its own: --scope agent",
        )


def check_may_change(
    vault: Vault, agent: str | None, path: Path, meta: dict[str, Any], action: str
) -> None:
    """Refuse (exit 8) an acting agent changing memory that is not its own."""
    if not agent:
        return
    owner = owner_of(vault, path)
    author = str(meta.get("author") or "")
    if owner == agent and author == agent:
        return
    whose = "shared memory" if owner is None else f"{owner}'s memory"
    if owner is not None and author != agent:
        whose = f"memory {'a person' if author in ('', 'person') else author} wrote"
    raise RefusedError(
        f"refused: an agent ({agent}) cannot {action} {whose} ({meta.get('id') or path.stem})",
        PROPOSE.format(agent=agent),
    )
