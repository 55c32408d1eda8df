"""`vaultmem upgrade`: numbered migrations that bring a vault's files to the current format.

The model is simonw/llm's `migrations.py`: each migration is a function registered in order with
`@migration`; a vault records how many it has seen as `format = N` in `vaultmem.toml`, and
`upgrade` runs the ones it has not, in order, then records the new number. A migration must be
safe to run twice and must keep every byte a person wrote that it does not own. The next format
change goes here as `m00N_...`; `docs/FORMAT.md` says what each format number means.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from vaultmem.core import clock, notes
from vaultmem.core.config import CONFIG_NAME, set_toml_key
from vaultmem.core.errors import VaultmemError
from vaultmem.core.fsio import atomic_write, read_text
from vaultmem.core.locking import exclusive, lock_path
from vaultmem.core.records import field, record
from vaultmem.core.vault import Vault

Migration = Callable[[Vault, bool], list[str]]
MIGRATIONS: list[Migration] = []


def migration(fn: Migration) -> Migration:
    MIGRATIONS.append(fn)
    return fn


def current_format() -> int:
    """The format this vaultmem writes: the number of migrations it knows."""
    return len(MIGRATIONS)


@record
class Step:
    name: str
    changes: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "changes": list(self.changes)}


@record
class UpgradeReport:
    from_format: int
    to_format: int
    steps: tuple[Step, ...] = field(default_factory=tuple)
    dry_run: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "from_format": self.from_format,
            "to_format": self.to_format,
            "steps": [s.to_dict() for s in self.steps],
            "dry_run": self.dry_run,
        }


# --- the migrations ----------------------------------------------------------------------------


@migration
def m001_format_number(vault: Vault, dry_run: bool) -> list[str]:
    """Vaults start recording their format number in vaultmem.toml. No file changes."""
    return []


# frontmatter keys vaultmem writes times into
TIME_KEYS = (
    "created",
    "updated",
    "last_seen",
    "approved_at",
    "rejected_at",
    "expired_at",
    "retracted_at",
)
_TIME_LINE = re.compile(rf"^(?:{'|'.join(TIME_KEYS)})[ \t]*:[ \t]*(?P<v>.*?)[ \t]*$", re.MULTILINE)
_PLAIN_STAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ")


def _time_notes(vault: Vault) -> list[Path]:
    """Facts, bank notes, identities and checkpoints: the notes vaultmem stamps."""
    folders = [vault.memory_dir()]
    for agent in vault.known_agents():
        folders += [vault.memory_dir(agent), vault.bank_dir(agent)]
    found = [p for f in folders if f.is_dir() for p in sorted(f.glob("*.md"))]
    for agent in vault.known_agents():
        found += [p for p in (vault.identity(agent), vault.checkpoint(agent)) if p.is_file()]
    return [p for p in found if p.name != "MEMORY.md" and not p.name.startswith(".")]


@migration
def m002_plain_time_properties(vault: Vault, dry_run: bool) -> list[str]:
    """One form for times in frontmatter: unquoted `2026-11-29T15:20:01Z` (seconds, UTC).

    Facts had them quoted and checkpoints carried milliseconds; Obsidian reads the plain form
    as a Date & time property. Only the keys vaultmem owns are touched, each by its own line.
    """
    changes = []
    for path in _time_notes(vault):
        try:
            text = read_text(path, what="note")
        except VaultmemError:
            continue  # `status` reports unreadable notes; a migration never rewrites them
        fm_lines = notes.split_frontmatter(text)[0] if text.startswith("---") else None
        if not fm_lines:
            continue
        updates: dict[str, Any] = {}
        for m in _TIME_LINE.finditer("".join(fm_lines)):
            raw = m.group("v")
            key = m.group(0).split(":", 1)[0].strip()
            moment = clock.parse_time(raw)
            if moment is None or _PLAIN_STAMP.fullmatch(raw) or len(raw.strip("'\"")) == 10:
                continue
            updates[key] = clock.stamp(moment)
        if not updates:
            continue
        try:
            new = notes.set_frontmatter(text, updates, path=path)
        except VaultmemError:
            continue
        if new != text:
            changes.append(f"{vault.rel(path)}: {', '.join(sorted(updates))}")
            if not dry_run:
                atomic_write(vault.path(vault.rel(path)), new)
    return changes


@migration
def m003_coordination(vault: Vault, dry_run: bool) -> list[str]:
    """Addressed entries (`v` 2), `resolve` entries, working memory, receipts and people's
    keys. Every file written before stays valid as it is: no file changes."""
    return []


@migration
def m004_signed_approvals(vault: Vault, dry_run: bool) -> list[str]:
    """Trust anchors are signatures: a key line's `approved-by reviewer NAME TIME` (text) no
    longer approves the key; a reviewer signs it (`vaultmem keys approve`), and this machine
    pins the reviewers' keys and the security settings (nexus/trust.py). Nothing can be signed
    here for a person, so no file changes: each key approved by text only is named with the
    command its reviewer runs."""
    from vaultmem.nexus.keyring import public_keys
    from vaultmem.nexus.signing import keys_file

    out = []
    for key in public_keys(vault).values():
        if key.reviewer and not key.reviewer_key:
            out.append(
                f"{vault.rel(keys_file(vault, key.agent))}: {key.key_id} of {key.agent} is "
                f"approved by text only; {key.reviewer} signs it with: vaultmem keys create "
                f"--reviewer {key.reviewer} (once), then vaultmem keys approve {key.key_id} "
                f"--reviewer {key.reviewer}"
            )
    return out


@migration
def m005_obsidian_links(vault: Vault, dry_run: bool) -> list[str]:
    """Obsidian can link every entry and fact: each log entry (live log, archives, decision
    log) gets its block id line (`^ella-3`, outside the signed text: hashes and signatures stay
    as they are), each fact without `aliases` gets its name as one, and each digest its links
    to where the entries it cites are now. A file whose entries would not parse to exactly
    what they were is left as it is and named."""
    from vaultmem.nexus import digest_links, entry, log  # layer 3

    changes: list[str] = []
    for name in ("live", "decisions"):
        with exclusive(log.lock_for(vault, name), vault.config.log.lock_timeout, what=name):
            heads = log.current_heads(vault, name)
            for path in vault.chain_files(name):
                changes += _block_ids(vault, path, dry_run, entry)
            if not dry_run and path.exists():
                log.save_heads(vault, name, log.file_stamp(path), heads)
    changes += _fact_aliases(vault, dry_run)
    changes += [
        f"{rel}: links to the entries it cites" for rel in digest_links.relink(vault, dry_run)
    ]
    return changes


def _block_ids(vault: Vault, path: Path, dry_run: bool, entry: Any) -> list[str]:
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return []
    new, added = entry.add_block_lines(data)
    if not added:
        return []
    rel = vault.rel(path)
    old_forms = [e.canonical() for e in entry.parse_bytes(data).entries]
    if [e.canonical() for e in entry.parse_bytes(new).entries] != old_forms:
        return [f"{rel}: left as it is (its entries would not read the same with block ids)"]
    if not dry_run:
        atomic_write(path, new)
    return [f"{rel}: block ids for {added:,} {'entry' if added == 1 else 'entries'}"]


def _fact_aliases(vault: Vault, dry_run: bool) -> list[str]:
    """Each fact without `aliases` gets its name (as `write` gives new facts): a person's own
    `aliases` are theirs, left as they are."""
    from vaultmem.memory.facts import fact_files  # layer 1

    changes = []
    for path, _agent in fact_files(vault):
        try:
            text = read_text(path, what="note")
            meta = notes.require_ok(notes.parse(text), path).meta
            name = meta.get("name")
            if "aliases" in meta or not isinstance(name, str) or not name.strip():
                continue
            new = notes.set_frontmatter(text, {"aliases": [name.strip()]}, path=path)
        except VaultmemError:
            continue  # `status` reports broken notes; a migration never rewrites them
        changes.append(f"{vault.rel(path)}: aliases")
        if not dry_run:
            atomic_write(path, new)
    return changes


# --- running them ------------------------------------------------------------------------------


def upgrade(vault: Vault, *, dry_run: bool = False) -> UpgradeReport:
    """Run the migrations this vault has not seen, in order; record the new format number."""
    start = vault.config.format
    steps = []
    with exclusive(lock_path(vault, "upgrade"), vault.config.log.lock_timeout, what="upgrade"):
        for fn in MIGRATIONS[start:]:
            steps.append(Step(fn.__name__, tuple(fn(vault, dry_run))))
        end = current_format()
        if not dry_run and end != start:
            config = vault.root / CONFIG_NAME
            text = read_text(config, what="config")
            atomic_write(vault.path(CONFIG_NAME), set_toml_key(text, "format", end, config))
    return UpgradeReport(start, max(start, end), tuple(steps), dry_run)
