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
import errno
import functools
import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vaultmem.core import clock, config
from vaultmem.core.errors import IntegrityError, UsageError, VaultmemError
from vaultmem.core.fsio import atomic_write, create_private
from vaultmem.core.hashes import b64decode, b64encode, sha256
from vaultmem.core.locking import exclusive, lock_path
from vaultmem.core.names import AGENT_NAME_RE
from vaultmem.core.records import record
from vaultmem.core.vault import Vault, validate_name

if TYPE_CHECKING:
    from vaultmem.nexus.trust import Judge

KEYS_FILE = "keys.md"
SIG_DOMAIN = b"vaultmem-entry-v1\n"
KEY_DOMAIN = b"vaultmem-key-v1\n"
APPROVAL_DOMAIN = b"vaultmem-key-approval-v1\n"
_SIGNERS: dict[tuple[str, str, str], tuple[Any, Signer, Any]] = {}  # kept by signer_for
_KEY_LINE = re.compile(
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


@record
class KeyInfo:
    """A key pair this machine holds for an agent (returned by create_key)."""

    agent: str
    key_id: str
    public: str
    private_path: str  # absolute, in VAULTMEM_HOME
    public_path: str  # vault-relative keys file
    approved: bool = True
    approval: str = "first key"

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def key_id_for(public_raw: bytes) -> str:
    return "k-" + sha256(public_raw).hexdigest()[:16]


def keys_home() -> Path:
    return config.home_dir() / "keys"


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
        m = _KEY_LINE.fullmatch(line.strip())
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


@record
class KeysFileProblem:
    agent: str
    path: str
    message: str


def _read_keys_text(path: Path) -> tuple[str, str | None]:
    """The keys file's text and a problem, if any. A bad byte does not hide the key lines
    (they are ASCII): the file is read with replacements and reported."""
    data = path.read_bytes()
    try:
        return data.decode("utf-8"), None
    except UnicodeDecodeError as exc:
        return data.decode("utf-8", "replace"), f"not UTF-8 (bad byte at offset {exc.start})"


def agent_keys(vault: Vault, agent: str, *, judge: bool = True) -> list[PublicKey]:
    """The agent's registered public keys, oldest first (empty when it has none); judged
    (approved or not) unless `judge` is False, which skips the signature checks: `append`
    needs only the newest key this machine holds."""
    return _agent_keys(vault, agent, judge=judge)[0]


def read_key_lines(path: Path, owner: str) -> tuple[list[PublicKey], str | None]:
    """The key lines of one keys file, not judged (no cryptography), and a problem if any."""
    try:
        text, problem = _read_keys_text(path)
    except FileNotFoundError:
        return [], None
    except OSError as exc:
        return [], f"cannot read: {exc.strerror}"
    keys = [k for k in _parse_keys(text, owner) if key_id_for(b64decode(k.public)) == k.key_id]
    return keys, problem


def _agent_keys(
    vault: Vault, agent: str, *, judge: bool = True, judge_with: Judge | None = None
) -> tuple[list[PublicKey], str | None]:
    path = keys_file(vault, agent)
    keys, problem = read_key_lines(path, agent)
    if not judge:
        return keys, problem
    from vaultmem.nexus.trust import Judge

    person = path.parent.parent.name == "people"
    return (judge_with or Judge(vault)).judge(keys, agent, person=person), problem


def public_keys(vault: Vault) -> dict[str, PublicKey]:
    """Every registered key of every agent (and person) that has a keys file, by key id."""
    return keys_report(vault)[0]


def keys_report(vault: Vault) -> tuple[dict[str, PublicKey], list[KeysFileProblem]]:
    """Every registered key by id (agents' and people's), and the keys files that could not
    be read cleanly."""
    out: dict[str, PublicKey] = {}
    problems: list[KeysFileProblem] = []
    from vaultmem.nexus.trust import Judge

    judge = Judge(vault)
    for top in ("agents", "people"):
        folder = vault.root / top
        if not folder.is_dir():
            continue
        for child in sorted(folder.iterdir()):
            if not (child / KEYS_FILE).is_file():
                continue
            try:
                validate_name(child.name)
            except VaultmemError:
                continue
            if vault.rel(keys_file(vault, child.name)) != f"{top}/{child.name}/{KEYS_FILE}":
                continue  # a keys file in the wrong folder (a person's under agents/)
            keys, problem = _agent_keys(vault, child.name, judge_with=judge)
            if problem:
                problems.append(KeysFileProblem(child.name, vault.rel(child / KEYS_FILE), problem))
            for key in keys:
                out.setdefault(key.key_id, key)
    return out, problems


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
            text, _problem = _read_keys_text(path)
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


def create_key(vault: Vault, agent: str, *, acting_agent: str | None = None) -> KeyInfo:
    """Make a new key pair for `agent` (or a person listed as a reviewer): private key in
    VAULTMEM_HOME, public key in the vault. An agent's first key, and a person's key made on
    this machine, are pinned here (nexus/trust.py); a person's key is refused (exit 8) while
    an agent is acting."""
    validate_name(agent)
    person = vault.rel(keys_file(vault, agent)).startswith("people/")
    if person:
        from vaultmem.core.vault import refuse_acting_agent

        refuse_acting_agent(acting_agent, "a person's signing keys")
    ed = _ed25519()
    private = ed.Ed25519PrivateKey.generate()
    from cryptography.hazmat.primitives import serialization

    seed = private.private_bytes(
        serialization.Encoding.Raw, serialization.PrivateFormat.Raw, serialization.NoEncryption()
    )
    public_raw = private.public_key().public_bytes(
        serialization.Encoding.Raw, serialization.PublicFormat.Raw
    )
    kid = key_id_for(public_raw)
    path = private_key_path(agent, kid)
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        os.chmod(path.parent, 0o700)
        os.chmod(path.parent.parent, 0o700)
        if not create_private(path, b64encode(seed).encode("ascii") + b"\n"):
            raise FileExistsError(errno.EEXIST, "a key with this id exists", str(path))
    except OSError as exc:
        raise VaultmemError(
            f"cannot write the private key {path}: {exc.strerror}",
            "check that VAULTMEM_HOME is writable",
        ) from exc
    created = clock.stamp()
    public_b64 = b64encode(public_raw)
    existing = agent_keys(vault, agent)
    approval = ""
    device = ""  # the agent's first key writes the plain chain (ella.1, ella.2, ...)
    if existing:
        # rotation: the newest approved key this machine holds vouches for the new one
        voucher = next(
            (
                k
                for k in reversed(existing)
                if k.approved and private_key_path(agent, k.key_id).is_file()
            ),
            None,
        )
        if voucher is not None:
            # a rotation on this machine: the new key continues the same chain
            device = voucher.device
            signer = Signer(agent, voucher.key_id, private_key_path(agent, voucher.key_id))
            sig = signer.sign_raw(key_statement(agent, kid, public_b64, device))
            approval = f" approved-by `{voucher.key_id}` sig `{sig}`"
        else:
            # another machine: its own chain, so no sequence number is ever handed out twice
            from vaultmem.core.device import device_id

            device = device_id() or ""
    kfile = register_public_key(vault, agent, public_b64, created, approval=approval, device=device)
    from vaultmem.nexus import trust

    if person:
        trust.pin_reviewer_key(vault, agent, kid, public_b64)
    elif not existing:
        trust.pin_first_key(vault, agent, kid)
    judged = next((k for k in agent_keys(vault, agent) if k.key_id == kid), None)
    return KeyInfo(
        agent,
        kid,
        public_b64,
        str(path),
        vault.rel(kfile),
        approved=judged.approved if judged else False,
        approval=judged.approval if judged else "not registered",
    )


def approve_key(
    vault: Vault, key_id: str, *, reviewer: str | None, acting_agent: str | None = None
) -> PublicKey:
    """A person approves a key no earlier key of its agent vouched for (a new machine's key
    for an agent whose old keys are elsewhere, or a copy of a vault without its private keys)
    by signing `approval_statement` with their own key, one this machine trusts. The review
    gate's rules apply: no agent acting, a listed reviewer (exit 8 otherwise); a reviewer with
    no trusted key here is refused too (exit 8, with the command that makes one)."""
    from vaultmem.core.errors import NotFoundError, SigningKeyMissingError
    from vaultmem.core.vault import resolve_reviewer

    who = resolve_reviewer(vault, reviewer, acting_agent=acting_agent)
    key = public_keys(vault).get(key_id)
    if key is None:
        raise NotFoundError(
            f"no key {key_id!r} in any agents/*/keys.md", "list them: vaultmem keys list"
        )
    if key.approved:
        return key
    if vault.rel(keys_file(vault, key.agent)).startswith("people/"):
        raise UsageError(
            f"{key_id} is a key of the person {key.agent}; people's keys are not approved, "
            "they are pinned",
            "check it (vaultmem trust) and accept it: vaultmem trust accept",
        )
    mine = [
        k
        for k in agent_keys(vault, who)
        if k.approved and private_key_path(who, k.key_id).is_file()
    ]
    if not mine:
        raise SigningKeyMissingError(
            f"{who} has no signing key on this machine that it trusts; an approval is {who}'s "
            "signature",
            f"make one: vaultmem keys create --reviewer {who} (then run this again)",
        )
    signer = Signer(who, mine[-1].key_id, private_key_path(who, mine[-1].key_id))
    sig = signer.sign_raw(approval_statement(key.agent, key.key_id, key.public, key.device, who))
    path = keys_file(vault, key.agent)
    with exclusive(
        lock_path(vault, f"keys-{key.agent}"), vault.config.log.lock_timeout, what="keys"
    ):
        text, _problem = _read_keys_text(path)
        lines = text.splitlines(keepends=True)
        for i, line in enumerate(lines):
            m = _KEY_LINE.fullmatch(line.strip())
            if m and m["id"] == key_id:
                body = line.rstrip("\r\n")
                body = body.split(" approved-by ", 1)[0]  # a broken approval is replaced
                end = line[len(line.rstrip("\r\n")) :] or "\n"
                approval = f"approved-by reviewer {who} `{signer.key_id}` sig `{sig}`"
                lines[i] = f"{body} {approval} {clock.stamp()}{end}"
                break
        atomic_write(vault.path(vault.rel(path)), "".join(lines))
    approved = public_keys(vault)[key_id]
    return approved


def has_usable_key(vault: Vault, agent: str) -> bool:
    return any(
        private_key_path(agent, k.key_id).is_file() for k in agent_keys(vault, agent, judge=False)
    )


def ensure_key(vault: Vault, agent: str) -> KeyInfo | None:
    """For `init`: create a key only when this machine holds no private key for a registered one."""
    if has_usable_key(vault, agent):
        return None
    return create_key(vault, agent)


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
    for key in reversed(agent_keys(vault, agent, judge=False)):
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
