"""`verify`: every entry's hash, signature and chain in both logs, as a report that lists every
problem (never only the first), and the cheap tail check `status` runs.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from vaultmem.core.records import field, record
from vaultmem.core.vault import Vault
from vaultmem.nexus import entry, log
from vaultmem.nexus.memo import SignatureMemo
from vaultmem.nexus.shown import outside_links
from vaultmem.nexus.verify_files import (
    FileScan,
    LogMemo,
    LogProblem,
    Seen,
    context,
    read_files,
    scan_files,
)

GAP_DETAIL = 20  # a gap longer than this is reported as one range

PROBLEM_KINDS = (
    "edited",  # hash does not match the entry's text: changed after it was written
    "forged",  # signature invalid, or made with a key that is not the agent's
    "unsigned",  # no signature while the vault requires them
    "unknown-key",  # signed with a key no keys.md lists
    "unapproved-key",  # a key neither signed by the agent's earlier key nor approved by a person
    "bad-keys-file",  # a keys.md that cannot be read
    "missing",  # a sequence gap, or an entry the journal has and the files do not
    "reordered",  # an agent's entry stands before one it follows
    "broken-chain",  # prev does not match the hash of the agent's previous entry
    "duplicate",  # the same entry twice
    "conflict",  # two different entries with the same id
    "torn",  # an incomplete entry (crash while writing), set aside
    "bad-metadata",  # a metadata comment that does not parse
    "orphan-metadata",  # a metadata comment without a header
    "misplaced",  # a decisions entry in the live log or the reverse
    "symlink-outside",  # a file packs read (identity, MEMORY.md, ...) is a link out of the vault
    "conflict-markers",  # git left <<<<<<< ======= >>>>>>> lines in a file vaultmem owns
    "pending-trust",  # a security setting or key this machine has not accepted (nexus/trust.py)
)


@record
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


@record(frozen=False)
class _Chains:
    """Every file's good entries, indexed: the first entry of each id (`by_id`), each chain's
    entries by sequence number, the second entries of forked ids; and the entries present but
    not good: their seqs per chain (`damaged`: reported, never counted missing) and ids."""

    by_id: dict[str, Seen] = field(default_factory=dict)
    chains: dict[str, dict[int, Seen]] = field(default_factory=lambda: defaultdict(dict))
    forked: dict[str, list[tuple[str, Seen]]] = field(default_factory=lambda: defaultdict(list))
    damaged: dict[str, set[int]] = field(default_factory=lambda: defaultdict(set))
    bad_ids: set[str] = field(default_factory=set)


@record(frozen=False)
class _Report:
    """The problems of one log, in the order found, and the ids reported missing."""

    live_rel: str
    problems: list[LogProblem] = field(default_factory=list)
    reported_missing: set[str] = field(default_factory=set)

    def missing(self, mid: str, message: str) -> None:
        self.problems.append(LogProblem(self.live_rel, "missing", message, mid))
        self.reported_missing.add(mid)


def _verify_log(
    vault: Vault, log_name: str, keys: dict[str, Any], memo: SignatureMemo | None = None
) -> tuple[dict[str, int], list[LogProblem]]:
    """One log's checks, phase by phase: each file on its own (or what the file memo kept of
    it), then across files: chains and order, sequence gaps, forks, anchored heads, the
    journal. When no file, nor the journal, nor the keys changed since the last run, its
    report is the last run's (`LogMemo`)."""
    # the journal before the files: an append writes the log, then the journal, so an entry
    # journaled before the files are read is in them unless it was really lost (read the
    # other way round, an append landing in between would look missing)
    journal_data = log.journal_bytes(vault, log_name)
    files = read_files(vault, log_name)
    ctx = context(keys, vault.config.log.require_signatures, log_name)
    whole = LogMemo(vault, log_name, ctx, journal_data, files, use=memo is not None and memo.use)
    kept = whole.load()
    if kept is not None:
        return kept
    journal = {e.id: e for e in log.read_journal(vault, log_name, journal_data)}
    scans = scan_files(vault, files, log_name, keys, memo, ctx)
    report = _Report(vault.rel(log.log_file(vault, log_name)))
    report.problems += [p for s in scans for p in s.fragments]
    report.problems += [p for s in scans for p in s.problems]
    index = _index_chains(scans, log_name, report)
    _check_sequences(index, journal, log_name, report)
    report.problems += _check_forks(report.live_rel, index.chains, index.forked)
    _check_anchors(scans, index, journal, log_name, report)
    _check_journal(journal, index, report)
    checked = {s.rel: s.checked for s in scans}
    whole.save(checked, report.problems)
    return checked, report.problems


def _index_chains(scans: list[FileScan], log_name: str, report: _Report) -> _Chains:
    """Phase 2: every good entry into its chain, in file order; a second copy of an entry is a
    duplicate, a second entry under one id a fork, an entry before one it follows reordered."""
    index = _Chains()
    for scan in scans:
        for mid, seq in scan.bad:  # present, but failed their own checks
            index.bad_ids.add(mid)
            index.damaged[entry.chain_of(mid)].add(seq)
    last_seq: dict[str, int] = {}
    for scan in scans:
        rel = scan.rel
        for e in scan.good:
            seen = index.by_id.get(e.id)
            if seen is not None:
                if seen.hash == e.hash:
                    report.problems.append(
                        LogProblem(
                            rel,
                            "duplicate",
                            f"{e.id} appears more than once (vaultmem repair removes the copy)",
                            e.id,
                            e.line_start,
                        )
                    )
                else:
                    # a fork (one key writing on two machines): a conflict until a merge joins it
                    index.forked[e.chain].append((rel, e))
                continue
            index.by_id[e.id] = e
            name = e.chain
            index.chains[name][e.seq] = e
            if e.seq < last_seq.get(name, 0):
                report.problems.append(
                    LogProblem(
                        rel,
                        "reordered",
                        f"{e.id} stands after {entry.chain_id(name, last_seq[name], log_name)} "
                        "(out of order; vaultmem repair puts the file back in order)",
                        e.id,
                        e.line_start,
                    )
                )
            last_seq[name] = max(last_seq.get(name, 0), e.seq)
    return index


def _check_sequences(
    index: _Chains, journal: dict[str, entry.Entry], log_name: str, report: _Report
) -> None:
    """Phase 3: each chain's sequence numbers without gaps, each entry's prev the hash of the
    one before it."""
    for agent, chain in sorted(index.chains.items()):  # `agent` names a chain: ella, ella.k2f7
        # walk the sequence numbers present, never a range: a forged seq of 10**12 costs
        # nothing, and a gap is reported once, as a range, when it is long
        expected_next = 1
        damaged = index.damaged[agent]
        for seq in sorted(chain):
            if seq > expected_next:
                gap = [
                    s
                    for s in range(expected_next, min(seq, expected_next + GAP_DETAIL))
                    if s not in damaged
                ]
                for s in gap:
                    mid = entry.chain_id(agent, s, log_name)
                    hint = " (the journal has it: run vaultmem repair)" if mid in journal else ""
                    report.missing(mid, f"{mid} is missing: {agent}'s sequence jumps over it{hint}")
                if seq - expected_next > GAP_DETAIL:
                    first = entry.chain_id(agent, expected_next + GAP_DETAIL, log_name)
                    last = entry.chain_id(agent, seq - 1, log_name)
                    report.missing(
                        first,
                        f"{first} … {last} are missing ({seq - expected_next - GAP_DETAIL:,} "
                        f"more entries): {agent}'s sequence jumps to {seq}",
                    )
            cur = chain[seq]
            before = chain.get(seq - 1)
            expected = None if seq == 1 else (before.hash if before else cur.prev)
            if cur.prev != expected and agent not in index.forked:
                report.problems.append(
                    LogProblem(
                        report.live_rel,
                        "broken-chain",
                        f"{cur.id} does not follow {agent}'s previous entry (prev hash mismatch)",
                        cur.id,
                        cur.line_start,
                    )
                )
            expected_next = seq + 1


def _check_anchors(
    scans: list[FileScan],
    index: _Chains,
    journal: dict[str, entry.Entry],
    log_name: str,
    report: _Report,
) -> None:
    """Phase 5: anchored heads. Every signed entry names the other agents' chain heads it saw,
    so a dropped newest entry or a rewritten chain shows even on a fresh clone with no journal."""
    for scan in scans:
        rel = scan.rel
        for e in scan.good:
            for other, (seq, prefix) in sorted(e.heads.items()):
                _check_anchor(rel, e, other, seq, prefix, index, journal, log_name, report)


def _check_anchor(
    rel: str,
    e: Seen,
    other: str,
    seq: int,
    prefix: str,
    index: _Chains,
    journal: dict[str, entry.Entry],
    log_name: str,
    report: _Report,
) -> None:
    target = index.chains.get(other, {}).get(seq)
    if target is not None and not target.hash.removeprefix("sha256:").startswith(prefix):
        # on a forked chain the entry seen may be the other branch's
        target = next(
            (
                f
                for _r, f in index.forked.get(other, [])
                if f.seq == seq and f.hash.removeprefix("sha256:").startswith(prefix)
            ),
            target,
        )
    if target is None:
        tid = entry.chain_id(other, seq, log_name)
        if tid in report.reported_missing or seq in index.damaged[other]:
            return
        end = max(index.chains[other]) if index.chains.get(other) else 0
        report.missing(
            tid,
            f"{tid} is missing: {e.id} saw {other}'s chain reach it, but the log ends "
            f"at {other}.{end}" + (" (run vaultmem repair)" if tid in journal else ""),
        )
    elif not target.hash.removeprefix("sha256:").startswith(prefix):
        tid = entry.chain_id(other, seq, log_name)
        report.problems.append(
            LogProblem(
                rel,
                "edited",
                f"{tid} is not the entry {e.id} saw when it was written "
                "(its anchored hash differs): the chain was rewritten",
                tid,
                target.line_start,
            )
        )


def _check_journal(journal: dict[str, entry.Entry], index: _Chains, report: _Report) -> None:
    """Phase 6: the journal holds what this machine appended. An entry with the same id but
    another hash was replaced after it was written (re-signed, or with a key that is not
    ours); one the files do not have at all was lost."""
    for mid, je in journal.items():
        found = index.by_id.get(mid)
        if found is not None and je.hash and found.hash != je.hash:
            if any(f.hash == je.hash for _r, f in index.forked.get(entry.chain_of(mid), [])):
                continue  # this machine's branch of a fork
            report.problems.append(
                LogProblem(
                    report.live_rel,
                    "edited",
                    f"{mid} differs from the entry this machine appended ({je.time}); "
                    "run vaultmem repair to put the original back",
                    mid,
                    found.line_start,
                )
            )
    reported = {p.id for p in report.problems}
    for mid, je in journal.items():
        present = mid in index.by_id or mid in index.bad_ids
        if not present and mid not in report.reported_missing and mid not in reported:
            report.problems.append(
                LogProblem(
                    report.live_rel,
                    "missing",
                    f"{mid} ({je.time}, {je.agent}: {je.summary[:60]}) was appended but is not in the log (run vaultmem repair)",
                    mid,
                )
            )


def _check_forks(
    live_rel: str,
    chains: dict[str, dict[int, Seen]],
    forked: dict[str, list[tuple[str, Seen]]],
) -> list[LogProblem]:
    """A chain with two entries under one id is a graph: each entry must follow an entry one
    sequence number below, and a signed merge entry must join the branches (one last entry)."""
    from vaultmem.nexus.forks import merged, tips

    problems: list[LogProblem] = []
    for name, extra in sorted(forked.items()):
        every = [*chains[name].values(), *(e for _r, e in extra)]
        at: dict[int, set[str]] = defaultdict(set)
        for e in every:
            at[e.seq].add(e.hash)
        hashes = {e.hash for e in every}
        for e in every:
            follows = e.prev is None if e.seq == 1 else e.prev in at[e.seq - 1]
            lost = [h for h in merged(e) if h not in hashes]
            if not follows or lost:
                problems.append(
                    LogProblem(
                        live_rel,
                        "broken-chain",
                        f"{e.id} does not follow an entry of {name}'s chain"
                        + (" (it joins an entry that is not there)" if lost else ""),
                        e.id,
                        e.line_start,
                    )
                )
        if len(tips(every)) > 1:
            for rel, e in extra:
                problems.append(
                    LogProblem(
                        rel,
                        "conflict",
                        f"two different entries carry the id {e.id}: {name}'s chain forked "
                        "(its key wrote on two machines); join it with: vaultmem repair "
                        "--merge-forks",
                        e.id,
                        e.line_start,
                    )
                )
    return problems


def verify(vault: Vault, *, full: bool = False) -> VerifyReport:
    """Check every entry's hash, signature and chain in both logs; report every problem.

    Signatures this machine already checked are remembered (`SignatureMemo`), and so is what was
    found in the bytes of a file that did not change (`verify_files.FileMemo`); `full`
    checks everything again."""
    from vaultmem.nexus import keyring, signing

    keys, key_files = keyring.keys_report(vault)
    checked: dict[str, int] = {}
    problems: list[LogProblem] = [
        LogProblem(kf.path, "bad-keys-file", f"{kf.path}: {kf.message}; its key lines are read")
        for kf in key_files
    ]
    for key in keys.values():
        if not key.approved:
            rel = vault.rel(signing.keys_file(vault, key.agent))
            problems.append(
                LogProblem(
                    rel,
                    "unapproved-key",
                    f"{key.key_id} of {key.agent} is not approved ({key.approval}); "
                    f"a reviewer approves it with: vaultmem keys approve {key.key_id} "
                    f"--reviewer {key.reviewer or 'NAME'}",
                    key.key_id,
                    key.line,
                )
            )
    problems += [
        LogProblem(rel, "symlink-outside", f"{msg}: not read") for rel, msg in outside_links(vault)
    ]
    from vaultmem.nexus.trust import changes

    problems += [
        LogProblem(c.path, "pending-trust", f"{c.message}; see: vaultmem trust")
        for c in changes(vault)
    ]
    memo = SignatureMemo(vault, use=not full)
    for name in entry.LOGS:
        c, p = _verify_log(vault, name, keys, memo)
        checked.update(c)
        problems += p
    memo.save()
    from vaultmem.nexus.digests import verify_digests, verify_profiles  # signed notes

    for check in (verify_digests, verify_profiles):
        c, p = check(vault, keys)
        checked.update(c)
        problems += p
    from vaultmem.nexus.state import CONFLICT_HINT, find_conflict_markers

    problems += [
        LogProblem(m.path, "conflict-markers", CONFLICT_HINT, None, m.line)
        for m in find_conflict_markers(vault)
    ]
    return VerifyReport(checked, tuple(problems))


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
