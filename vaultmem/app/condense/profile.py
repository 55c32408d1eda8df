"""`vaultmem profile`: a compact profile of the user and the project, from approved memory only.

`memory/PROFILE.md` is built from the active shared memories and the active decisions;
`agents/<agent>/PROFILE.md` from the agent's own memories. Nothing else is read: pending,
rejected or expired bank facts never reach a profile, nor do retracted or superseded memories
or ones whose `valid_until` has passed. Every line links the memories (or decisions) it comes
from. With an Anthropic key the lines come from the model (forced tool use, cached
instructions, everything sent redacted, everything written scrubbed); without one, or with
`offline`, from the highest-value memories by type (the importance score).

The profile records a fingerprint of its sources. `read` shows it near the top of the pack,
marked stale when the sources changed since it was built (a cheap check: a stat of the memory
folders and the decision log, and the fingerprint only when those changed).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from datetime import datetime
from pathlib import Path
from typing import Any

from vaultmem.app.condense.parts import GROUPS, Line, Source
from vaultmem.core import clock, notes
from vaultmem.core.errors import VaultmemError
from vaultmem.core.fsio import atomic_write
from vaultmem.core.records import record
from vaultmem.core.vault import Vault

PROFILE = "PROFILE.md"
TYPE_GROUP = {
    "preference": "preferences",
    "feedback": "preferences",
    "user": "people",
    "decision": "conventions",
    "project": "constraints",
    "failure": "constraints",
    "reference": "references",
    "fact": "facts",
}
LINE_CHARS = 240


@record
class ProfileResult:
    scope: str  # "shared" or the agent
    path: str
    status: str  # "written", "unchanged", "empty"
    made_by: str
    lines: tuple[Line, ...] = ()
    sources: int = 0
    requests: int = 0
    usage: dict[str, int] | None = None

    def to_dict(self) -> dict[str, Any]:
        out = dict(self.__dict__)
        out["lines"] = [ln.to_dict() for ln in self.lines]
        out["usage"] = self.usage or {}
        return out


def profile_path(vault: Vault, agent: str | None) -> Path:
    return vault.profile(agent)


# --- sources ---------------------------------------------------------------------------------


def sources(vault: Vault, agent: str | None) -> list[Source]:
    """Approved, active, unexpired memories of the scope; plus active decisions (shared)."""
    from vaultmem.memory.facts import fact_files

    day = clock.today()
    out = []
    for path, owner in fact_files(vault):
        if owner != agent:
            continue
        try:
            note = vault.read_note(path)
        except VaultmemError:
            continue
        meta = note.meta
        if not note.ok or str(meta.get("status") or "active") != "active":
            continue
        if clock.is_past(meta.get("valid_until"), day):
            continue
        try:
            evidence = max(int(str(meta.get("evidence") or 1)), 1)
        except ValueError:
            evidence = 1
        rel = vault.rel(path)
        text = note.body.strip() or str(meta.get("description") or "")
        out.append(
            Source(
                str(meta.get("id") or rel),
                "memory",
                str(meta.get("type") or "fact"),
                str(meta.get("name") or path.stem),
                " ".join(text.split()),
                rel.removesuffix(".md"),
                str(meta.get("updated") or meta.get("created") or ""),
                evidence,
            )
        )
    if agent is None:
        from vaultmem.nexus import decisions as decisions_mod

        for d in decisions_mod.decisions(vault):
            e = d.entry
            why = " ".join(str(e.extra.get("why", "")).split())
            text = e.summary + (f" (why: {why})" if why else "")
            out.append(
                Source(e.id, "decision", "decision", e.summary, text, "nexus/decisions", e.time)
            )
    return out


def fingerprint(found: list[Source]) -> str:
    h = hashlib.sha256()
    for s in sorted(found, key=lambda s: s.id):
        h.update(json.dumps([s.id, s.type, s.name, s.text, s.updated], ensure_ascii=False).encode())
    return "sha256:" + h.hexdigest()


def _stat_key(vault: Vault, agent: str | None) -> str:
    """Names, sizes and times of the files a profile's sources live in (cheap: no reading)."""
    h = hashlib.sha256()
    folder = vault.memory_dir(agent)
    files = [vault.decisions] if agent is None else []
    try:
        with os.scandir(folder) as it:
            files += sorted(
                (Path(e.path) for e in it if e.name.endswith(".md") and e.name != PROFILE), key=str
            )
    except OSError:
        pass
    for path in files:
        try:
            st = path.stat()
        except OSError:
            continue
        h.update(f"{path.name}:{st.st_size}:{st.st_mtime_ns}\n".encode())
    return h.hexdigest()


def _cache(vault: Vault, agent: str | None) -> Path:
    return vault.state("profile", f"{agent or '_shared'}.json")


def remember_fresh(vault: Vault, agent: str | None, key: str, fp: str) -> None:
    """Record that the source files with stat key `key` have fingerprint `fp` (a cache)."""
    from vaultmem.core import seal
    from vaultmem.core.fsio import replace_cache

    data = seal.dumps(_cache(vault, agent), {"stat": key, "fingerprint": fp})
    with contextlib.suppress(VaultmemError):  # a cache: the next read computes it again
        if data is not None:
            replace_cache(_cache(vault, agent), data)


def stale(vault: Vault, agent: str | None, built_from: str) -> bool:
    """Have the profile's sources changed since it was built from `built_from`?"""
    key = _stat_key(vault, agent)
    from vaultmem.core import seal

    # sealed: a cache git wrote (a stale profile called fresh) is no cache
    data = seal.read(_cache(vault, agent))
    if isinstance(data, dict) and data.get("stat") == key:
        return data.get("fingerprint") != built_from
    current = fingerprint(sources(vault, agent))
    remember_fresh(vault, agent, key, current)
    return current != built_from


# --- building ----------------------------------------------------------------------------------


def offline_lines(vault: Vault, found: list[Source], now: datetime) -> list[Line]:
    """The highest-value sources by type, `[profile] per_group` per group."""
    from vaultmem.core.importance import score

    settings = vault.config.profile
    ranked: dict[str, list[tuple[float, Source]]] = {g: [] for g in GROUPS}
    for s in found:
        value = score(vault.config.importance, s.type, time=s.updated, now=now, evidence=s.evidence)
        ranked[TYPE_GROUP.get(s.type, "facts")].append((value, s))
    out: list[Line] = []
    for group in GROUPS:
        best = sorted(ranked[group], key=lambda t: (-t[0], t[1].id))[: settings.per_group]
        for _v, s in best:
            text = s.text if len(s.text) <= LINE_CHARS else s.text[: LINE_CHARS - 1].rstrip() + "…"
            out.append(Line(group, text, (s.id,)))
    return out[: settings.max_lines]


def render_body(scope: str, lines: list[Line], found: list[Source], made_by: str) -> str:
    by_id = {s.id: s for s in found}
    who = "the project and the people on it" if scope == "shared" else f"{scope}'s own memory"
    how = (
        "offline (the highest-value memories by type)" if made_by == "offline" else f"by {made_by}"
    )
    out = [
        "# Profile" if scope == "shared" else f"# Profile of {scope}",
        "",
        f"A compact profile of {who}, built {how} from approved memories"
        + (" and active decisions" if scope == "shared" else "")
        + " only. Each line links what it comes from; edit those, then run `vaultmem profile`.",
    ]
    for group, heading in GROUPS.items():
        mine = [ln for ln in lines if ln.group == group]
        if not mine:
            continue
        out += ["", f"## {heading}", ""]
        for ln in mine:
            out.append(f"- {ln.text} ({', '.join(by_id[i].cite() for i in ln.ids)})")
    return "\n".join(out) + "\n"


def read_profile(vault: Vault, agent: str | None) -> tuple[Path, notes.Note] | None:
    path = profile_path(vault, agent)
    if not path.exists():
        return None
    return path, notes.parse(vault.read_text(path, what="profile"))


@record
class CheckedProfile:
    """A profile as its signed metadata line vouches for it (`nexus.digests`: signed like a
    digest). `problem` is (kind, message) when it fails verification: then nothing of it is
    shown as genuine (the pack and MCP say so instead)."""

    path: Path
    note: notes.Note
    body: str  # the body without the metadata line
    sources: str  # the fingerprint it was built from, from the signed line ("" when none)
    built: str
    problem: tuple[str, str] | None


def checked_profile(vault: Vault, agent: str | None) -> CheckedProfile | None:
    """The scope's profile, checked (hash, signature, key); None when there is none."""
    from vaultmem.nexus import digests, keyring

    found = read_profile(vault, agent)
    if found is None:
        return None
    path, note = found
    body, raw = digests.split_profile(note.body)
    keys = keyring.public_keys(vault) if raw and raw.get("sig") else {}
    require = vault.config.log.require_signatures
    problem = digests.profile_problem(note.body, vault.rel(path), keys, require=require)
    raw = raw or {}
    return CheckedProfile(
        path, note, body, str(raw.get("sources") or ""), str(raw.get("built") or ""), problem
    )


def profiles_view(vault: Vault, agent: str) -> dict[str, dict[str, Any]]:
    """What an agent may be shown of the profiles: the shared one and its own, by path, each
    as markdown with whether it is stale; a profile that fails verification is never shown as
    genuine, only its problem (the MCP `profile` tool)."""
    out: dict[str, dict[str, Any]] = {}
    for scope in (None, agent):
        found = checked_profile(vault, scope)
        if found is None:
            continue
        rel = vault.rel(found.path)
        if found.problem is not None:
            out[rel] = {
                "markdown": "",
                "stale": True,
                "not_verified": found.problem[0],
                "note": f"{found.problem[1]}; run `vaultmem verify`",
            }
            continue
        out[rel] = {"markdown": found.body.strip(), "stale": stale(vault, scope, found.sources)}
    return out


def _writer(vault: Vault, agent: str | None) -> str:
    """Who signs a profile: the agent it is for, else the first agent this machine holds a
    key of (a profile is built from approved memory only; the signature says which machine's
    vaultmem built it, so an edit or a forgery shows)."""
    from vaultmem.nexus import signing

    for name in [*([agent] if agent else []), *vault.known_agents()]:
        if signing.signer_for(vault, name) is not None:
            return name
    return agent or ""


def clean(vault: Vault, lines: list[Line], allowed: set[str] | None = None) -> list[Line]:
    """Every line escaped (`parts.plain`) and scrubbed; citations of ids outside `allowed` (the
    sources) dropped, and a line left citing nothing with them: before anything is written."""
    from vaultmem.app.condense.parts import plain
    from vaultmem.core.secrets import scrub

    if allowed is not None:
        lines = [Line(ln.group, ln.text, tuple(i for i in ln.ids if i in allowed)) for ln in lines]
        lines = [ln for ln in lines if ln.ids]

    texts = {f"line {i}": plain(ln.text) for i, ln in enumerate(lines)}
    cleaned, _found = scrub(vault.config.secrets.policy, texts, what="profile")
    return [Line(ln.group, cleaned[f"line {i}"][:LINE_CHARS], ln.ids) for i, ln in enumerate(lines)]


def build(
    vault: Vault,
    agent: str | None,
    *,
    rebuild: bool = False,
    offline: bool = False,
    api_key: str | None = None,
    base_url: str | None = None,
    now: datetime | None = None,
) -> ProfileResult:
    """Write the scope's profile when its sources changed (or `rebuild`)."""
    scope = agent or "shared"
    path = profile_path(vault, agent)
    rel = vault.rel(path)
    key = _stat_key(vault, agent)  # before reading: a change while building shows as stale
    found = sources(vault, agent)
    fp = fingerprint(found)
    existing = checked_profile(vault, agent)
    if not found:
        return ProfileResult(scope, rel, "empty", "", (), 0)
    writer = _writer(vault, agent)
    # a profile that fails verification is built again; an unsigned one once a key is here
    from vaultmem.nexus.signing import signer_for

    unsigned_anyway = not writer or signer_for(vault, writer) is None
    usable = existing is not None and (
        existing.problem is None or (existing.problem[0] == "unsigned" and unsigned_anyway)
    )
    if existing is not None and usable and not rebuild and existing.sources == fp:
        return ProfileResult(
            scope, rel, "unchanged", str(existing.note.meta.get("made_by", "")), (), len(found)
        )
    use_model = bool(api_key) and not offline
    requests, usage = 0, None
    if use_model:
        from vaultmem.app.condense.profile_llm import model_lines

        lines, requests, usage = model_lines(vault, found, str(api_key), base_url)
        made_by = vault.config.llm.model
    else:
        lines = offline_lines(vault, found, now or clock.now())
        made_by = "offline"
    lines = clean(vault, lines, {s.id for s in found})
    meta = {
        "scope": scope,
        "built": clock.stamp(),
        "made_by": made_by,
        "sources": fp,
        "memories": sum(1 for s in found if s.kind == "memory"),
        "decisions": sum(1 for s in found if s.kind == "decision"),
        "tags": ["vaultmem/profile"],
    }
    from vaultmem.core.locking import exclusive, lock_path
    from vaultmem.nexus.digests import profile_line

    body = "\n" + render_body(scope, lines, found, made_by)
    signed = {
        "scope": scope,
        "sources": fp,
        "made_by": made_by,
        "built": meta["built"],
        "writer": writer,
    }
    text = notes.render(meta, body + "\n" + profile_line(vault, signed, body) + "\n")
    with exclusive(lock_path(vault, "profile"), vault.config.log.lock_timeout, what="profile"):
        atomic_write(path, text)
    remember_fresh(vault, agent, key, fp)
    return ProfileResult(scope, rel, "written", made_by, tuple(lines), len(found), requests, usage)
