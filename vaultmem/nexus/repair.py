"""`repair`: restore entries an editor lost or changed from the journal (in time order), set
torn text aside in `.vaultmem/quarantine/`, and put a file a git union merge left out of order
(or with an entry twice) back in its canonical order; then verify again and report what is left.
"""

from __future__ import annotations

import os
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from vaultmem.core.fsio import atomic_write, sweep_temp_files
from vaultmem.core.locking import exclusive
from vaultmem.core.records import record
from vaultmem.core.vault import Vault
from vaultmem.nexus import entry, log
from vaultmem.nexus.verify import VerifyReport, verify


@record
class RepairReport:
    actions: tuple[str, ...]
    after: VerifyReport

    def to_dict(self) -> dict[str, Any]:
        return {"actions": list(self.actions), "after": self.after.to_dict()}


def _quarantine(vault: Vault, rel: str, text: str) -> str:
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
    dest = vault.state("quarantine", f"{Path(rel).stem}-{stamp}.md")
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
        for path in vault.chain_files(log_name):
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


def canonical_order(entries: list[entry.Entry]) -> list[entry.Entry]:
    """The order `repair` writes a log file in: by `(time, id)`, which every clone computes the
    same way (so two machines that repair the same entries write the same bytes), except that
    each chain's entries stand in `seq` order (a clock that went back cannot reorder a chain):
    the places a chain takes in the time order are filled with its entries by `seq`."""
    by_time = sorted(entries, key=lambda e: (e.time, e.id, e.hash))
    by_chain: dict[str, list[entry.Entry]] = {}
    for e in sorted(entries, key=lambda e: (e.seq, e.time, e.hash)):
        by_chain.setdefault(entry.chain_of(e.id), []).append(e)
    taken: dict[str, int] = {}
    out = []
    for e in by_time:
        name = entry.chain_of(e.id)
        out.append(by_chain[name][taken.get(name, 0)])
        taken[name] = taken.get(name, 0) + 1
    return out


_META = re.compile(
    rb'\n<!-- vaultmem \{"v":\d+,"log":"[a-z]+","id":"([^"\\]+)","seq":(\d+),'
    rb'"prev":(?:null|"[^"\\]*"),"hash":"([^"\\]*)"'
)


def _surely_in_order(data: bytes) -> bool:
    """A quick look at the metadata lines alone (a tenth of the cost of parsing the entries):
    True when every chain's `seq` rises through the file and no entry is there twice. False
    means "parse and see" (out of order, or a metadata line this look cannot read)."""
    found = _META.findall(b"\n" + data)
    if len(found) != data.count(b"\n<!-- vaultmem ") + data.startswith(b"<!-- vaultmem "):
        return False
    seen: set[tuple[bytes, bytes]] = set()
    ids: set[bytes] = set()
    top: dict[bytes, int] = {}
    for mid, seq_text, digest in found:
        if (mid, digest) in seen:
            return False
        seen.add((mid, digest))
        if mid in ids:
            continue  # a fork's other branch
        ids.add(mid)
        chain, seq = mid.rsplit(b".", 1)[0], int(seq_text)
        if seq < top.get(chain, 0):
            return False
        top[chain] = seq
    return True


def canonicalize_log(vault: Vault, log_name: str) -> list[str]:
    """Union merges keep both machines' lines but may interleave them so that a chain's entry
    stands before one it follows, or glue the same entry in twice (a criss-cross merge). Such a
    file is rewritten: each identical copy after the first is dropped and the entries are put in
    `canonical_order`; a file whose chains are in order is left as it is, byte for byte."""
    actions: list[str] = []
    target = log.log_file(vault, log_name)
    with exclusive(log.lock_for(vault, log_name), vault.config.log.lock_timeout, what=target.name):
        for path in vault.chain_files(log_name):
            try:
                data = path.read_bytes()
            except FileNotFoundError:
                continue
            if _surely_in_order(data):
                continue
            entries = list(entry.parse_bytes(data).entries)
            seen: set[tuple[str, str]] = set()
            ids: set[str] = set()
            kept: list[entry.Entry] = []
            dropped: list[entry.Entry] = []
            in_order = True  # within this file: no rewrite can move an entry across files
            top: dict[str, int] = {}
            for e in entries:
                if (e.id, e.hash) in seen:
                    dropped.append(e)
                    continue
                kept.append(e)
                seen.add((e.id, e.hash))
                if e.id in ids:
                    continue  # a fork's other branch: verify walks a forked chain as a graph
                ids.add(e.id)
                name = entry.chain_of(e.id)
                in_order &= e.seq >= top.get(name, 0)
                top[name] = max(top.get(name, 0), e.seq)
            if in_order and not dropped:
                continue
            rel = vault.rel(path)
            order = canonical_order(kept)
            slots = iter(order)
            out = bytearray()
            pos = 0
            gone = {id(e) for e in dropped}
            for n, e in enumerate(entries):
                gap = data[pos : e.byte_start]
                pos = e.byte_end
                if n and not gap.strip():
                    # between two entries: one blank line, as `append` writes it (a union merge
                    # may glue two blocks without it); a person's text stays as it is
                    gap = b"" if id(e) in gone else b"\n"
                if id(e) in gone:
                    # the copy goes with the blank line before it
                    out += gap[:-1] if gap.endswith(b"\n\n") else gap
                    continue
                out += gap + data[(s := next(slots)).byte_start : s.byte_end]
            out += data[pos:]
            if bytes(out) != data:
                atomic_write(path, bytes(out))
                if path == vault.live_context:
                    # the coordination cache trusts the bytes before its last entry when that
                    # entry is still in place: a reorder can keep it in place and still move an
                    # entry across it, so the cache is rebuilt from the files
                    from vaultmem.nexus.coord import index_path

                    index_path(vault).unlink(missing_ok=True)
            for e in dropped:
                actions.append(
                    f"removed a second copy of entry {e.id} from {rel} (a merge glued it in twice)"
                )
            moved = sum(1 for a, b in zip(kept, order, strict=True) if a is not b)
            if moved:
                actions.append(
                    f"put {moved} entries of {rel} back in order (by time, each chain by seq): "
                    "a git merge had interleaved them"
                )
    return actions


def canonicalize_logs(vault: Vault) -> list[str]:
    """`canonicalize_log` for both logs: what `sync` can run after a merge (it takes each
    log's writer lock, so appends wait for it, never lose)."""
    return [a for name in entry.LOGS for a in canonicalize_log(vault, name)]


def _sweep_vault(vault: Vault) -> list[str]:
    """Temp files killed writes left anywhere in the vault (not in `.git`), older than a
    minute: every other command cleans only the folders it writes to."""
    removed: list[Path] = []
    for here, dirs, _files in os.walk(vault.root):
        dirs[:] = [d for d in dirs if d != ".git"]  # os.walk never follows a symlinked folder
        removed += sweep_temp_files(Path(here))
    return [f"removed {vault.rel(p)}, a temp file a killed write left" for p in sorted(removed)]


def repair(vault: Vault, *, merge_forks: bool = False) -> RepairReport:
    """Restore and set aside from the journal; with `merge_forks`, then join forked chains."""
    actions: list[str] = []
    for name in entry.LOGS:
        actions += _repair_log(vault, name)
        actions += canonicalize_log(vault, name)
    actions += _sweep_vault(vault)
    if merge_forks:
        from vaultmem.nexus.forks import merge_forks as join

        actions += join(vault)
    return RepairReport(tuple(actions), verify(vault))
