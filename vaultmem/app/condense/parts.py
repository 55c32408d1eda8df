"""What condensed notes are made of: a digest's statements and a profile's lines, each citing
the entries or memories it rests on. Shared by the offline builders (`digest`, `profile`) and
the model halves (`digest_llm`, `profile_llm`), which is why it is a module of its own."""

from __future__ import annotations

import re
from typing import Any

from vaultmem.core.records import record


def plain(text: str) -> str:
    """Model (or agent) text as one line of a condensed note, escaped like a log entry's: no
    control characters, no `<!--` (it would hide the rest of the note in Obsidian) and no
    `[[` (a link the model wrote could pass for a citation)."""
    from vaultmem.nexus.entry import escape_inline, fold_summary, strip_controls

    return escape_inline(fold_summary(strip_controls(text))).replace("[[", "[\\[")


# --- digests ----------------------------------------------------------------------------------

SECTIONS: dict[str, str] = {
    "summary": "Summary",
    "decided": "Decided",
    "handed_over": "Handed over",
    "open": "Open at the end of the period",
    "fixes": "Fixes and failures",
    "other": "Other activity",
}


@record
class Statement:
    section: str
    text: str
    ids: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"section": self.section, "text": self.text, "ids": list(self.ids)}


# --- profiles ---------------------------------------------------------------------------------

GROUPS: dict[str, str] = {
    "preferences": "Preferences and how to work",
    "people": "People",
    "conventions": "Conventions and decisions",
    "constraints": "Project and constraints",
    "references": "Where things are",
    "facts": "Other facts",
}


@record
class Source:
    """An approved memory or an active decision a profile may rest on."""

    id: str
    kind: str  # "memory" or "decision"
    type: str
    name: str
    text: str
    link: str  # wikilink target, without .md
    updated: str
    evidence: int = 1

    def cite(self) -> str:
        """`[[memory/review-days|Review days]] `m-1a2b3c4d``: readable link text in Obsidian,
        then the id an agent looks up (the pack shows only the id: `pack/condensed.py`). A
        decision links its block on the decision log."""
        if self.kind == "decision":
            from vaultmem.nexus.entry import block_id

            target, label = f"{self.link}#^{block_id(self.id)}", f"decision of {self.updated[:10]}"
        else:
            target, label = self.link, " ".join(re.sub(r"[\[\]|#^]", " ", self.name).split())
        return f"[[{target}|{label or self.id}]] `{self.id}`"


@record
class Line:
    group: str
    text: str
    ids: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"group": self.group, "text": self.text, "ids": list(self.ids)}
