"""Ed25519 keys and signatures for log entries. The only module that imports `cryptography`.
Where keys live:

- the private key of each agent key: `<VAULTMEM_HOME>/keys/<agent>/<key-id>.key` (base64 of the
  32-byte seed, file mode 0600, folder 0700). Never in the vault.
- the public keys: `agents/<agent>/keys.md` in the vault, one line per key, oldest first. Lines are
  never removed: every key an agent ever used stays, so old entries keep verifying after a new
  `keys create` (key rotation, or someone who copied a vault without its private keys).
- a person (a reviewer) who signs entries (`vaultmem resolve --reviewer NAME`) and approves keys
  (`vaultmem keys approve`) has the same, with the public keys in `people/<name>/keys.md`.

What may sign is decided against this machine's trust pins (nexus/trust.py): an agent's first
key and the reviewers' keys are pinned on first use; every other key is approved by a signature
(an earlier approved key of the same agent, or a pinned reviewer key), never by a line of text.

A key id is `k-` + the first 16 hex digits of SHA-256 over the raw 32-byte public key; entries
name the key that signed them. Reading the keys file needs no YAML and no cryptography; the
`cryptography` import (~20 ms) happens only when something is signed or checked.
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
from pathlib import Path
from typing import Any

from vaultmem.core import environment
from vaultmem.core.errors import IntegrityError
from vaultmem.core.fsio import atomic_write
from vaultmem.core.hashes import b64decode, b64encode, sha256
from vaultmem.core.locking import exclusive, lock_path
from vaultmem.core.names import AGENT_NAME_RE
from vaultmem.core.records import record
from vaultmem.core.vault import Vault, validate_name

KEYS_FILE = "keys.md"
SIG_DOMAIN = b"vaultmem-entry-v1\n"
KEY_DOMAIN = b"vaultmem-key-v1\n"
APPROVAL_DOMAIN = b"vaultmem-key-approval-v1\n"
_SIGNERS: dict[tuple[str, str, str], tuple[Any, Signer, Any]] = {}  # kept by signer_for
KEY_LINE = re.compile(
    r"- `(?P<id>k-[0-9a-f]{16})` ed25519 `(?P<pub>[A-Za-z0-9+/]{43}=)`"
    r"(?: created (?P<created>\S+))?"
    r"(?: device (?P<device>[a-z2-7]{4}))?"
    r"(?: approved-by (?:`(?P<by_key>k-[0-9a-f]{16})` sig `(?P<ksig>[A-Za-z0-9+/]{86}==)`"
    rf"|reviewer (?P<reviewer>{AGENT_NAME_RE.pattern})"
    r"(?: `(?P<rkey>k-[0-9a-f]{16})` sig `(?P<rsig>[A-Za-z0-9+/]{86}==)`)?(?: (?P<at>\S+))?))?"
)


@record
class PublicKey:
    """One line of `agents/<agent>/keys.md`, with whether the key may sign for the agent.

    A key is approved when it is the agent's first key, when its line carries a signature by
    an earlier approved key of the same agent (rotation on a machine that holds that key), or
    when a reviewer approved it (`vaultmem keys approve`). See docs/FORMAT.md, "Keys".
    """

    agent: str
    key_id: str
    public: str  # base64 of the raw 32-byte public key
    created: str | None
    line: int  # in agents/<agent>/keys.md
    approved: bool = True
    approval: str = "first key"  # or "signed by k-…", "reviewer NAME", or why not approved
    by_key: str | None = None
    key_sig: str | None = None
    reviewer: str | None = None
    device: str = ""  # the chain its entries go to: "" for the agent's first machine
    reviewer_key: str | None = None  # the reviewer's key that signed the approval
    reviewer_sig: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def key_id_for(public_raw: bytes) -> str:
    return "k-" + sha256(public_raw).hexdigest()[:16]


def keys_home() -> Path:
    return environment.home_dir() / "keys"


def private_key_path(agent: str, key_id: str) -> Path:
    return keys_home() / validate_name(agent) / f"{key_id}.key"


def keys_file(vault: Vault, agent: str) -> Path:
    """`agents/<agent>/keys.md`, or `people/<name>/keys.md` for a reviewer (a person)."""
    if agent in vault.config.reviewers and agent not in vault.config.agents:
        return vault.person_dir(agent) / KEYS_FILE
    return vault.agent_dir(agent) / KEYS_FILE


def key_statement(agent: str, key_id: str, public_b64: str, device: str = "") -> bytes:
    """What an earlier key signs to vouch for a new one of the same agent (and the chain it
    writes, so a vouched key cannot be moved to another device's chain)."""
    tail = f"\n{device}" if device else ""
    return KEY_DOMAIN + f"{agent}\n{key_id}\n{public_b64}{tail}".encode("ascii")


def approval_statement(
    agent: str, key_id: str, public_b64: str, device: str, reviewer: str
) -> bytes:
    """What a reviewer's key signs to approve an agent's key: the key statement under its own
    domain (a rotation signature is never read as an approval), and the reviewer's name."""
    body = key_statement(agent, key_id, public_b64, device).removeprefix(KEY_DOMAIN)
    return APPROVAL_DOMAIN + body + f"\n{reviewer}".encode("ascii")


def _parse_keys(text: str, agent: str) -> list[PublicKey]:
    found = []
    for n, line in enumerate(text.splitlines(), 1):
        m = KEY_LINE.fullmatch(line.strip())
        if m:
            found.append(
                PublicKey(
                    agent,
                    m["id"],
                    m["pub"],
                    m["created"],
                    n,
                    by_key=m["by_key"],
                    key_sig=m["ksig"],
                    reviewer=m["reviewer"],
                    device=m["device"] or "",
                    reviewer_key=m["rkey"],
                    reviewer_sig=m["rsig"],
                )
            )
    return found


def read_keys_text(path: Path) -> tuple[str, str | None]:
    """The keys file's text and a problem, if any. A bad byte does not hide the key lines
    (they are ASCII): the file is read with replacements and reported."""
    data = path.read_bytes()
    try:
        return data.decode("utf-8"), None
    except UnicodeDecodeError as exc:
        return data.decode("utf-8", "replace"), f"not UTF-8 (bad byte at offset {exc.start})"


def read_key_lines(path: Path, owner: str) -> tuple[list[PublicKey], str | None]:
    """The key lines of one keys file, not judged (no cryptography), and a problem if any."""
    try:
        text, problem = read_keys_text(path)
    except FileNotFoundError:
        return [], None
    except OSError as exc:
        return [], f"cannot read: {exc.strerror}"
    keys = [k for k in _parse_keys(text, owner) if key_id_for(b64decode(k.public)) == k.key_id]
    return keys, problem


def _keys_header(agent: str) -> str:
    return (
        "---\ntags:\n  - vaultmem/keys\n---\n\n"
        f"# Signing keys of {agent}\n\n"
        "Public Ed25519 keys that sign this agent's log entries (`vaultmem keys create`). "
        "Never remove a line:\nold entries keep verifying with the key that signed them. "
        "The private keys are not in the vault.\n\n"
    )


def register_public_key(
    vault: Vault,
    agent: str,
    public_b64: str,
    created: str,
    *,
    approval: str = "",
    device: str = "",
) -> Path:
    """Add one line to agents/<agent>/keys.md (created if missing), keeping what is there.
    `device` is the chain the key writes ("" for the agent's first machine); `approval` is the
    line's ` approved-by ...` part, if any."""
    path = keys_file(vault, agent)
    kid = key_id_for(b64decode(public_b64))
    where = f" device {device}" if device else ""
    line = f"- `{kid}` ed25519 `{public_b64}` created {created}{where}{approval}\n"
    with exclusive(lock_path(vault, f"keys-{agent}"), vault.config.log.lock_timeout, what="keys"):
        try:
            text, _problem = read_keys_text(path)
        except FileNotFoundError:
            text = _keys_header(agent)
        if any(k.key_id == kid for k in _parse_keys(text, agent)):
            return path
        if text and not text.endswith("\n"):
            text += "\n"
        atomic_write(vault.path(vault.rel(path)), text + line)
    return path


def _ed25519() -> Any:
    from cryptography.hazmat.primitives.asymmetric import ed25519

    return ed25519


def new_key_pair() -> tuple[bytes, bytes]:
    """A new Ed25519 key pair: (the 32-byte private seed, the 32-byte raw public key)."""
    ed = _ed25519()
    private = ed.Ed25519PrivateKey.generate()
    from cryptography.hazmat.primitives import serialization

    seed = private.private_bytes(
        serialization.Encoding.Raw, serialization.PrivateFormat.Raw, serialization.NoEncryption()
    )
    public_raw = private.public_key().public_bytes(
        serialization.Encoding.Raw, serialization.PublicFormat.Raw
    )
    return seed, public_raw


class Signer:
    """Signs with one private key; cryptography is loaded on the first signature."""

    def __init__(self, agent: str, key_id: str, path: Path, device: str = "") -> None:
        self.agent = agent
        self.key_id = key_id
        self.path = path
        self.device = device  # the chain this key writes
        self._key: Any = None

    def _load(self) -> Any:
        if self._key is None:
            try:
                st = self.path.stat()
                seed = b64decode(self.path.read_bytes().strip(), validate=True)
            except (OSError, ValueError) as exc:
                raise IntegrityError(
                    f"cannot read the private key {self.path}",
                    f"create a new one with: vaultmem keys create --agent {self.agent}",
                ) from exc
            if os.name == "posix" and st.st_mode & 0o077:
                raise IntegrityError(
                    f"the private key {self.path} is readable by other users "
                    f"(mode {oct(st.st_mode & 0o777)})",
                    f"run: chmod 600 {self.path}",
                )
            if len(seed) != 32:
                raise IntegrityError(
                    f"the private key {self.path} is not an Ed25519 seed",
                    f"create a new one with: vaultmem keys create --agent {self.agent}",
                )
            self._key = _ed25519().Ed25519PrivateKey.from_private_bytes(seed)
        return self._key

    def sign(self, entry_hash: str) -> str:
        return self.sign_raw(SIG_DOMAIN + entry_hash.encode("ascii"))

    def public_b64(self) -> str:  # the public key, as keys.md lists it
        return b64encode(self._load().public_key().public_bytes_raw())

    def sign_raw(self, message: bytes) -> str:
        sig: bytes = self._load().sign(message)
        return b64encode(sig)


def signer_for(vault: Vault, agent: str) -> Signer | None:
    """The newest key of `agent` whose private half this machine holds (or None), kept while
    keys.md and the key file are unchanged: a process loads a key once, not per entry."""
    keys_path = keys_file(vault, agent)
    cache_key, stamp = (str(keys_path), str(keys_home()), agent), _stamp(keys_path)
    hit = _SIGNERS.get(cache_key)
    if hit is not None and hit[0] == stamp and _stamp(hit[1].path) == hit[2]:
        return hit[1]
    for key in reversed(read_key_lines(keys_path, agent)[0]):
        path = private_key_path(agent, key.key_id)
        if path.is_file():
            _SIGNERS[cache_key] = (stamp, Signer(agent, key.key_id, path, key.device), _stamp(path))
            return _SIGNERS[cache_key][1]
    return None


def _stamp(path: Path) -> tuple[int, ...] | None:  # inode, size, mode, mtime: a changed file
    with contextlib.suppress(OSError):
        return ((st := path.stat()).st_ino, st.st_size, st.st_mode, st.st_mtime_ns)
    return None


@functools.lru_cache(maxsize=256)
def _public_key(public_b64: str) -> Any:
    return _ed25519().Ed25519PublicKey.from_public_bytes(b64decode(public_b64))


def verify_signature(public_b64: str, entry_hash: str, sig_b64: str) -> bool:
    return verify_raw(public_b64, SIG_DOMAIN + entry_hash.encode("ascii"), sig_b64)


def verify_raw(public_b64: str, message: bytes, sig_b64: str) -> bool:
    from cryptography.exceptions import InvalidSignature

    try:
        _public_key(public_b64).verify(b64decode(sig_b64, validate=True), message)
    except (InvalidSignature, ValueError):
        return False
    return True
