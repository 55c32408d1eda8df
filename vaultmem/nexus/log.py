"""Where the signed logs live and how an entry gets there: `append`, the journal, chain heads.

Appends hold `.vaultmem/locks/<log>.lock`, write the whole block with one `write()` (O_APPEND)
and record it in the journal (`.vaultmem/journal/<log>.jsonl`); after the lock is released, one
fsync of both files per batch of concurrent appends makes them durable (`core/commit.py`), and
`append` returns only then. The per-agent chain heads
are cached in `.vaultmem/heads/<log>.json` together with the log's size and mtime; when they do
not match (a person, an editor or git changed the file) the heads are rebuilt from the files and
the journal, so a sequence number is never reused.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Any

from vaultmem.core import clock, commit, seal
from vaultmem.core.errors import SigningKeyMissingError, UsageError
from vaultmem.core.fsio import NOFOLLOW, append_unsynced, ensure_dir
from vaultmem.core.locking import exclusive, lock_path
from vaultmem.core.records import evolve, record
from vaultmem.core.vault import Vault
from vaultmem.nexus.entry import (
    LOGS,
    MERGE_TYPE,
    TIME_RE,
    Entry,
    chain_of,
    entry_from_dict,
    entry_id,
    fold_summary,
    is_decision,
    normalize_body,
    read_file,
    render,
    strip_controls,
    validate_channel,
    validate_id,
    validate_recipients,
    validate_type,
)


@record
class AppendResult:
    entry: Entry
    path: str  # vault-relative file
    redactions: tuple[Any, ...] = ()  # secrets.Finding, one per redacted credential
    warnings: tuple[str, ...] = ()
    duplicate_of: str | None = None  # an alert already open: nothing written, `entry` is it
    seen_again: int = 0  # with duplicate_of: how many times it was raised again so far

    def to_dict(self) -> dict[str, Any]:
        """`append --json`: the entry; for a repeated alert, the open one it repeats."""
        data = self.entry.to_dict()
        if self.duplicate_of is not None:
            data.update(duplicate_of=self.duplicate_of, seen_again=self.seen_again)
        return data


def log_file(vault: Vault, log: str) -> Path:
    if log == "live":
        return vault.live_context
    if log == "decisions":
        return vault.decisions
    raise UsageError(f"unknown log {log!r}", "use 'live' or 'decisions'")


def journal_path(vault: Vault, log: str) -> Path:
    return vault.state("journal", f"{log}.jsonl")


def heads_path(vault: Vault, log: str) -> Path:
    return vault.state("heads", f"{log}.json")


def lock_for(vault: Vault, log: str) -> Path:
    return lock_path(vault, "live-context" if log == "live" else "decisions")


def read_journal(vault: Vault, log: str, data: bytes | None = None) -> list[Entry]:
    """Every entry ever appended on this machine, in append order (bad lines skipped). Lines
    are sealed (`core/seal.py`): a line git or anyone else wrote is not read, so `repair`
    never restores, and `verify` never reports missing, an entry this machine did not write.
    `data`: the journal's bytes, when the caller read them already (`journal_bytes`)."""
    out: list[Entry] = []
    path = journal_path(vault, log)
    if data is None:
        data = journal_bytes(vault, log)
    for item in seal.lines(path, data):
        try:
            out.append(entry_from_dict(item))
        except (ValueError, KeyError, TypeError):
            continue  # a line that is JSON but not an entry
    return out


def journal_bytes(vault: Vault, log: str) -> bytes:
    try:
        return journal_path(vault, log).read_bytes()
    except (FileNotFoundError, NotADirectoryError):
        return b""


def file_stamp(path: Path) -> str:
    """Size and modification time: what the heads cache is validated against."""
    try:
        st = path.stat()
    except FileNotFoundError:
        return "missing"
    return f"{st.st_size}:{st.st_mtime_ns}"


def _load_heads(
    vault: Vault, log: str, stamp: str, where: Path | None = None
) -> dict[str, list[Any]] | None:
    # sealed (core/seal.py): a heads file git wrote fails its seal and is rebuilt from
    # verified entries, so a planted head never becomes the next entry's `prev`
    data = seal.read(where or heads_path(vault, log))
    if (
        not isinstance(data, dict)
        or data.get("stamp") != stamp
        or not isinstance(data.get("agents"), dict)
    ):
        return None
    agents: dict[str, list[Any]] = data["agents"]
    return agents


def save_heads(
    vault: Vault, log: str, stamp: str, heads: dict[str, list[Any]], where: Path | None = None
) -> None:
    """A cache, validated by the log's size on every read, so it is written in place without
    fsync (creating a temp file per append costs more than the whole append). A crash mid-write
    leaves a file whose seal does not match or a stamp that does not match: the heads are then
    rebuilt from the files and the journal."""
    path = where or heads_path(vault, log)
    data = seal.dumps(path, {"stamp": stamp, "agents": heads})
    try:
        if data is None:  # no secret to seal with: no cache, the heads are rebuilt each time
            raise OSError("no seal")
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | NOFOLLOW, 0o644)
        except FileNotFoundError:
            ensure_dir(path.parent)
            fd = os.open(path, os.O_RDWR | os.O_CREAT | NOFOLLOW, 0o644)
        try:
            os.write(fd, data)  # a new fd starts at offset 0
            if os.fstat(fd).st_size > len(data):  # a truncate costs ~10x a stat: only if longer
                os.ftruncate(fd, len(data))
        finally:
            os.close(fd)
    except OSError:
        path.unlink(missing_ok=True)


def rebuild_heads(vault: Vault, log: str) -> dict[str, list[Any]]:
    """Per chain (`ella`, `ella.k2f7`): [last seq, its hash], from every file of the log and
    the journal, counting only entries `verify` accepts (`head_ok`): a forged entry with a
    high sequence number is reported by verify, never continued. Each chain's candidates are
    tried from the highest `seq` down, so a chain costs one signature check, plus one per
    forgery above its real head."""
    candidates: dict[str, dict[str, Entry]] = {}

    def see(e: Entry) -> None:
        candidates.setdefault(chain_of(e.id), {}).setdefault(e.hash or "", e)

    for path in vault.chain_files(log):
        for e in read_file(path).entries:
            see(e)
    for e in read_journal(vault, log):
        see(e)
    heads: dict[str, list[Any]] = {}
    if not candidates:
        return heads
    from vaultmem.nexus import keyring

    keys = keyring.public_keys(vault)
    require = vault.config.log.require_signatures
    for chain, found in candidates.items():
        for e in sorted(found.values(), key=lambda x: -x.seq):
            if head_ok(e, keys, require=require):
                heads[chain] = [e.seq, e.hash]
                break
    return heads


def head_ok(e: Entry, keys: dict[str, Any], *, require: bool) -> bool:
    """May `e` be a chain's head? What `verify` accepts: its hash matches its text, its id its
    agent and seq, and it is signed by an approved key of its agent for its chain (or unsigned,
    in a vault that does not require signatures)."""
    from vaultmem.nexus import signing
    from vaultmem.nexus.entry import device_of

    if not e.hash or e.compute_hash() != e.hash:
        return False
    device = device_of(e.id)
    if e.id != entry_id(e.agent, e.seq, e.log, device):
        return False
    if not e.sig or not e.key:
        return not require
    pk = keys.get(e.key)
    return bool(
        pk is not None
        and pk.agent == e.agent
        and pk.device == device
        and pk.approved
        and signing.verify_signature(pk.public, e.hash, e.sig)
    )


def peek_heads(vault: Vault, log: str) -> dict[str, list[Any]]:
    """Chain heads for a reader (no lock): the cache when it matches the file, else rebuilt
    from the files and saved (a racing append's own save wins or is detected by the stamp)."""
    return current_heads(vault, log)


def current_heads(
    vault: Vault, log: str, *, path: Path | None = None, where: Path | None = None
) -> dict[str, list[Any]]:
    """Chain heads (caller holds the log's lock). `path`, `where`: the log file and the heads
    file, when the caller has them already (each costs a checked path)."""
    stamp = file_stamp(path or log_file(vault, log))
    heads = _load_heads(vault, log, stamp, where)
    if heads is None:
        heads = rebuild_heads(vault, log)
        save_heads(vault, log, stamp, heads, where)
    return heads


def _check_lengths(settings: Any, summary: str, body: str) -> None:
    if len(summary) > settings.max_summary:
        raise UsageError(
            f"the summary is {len(summary)} characters long (at most {settings.max_summary})",
            "keep the summary to one short line and put the detail in --body",
        )
    if len(body) > settings.max_body:
        raise UsageError(
            f"the body is {len(body)} characters long (at most {settings.max_body})",
            "link to a note instead of pasting it, or raise [log] max_body in vaultmem.toml",
        )


def prepare_text(
    vault: Vault,
    summary: str,
    body: str,
    *,
    what: str = "entry",
    identifiers: dict[str, str] | None = None,
) -> tuple[str, str, tuple[Any, ...]]:
    """Fold and cap the summary, normalise and cap the body, apply the secrets policy to both
    (and refuse a secret in any identifier) before anything is written."""
    from vaultmem.core.secrets import scrub

    settings = vault.config.log
    summary = fold_summary(strip_controls(summary))
    if not summary:
        raise UsageError(f"the {what} summary is empty", "pass a one-line summary")
    body = normalize_body(strip_controls(body))
    # the caps first: nothing longer than an entry may hold is scanned (or looked at) at all;
    # and again after redaction, whose markers can be longer than what they replace
    _check_lengths(settings, summary, body)
    cleaned, found = scrub(
        vault.config.secrets.policy,
        {f"{what} summary": summary, f"{what} body": body},
        identifiers=identifiers,
        what=what,
    )
    summary, body = cleaned[f"{what} summary"], cleaned[f"{what} body"]
    _check_lengths(settings, summary, body)
    return summary, body, tuple(found)


def check_can_append(vault: Vault, agent: str) -> None:
    """Raise now what `append` would raise for a missing key, so a command that writes a file
    and then logs it (state set) refuses before touching the file."""
    from vaultmem.nexus import signing

    if vault.config.log.require_signatures and signing.signer_for(vault, agent) is None:
        raise SigningKeyMissingError(
            f"agent {agent} has no signing key on this machine, and this vault refuses unsigned entries",
            f"create one with: vaultmem keys create --agent {agent}",
        )


def append(
    vault: Vault,
    agent: str,
    summary: str,
    *,
    channel: str = "general",
    type_: str = "note",
    body: str = "",
    acks: tuple[str, ...] | list[str] = (),
    to: tuple[str, ...] | list[str] = (),
    log: str = "live",
    extra: dict[str, Any] | None = None,
    time: str | None = None,
    person: bool = False,
    joins: tuple[str, ...] = (),
) -> AppendResult:
    """Append one signed entry; return it once it is on disk (fsynced) and in the journal.

    `to` addresses it to agents (or `("all",)`). An `alert` whose text matches an open alert
    is not written: the result names the open one (`duplicate_of`) and counts the sighting.
    `person`: the writer is a reviewer (a person with a key), not an agent (`resolve`).
    `joins`: the hashes of a forked chain's other last entries; the entry is then the chain's
    `merge` entry (`nexus.forks`).
    """
    agent = vault.require_reviewer(agent) if person else vault.require_agent(agent)
    validate_channel(channel)
    if joins:
        type_ = MERGE_TYPE
    else:
        validate_type(type_)
    acks = tuple(dict.fromkeys(validate_id(a) for a in acks))
    if type_ == "ack" and not acks:
        raise UsageError("an `ack` entry needs the id it acknowledges", "pass --ack ID")
    if time is not None and not TIME_RE.fullmatch(time):
        raise UsageError(f"invalid entry time {time!r}", "use UTC like 2026-11-29T15:20:01.123Z")
    recipients = validate_recipients(to, agent, vault.known_agents()) if to else ()
    if recipients and log != "live":
        raise UsageError("only live-log entries can be addressed", "drop --to")
    summary, body, found = prepare_text(vault, summary, body, identifiers={"channel": channel})
    warnings = unknown_acks(vault, acks) if acks else []
    from vaultmem.nexus import signing

    signer = signing.signer_for(vault, agent)
    if signer is None and vault.config.log.require_signatures:
        who = "reviewer" if person else "agent"
        raise SigningKeyMissingError(
            f"{who} {agent} has no signing key on this machine, and this vault refuses unsigned entries",
            f"create one with: vaultmem keys create --{who} {agent}",
        )
    path = log_file(vault, log)
    # every state path this append touches is checked before anything is written, once
    journal = journal_path(vault, log)
    heads_file = heads_path(vault, log)
    timeout = vault.config.log.lock_timeout
    extra = dict(extra or {})
    if joins:
        extra["merges"] = list(joins)
    lock = lock_for(vault, log)
    commit_file = commit.commit_path(lock)
    state = commit.open_state(commit_file)  # one descriptor for the ticket and the commit
    try:
        with exclusive(lock, timeout, what=f"{path.name}"):
            if type_ == "alert" and log == "live":
                # decided under the log's lock: two agents raising the same alert at once get one
                from vaultmem.nexus.sightings import check_repeat

                seen = check_repeat(vault, agent, summary)
                if seen.open is not None:
                    return AppendResult(
                        seen.open,
                        vault.rel(path),
                        found,
                        tuple(warnings),
                        duplicate_of=seen.open.id,
                        seen_again=seen.count,
                    )
                if seen.resolved is not None:
                    extra["reraises"] = seen.resolved
            heads = current_heads(vault, log, path=path, where=heads_file)
            device = signer.device if signer else ""
            chain = f"{agent}.{device}" if device else agent
            last_seq, last_hash = heads.get(chain, [0, None])
            seq = int(last_seq) + 1
            entry = Entry(
                id=entry_id(agent, seq, log, device),
                agent=agent,
                seq=seq,
                time=time or clock.stamp_ms(),
                channel=channel,
                type=type_,
                summary=summary,
                body=body,
                acks=acks,
                to=recipients,
                extra=extra,
                log=log,
                prev=last_hash,
                key=signer.key_id if signer else None,
                heads=anchors(heads, chain),
            )
            digest = entry.compute_hash()
            entry = evolve(entry, hash=digest, sig=signer.sign(digest) if signer else None)
            # written, not yet durable: the log, then its journal line, then the ticket that
            # says both are in their files (core/commit.py)
            _write_entry(vault, log, path, entry)
            wrote = _write_journal(journal, entry)
            ticket = commit.take_ticket(commit_file, state)
            heads[chain] = [seq, digest]
            save_heads(vault, log, file_stamp(path), heads, heads_file)
        # Durable outside the log's lock: the next writers write meanwhile, and one fsync of the
        # log and the journal (by whichever writer leads the batch) covers them all.
        files = [path, journal] if wrote else [path]
        commit.make_durable(commit_file, ticket, files, timeout, what=path.name, fd=state)
    finally:
        os.close(state)
    if signer is not None:
        _remember_signature(vault, entry, signer)
    return AppendResult(entry, vault.rel(path), found, tuple(warnings))


def _remember_signature(vault: Vault, entry: Entry, signer: Any) -> None:
    """This machine has just made the entry's signature: the memo of checked signatures
    (`nexus/memo.py`) says it is good, so the next pack that shows the entry (the agent's own
    recent entries, on every read) need not load cryptography to check it again. The line is
    keyed with this machine's secret, as verify's own are; written without fsync: a line lost
    in a power cut only means one check more."""
    from vaultmem.core.errors import VaultmemError
    from vaultmem.core.fsio import append_line
    from vaultmem.nexus.memo import MEMO, memo_line

    secret = seal.secret(create=False)
    if secret is None or entry.sig is None:
        return
    line = memo_line(secret, entry.hash, entry.key, signer.public_b64(), entry.sig)
    with contextlib.suppress(VaultmemError, OSError):  # then it is checked when next shown
        append_line(vault.state(*MEMO), f"{line}\n".encode("ascii"))


ANCHOR_HEX = 16  # hex digits of an anchored head's hash (64 bits)


def anchors(heads: dict[str, list[Any]], writer: str) -> dict[str, list[Any]]:
    """The other chains' heads as this writer's chain sees them, to sign into its entry: anyone
    who later drops or rewrites one of those entries breaks a signature they cannot remake
    (docs/FORMAT.md, "Anchored heads")."""
    out: dict[str, list[Any]] = {}
    for chain, (seq, digest) in sorted(heads.items()):
        if chain != writer and isinstance(digest, str) and digest.startswith("sha256:"):
            out[chain] = [int(seq), digest[7 : 7 + ANCHOR_HEX]]
    return out


ACK_WINDOW = 5000  # entries searched back for an acked id (acks are about recent entries)


def unknown_acks(vault: Vault, acks: tuple[str, ...]) -> list[str]:
    """Warnings for acked ids not found among the recent entries (an ack is still written)."""
    from vaultmem.nexus import reading  # here: only an ack looks back through the log

    wanted = set(acks)
    for name in ("decisions",) if all(is_decision(a) for a in wanted) else LOGS:
        window = ACK_WINDOW if name == "live" else 1 << 30
        for n, e in enumerate(reading.iter_reverse(log_file(vault, name)), 1):
            wanted.discard(e.id)
            if not wanted or n >= window:
                break
        if not wanted:
            break
    if wanted and any(not is_decision(a) for a in wanted):
        # an open item can be older than the window (a buried handoff): the index knows it
        from vaultmem.nexus import coord

        wanted -= set(coord.load(vault).items)
    return [
        f"--ack {a}: no such entry among the last {ACK_WINDOW} entries (written anyway)"
        for a in acks
        if a in wanted
    ]


def _write_entry(vault: Vault, log: str, path: Path, entry: Entry) -> None:
    block = render(entry).encode("utf-8")
    if not append_unsynced(path, block, create=False):
        # someone deleted the file: start it again from the template (never overwrites)
        from vaultmem.core.fsio import create_exclusive
        from vaultmem.core.templates import template

        create_exclusive(path, template(f"nexus/{path.name}"))
        append_unsynced(path, block)


def _write_journal(journal: Path, entry: Entry) -> bool:
    """Append the entry's journal line (not fsynced: the group commit does it), after a
    newline when a power cut tore the last line; False when there is no secret to seal with
    (a journal line that would never be read)."""
    line = seal.line(journal, entry.full_dict())
    if line is None:
        return False
    append_unsynced(journal, line, line=True)
    return True
