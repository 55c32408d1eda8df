"""`verify`'s first phase: each file of a log checked on its own (its fragments, each entry's
hash, id, signature and key), and the file memo that keeps what it found while the file's
bytes are unchanged, so a year of archives is not parsed and hashed again on every run. The
checks across files (chains, gaps, forks, anchored heads, the journal) are `nexus/verify.py`'s,
over the `Seen` records this phase returns.

The logs only grow at their end (an archive, written by `log rotate`, not at all). After a
file is checked, the memo records, per file, where its last whole entry ends, a digest of the
bytes up to there, a digest of everything else the per-file checks depend on (the keys with
their approval, whether signatures are required, the log, the memo's format), what was found
in those bytes and what the checks across files need of their entries. The next `verify`
hashes the file's bytes up to the recorded end (BLAKE2b, far cheaper than parsing); when both
digests match it takes the record for them and parses only what follows (new appends).
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vaultmem.core.records import record

try:  # the built-in module hashlib itself takes blake2b from (no OpenSSL load)
    from _blake2 import blake2b
except ImportError:  # pragma: no cover - another Python implementation
    from hashlib import blake2b

from vaultmem.core import seal
from vaultmem.core.errors import VaultmemError
from vaultmem.core.vault import Vault
from vaultmem.nexus import entry
from vaultmem.nexus.entry import MERGE_TYPE
from vaultmem.nexus.forks import MERGES
from vaultmem.nexus.shown import entry_problem

if TYPE_CHECKING:
    from vaultmem.nexus.memo import SignatureMemo

FORMAT = 1  # bump when what a record holds, or what the per-file checks check, changes


@record
class LogProblem:
    path: str
    kind: str
    message: str
    id: str | None = None
    line: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@record
class Seen:
    """What the checks across files need of one entry that passed its own checks: the parsed
    entry's fields, or the memo's record of them (`extra` holds only `merges`)."""

    id: str
    chain: str  # entry.chain_of(id)
    seq: int
    hash: str
    prev: str | None
    line_start: int
    heads: dict[str, Any]
    type: str
    time: str
    extra: dict[str, Any]

    @classmethod
    def of(cls, e: entry.Entry) -> Seen:
        merges = e.extra.get(MERGES) if e.type == MERGE_TYPE else None
        return cls(e.id, entry.chain_of(e.id), e.seq, e.hash or "", e.prev, e.line_start,
                   e.heads, e.type, e.time, {MERGES: merges} if merges is not None else {})  # fmt: skip

    def to_list(self) -> list[Any]:
        return [self.id, self.chain, self.seq, self.hash, self.prev, self.line_start, self.heads,
                self.type, self.time, self.extra]  # fmt: skip


@record(frozen=False)
class FileScan:
    """One file of a log, checked on its own: its fragments, each entry's own checks, the
    entries that passed (`good`), and the id and seq of each entry that did not (`bad`: it is
    reported, never counted missing)."""

    rel: str
    checked: int
    fragments: list[LogProblem]
    problems: list[LogProblem]
    good: list[Seen]
    bad: list[tuple[str, int]]

    def extend(self, more: FileScan) -> None:
        self.checked += more.checked
        self.fragments += more.fragments
        self.problems += more.problems
        self.good += more.good
        self.bad += more.bad

    def to_json(self) -> dict[str, Any]:
        return {
            "checked": self.checked,
            "fragments": [p.to_dict() for p in self.fragments],
            "problems": [p.to_dict() for p in self.problems],
            "good": [s.to_list() for s in self.good],
            "bad": [[i, s] for i, s in self.bad],
        }

    @classmethod
    def from_json(cls, rel: str, data: Any) -> FileScan | None:
        try:
            return cls(
                rel,
                int(data["checked"]),
                [LogProblem(**p) for p in data["fragments"]],
                [LogProblem(**p) for p in data["problems"]],
                [Seen(*s) for s in data["good"]],
                [(str(i), int(s)) for i, s in data["bad"]],
            )
        except (KeyError, TypeError, ValueError):
            return None


def digest(*parts: bytes | memoryview) -> str:
    h = blake2b(digest_size=32)
    for part in parts:
        h.update(part)
    return h.hexdigest()


def context(keys: dict[str, Any], require: bool, log_name: str) -> str:
    """A digest of what the per-file checks depend on besides the file's bytes."""
    parts = [f"v{FORMAT}", log_name, "require" if require else "optional"]
    for key_id in sorted(keys):
        pk = keys[key_id]
        parts.append(
            repr((key_id, pk.agent, pk.public, pk.device, pk.approved, pk.approval, pk.reviewer))
        )
    return digest("\n".join(parts).encode("utf-8", "surrogateescape"))


class FileMemo:
    """The sealed record of one log file (`.vaultmem/verified/<log>-<file name>.json`)."""

    def __init__(self, vault: Vault, log_name: str, path: Path, *, use: bool) -> None:
        self.path = vault.state("verified", f"{log_name}-{path.name}.json")
        self.use = use

    def load(self, data: bytes, ctx: str) -> tuple[int, int, FileScan] | None:
        """(bytes covered, lines covered, what was found in them) when the file still starts
        with the bytes the record was made from, in the same context; else None."""
        if not self.use:
            return None
        rec = seal.read(self.path)
        if not isinstance(rec, dict) or rec.get("format") != FORMAT or rec.get("context") != ctx:
            return None
        size, lines = rec.get("size"), rec.get("lines")
        if not isinstance(size, int) or not isinstance(lines, int) or not 0 <= size <= len(data):
            return None
        if rec.get("digest") != digest(memoryview(data)[:size]):
            return None
        scan = FileScan.from_json(str(rec.get("rel")), rec.get("scan"))
        return None if scan is None else (size, lines, scan)

    def save(self, data: bytes, size: int, lines: int, ctx: str, scan: FileScan) -> None:
        if not self.use:
            return
        from vaultmem.core.fsio import replace_cache

        record = {"format": FORMAT, "context": ctx, "rel": scan.rel, "size": size,
                  "lines": lines, "digest": digest(memoryview(data)[:size]), "scan": scan.to_json()}  # fmt: skip
        sealed = seal.dumps(self.path, record)
        if sealed is None:  # no secret to seal with: no memo
            return
        # a memo: a read-only vault still verifies, only slower next time
        with contextlib.suppress(VaultmemError):
            replace_cache(self.path, sealed)


class LogMemo:
    """One log's last report, sealed (`.vaultmem/verified/<log>-report.json`), keyed by a
    digest of the bytes of every file of the log and of the journal, and of the keys: a run
    on unchanged files repeats it without parsing anything."""

    def __init__(
        self,
        vault: Vault,
        log_name: str,
        ctx: str,
        journal_data: bytes,
        files: list[tuple[Path, bytes]],
        *,
        use: bool,
    ) -> None:
        self.path = vault.state("verified", f"{log_name}-report.json")
        self.use = use
        parts = [ctx.encode(), digest(journal_data).encode()]
        for path, data in files:
            parts += [vault.rel(path).encode("utf-8", "surrogateescape"), digest(data).encode()]
        self.key = digest(b"\n".join(parts)) if use else ""

    def load(self) -> tuple[dict[str, int], list[LogProblem]] | None:
        if not self.use:
            return None
        rec = seal.read(self.path)
        if not isinstance(rec, dict) or rec.get("key") != self.key:
            return None
        try:
            checked = {str(k): int(v) for k, v in rec["checked"].items()}
            return checked, [LogProblem(**p) for p in rec["problems"]]
        except (KeyError, TypeError, ValueError, AttributeError):
            return None

    def save(self, checked: dict[str, int], problems: list[LogProblem]) -> None:
        if not self.use:
            return
        from vaultmem.core.fsio import replace_cache

        record = {"key": self.key, "checked": checked, "problems": [p.to_dict() for p in problems]}
        sealed = seal.dumps(self.path, record)
        if sealed is not None:
            with contextlib.suppress(VaultmemError):  # a memo: a read-only vault still verifies
                replace_cache(self.path, sealed)


def read_files(vault: Vault, log_name: str) -> list[tuple[Path, bytes]]:
    """Every file of the log with its bytes (a missing file is empty)."""
    out = []
    for path in vault.chain_files(log_name):
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            data = b""
        except OSError as exc:
            raise VaultmemError(
                f"cannot read {path}: {exc.strerror}", "check its permissions"
            ) from exc
        out.append((path, data))
    return out


def scan_files(
    vault: Vault,
    files: list[tuple[Path, bytes]],
    log_name: str,
    keys: dict[str, Any],
    memo: SignatureMemo | None,
    ctx: str,
) -> list[FileScan]:
    """Phase 1: every file of the log on its own. What the file memo recorded of a file's
    first bytes, when they are unchanged, is taken from it; only the rest is parsed."""
    require = vault.config.log.require_signatures
    use = memo is not None and memo.use
    scans: list[FileScan] = []
    for path, data in files:
        rel = vault.rel(path)
        fmemo = FileMemo(vault, log_name, path, use=use)
        kept = fmemo.load(data, ctx)
        size, lines, scan = kept if kept is not None else (0, 0, None)
        if scan is not None and size == len(data):
            scans.append(scan)  # unchanged: nothing to parse
            continue
        rest, end = _scan_bytes(rel, data, size, lines, log_name, keys, require, memo)
        if scan is None:
            scan = rest
        else:
            scan.extend(rest)
        if end is not None and end != (size, lines):
            fmemo.save(data, end[0], end[1], ctx, scan)
        scans.append(scan)
    return scans


_FRAGMENT_TEXT = {
    "torn": "an incomplete entry (a write was cut short); it is not read as an entry",
    "bad-metadata": "an entry whose metadata comment does not parse",
    "orphan-metadata": "a metadata comment with no entry header above it",
}


def _scan_bytes(
    rel: str,
    data: bytes,
    start: int,
    lines: int,
    log_name: str,
    keys: dict[str, Any],
    require: bool,
    memo: SignatureMemo | None,
) -> tuple[FileScan, tuple[int, int] | None]:
    """The checks of the file's bytes from `start` (line `lines` + 1) on: its fragments, then
    each entry's hash, id, signature and key, and whether it belongs to this log. Also where
    its last whole entry ends (bytes, lines), which a memo may cover; None when the file has
    no entry (nothing worth recording)."""
    parsed = entry.parse_bytes(data[start:], base_offset=start, first_line=lines + 1)
    fragments = [
        LogProblem(
            rel,
            f.kind,
            f"{_FRAGMENT_TEXT[f.kind]} (lines {f.line_start}-{f.line_end})",
            None,
            f.line_start,
        )
        for f in parsed.fragments
    ]
    problems: list[LogProblem] = []
    good: list[Seen] = []
    bad: list[tuple[str, int]] = []
    for e in parsed.entries:
        if e.log != log_name:
            problems.append(
                LogProblem(
                    rel, "misplaced", f"a {e.log} entry in the {log_name} log", e.id, e.line_start
                )
            )
        wrong = entry_problem(e, keys, require=require, memo=memo)
        if wrong is not None:
            kind, message, fatal = wrong
            problems.append(LogProblem(rel, kind, message, e.id, e.line_start))
            if fatal:
                bad.append((e.id, e.seq))
                continue
        good.append(Seen.of(e))
    scan = FileScan(rel, len(parsed.entries), fragments, problems, good, bad)
    if not parsed.entries:
        return scan, None
    last = parsed.entries[-1]
    # the record may cover the bytes up to the last whole entry only if no fragment lies
    # beyond it (a torn tail is parsed again, with what is appended after it)
    if any(f.byte_end > last.byte_end for f in parsed.fragments):
        return scan, None
    return scan, (last.byte_end, last.line_end)
