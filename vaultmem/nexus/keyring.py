"""Each agent's and each person's signing keys as this machine judges them (by its trust pins,
`nexus/trust.py`): reading them judged, making a key (an agent's first key and a person's key
made here are pinned), and a person's approval of a key no earlier key vouched for. The keys
files' format, the private keys and the signatures themselves are `nexus/signing.py`.
"""

from __future__ import annotations

import errno
import os
from typing import Any

from vaultmem.core import clock
from vaultmem.core.errors import UsageError, VaultmemError
from vaultmem.core.fsio import atomic_write, create_private
from vaultmem.core.hashes import b64encode
from vaultmem.core.locking import exclusive, lock_path
from vaultmem.core.records import record
from vaultmem.core.vault import Vault, validate_name
from vaultmem.nexus import trust
from vaultmem.nexus.signing import (
    KEY_LINE,
    KEYS_FILE,
    PublicKey,
    Signer,
    approval_statement,
    key_id_for,
    key_statement,
    keys_file,
    new_key_pair,
    private_key_path,
    read_key_lines,
    read_keys_text,
    register_public_key,
)
from vaultmem.nexus.trust import Judge


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


@record
class KeysFileProblem:
    agent: str
    path: str
    message: str


def agent_keys(vault: Vault, agent: str, *, judge: bool = True) -> list[PublicKey]:
    """The agent's registered public keys, oldest first (empty when it has none); judged
    (approved or not) unless `judge` is False, which skips the signature checks: `append`
    needs only the newest key this machine holds."""
    return _agent_keys(vault, agent, judge=judge)[0]


def _agent_keys(
    vault: Vault, agent: str, *, judge: bool = True, judge_with: Judge | None = None
) -> tuple[list[PublicKey], str | None]:
    path = keys_file(vault, agent)
    keys, problem = read_key_lines(path, agent)
    if not judge:
        return keys, problem
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
    seed, public_raw = new_key_pair()
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
        text, _problem = read_keys_text(path)
        lines = text.splitlines(keepends=True)
        for i, line in enumerate(lines):
            m = KEY_LINE.fullmatch(line.strip())
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
