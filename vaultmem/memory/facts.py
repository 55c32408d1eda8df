"""Layer 1: one markdown file per fact, with its line in the right `MEMORY.md`.

Shared facts live in `memory/`, an agent's own in `agents/<agent>/memory/`. `remember` writes a
note and its index line, `retract` keeps the note and moves its line under `## Retracted`,
`forget` deletes both (the right-to-be-forgotten path).
"""

from __future__ import annotations

import re
import secrets
import unicodedata
from collections.abc import Iterator
from contextlib import AbstractContextManager
from enum import StrEnum
from pathlib import Path
from typing import Any

from vaultmem.core import clock, intents, notes
from vaultmem.core.choices import choose, values
from vaultmem.core.errors import NotFoundError, UsageError, VaultmemError
from vaultmem.core.fsio import atomic_write, create_exclusive, read_text
from vaultmem.core.locking import exclusive, lock_path
from vaultmem.core.records import evolve, record
from vaultmem.core.secrets import Finding, scrub
from vaultmem.core.vault import Vault
from vaultmem.memory import gate
from vaultmem.memory.lines import (
    index_line,
    read_index,
    with_line_added,
    with_line_removed,
    with_line_retracted,
)


class FactType(StrEnum):
    """What a fact is about (Claude Code's memory types, plus four of our own)."""

    USER = "user"
    FEEDBACK = "feedback"
    PROJECT = "project"
    REFERENCE = "reference"
    DECISION = "decision"
    FACT = "fact"
    FAILURE = "failure"
    PREFERENCE = "preference"


class Scope(StrEnum):
    """Who loads a fact: every agent (`memory/`) or one (`agents/<agent>/memory/`)."""

    SHARED = "shared"
    AGENT = "agent"


class FactStatus(StrEnum):
    ACTIVE = "active"
    RETRACTED = "retracted"
    SUPERSEDED = "superseded"


FACT_TYPES = values(FactType)
SCOPES = values(Scope)
MAX_NAME = 120
MAX_DESCRIPTION = 300


MAX_SLUG = 60


# the frontmatter keys vaultmem owns on a fact; every other key belongs to people
OWNED_KEYS = (
    "name",
    "description",
    "type",
    "id",
    "created",
    "updated",
    "author",
    "status",
    "supersedes",
    "superseded_by",
    "retracted_at",
    "retract_reason",
)


@record
class Fact:
    """One fact note, as listed by `memories` and returned by `remember`."""

    id: str
    name: str
    description: str
    type: str
    path: str  # relative to the vault
    scope: str  # "shared" or "agent"
    agent: str | None  # owner for agent scope
    status: str  # "active", "retracted" or "superseded"
    created: str
    updated: str
    author: str
    text: str
    findings: tuple[Finding, ...] = ()  # credentials redacted when `remember` wrote it

    def to_dict(self) -> dict[str, Any]:
        out = dict(self.__dict__)
        out.pop("findings")
        return out


@record
class ForgetResult:
    fact: Fact
    index_line_removed: bool


def slugify(name: str) -> str:
    folded = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode("ascii")
    slug = re.sub(r"[^a-z0-9]+", "-", folded.lower()).strip("-")
    return slug[:MAX_SLUG].rstrip("-") or "fact"


def create_note(vault: Vault, folder_rel: str, slug: str, content: str) -> Path | None:
    """Create a new note file named after `slug` (`slug-2`, `slug-3` when taken; with this
    machine's device id in a vault replicated through git); None when 999 names are taken."""
    from vaultmem.core.device import note_stem

    base = note_stem(vault.root, slug)
    for n in range(1, 1000):
        path = vault.path(f"{folder_rel}/{base if n == 1 else f'{base}-{n}'}.md")
        if create_exclusive(path, content):
            return path
    return None


def validate_fact_name(name: str) -> str:
    """A fact name becomes a file name and a wikilink alias: keep it plain."""
    clean = name.strip()
    if not clean:
        raise UsageError("the fact name is empty", "pass --name 'Short title'")
    if len(clean) > MAX_NAME:
        raise UsageError(
            f"the fact name is {len(clean)} characters long (at most {MAX_NAME})",
            "use a short title and put the detail in --description or the text",
        )
    bad = sorted({c for c in clean if c in "/\\[]|#^" or ord(c) < 32 or c == "\x7f"})
    if bad or clean.startswith("."):
        shown = ", ".join(repr(c) for c in bad) or "a leading '.'"
        raise UsageError(
            f"the fact name {clean!r} contains {shown}",
            "names become file names and wikilinks: avoid / \\ [ ] | # ^, control characters and a leading dot",
        )
    return clean


def one_line(text: str, limit: int, what: str) -> str:
    folded = " ".join(text.split())
    if len(folded) > limit:
        raise UsageError(
            f"the {what} is {len(folded)} characters long (at most {limit})", "shorten it"
        )
    return folded


def _fact_from(vault: Vault, path: Path, note: notes.Note) -> Fact:
    meta = note.meta
    rel = vault.rel(path)
    parts = rel.split("/")
    agent = parts[1] if parts[0] == "agents" and len(parts) > 3 else None
    return Fact(
        id=str(meta.get("id") or ""),
        name=str(meta.get("name") or path.stem),
        description=str(meta.get("description") or ""),
        type=str(meta.get("type") or ""),
        path=rel,
        scope="agent" if agent else "shared",
        agent=agent,
        status=str(meta.get("status") or "active"),
        created=str(meta.get("created") or ""),
        updated=str(meta.get("updated") or ""),
        author=str(meta.get("author") or ""),
        text=note.body.strip(),
    )


def fact_files(vault: Vault) -> Iterator[tuple[Path, str | None]]:
    """Every fact file, with its owning agent (None for shared), in a stable order."""
    folders: list[tuple[Path, str | None]] = [(vault.memory_dir(), None)]
    folders += [(vault.memory_dir(a), a) for a in vault.known_agents()]
    for folder, agent in folders:
        if folder.is_dir():
            for path in sorted(folder.glob("*.md")):
                # MEMORY.md is the index, PROFILE.md the profile built from the facts; a link
                # is never a fact (its folder would own it, not its target)
                skip = path.name.startswith(".") or path.is_symlink()
                if path.name not in ("MEMORY.md", "PROFILE.md") and not skip:
                    yield path, agent


def memories(
    vault: Vault,
    *,
    type_: str | None = None,
    include_inactive: bool = True,
    visible_to: str | None = None,
) -> list[Fact]:
    """All readable facts, oldest first (`visible_to`: only shared and that agent's own)."""
    out = []
    for path, owner in fact_files(vault):  # never another agent's facts when `visible_to`
        if visible_to is not None and owner not in (None, visible_to):
            continue
        try:
            note = vault.read_note(path)
        except VaultmemError:
            continue
        if not note.ok:
            continue
        fact = _fact_from(vault, path, note)
        if type_ and fact.type != type_:
            continue
        if not include_inactive and fact.status != "active":
            continue
        out.append(fact)
    out.sort(key=lambda f: (f.created, f.path))
    return out


def find_fact(vault: Vault, ref: str) -> tuple[Path, notes.Note]:
    """Find a fact by id, slug or vault-relative path. Exit 4 if none, 2 if ambiguous."""
    ref = ref.strip()
    matches: list[tuple[Path, notes.Note]] = []
    for path, _agent in fact_files(vault):
        rel = vault.rel(path)
        if ref in (rel, rel.removesuffix(".md"), path.stem):
            matches.append((path, vault.read_note(path)))
            continue
        try:
            note = vault.read_note(path)
        except VaultmemError:
            continue
        if note.ok and str(note.meta.get("id")) == ref:
            matches.append((path, note))
    if not matches:
        raise NotFoundError(
            f"no fact with id or name {ref!r}", "list facts with: vaultmem memories"
        )
    if len(matches) > 1:
        listed = ", ".join(vault.rel(p) for p, _ in matches)
        raise UsageError(f"{ref!r} matches several facts: {listed}", "pass the id instead")
    return matches[0]


def _new_id(vault: Vault) -> str:
    taken = {f.id for f in memories(vault)}
    ids = (f"m-{secrets.token_hex(4)}" for _ in iter(int, 1))  # endless: the first free one
    return next(c for c in ids if c not in taken)


def fact_at(vault: Vault, path: Path, note: notes.Note) -> Fact:
    return _fact_from(vault, path, note)


def index_lock(vault: Vault) -> AbstractContextManager[None]:
    return exclusive(lock_path(vault, "memory"), vault.config.log.lock_timeout, what="memory index")


def remember(
    vault: Vault,
    text: str,
    *,
    name: str,
    type_: str,
    description: str | None = None,
    scope: str = "shared",
    agent: str | None = None,
    supersedes: str | None = None,
) -> Fact:
    """`vaultmem remember`: one fact note and its MEMORY.md line, written by who acts.

    A person (no `agent`) writes shared or an agent's memory; an acting agent only its own
    (`scope="agent"`), and supersedes only facts it wrote there (`memory/gate.py`, exit 8).
    """
    scope = choose(Scope, scope, "scope")
    if agent:
        agent = vault.require_agent(agent)
    gate.refuse_shared_write(agent, scope)
    return write(
        vault,
        text,
        name=name,
        type_=type_,
        description=description,
        scope=scope,
        agent=agent,
        author=agent or "person",
        supersedes=supersedes,
        acting=agent,
    )


def write(
    vault: Vault,
    text: str,
    *,
    name: str,
    type_: str,
    description: str | None = None,
    scope: str = "shared",
    agent: str | None = None,
    author: str,
    supersedes: str | None = None,
    extra: dict[str, Any] | None = None,
    acting: str | None = None,
) -> Fact:
    """Write one fact note and its MEMORY.md line; optionally supersede an older fact.

    `agent` owns an agent-scope fact; `author` is who wrote the text; `acting` is the agent
    acting, if any (the gate: it may supersede only its own facts). Approval calls this with
    the proposing agent as author, after the reviewer was checked.
    """
    name = validate_fact_name(name)
    type_ = choose(FactType, type_, "fact type")
    scope = choose(Scope, scope, "scope")
    body = text.strip()
    if not body:
        raise UsageError("the fact text is empty", "pass the fact as TEXT, or '-' to read stdin")
    owner = vault.require_agent(agent) if scope == "agent" else None
    if agent and scope == "shared":
        vault.require_agent(agent)
    desc = one_line(description if description else body.splitlines()[0], 10_000, "description")
    if len(desc) > MAX_DESCRIPTION:
        if description:
            raise UsageError(
                f"the description is {len(desc)} characters long (at most {MAX_DESCRIPTION})",
                "shorten it",
            )
        desc = desc[: MAX_DESCRIPTION - 1].rstrip() + "…"
    # the fact, its description and its name all reach MEMORY.md and the note: one scan of all
    # three before anything is written (a secret in the name is refused; it is a file name)
    cleaned, found = scrub(
        vault.config.secrets.policy,
        {"fact": body, "description": desc},
        identifiers={"fact name": name}
        | {f"tag {n}": str(t) for n, t in enumerate((extra or {}).get("tags") or (), 1)},
        what="fact",
    )
    body, desc = cleaned["fact"], cleaned["description"]

    with index_lock(vault):
        recover(vault)
        index_path, index_text = read_index(vault, owner)
        old: tuple[Path, notes.Note] | None = None
        if supersedes:
            old = find_fact(vault, supersedes)
            notes.require_ok(old[1], old[0])
            gate.check_may_change(vault, acting, old[0], old[1].meta, "supersede")
        folder = vault.memory_dir(owner)
        stamp = clock.stamp()
        fact_id = _new_id(vault)
        meta: dict[str, Any] = {
            "name": name,
            "description": desc,
            "type": type_,
            "id": fact_id,
            "created": stamp,
            "updated": stamp,
            "author": author,
            "aliases": [name],  # `[[Review days]]` resolves in Obsidian; then a person's key
        }
        if old is not None:
            meta["supersedes"] = str(old[1].meta.get("id") or old[0].stem)
        for key, value in (extra or {}).items():
            meta.setdefault(key, value)
        content = notes.render(meta, f"\n{body}\n")
        record = {"id": fact_id, "created": stamp, "index": vault.rel(index_path)}
        if old is not None:
            record["supersedes"] = vault.rel(old[0])
        with intents.intent(vault, "fact", record):
            path = create_note(vault, vault.rel(folder), slugify(name), content)
            if path is None:
                raise VaultmemError(f"too many facts named {name!r}", "pick a more specific name")
            try:
                atomic_write(
                    index_path, with_line_added(index_text, index_line(vault, path, name, desc))
                )
            except BaseException:
                path.unlink(missing_ok=True)
                raise
            if old is not None:
                _supersede(vault, old[0], old[1], fact_id, path, name, stamp)
        return evolve(_fact_from(vault, path, vault.read_note(path)), findings=tuple(found))


def _supersede(
    vault: Vault, path: Path, note: notes.Note, by_id: str, by: Path, name: str, stamp: str
) -> None:
    _mark_inactive(
        vault,
        path,
        note,
        {"status": "superseded", "superseded_by": by_id, "updated": stamp},
        f"superseded by [[{vault.rel(by).removesuffix('.md')}|{name}]] on {stamp[:10]}",
    )


def recover(vault: Vault) -> list[str]:
    """Finish or undo the fact writes a killed process left half done (`core/intents.py`):
    a note without its MEMORY.md line is removed (the caller never heard it succeed, and
    retries); one with its line gets the supersession it still owed. Caller holds the lock."""
    done: list[str] = []
    for record_path, data in intents.pending(vault, "fact"):
        try:
            done += _recover_one(vault, data)
        except (VaultmemError, KeyError, TypeError) as exc:
            done.append(f"could not finish a half-done fact write ({exc}); left as it is")
        intents.done(record_path)
    return done


def _recover_one(vault: Vault, data: dict[str, Any]) -> list[str]:
    try:
        path, note = find_fact(vault, str(data["id"]))
    except NotFoundError:
        return []  # the note was never made
    rel = vault.rel(path)
    if note.meta.get("id") != data["id"] or note.meta.get("created") != data["created"]:
        return []  # not the note this record was about
    _new, line = with_line_removed(
        read_text(vault.path(data["index"])), str(rel).removesuffix(".md")
    )
    if line is None:
        path.unlink()
        return [f"undid a remember cut short: removed {rel} (it never got its MEMORY.md line)"]
    if data.get("supersedes"):
        old_path = vault.path(str(data["supersedes"]))
        old = vault.read_note(old_path)
        if old.ok and old.meta.get("status") != "superseded":
            name = str(note.meta.get("name") or path.stem)
            _supersede(vault, old_path, old, data["id"], path, name, data["created"])
            return [f"finished a remember cut short: marked {data['supersedes']} superseded"]
    return []


def _mark_inactive(
    vault: Vault, path: Path, note: notes.Note, updates: dict[str, Any], why: str
) -> None:
    owner = gate.owner_of(vault, path)
    index_path, index_text = read_index(vault, owner)
    new_text = notes.set_frontmatter(note.text, updates, path=path)
    target = vault.rel(path).removesuffix(".md")
    fallback = index_line(
        vault,
        path,
        str(note.meta.get("name") or path.stem),
        str(note.meta.get("description") or ""),
    )
    atomic_write(path, new_text)
    atomic_write(index_path, with_line_retracted(index_text, target, why, fallback))


def mark_superseded(vault: Vault, ref: str, by: Fact) -> Fact:
    """Keep the note of `ref`, mark it superseded by `by` (an existing fact), and move its
    index line under '## Retracted': what `remember --supersedes` does to one older fact, for
    the others a consolidation replaces."""
    with index_lock(vault):
        path, note = find_fact(vault, ref)
        notes.require_ok(note, path)
        stamp = clock.stamp()
        _mark_inactive(
            vault,
            path,
            note,
            {"status": "superseded", "superseded_by": by.id, "updated": stamp},
            f"superseded by [[{by.path.removesuffix('.md')}|{by.name}]] on {stamp[:10]}",
        )
        return _fact_from(vault, path, vault.read_note(path))


def retract(vault: Vault, ref: str, *, why: str, agent: str | None = None) -> Fact:
    """Keep the note, mark it retracted, and move its index line under '## Retracted'.
    An acting `agent` may retract only its own facts (exit 8)."""
    reason = one_line(why, 500, "reason")
    if not reason:
        raise UsageError("a retraction needs a reason", "pass --why 'what was wrong'")
    with index_lock(vault):
        path, note = find_fact(vault, ref)
        notes.require_ok(note, path)
        gate.check_may_change(vault, agent, path, note.meta, "retract")
        stamp = clock.stamp()
        _mark_inactive(
            vault,
            path,
            note,
            {
                "status": "retracted",
                "retracted_at": stamp,
                "retract_reason": reason,
                "updated": stamp,
            },
            f"retracted {stamp[:10]}: {reason}",
        )
        return _fact_from(vault, path, vault.read_note(path))


def forget(vault: Vault, ref: str, *, agent: str | None = None) -> ForgetResult:
    """Delete the note and its index line (`app/privacy/forget.py` removes every other copy).
    An acting `agent` may forget only its own facts (exit 8)."""
    with index_lock(vault):
        path, note = find_fact(vault, ref)
        gate.check_may_change(vault, agent, path, note.meta, "forget")
        fact = _fact_from(vault, path, note)
        index_path, index_text = read_index(vault, gate.owner_of(vault, path))
        new_index, removed = with_line_removed(index_text, vault.rel(path).removesuffix(".md"))
        if removed is not None:
            atomic_write(index_path, new_index)
        path.unlink()
        return ForgetResult(fact=fact, index_line_removed=removed is not None)
