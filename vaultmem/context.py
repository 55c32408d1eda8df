"""The `read` pack: what an agent loads at the start of a session (and before answering).

Sections come in priority order; the pack is data (frozen dataclasses) that the CLI renders as
markdown for a prompt or as JSON. Later layers add sections (log, decisions, checkpoint, state,
pending facts, recall hits) through the same `Section` shape.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from vaultmem import notes
from vaultmem.errors import IntegrityError
from vaultmem.fsio import read_text
from vaultmem.vault import Vault


@dataclass(frozen=True)
class Section:
    """One part of the pack. `text` is what goes into a prompt; `data` what --json shows."""

    key: str
    title: str
    text: str
    data: Any = None
    source: str | None = None  # vault-relative file the section comes from
    priority: int = 0  # lower is more important; identity is 0 and never dropped


@dataclass(frozen=True)
class Pack:
    agent: str
    vault: str
    sections: tuple[Section, ...]
    dropped: tuple[str, ...] = field(default_factory=tuple)

    def to_dict(self) -> dict[str, Any]:
        return {
            "agent": self.agent,
            "vault": self.vault,
            "sections": {
                s.key: {"title": s.title, "source": s.source, "text": s.text, "data": s.data}
                for s in self.sections
            },
            "dropped": list(self.dropped),
        }


def identity_section(vault: Vault, agent: str) -> Section:
    path = vault.identity(agent)
    rel = vault.rel(path)
    if not path.exists():
        return Section("identity", f"Identity of {agent}", f"(no {rel} yet)", {}, rel, 0)
    note = notes.read(path)
    if not note.ok:
        raise IntegrityError(
            f"{path}: {note.error}", "fix the identity file's frontmatter between the '---' lines"
        )
    return Section("identity", f"Identity of {agent}", note.body.strip(), note.meta, rel, 0)


def memory_index_section(vault: Vault, agent: str | None) -> Section | None:
    path = vault.index_for(agent)
    if not path.exists():
        return None
    text = read_text(path, what="memory index").strip()
    rel = vault.rel(path)
    key = "memory" if agent is None else "agent_memory"
    title = "Shared memory index" if agent is None else f"Memory index of {agent}"
    lines = [ln for ln in text.splitlines() if ln.lstrip().startswith("- ")]
    return Section(
        key, title, text, {"path": rel, "entries": lines}, rel, 60 if agent is None else 55
    )


def read_pack(vault: Vault, agent: str) -> Pack:
    """Layer 1 of the pack: identity, the shared memory index, the agent's memory index."""
    agent = vault.require_agent(agent)
    sections = [identity_section(vault, agent)]
    for scope in (None, agent):
        section = memory_index_section(vault, scope)
        if section is not None:
            sections.append(section)
    sections.sort(key=lambda s: s.priority)
    return Pack(agent=agent, vault=str(vault.root), sections=tuple(sections))
