"""The memo of checked signatures (`.vaultmem/verified/signatures.txt`): a line for each
signature this machine found good, so each is checked once.

`verify` (and the verify after every sync) adds what it checked; a pack adds what it showed;
an append adds the signature it has just made (`nexus/log.py`), so the pack that next shows
the entry loads no cryptography to check it. Its own module: a pack and an append need the
memo, not the rest of `verify`.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING

from vaultmem.core.errors import VaultmemError
from vaultmem.core.hashes import blake2b
from vaultmem.core.vault import Vault

if TYPE_CHECKING:
    from vaultmem.nexus import entry

MEMO = ("verified", "signatures.txt")  # under .vaultmem/


def memo_line(secret: bytes, entry_hash: object, key_id: object, public: str, sig: object) -> str:
    """What the memo of checked signatures (`SignatureMemo`) holds for a
    signature found good: a digest of the entry's hash, the key's id and public key and the
    signature, keyed with this machine's secret."""
    raw = f"{entry_hash}|{key_id}|{public}|{sig}".encode()
    return blake2b(raw, key=secret, digest_size=16).hexdigest()


class SignatureMemo:
    """Signatures this machine already checked, so `verify` (and the verify after every sync)
    checks each signature once, not on every run: on a 100,000-entry log the check is most of
    the cost. A memo line is a digest of (entry hash, key id, public key, signature) keyed with
    a secret in VAULTMEM_HOME: a changed entry, another key or another signature is checked
    afresh, and an agent that can write `.vaultmem/` but not VAULTMEM_HOME (where the private
    keys are) cannot forge a line. `verify --full` ignores the memo.
    """

    def __init__(self, vault: Vault, *, use: bool, create: bool = True) -> None:
        self.path = vault.state(*MEMO)
        from vaultmem.core.device import memo_secret

        self.secret = memo_secret(create=create) if use else None
        self.use = self.secret is not None
        self._known: set[str] | None = None  # read on the first check (a memo'd log needs none)
        self.new: list[str] = []

    @property
    def known(self) -> set[str]:
        if self._known is None:
            self._known = set()
            if self.use:
                with contextlib.suppress(OSError, UnicodeDecodeError):
                    self._known = set(self.path.read_text(encoding="ascii").split())
        return self._known

    def key(self, e: entry.Entry, public: str) -> str:
        return memo_line(self.secret or b"", e.hash, e.key, public, e.sig)

    def check(self, e: entry.Entry, public: str) -> bool:
        from vaultmem.nexus import signing

        k = self.key(e, public)
        if k in self.known:
            return True
        assert e.sig is not None
        ok = signing.verify_signature(public, e.hash, e.sig)
        if ok:
            self.known.add(k)
            self.new.append(k)
        return ok

    def save(self) -> None:
        if not (self.use and self.new):
            return
        from vaultmem.core.fsio import append_durable

        # a memo: a read-only vault still verifies, only slower next time
        with contextlib.suppress(VaultmemError):
            append_durable(self.path, ("\n".join(self.new) + "\n").encode("ascii"))
