"""Digest notes: `nexus/digests/<period>.md`, one per closed period of the live log, signed.

A digest is a note people read in Obsidian (what was decided, handed over, left open, fixed),
every statement citing the entries it rests on as links to the note's own list of cited
entries. It ends with one metadata line, hidden in Obsidian's reading view, that makes it
checkable like a log entry:

    <!-- vaultmem-digest {"v":1,"period":"2026-W48","kind":"week",...,"hash":"sha256:…","key":"k-…","sig":"…"} -->

`hash` is SHA-256 over the canonical form (the metadata without `hash` and `sig`, plus the
body between the frontmatter and the metadata line, normalised as log bodies are); `sig` is
the writer's Ed25519 signature over `b"vaultmem-digest-v1\\n" + hash`. The frontmatter is for
people and Obsidian (a copy of the main fields, tags); the metadata line is what counts.
`verify` checks every digest: its hash, its signature (a key of the writer), and that every
entry it cites is still in the live log or its archives. The period's `source` hash (over the
hashes of the entries in the period, in log order) says whether the period changed since.
"""

from __future__ import annotations

import hashlib
import json
import re
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vaultmem.core import clock
from vaultmem.core.errors import PathOutsideVaultError, UsageError, VaultmemError
from vaultmem.core.fsio import atomic_write
from vaultmem.core.locking import exclusive, lock_path
from vaultmem.core.records import evolve, record
from vaultmem.core.vault import Vault
from vaultmem.nexus.entry import canonical_bytes, normalize_body

if TYPE_CHECKING:
    from collections.abc import Iterable

    from vaultmem.nexus.entry import Entry
    from vaultmem.nexus.verify_files import LogProblem

FOLDER = "nexus/digests"
SIG_DOMAIN = b"vaultmem-digest-v1\n"
KINDS = ("week", "month")
META_RE = re.compile(r"^<!-- vaultmem-digest (?P<json>\{.*\}) -->[ \t]*$", re.MULTILINE)
WEEK_RE = re.compile(r"(\d{4})-W(\d\d)")
MONTH_RE = re.compile(r"(\d{4})-(\d\d)")
# a citation in a digest's text: a link to the block of the cited entry in the same note
CITE_RE = re.compile(r"\[\[#\^(?P<block>[A-Za-z0-9-]+)\|(?P<id>[^\]|]+)\]\]")
MONTHS = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
]


# --- periods --------------------------------------------------------------------------------


def period_of(time: str, kind: str) -> str:
    """The period an entry time falls in: `2026-W48` (ISO week, UTC) or `2026-11`."""
    day = date.fromisoformat(time[:10])
    if kind == "week":
        year, week, _ = day.isocalendar()
        return f"{year}-W{week:02d}"
    return time[:7]


def bounds(period: str) -> tuple[str, datetime, datetime]:
    """(kind, start, end) of a period name; the end is exclusive. UsageError if not one."""
    m = WEEK_RE.fullmatch(period)
    if m:
        try:
            start = date.fromisocalendar(int(m[1]), int(m[2]), 1)
        except ValueError:
            raise UsageError(f"{period!r} is not a week", "e.g. 2026-W48") from None
        first = datetime(start.year, start.month, start.day, tzinfo=UTC)
        return "week", first, first + timedelta(days=7)
    m = MONTH_RE.fullmatch(period)
    if m and 1 <= int(m[2]) <= 12:
        first = datetime(int(m[1]), int(m[2]), 1, tzinfo=UTC)
        nxt = datetime(first.year + first.month // 12, first.month % 12 + 1, 1, tzinfo=UTC)
        return "month", first, nxt
    raise UsageError(f"{period!r} is not a period", "a week like 2026-W48 or a month like 2026-11")


def title(period: str) -> str:
    kind, start, end = bounds(period)
    if kind == "month":
        return f"{MONTHS[start.month - 1]} {start.year}"
    last = end - timedelta(days=1)
    span = f"{start.day} {MONTHS[start.month - 1]} – {last.day} {MONTHS[last.month - 1]}"
    return f"Week {period[-2:]} of {period[:4]} ({span})"


def block_id(entry_id: str) -> str:
    """The Obsidian block id of a cited entry in the digest's list (letters, digits, '-')."""
    return "e-" + re.sub(r"[^A-Za-z0-9]+", "-", entry_id)


def cite(entry_id: str) -> str:
    return f"[[#^{block_id(entry_id)}|{entry_id}]]"


def source_hash(entries: Iterable[Entry]) -> str:
    """What a digest was made from: changes when an entry of the period is added or changed."""
    h = hashlib.sha256()
    for e in entries:
        h.update(e.hash.encode("ascii", "replace") + b"\n")
    return "sha256:" + h.hexdigest()


# --- the note ---------------------------------------------------------------------------------


@record
class DigestMeta:
    """The metadata line of a digest (what is signed, with the body)."""

    period: str
    kind: str
    start: str  # stamp, inclusive
    end: str  # stamp, exclusive
    entries: int  # entries in the period when it was made
    source: str  # source_hash of those entries
    made_by: str  # "offline" or the model's name
    writer: str  # the agent that made and signed it
    created: str
    key: str | None = None
    hash: str = ""
    sig: str | None = None
    v: int = 1

    def signed_part(self) -> dict[str, Any]:
        return {
            "v": self.v,
            "period": self.period,
            "kind": self.kind,
            "from": self.start,
            "to": self.end,
            "entries": self.entries,
            "source": self.source,
            "made_by": self.made_by,
            "writer": self.writer,
            "created": self.created,
            "key": self.key,
        }

    def compute_hash(self, body: str) -> str:
        data = {**self.signed_part(), "body": normalize_body(body)}
        return "sha256:" + hashlib.sha256(canonical_bytes(data)).hexdigest()

    def line(self) -> str:
        data = {**self.signed_part(), "hash": self.hash, "sig": self.sig}
        text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
        return (
            "<!-- vaultmem-digest " + text.replace("<", "\\u003c").replace(">", "\\u003e") + " -->"
        )

    def to_dict(self) -> dict[str, Any]:
        return {**self.signed_part(), "hash": self.hash, "sig": self.sig}


@record
class DigestNote:
    path: str  # vault-relative
    meta: DigestMeta | None  # None: no metadata line that parses
    body: str  # between the frontmatter and the metadata line
    error: str | None = None

    @property
    def cited(self) -> list[str]:
        return list(dict.fromkeys(m["id"] for m in CITE_RE.finditer(self.body)))


def folder(vault: Vault) -> Path:
    return vault.digests  # FOLDER, as the vault names it


def digest_path(vault: Vault, period: str) -> Path:
    bounds(period)  # a period name is the only thing that becomes a file name here
    return vault.path(f"{FOLDER}/{period}.md")


def digest_files(vault: Vault) -> list[Path]:
    """Digest notes, in period order (weeks and months by name)."""
    where = folder(vault)
    if not where.is_dir():
        return []
    out = []
    for path in sorted(where.glob("*.md")):
        try:
            bounds(path.stem)
        except UsageError:
            continue  # a note a person put there: not a digest
        out.append(path)
    return out


def parse(text: str, rel: str) -> DigestNote:
    from vaultmem.core.notes import split_frontmatter

    matches = list(META_RE.finditer(text))
    try:
        _fm, rest, _n = split_frontmatter(text)
    except ValueError:
        rest = text
    if not matches:
        return DigestNote(rel, None, rest, "no vaultmem-digest metadata line")
    m = matches[-1]
    body = rest[: max(0, len(rest) - (len(text) - m.start()))]
    try:
        raw = json.loads(m["json"])
        meta = DigestMeta(
            period=str(raw["period"]),
            kind=str(raw["kind"]),
            start=str(raw["from"]),
            end=str(raw["to"]),
            entries=int(raw["entries"]),
            source=str(raw["source"]),
            made_by=str(raw["made_by"]),
            writer=str(raw["writer"]),
            created=str(raw["created"]),
            key=raw.get("key"),
            hash=str(raw.get("hash") or ""),
            sig=raw.get("sig"),
            v=int(raw.get("v", 1)),
        )
    except (ValueError, KeyError, TypeError):
        return DigestNote(rel, None, body, "the vaultmem-digest metadata line does not parse")
    return DigestNote(rel, meta, body)


def read_digest(vault: Vault, path: Path) -> DigestNote:
    return parse(vault.read_text(path, what="digest"), vault.rel(path))


def render(meta: DigestMeta, body: str, where: str = "") -> str:
    """The whole note: frontmatter for people, the body, the metadata line, then `where`
    (`where_part`: the links to the entries, outside the signed text)."""
    from vaultmem.core.notes import render as render_note

    front = {
        "period": meta.period,
        "kind": meta.kind,
        "from": meta.start,
        "to": meta.end,
        "entries": meta.entries,
        "writer": meta.writer,
        "made_by": meta.made_by,
        "created": meta.created,
        "tags": ["vaultmem/digest"],
    }
    text = "\n" + normalize_body(body) + "\n\n" + meta.line() + "\n"
    return render_note(front, text + (f"\n{where}" if where else ""))


def sign(vault: Vault, meta: DigestMeta, body: str) -> DigestMeta:
    """The metadata with the writer's key, hash and signature (unsigned when the vault allows
    it and this machine holds no key: SigningKeyMissingError otherwise)."""
    from vaultmem.nexus import signing
    from vaultmem.nexus.log import check_can_append

    check_can_append(vault, meta.writer)
    signer = signing.signer_for(vault, meta.writer)
    meta = evolve(meta, key=signer.key_id if signer else None, hash="", sig=None)
    digest = meta.compute_hash(body)
    return evolve(
        meta, hash=digest, sig=signer.sign_raw(SIG_DOMAIN + digest.encode()) if signer else None
    )


def write(vault: Vault, meta: DigestMeta, body: str, homes: dict[str, str] | None = None) -> Path:
    """Sign and write one digest (atomically, under the digests lock), with the links to where
    its entries are (`homes`: `entry_homes`, read here when not given)."""
    signed = sign(vault, meta, body)
    path = digest_path(vault, meta.period)
    from vaultmem.nexus.homes import entry_homes, where_part

    cited = list(dict.fromkeys(m["id"] for m in CITE_RE.finditer(body)))
    where = where_part(cited, entry_homes(vault) if homes is None else homes)
    with exclusive(lock_path(vault, "digests"), vault.config.log.lock_timeout, what="digests"):
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, render(signed, body, where))
    return path


def new_meta(
    period: str, entries: list[Entry], *, made_by: str, writer: str, created: str | None = None
) -> DigestMeta:
    kind, start, end = bounds(period)
    return DigestMeta(
        period=period,
        kind=kind,
        start=clock.stamp(start),
        end=clock.stamp(end),
        entries=len(entries),
        source=source_hash(entries),
        made_by=made_by,
        writer=writer,
        created=created or clock.stamp(),
    )


# --- verify -----------------------------------------------------------------------------------


def logged_ids(vault: Vault) -> set[str]:
    """Ids of every entry in the live log and its archives (from the metadata lines: cheap)."""
    from vaultmem.nexus.homes import entry_homes

    return set(entry_homes(vault))


def digest_problem(
    note: DigestNote, period: str, keys: dict[str, Any], *, require: bool
) -> tuple[str, str] | None:
    """What is wrong with one digest on its own (metadata, hash, signature), or None: (kind,
    message). `verify` checks every digest with it, the pack each digest it would show."""
    from vaultmem.nexus import signing

    rel, meta = note.path, note.meta
    if meta is None:
        return "bad-metadata", f"{rel}: {note.error}"
    if meta.period != period or meta.compute_hash(note.body) != meta.hash:
        return "edited", f"{rel} was changed after it was written (hash)"
    if not meta.sig or not meta.key:
        return ("unsigned", f"{rel} is not signed") if require else None
    pk = keys.get(meta.key)
    if pk is None:
        return "unknown-key", f"{rel} is signed with unknown key {meta.key}"
    if pk.agent != meta.writer or not signing.verify_raw(
        pk.public, SIG_DOMAIN + meta.hash.encode(), meta.sig
    ):
        return "forged", f"{rel}: the signature is not {meta.writer}'s"
    if not pk.approved:
        return "unapproved-key", f"{rel} is signed with {meta.key}, a key that is not approved"
    return None


def verify_digests(vault: Vault, keys: dict[str, Any]) -> tuple[dict[str, int], list[LogProblem]]:
    """Every digest's hash and signature, and that what it cites is still logged."""
    from vaultmem.nexus.verify_files import LogProblem

    files = digest_files(vault)
    if not files:
        return {}, []
    known = logged_ids(vault)
    require = vault.config.log.require_signatures
    checked: dict[str, int] = {}
    problems: list[LogProblem] = []
    for path in files:
        try:
            note = read_digest(vault, path)
        except PathOutsideVaultError as exc:
            problems.append(LogProblem(vault.rel_unresolved(path), "symlink-outside", exc.message))
            continue
        rel = note.path
        cited = note.cited
        checked[rel] = len(cited)
        wrong = digest_problem(note, path.stem, keys, require=require)
        if wrong is not None:
            problems.append(LogProblem(rel, wrong[0], wrong[1]))
            if wrong[0] in ("bad-metadata", "edited"):
                continue
        for entry_id in cited:
            if entry_id not in known:
                problems.append(
                    LogProblem(
                        rel,
                        "missing",
                        f"{rel} cites {entry_id}, which is in neither the live log nor its archives",
                        entry_id,
                    )
                )
    return checked, problems


# --- profiles: signed the same way -------------------------------------------------------------
#
# `memory/PROFILE.md` and `agents/<agent>/PROFILE.md` (app/condense/profile.py builds them) end
# with one metadata line like a digest's:
#
#     <!-- vaultmem-profile {"scope":"shared","sources":"sha256:…","made_by":"offline",
#          "built":"…","writer":"ella","key":"k-…","hash":"sha256:…","sig":"…"} -->
#
# `hash` is SHA-256 over the canonical form of the other fields plus the body before the line
# (normalised as log bodies are); `sig` the writer's Ed25519 signature over
# `b"vaultmem-profile-v1\n" + hash`. The frontmatter is for people; the line is what counts (the
# pack's "stale" check reads `sources` from it).

PROFILE_DOMAIN = b"vaultmem-profile-v1\n"
PROFILE_RE = re.compile(r"^<!-- vaultmem-profile (?P<json>\{.*\}) -->[ \t]*$", re.MULTILINE)


def _profile_hash(fields: dict[str, Any], body: str) -> str:
    data = {**fields, "body": normalize_body(body)}
    return "sha256:" + hashlib.sha256(canonical_bytes(data)).hexdigest()


def profile_line(vault: Vault, fields: dict[str, Any], body: str) -> str:
    """The signed metadata line for a profile with `fields` (its `writer` signs, when this
    machine holds one of the writer's keys; unsigned otherwise) and `body`."""
    from vaultmem.nexus import signing

    writer = str(fields.get("writer") or "")
    signer = signing.signer_for(vault, writer) if writer else None
    fields = {**fields, "key": signer.key_id if signer else None}
    digest = _profile_hash(fields, body)
    sig = signer.sign_raw(PROFILE_DOMAIN + digest.encode()) if signer else None
    text = json.dumps(
        {**fields, "hash": digest, "sig": sig}, ensure_ascii=False, separators=(",", ":")
    )
    return "<!-- vaultmem-profile " + text.replace("<", "\\u003c").replace(">", "\\u003e") + " -->"


def split_profile(body: str) -> tuple[str, dict[str, Any] | None]:
    """(the profile's body before its metadata line, the line's fields or None)."""
    matches = list(PROFILE_RE.finditer(body))
    if not matches:
        return body, None
    m = matches[-1]
    try:
        raw = json.loads(m["json"])
    except ValueError:
        return body[: m.start()], None
    return body[: m.start()], raw if isinstance(raw, dict) else None


def profile_problem(
    body: str, rel: str, keys: dict[str, Any], *, require: bool
) -> tuple[str, str] | None:
    """What is wrong with a profile (its note body, metadata line included), or None: (kind,
    message). `verify` checks every profile with it, the pack the profile it would show."""
    from vaultmem.nexus import signing

    text, raw = split_profile(body)
    if raw is None:
        if require:
            return "unsigned", f"{rel} has no vaultmem-profile line (rebuild: vaultmem profile)"
        return None
    fields = {k: v for k, v in raw.items() if k not in ("hash", "sig")}
    digest, sig, key = raw.get("hash"), raw.get("sig"), raw.get("key")
    if _profile_hash(fields, text) != digest:
        return "edited", f"{rel} was changed after it was built (hash)"
    if not sig or not key:
        return ("unsigned", f"{rel} is not signed") if require else None
    pk = keys.get(key)
    if pk is None:
        return "unknown-key", f"{rel} is signed with unknown key {key}"
    if pk.agent != raw.get("writer") or not signing.verify_raw(
        pk.public, PROFILE_DOMAIN + str(digest).encode(), str(sig)
    ):
        return "forged", f"{rel}: the signature is not {raw.get('writer')}'s"
    if not pk.approved:
        return "unapproved-key", f"{rel} is signed with {key}, a key that is not approved"
    return None


def profile_files(vault: Vault) -> list[Path]:
    """The shared profile and every agent's, those that exist."""
    out = [vault.root / "memory" / "PROFILE.md"]
    out += [vault.root / "agents" / a / "PROFILE.md" for a in vault.known_agents()]
    return [p for p in out if p.exists() or p.is_symlink()]


def verify_profiles(vault: Vault, keys: dict[str, Any]) -> tuple[dict[str, int], list[LogProblem]]:
    """Every profile's hash and signature."""
    from vaultmem.core.notes import split_frontmatter
    from vaultmem.nexus.verify_files import LogProblem

    require = vault.config.log.require_signatures
    checked: dict[str, int] = {}
    problems: list[LogProblem] = []
    for path in profile_files(vault):
        rel = vault.rel_unresolved(path)
        try:
            text = vault.read_text(path, what="profile")
        except PathOutsideVaultError as exc:
            problems.append(LogProblem(rel, "symlink-outside", exc.message))
            continue
        except (OSError, VaultmemError) as exc:
            problems.append(LogProblem(rel, "bad-metadata", f"{rel}: {exc}"))
            continue
        try:
            _fm, body, _n = split_frontmatter(text)
        except ValueError:
            body = text
        checked[rel] = 1
        wrong = profile_problem(body, rel, keys, require=require)
        if wrong is not None:
            problems.append(LogProblem(rel, wrong[0], wrong[1]))
    return checked, problems
