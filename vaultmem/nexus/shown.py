"""What a pack, a hook, MCP and recall may show of the signed logs: each entry's own checks
(hash, id, signature, key), the same ones `verify` runs on every entry, and the one rule for
what fails them: left out, and said, with the verify command to run.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from vaultmem.core.vault import Vault
from vaultmem.nexus import entry

if TYPE_CHECKING:
    from vaultmem.nexus.memo import SignatureMemo


def entry_problem(
    e: entry.Entry,
    keys: dict[str, Any],
    *,
    require: bool,
    memo: SignatureMemo | None = None,
    hash_ok: bool | None = None,
) -> tuple[str, str, bool] | None:
    """What is wrong with one entry on its own (hash, id, signature, key), or None: (kind,
    message, fatal). A fatal problem keeps the entry out of the chain checks too (an unsigned
    entry where signatures are required counts as a forgery there: one with a huge seq is one
    problem, not a gap of a billion missing entries); `unapproved-key` does not. `verify` runs it on every entry, a pack on those it shows.
    `hash_ok`: the hash was already checked against the whole text (an index keeps a cut body).
    """
    from vaultmem.nexus import signing

    if not (e.compute_hash() == e.hash if hash_ok is None else hash_ok):
        return (
            "edited",
            f"{e.id} was changed after it was written (its hash no longer matches)",
            True,
        )
    if e.id != entry.entry_id(e.agent, e.seq, e.log, entry.device_of(e.id)):
        return "forged", f"{e.id} does not match its agent and sequence number", True
    if not e.sig or not e.key:
        if require:
            return "unsigned", f"{e.id} is not signed, and this vault requires signatures", True
        return None
    pk = keys.get(e.key)
    if pk is None:
        return (
            "unknown-key",
            f"{e.id} is signed with key {e.key}, which no agents/*/keys.md lists",
            True,
        )
    if pk.agent != e.agent:
        return (
            "forged",
            f"{e.id} claims to be by {e.agent} but is signed with {pk.agent}'s key {e.key}",
            True,
        )
    ok = (
        memo.check(e, pk.public)
        if memo is not None
        else signing.verify_signature(pk.public, e.hash, e.sig)
    )
    if not ok:
        return (
            "forged",
            f"{e.id}: the signature does not match (not made with {e.agent}'s key {e.key})",
            True,
        )
    if pk.device != entry.device_of(e.id):
        return (
            "forged",
            f"{e.id} is on the chain of {entry.chain_of(e.id)} but signed with {e.key}, "
            f"the key of another machine's chain ({pk.device or 'the first machine'})",
            True,
        )
    if not pk.approved:
        return (
            "unapproved-key",
            f"{e.id} is signed with {e.key}, a key of {e.agent} that is not approved "
            f"({pk.approval}); a reviewer approves it with: vaultmem keys approve {e.key} "
            f"--reviewer {pk.reviewer or 'NAME'}",
            False,
        )
    return None


VERIFY_HINT = "run `vaultmem verify` to see why"


class ShowCheck:
    """The one rule for what a pack, a hook, MCP and recall show: an entry that fails its own
    checks (`entry_problem`: edited, forged, unsigned where signatures are required, an unknown
    or unapproved key) is left out, and what was left out is said (`note`), with the verify
    command to run. Only the entries about to be shown are checked, so it costs the same on a
    log of any length; the keys are read on the first signed entry, and signatures this
    machine already checked come from `SignatureMemo`."""

    def __init__(self, vault: Vault) -> None:
        self.vault = vault
        self.require = vault.config.log.require_signatures
        self.failed: dict[str, str] = {}  # id -> problem kind, in the order found
        self._keys: dict[str, Any] | None = None
        self._memo: SignatureMemo | None = None
        self._files: dict[str, list[bytes]] = {}  # vault file -> its lines (lines_ok)

    def problem(self, e: entry.Entry, *, hash_ok: bool | None = None) -> str | None:
        """The kind of problem that keeps `e` out of what is shown, or None."""
        if e.id in self.failed:
            return self.failed[e.id]
        if e.sig and e.key and self._keys is None:
            from vaultmem.nexus import keyring
            from vaultmem.nexus.memo import SignatureMemo

            self._keys = keyring.public_keys(self.vault)
            # the memo `verify` keeps; a pack never makes its secret (nothing written to home)
            self._memo = SignatureMemo(self.vault, use=True, create=False)
        wrong = entry_problem(
            e, self._keys or {}, require=self.require, memo=self._memo, hash_ok=hash_ok
        )
        if wrong is None:
            return None
        self.failed[e.id] = wrong[0]
        return wrong[0]

    def lines_ok(self, rel: str, start: int, end: int, entry_id: str, limit: int) -> bool:
        """Whether the entry `entry_id` at lines start..end of the vault file `rel` (of its
        first `limit` bytes), as it is now, passes (a recall hit's entry); `not-found` when
        the lines hold no such entry."""
        from vaultmem.core.errors import PathOutsideVaultError

        if rel not in self._files:
            try:
                self._files[rel] = self.vault.read_bytes(self.vault.root / rel, limit).split(b"\n")
            except (OSError, PathOutsideVaultError):
                self._files[rel] = []
        text = b"\n".join(self._files[rel][max(start, 1) - 1 : end]) + b"\n"
        found = [e for e in entry.parse_bytes(text).entries if e.id == entry_id]
        if not found:
            self.failed.setdefault(entry_id, "not-found")
            return False
        return self.problem(found[0]) is None

    def genuine(self, entries: list[entry.Entry]) -> list[entry.Entry]:
        """`entries` without those that fail verification (noted in `failed`)."""
        return [e for e in entries if self.problem(e) is None]

    def note(self) -> str:
        """One line saying what was left out and why, or "" when nothing was."""
        if not self.failed:
            return ""
        shown = list(self.failed.items())[:5]
        listed = "; ".join(f"{i}: {k}" for i, k in shown)
        more = f"; {len(self.failed) - len(shown)} more" if len(self.failed) > len(shown) else ""
        n = len(self.failed)
        return (
            f"⚠ {n} {'entry' if n == 1 else 'entries'} not shown: "
            f"{'it fails' if n == 1 else 'they fail'} verification ({listed}{more}); {VERIFY_HINT}."
        )

    def save(self) -> None:
        if self._memo is not None:
            self._memo.save()


class Counts:
    """The one rule for what an ack, a resolve or a supersede changes: only an entry that
    passes its own checks (`entry_problem`, as `ShowCheck` shows it) acks, resolves or
    supersedes anything. A forged, unsigned or edited entry, or one signed with an unknown or
    unapproved key, counts for nothing in every reader: the coordination index (so the inbox,
    the pack, alerts, MCP and status), the pack's and the prompt hook's scan of the log, and
    the decision log. Entries that act on nothing are never checked (`acts`)."""

    def __init__(self, vault: Vault) -> None:
        self.check = ShowCheck(vault)

    @staticmethod
    def acts(e: entry.Entry) -> bool:
        """Does `e` change another entry's state (an ack, a resolve, a supersede)?"""
        return bool(e.acks) or e.type == entry.EntryType.RESOLVE or "supersedes" in e.extra

    def __call__(self, e: entry.Entry) -> bool:
        """Does what `e` acks, resolves or supersedes count?"""
        return self.check.problem(e) is None

    def save(self) -> None:
        self.check.save()


def counts_later(vault: Vault) -> Callable[[entry.Entry], bool]:
    """`Counts` for `vault`, made on first use (the search index asks it only of an entry
    that supersedes something: most files check nothing)."""
    made: list[Counts] = []

    def check(e: entry.Entry) -> bool:
        if not made:
            made.append(Counts(vault))
        return made[0](e)

    return check


def outside_links(vault: Vault) -> list[tuple[str, str]]:
    """(path, message) for each file or folder of the layout that a pack, a hook or MCP reads
    (identities, memory indexes and folders, checkpoints, working memory, banks, project
    state) and that leads out of the vault: never read, and `verify` reports it."""
    rels = ["memory", "memory/MEMORY.md", "nexus/project-state.md"]
    for agent in vault.known_agents():
        base = f"agents/{agent}"
        rels += [base] + [
            f"{base}/{name}"
            for name in (
                "IDENTITY.md",
                "MEMORY.md",
                "checkpoint.md",
                "working.md",
                "memory",
                "bank",
            )
        ]
    out = []
    for rel in rels:
        path = vault.root / rel
        if (path.is_symlink() or path.exists()) and not vault.inside(path):
            out.append((rel, f"{rel} is a symlink to {os.path.realpath(path)}, outside the vault"))
    return out
