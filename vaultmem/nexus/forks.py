"""Forked chains, and the signed `merge` entry that joins them.

A chain forks when one agent's key writes on two machines that do not see each other's
entries: a vault synced through git before chains carried a device id, or a `VAULTMEM_HOME`
copied to a second machine (same key, same device id). After a union merge the log holds two
entries with one id (`ella.7` twice), each valid and signed, each following its own `prev`.

Nothing is rewritten: an entry's text, hash and signature stay as they were. A fork is joined
by one more entry on the chain, `type: merge`, signed by the chain's key, whose `prev` is one
branch's last entry and whose `extra.merges` names the other branches' last entries. `verify`
then walks the chain as a graph: every entry's `prev` is an entry one sequence number below,
and the chain has exactly one last entry. `vaultmem repair --merge-forks` writes the merge
entry; run it on one machine, then sync (two machines merging the same fork at once fork it
again, and the next `--merge-forks` joins that too).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from typing import Any, Protocol, TypeVar

from vaultmem.core.patterns import later
from vaultmem.core.records import record
from vaultmem.core.vault import Vault
from vaultmem.nexus import entry, log
from vaultmem.nexus.entry import MERGE_TYPE

MERGES = "merges"  # extra key: hashes of the other branches' last entries
_HASH = later(r"sha256:[0-9a-f]{64}")


class Linked(Protocol):
    """What the chain walk reads of an entry: an `Entry`, or verify's record of one."""

    @property
    def type(self) -> str: ...
    @property
    def extra(self) -> dict[str, Any]: ...
    @property
    def prev(self) -> str | None: ...
    @property
    def hash(self) -> str | None: ...
    @property
    def seq(self) -> int: ...
    @property
    def time(self) -> str: ...


L = TypeVar("L", bound=Linked)


def merged(e: Linked) -> tuple[str, ...]:
    """The hashes a merge entry joins (none for any other entry, or a malformed list)."""
    if e.type != MERGE_TYPE:
        return ()
    raw = e.extra.get(MERGES)
    if not isinstance(raw, list):
        return ()
    return tuple(h for h in raw if isinstance(h, str) and _HASH.fullmatch(h))


def tips(chain: Iterable[L]) -> list[L]:
    """The entries of one chain that no other entry follows (by `prev` or by a merge):
    one for a straight or joined chain, one per branch for a fork. Highest sequence first."""
    entries = list(chain)
    followed = {e.prev for e in entries if e.prev}
    for e in entries:
        followed.update(merged(e))
    out = {e.hash: e for e in entries if e.hash not in followed}
    return sorted(out.values(), key=lambda e: (-e.seq, e.time, e.hash))


@record
class Fork:
    log: str
    chain: str  # `ella` or `ella.k2f7`
    tips: tuple[entry.Entry, ...]  # the branches' last entries, the chain's head first

    @property
    def since(self) -> int:
        """The lowest sequence number two entries share: where the chain split."""
        return min(t.seq for t in self.tips)


def find_forks(vault: Vault, log_name: str) -> list[Fork]:
    """Chains of `log_name` with more than one last entry (entries whose hash is intact)."""
    chains: dict[str, dict[str, entry.Entry]] = defaultdict(dict)
    for path in vault.chain_files(log_name):
        for e in entry.read_file(path).entries:
            if e.compute_hash() == e.hash:
                chains[entry.chain_of(e.id)][e.hash] = e
    forks = []
    for name, by_hash in sorted(chains.items()):
        ends = tips(by_hash.values())
        if len(ends) > 1:
            forks.append(Fork(log_name, name, tuple(ends)))
    return forks


def merge_forks(vault: Vault) -> list[str]:
    """Join every forked chain whose key is on this machine with one signed merge entry;
    say what was done, and which forks need the machine that holds their key."""
    from vaultmem.nexus import signing

    actions: list[str] = []
    for log_name in entry.LOGS:
        for fork in find_forks(vault, log_name):
            agent = entry.author_of(fork.tips[0].id)
            device = entry.device_of(fork.tips[0].id)
            signer = signing.signer_for(vault, agent)
            if signer is None or signer.device != device:
                actions.append(
                    f"cannot join the fork of {fork.chain} in the {log_name} log here: its key "
                    f"is on another machine (run vaultmem repair --merge-forks there)"
                )
                continue
            head = log.current_heads(vault, log_name).get(fork.chain, [0, None])[1]
            others = [t.hash for t in fork.tips if t.hash != head]
            done = log.append(
                vault,
                agent,
                f"joined {len(fork.tips)} branches of {fork.chain}'s chain (split at "
                f"{entry.chain_id(fork.chain, fork.since, log_name)})",
                channel="vaultmem",
                log=log_name,
                joins=tuple(others),
            ).entry
            actions.append(
                f"joined the fork of {fork.chain} in the {log_name} log with {done.id} "
                f"({len(fork.tips)} branches from seq {fork.since})"
            )
    return actions
