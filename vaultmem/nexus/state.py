"""The project-state file, `nexus/project-state.md`, edited one `## Section` at a time.

Each change happens under a lock and is logged as a `state` entry naming who changed which
section; every other section and whatever a person wrote elsewhere stays byte for byte.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from vaultmem.core.errors import EntryNotFoundError, UsageError
from vaultmem.core.fsio import atomic_write, create_exclusive, read_text
from vaultmem.core.locking import exclusive, lock_path
from vaultmem.core.vault import Vault
from vaultmem.nexus import log
from vaultmem.nexus.entry import Entry, fold_summary, normalize_body

MAX_SECTION = 80
_FENCE = re.compile(r"^\s{0,3}(```|~~~)")
_TOP_HEADING = re.compile(r"^#{1,2}(?:\s|$)")


@dataclass(frozen=True)
class StateChange:
    section: str
    created: bool
    path: str
    entry: Entry
    redactions: tuple[Any, ...] = ()
    warnings: tuple[str, ...] = ()


def read_state(vault: Vault) -> str:
    path = vault.project_state
    try:
        return read_text(path, what="project state")
    except FileNotFoundError:
        raise EntryNotFoundError(
            f"{vault.rel(path)} does not exist", "create it with: vaultmem state set Goal TEXT"
        ) from None


def state_sections(text: str) -> list[tuple[str, str]]:
    """(title, body) of each `## ` section, skipping headings inside code fences."""
    lines = text.splitlines()
    out: list[tuple[str, str]] = []
    spans = _section_spans(lines)
    for title, start, end in spans:
        out.append((title, "\n".join(lines[start + 1 : end]).strip()))
    return out


def _section_spans(lines: list[str]) -> list[tuple[str, int, int]]:
    """(title, heading line index, end index exclusive) for each `## ` section."""
    heads: list[tuple[int, str, int]] = []  # index, title, level
    fence = False
    in_front = bool(lines) and lines[0].strip() == "---"
    for i, line in enumerate(lines):
        if in_front:
            if i > 0 and line.strip() in ("---", "..."):
                in_front = False
            continue
        if _FENCE.match(line):
            fence = not fence
            continue
        if fence:
            continue
        m = re.match(r"^(#{1,2})\s+(.*?)\s*#*\s*$", line)
        if m:
            heads.append((i, m.group(2), len(m.group(1))))
    spans = []
    for n, (i, title, level) in enumerate(heads):
        if level != 2:
            continue
        end = next((j for j, _t, _lv in heads[n + 1 :]), len(lines))
        spans.append((title, i, end))
    return spans


def set_state_section(vault: Vault, agent: str, section: str, text: str) -> StateChange:
    """Replace the body of `## section` (created at the end if missing) and log who did it."""
    from vaultmem.core.secrets import apply_policy

    agent = vault.require_agent(agent)
    section = fold_summary(section).lstrip("#").strip()
    if not section or len(section) > MAX_SECTION:
        raise UsageError(
            f"invalid section name {section!r}", f"one line of at most {MAX_SECTION} characters"
        )
    body, found = apply_policy(normalize_body(text), vault.config.secrets.policy, what="state")
    warnings: list[str] = []
    lines_in = body.split("\n") if body else []
    fence = False
    for i, line in enumerate(lines_in):
        if _FENCE.match(line):
            fence = not fence
        elif not fence and _TOP_HEADING.match(line):
            # a `#`/`##` heading would cut the section in two: demote it
            lines_in[i] = "### " + line.lstrip("#").strip()
            warnings.append(f"demoted heading {line.strip()!r} to level 3")
    body = "\n".join(lines_in)
    path = vault.project_state
    vault.path(vault.rel(path))
    with exclusive(lock_path(vault, "project-state"), vault.config.log.lock_timeout, what="state"):
        if not path.exists():
            from vaultmem.core.templates import template

            create_exclusive(path, template("nexus/project-state.md"))
        old = read_text(path, what="project state")
        newline = "\r\n" if "\r\n" in old else "\n"
        lines = old.replace("\r\n", "\n").split("\n")
        spans = _section_spans(lines)
        match = next(((t, s, e) for t, s, e in spans if t.strip().lower() == section.lower()), None)
        new_part = ["", *(body.split("\n") if body else []), ""]
        if match is None:
            while lines and lines[-1] == "":
                lines.pop()
            lines += ["", f"## {section}", *new_part]
            created = True
        else:
            _t, start, end = match
            section = match[0].strip()
            lines = [*lines[: start + 1], *new_part, *lines[end:]]
            created = False
        new_text = "\n".join(lines)
        if not new_text.endswith("\n"):
            new_text += "\n"
        atomic_write(path, new_text.replace("\n", newline))
    verb = "added" if created else "updated"
    entry = log.append(
        vault,
        agent,
        f"project state: {verb} section '{section}'",
        channel="state",
        type_="state",
        body=body,
        extra={"section": section},
    ).entry
    return StateChange(section, created, vault.rel(path), entry, tuple(found), tuple(warnings))
