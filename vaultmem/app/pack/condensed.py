"""The pack's condensed memory: the profiles near the top, the digests of older periods.

- `profile` (priority 5) and `agent_profile` (6): `memory/PROFILE.md` and the reading agent's
  own `agents/<agent>/PROFILE.md`, each line an item a budget may cut, marked stale when the
  memories or decisions they were built from changed since (`vaultmem profile` rebuilds).
- `digests` (42): the digests of the latest `[digest] pack_periods` closed periods that ended
  before the oldest entry the pack shows verbatim, newest first, each cut to
  `[digest] pack_chars`. After `compact` these are what the pack knows of the moved entries.

Both are read from their files (no YAML for digests, a stat for the profile's freshness): they
run on every `read`.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

from vaultmem.app.pack.sections import Item, Section, fence
from vaultmem.core.errors import PathOutsideVaultError
from vaultmem.core.patterns import later
from vaultmem.core.vault import Vault
from vaultmem.nexus.shown import VERIFY_HINT

GROUP_TYPE = {
    "Preferences and how to work": "preference",
    "People": "user",
    "Conventions and decisions": "decision",
    "Project and constraints": "project",
    "Where things are": "reference",
    "Other facts": "fact",
}
_LINK = later(r"\[\[[^\]|]*\|([^\]]+)\]\]")  # a profile of before: the id as link text
# a profile's citation: `[[memory/x|Review days]] `m-1a2b3c4d`` (link text for people, then the id)
_CITE = later(r"\[\[[^\]|]*\|[^\]]*\]\] `([^`\s]+)`")
DIGEST_SECTIONS = ("Summary", "Decided", "Open at the end of the period", "Handed over")


def plain_links(text: str) -> str:
    """`[[memory/x|Review days]] `m-1a2b3c4d`` (or, written before, `[[memory/x|m-1a2b3c4d]]`)
    → `m-1a2b3c4d`: ids an agent can look up, no link syntax."""
    return _LINK.sub(r"\1", _CITE.sub(r"\1", text))


def profile_section(vault: Vault, agent: str | None) -> Section | None:
    if not vault.profile(agent).exists():
        return None  # most vaults have none: the profile builder's module stays unloaded
    from vaultmem.app.condense.profile import checked_profile, stale

    checked = checked_profile(vault, agent)
    if checked is None:
        return None
    path = checked.path
    rel = vault.rel(path)
    title = "Profile" if agent is None else f"Your profile ({agent})"
    if checked.problem is not None:  # not shown: a forged or edited profile is no profile
        kind, message = checked.problem
        return Section(
            "profile" if agent is None else "agent_profile",
            f"{title} (not shown: fails verification)",
            f"⚠ {rel} fails verification ({kind}: {message}); {VERIFY_HINT}, and rebuild "
            "it with: vaultmem profile --rebuild.",
            {"path": rel, "not_verified": kind},
            rel,
            5 if agent is None else 6,
        )
    limit = vault.config.profile.pack_chars
    lines: list[str] = []
    items: list[Item] = []
    kind = "fact"
    size = 0
    for raw in checked.body.splitlines():
        if raw.startswith("## "):
            heading = raw[3:].strip()
            kind = GROUP_TYPE.get(heading, "fact")
            lines.append(f"**{heading}**")
        elif raw.startswith("- "):
            line = plain_links(raw)
            if size + len(line) > limit:
                continue
            size += len(line)
            lines.append(line)
            ids = _CITE.findall(raw) or _LINK.findall(raw)
            items.append(Item(ids[0] if ids else line, line, kind, None))
    if not items:
        return None
    old = stale(vault, agent, checked.sources)  # the fingerprint the signature covers
    if old:
        title += " (stale: the memories changed since it was built; run vaultmem profile)"
    return Section(
        "profile" if agent is None else "agent_profile",
        title,
        fence("\n".join(lines)),
        {
            "path": rel,
            "stale": old,
            "built": checked.built,
            "lines": [i.text for i in items],
        },
        rel,
        5 if agent is None else 6,
        paths=(rel,),
        items=tuple(items),
    )


def digest_section(vault: Vault, before: str | None, now: datetime) -> Section | None:
    """The latest digests of periods that ended by `before` (the oldest entry the pack shows
    verbatim; None: now)."""
    settings = vault.config.digest
    if settings.pack_periods <= 0 or not vault.digests.is_dir():
        return None  # no digests yet: their module stays unloaded
    from vaultmem.core import clock
    from vaultmem.nexus import digests

    files = digests.digest_files(vault)
    if not files:
        return None
    limit = clock.parse_time(before) if before else now
    assert limit is not None
    chosen = []
    for kind in (settings.period, *(k for k in digests.KINDS if k != settings.period)):
        for path in reversed(files):
            k, _start, end = digests.bounds(path.stem)
            if k == kind and end <= limit:
                chosen.append((path, end))
                if len(chosen) >= settings.pack_periods:
                    break
        if chosen:
            break
    if not chosen:
        return None
    blocks: list[str] = []
    items: list[Item] = []
    failing: list[str] = []  # a digest that fails verification is left out, and said
    keys: dict[str, Any] | None = None
    shown = []
    for path, end in chosen:
        try:
            note = digests.read_digest(vault, path)
        except PathOutsideVaultError:
            failing.append(f"{vault.rel_unresolved(path)}: symlink-outside")
            continue
        if keys is None:
            from vaultmem.nexus import keyring

            keys = keyring.public_keys(vault)
        require = vault.config.log.require_signatures
        wrong = digests.digest_problem(note, path.stem, keys, require=require)
        if wrong is not None:
            failing.append(f"{note.path}: {wrong[0]}")
            continue
        text = _compact(note.body, path.stem, settings.pack_chars)
        blocks.append(text)
        items.append(Item(path.stem, text, "digest", clock.stamp(end), path=None))
        shown.append((path, end))
    warning = (
        f"⚠ {len(failing)} digest(s) not shown: they fail verification ({'; '.join(failing)}); "
        f"{VERIFY_HINT}.\n\n"
        if failing
        else ""
    )
    if not shown and not failing:
        return None
    chosen = shown
    rel = [vault.rel(p) for p, _e in chosen]
    body = "\n\n".join(blocks)
    return Section(
        "digests",
        "Digests of earlier periods",
        warning
        + (
            "Periods older than the entries above, digested (ids are log entries: "
            "vaultmem log --since ID shows them).\n\n" + fence(body)
            if blocks
            else ""
        ),
        {"periods": [p.stem for p, _e in chosen], "paths": rel},
        digests.FOLDER,
        42,
        paths=tuple(rel),
        items=tuple(items),
    )


def _compact(body: str, period: str, limit: int) -> str:
    """A digest for a prompt: its title and its first sections, cut at `limit` characters."""
    from vaultmem.nexus import digests

    out = [f"### {digests.title(period)}"]
    keep = False
    size = len(out[0])
    for raw in body.splitlines():
        if raw.startswith("## "):
            keep = raw[3:].strip() in DIGEST_SECTIONS
            if keep:
                out.append(f"{raw[3:].strip()}:")
            continue
        if keep and raw.startswith("- "):
            line = re.sub(r"\[\[#\^[A-Za-z0-9-]+\|([^\]]+)\]\]", r"\1", raw)
            if size + len(line) > limit:
                out.append("- …")
                break
            out.append(line)
            size += len(line) + 1
    return "\n".join(out)
