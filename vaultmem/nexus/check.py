"""Integrity of the signed logs: `verify` (a report, never the first error only), `repair`
(restore from the journal, set torn text aside) and `rotate` (move old entries to monthly
archives without breaking any chain).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from vaultmem.core.fsio import append_durable, atomic_write
from vaultmem.core.locking import exclusive
from vaultmem.core.vault import Vault
from vaultmem.nexus import entry, log

PROBLEM_KINDS = (
    "edited",  # hash does not match the entry's text: changed after it was written
    "forged",  # signature invalid, or made with a key that is not the agent's
    "unsigned",  # no signature while the vault requires them
    "unknown-key",  # signed with a key no keys.md lists
    "missing",  # a sequence gap, or an entry the journal has and the files do not
    "reordered",  # an agent's entry stands before one it follows
    "broken-chain",  # prev does not match the hash of the agent's previous entry
    "duplicate",  # the same entry twice
    "conflict",  # two different entries with the same id
    "torn",  # an incomplete entry (crash while writing), set aside
    "bad-metadata",  # a metadata comment that does not parse
    "orphan-metadata",  # a metadata comment without a header
    "misplaced",  # a decisions entry in the live log or the reverse
)


@dataclass(frozen=True)
class LogProblem:
    path: str
    kind: str
    message: str
    id: str | None = None
    line: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass(frozen=True)
class VerifyReport:
    checked: dict[str, int]  # vault-relative file -> entries checked
    problems: tuple[LogProblem, ...] = ()

    @property
    def ok(self) -> bool:
        return not self.problems

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "checked": self.checked,
            "problems": [p.to_dict() for p in self.problems],
        }


@dataclass(frozen=True)
class RepairReport:
    actions: tuple[str, ...]
    after: VerifyReport

    def to_dict(self) -> dict[str, Any]:
        return {"actions": list(self.actions), "after": self.after.to_dict()}


@dataclass(frozen=True)
class RotateResult:
    moved: int
    files: dict[str, int] = field(default_factory=dict)  # archive file -> entries moved there
    kept: int = 0

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


# --- verify -------------------------------------------------------------------------------------


def _verify_log(
    vault: Vault, log_name: str, keys: dict[str, Any]
) -> tuple[dict[str, int], list[LogProblem]]:
    from vaultmem.nexus import signing

    problems: list[LogProblem] = []
    checked: dict[str, int] = {}
    located: list[tuple[str, entry.Entry]] = []
    require = vault.config.log.require_signatures
    for path in log.chain_files(vault, log_name):
        rel = vault.rel(path)
        parsed = entry.read_file(path)
        checked[rel] = len(parsed.entries)
        for frag in parsed.fragments:
            what = {
                "torn": "an incomplete entry (a write was cut short); it is not read as an entry",
                "bad-metadata": "an entry whose metadata comment does not parse",
                "orphan-metadata": "a metadata comment with no entry header above it",
            }[frag.kind]
            problems.append(
                LogProblem(
                    rel,
                    frag.kind,
                    f"{what} (lines {frag.line_start}-{frag.line_end})",
                    None,
                    frag.line_start,
                )
            )
        located += [(rel, e) for e in parsed.entries]

    all_ids = {e.id for _rel, e in located}  # damaged ones too: they are reported, not missing
    good: list[tuple[str, entry.Entry]] = []
    for rel, e in located:

        def bad(kind: str, message: str, rel: str = rel, e: entry.Entry = e) -> None:
            problems.append(LogProblem(rel, kind, message, e.id, e.line_start))

        if e.log != log_name:
            bad("misplaced", f"a {e.log} entry in the {log_name} log")
        if e.compute_hash() != e.hash:
            bad("edited", f"{e.id} was changed after it was written (its hash no longer matches)")
            continue
        if e.id != entry.entry_id(e.agent, e.seq, e.log):
            bad("forged", f"{e.id} does not match its agent and sequence number")
            continue
        if not e.sig or not e.key:
            if require:
                bad("unsigned", f"{e.id} is not signed, and this vault requires signatures")
        else:
            pk = keys.get(e.key)
            if pk is None:
                bad(
                    "unknown-key",
                    f"{e.id} is signed with key {e.key}, which no agents/*/keys.md lists",
                )
                continue
            if pk.agent != e.agent:
                bad(
                    "forged",
                    f"{e.id} claims to be by {e.agent} but is signed with {pk.agent}'s key {e.key}",
                )
                continue
            if not signing.verify_signature(pk.public, e.hash, e.sig):
                bad(
                    "forged",
                    f"{e.id}: the signature does not match (not made with {e.agent}'s key {e.key})",
                )
                continue
        good.append((rel, e))

    by_id: dict[str, entry.Entry] = {}
    chains: dict[str, dict[int, entry.Entry]] = defaultdict(dict)
    last_seq: dict[str, int] = {}
    for rel, e in good:
        seen = by_id.get(e.id)
        if seen is not None:
            if seen.hash == e.hash:
                problems.append(
                    LogProblem(
                        rel, "duplicate", f"{e.id} appears more than once", e.id, e.line_start
                    )
                )
            else:
                problems.append(
                    LogProblem(
                        rel,
                        "conflict",
                        f"two different entries carry the id {e.id}",
                        e.id,
                        e.line_start,
                    )
                )
            continue
        by_id[e.id] = e
        chains[e.agent][e.seq] = e
        if e.seq < last_seq.get(e.agent, 0):
            problems.append(
                LogProblem(
                    rel,
                    "reordered",
                    f"{e.id} stands after {e.agent}.{last_seq[e.agent]} (out of order)",
                    e.id,
                    e.line_start,
                )
            )
        last_seq[e.agent] = max(last_seq.get(e.agent, 0), e.seq)

    journal = {e.id: e for e in log.read_journal(vault, log_name)}
    live_rel = vault.rel(log.log_file(vault, log_name))
    reported_missing: set[str] = set()
    for agent, chain in sorted(chains.items()):
        top = max(chain)
        for seq in range(1, top + 1):
            cur = chain.get(seq)
            if cur is None:
                mid = entry.entry_id(agent, seq, log_name)
                if mid in all_ids:
                    continue  # present but damaged: reported above
                hint = " (the journal has it: run vaultmem repair)" if mid in journal else ""
                problems.append(
                    LogProblem(
                        live_rel,
                        "missing",
                        f"{mid} is missing: {agent}'s sequence jumps over it{hint}",
                        mid,
                    )
                )
                reported_missing.add(mid)
                continue
            before = chain.get(seq - 1)
            expected = None if seq == 1 else (before.hash if before else cur.prev)
            if cur.prev != expected:
                problems.append(
                    LogProblem(
                        live_rel,
                        "broken-chain",
                        f"{cur.id} does not follow {agent}'s previous entry (prev hash mismatch)",
                        cur.id,
                        cur.line_start,
                    )
                )
    present = all_ids
    for mid, je in journal.items():
        if (
            mid not in present
            and mid not in reported_missing
            and not any(p.id == mid for p in problems)
        ):
            problems.append(
                LogProblem(
                    live_rel,
                    "missing",
                    f"{mid} ({je.time}, {je.agent}: {je.summary[:60]}) was appended but is not in the log (run vaultmem repair)",
                    mid,
                )
            )
    return checked, problems


def verify(vault: Vault) -> VerifyReport:
    """Check every entry's hash, signature and chain in both logs; report every problem."""
    from vaultmem.nexus import signing

    keys = signing.public_keys(vault)
    checked: dict[str, int] = {}
    problems: list[LogProblem] = []
    for name in entry.LOGS:
        c, p = _verify_log(vault, name, keys)
        checked.update(c)
        problems += p
    return VerifyReport(checked, tuple(problems))


# --- repair -------------------------------------------------------------------------------------


def _quarantine(vault: Vault, rel: str, text: str) -> str:
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
    dest = vault.state_dir / "quarantine" / f"{Path(rel).stem}-{stamp}.md"
    dest.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(dest, text)
    return vault.rel(dest)


def _repair_log(vault: Vault, log_name: str) -> list[str]:
    actions: list[str] = []
    journal = {e.id: e for e in log.read_journal(vault, log_name)}
    order = {mid: n for n, mid in enumerate(journal)}  # append order breaks time ties
    target = log.log_file(vault, log_name)
    with exclusive(log.lock_for(vault, log_name), vault.config.log.lock_timeout, what=target.name):
        present: set[str] = set()
        for path in log.chain_files(vault, log_name):
            rel = vault.rel(path)
            try:
                data = path.read_bytes()
            except FileNotFoundError:
                continue
            parsed = entry.parse_bytes(data)
            cuts: list[tuple[int, int, bytes]] = []  # (start, end, replacement)
            for frag in parsed.fragments:
                where = _quarantine(vault, rel, frag.text)
                cuts.append((frag.byte_start, frag.byte_end, b""))
                actions.append(
                    f"set aside {frag.kind} text at {rel} lines {frag.line_start}-{frag.line_end} (saved to {where})"
                )
            for e in parsed.entries:
                present.add(e.id)
                j = journal.get(e.id)
                if e.compute_hash() != e.hash and j is not None and j.compute_hash() == j.hash:
                    block = entry.render(j).encode("utf-8")[1:]
                    cuts.append((e.byte_start, e.byte_end, block))
                    actions.append(f"restored edited entry {e.id} in {rel} from the journal")
            if path == target:
                missing = sorted(
                    (
                        j
                        for mid, j in journal.items()
                        if mid not in present and j.compute_hash() == j.hash
                    ),
                    key=lambda j: (j.time, order[j.id]),
                )
                # present ids in other files were collected before: the live file comes last
                for j in missing:
                    rank = (j.time, order[j.id])
                    at = next(
                        (
                            e.byte_start
                            for e in parsed.entries
                            if (e.time, order.get(e.id, len(order))) > rank
                        ),
                        None,
                    )
                    if at is None:
                        cuts.append((len(data), len(data), entry.render(j).encode("utf-8")))
                    else:
                        cuts.append((at, at, entry.render(j).encode("utf-8")[1:] + b"\n"))
                    actions.append(
                        f"restored missing entry {j.id} ({j.time}, {j.agent}) into {rel} from the journal"
                    )
            if cuts:
                out = bytearray()
                pos = 0
                for start, end, repl in sorted(cuts, key=lambda c: (c[0], c[1])):
                    out += data[pos:start] + repl
                    pos = max(pos, end)
                out += data[pos:]
                atomic_write(path, bytes(out))
    return actions


def repair(vault: Vault) -> RepairReport:
    actions: list[str] = []
    for name in entry.LOGS:
        actions += _repair_log(vault, name)
    return RepairReport(tuple(actions), verify(vault))


# --- rotate -------------------------------------------------------------------------------------


def _archive_header(month: str) -> str:
    return (
        "---\ntags:\n  - vaultmem/log-archive\n---\n\n"
        f"# Live context, {month}\n\n"
        "Entries moved here from [[live-context]] by `vaultmem log rotate`. Append-only: never edit.\n"
    )


def rotate(vault: Vault, *, keep_days: int = 30, now: datetime | None = None) -> RotateResult:
    """Move live-log entries older than `keep_days` to nexus/archive/live-context-YYYY-MM.md."""
    from vaultmem.core.errors import UsageError

    if keep_days < 0:
        raise UsageError("--keep-days must be 0 or more", "e.g. --keep-days 30")
    cutoff = (now or datetime.now(UTC)) - timedelta(days=keep_days)
    cut = cutoff.isoformat(timespec="milliseconds").replace("+00:00", "Z")
    path = vault.live_context
    with exclusive(log.lock_for(vault, "live"), vault.config.log.lock_timeout, what=path.name):
        heads = log.current_heads(vault, "live")
        data = path.read_bytes()
        parsed = entry.parse_bytes(data)
        old = [e for e in parsed.entries if e.time < cut]
        if not old:
            return RotateResult(0, {}, len(parsed.entries))
        by_month: dict[str, list[entry.Entry]] = defaultdict(list)
        for e in old:
            by_month[e.time[:7]].append(e)
        files: dict[str, int] = {}
        for month, entries in sorted(by_month.items()):
            dest = vault.path(f"nexus/archive/live-context-{month}.md")
            if not dest.exists():
                dest.parent.mkdir(parents=True, exist_ok=True)
                atomic_write(dest, _archive_header(month))
            already = {e.id for e in entry.read_file(dest).entries}
            chunk = b"".join(
                b"\n" + data[e.byte_start : e.byte_end] for e in entries if e.id not in already
            )
            if chunk:
                append_durable(dest, chunk)
            files[vault.rel(dest)] = len(entries)
        out = bytearray()
        pos = 0
        for e in old:
            start = (
                e.byte_start - 1
                if e.byte_start > 0
                and data[e.byte_start - 1 : e.byte_start] == b"\n"
                and data[e.byte_start - 2 : e.byte_start - 1] == b"\n"
                else e.byte_start
            )
            out += data[pos:start]
            pos = e.byte_end
        out += data[pos:]
        atomic_write(path, bytes(out))
        log.save_heads(vault, "live", log.file_stamp(path), heads)
    return RotateResult(len(old), files, len(parsed.entries) - len(old))


def tail_problems(vault: Vault, *, window: int = 1 << 16) -> list[LogProblem]:
    """Cheap check for `status`: torn or broken blocks in the last `window` bytes of each log
    (no signatures, no chains: that is `verify`'s job)."""
    problems: list[LogProblem] = []
    for name in entry.LOGS:
        path = log.log_file(vault, name)
        try:
            with open(path, "rb") as fh:
                size = fh.seek(0, 2)
                start = max(0, size - window)
                fh.seek(start)
                data = fh.read()
        except OSError:
            continue
        if start:
            cut = data.find(entry.HEADER_START)
            if cut < 0:
                continue
            start, data = start + cut + 1, data[cut + 1 :]
        for frag in entry.parse_bytes(data, base_offset=start).fragments:
            problems.append(
                LogProblem(
                    vault.rel(path),
                    frag.kind,
                    f"{frag.kind} text near the end of the log (run vaultmem verify, then vaultmem repair)",
                )
            )
    return problems
