"""`verify`: every entry's hash, signature and chain in both logs, as a report that lists every
problem (never only the first), and the cheap tail check `status` runs.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any

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
