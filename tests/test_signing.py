"""Keys: private halves in VAULTMEM_HOME (0600), public halves in the vault, rotation keeps old
entries verifying, init creates keys and never replaces them."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from tests._layer3_helpers import fresh_vault, make_keys
from vaultmem.app.lifecycle.scaffold import init
from vaultmem.core import environment
from vaultmem.core.errors import IntegrityError
from vaultmem.core.vault import Vault
from vaultmem.nexus import entry, keyring, log, signing, verify


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    """Empty logs (example-vault may ship example entries): ids start at 1."""
    return fresh_vault(tmp_path)


def test_private_key_lives_in_home_with_mode_0600(vault: Path) -> None:
    v = Vault.open(vault)
    info = keyring.create_key(v, "ella")
    private = Path(info.private_path)
    assert environment.home_dir() in private.parents
    assert vault not in private.parents
    assert stat.S_IMODE(private.stat().st_mode) == 0o600
    assert stat.S_IMODE(private.parent.stat().st_mode) == 0o700
    keys_md = (vault / "agents/ella/keys.md").read_text()
    assert info.key_id in keys_md and info.public in keys_md
    assert private.read_text().strip() not in keys_md
    # nothing secret anywhere in the vault
    seed = private.read_text().strip()
    for p in vault.rglob("*"):
        if p.is_file():
            assert seed not in p.read_text(errors="replace")


def test_key_rotation_keeps_old_entries_verifying(vault: Path) -> None:
    v = make_keys(vault, "ella")
    first = log.append(v, "ella", "signed with key one").entry
    second_key = keyring.create_key(v, "ella")
    second = log.append(v, "ella", "signed with key two").entry
    assert first.key != second.key == second_key.key_id
    assert [k.key_id for k in keyring.agent_keys(v, "ella")] == [first.key, second.key]
    assert verify.verify(v).ok


def test_a_copied_vault_without_private_keys_starts_with_keys_create(
    vault: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import shutil

    v = make_keys(vault, "ella")
    log.append(v, "ella", "on the first machine")
    copy = tmp_path / "copy"
    shutil.copytree(vault, copy)
    # another machine: another VAULTMEM_HOME with no private keys
    monkeypatch.setenv("VAULTMEM_HOME", str(tmp_path / "other-home"))
    v2 = Vault.open(copy)
    assert signing.signer_for(v2, "ella") is None
    info = keyring.create_key(v2, "ella")
    e = log.append(v2, "ella", "on the second machine").entry
    # its own chain: the first machine's ella.1 and this one never share a number
    assert e.seq == 1 and e.id == f"ella.{info_device(v2, info.key_id)}.1"
    # a key nobody vouched for: verify says so until a person approves it
    report = verify.verify(v2)
    assert {p.kind for p in report.problems} == {"unapproved-key"}
    keyring.create_key(v2, "chiara")  # the approval is her signature
    keyring.approve_key(v2, info.key_id, reviewer="chiara")
    assert verify.verify(v2).ok


def test_every_entry_resting_on_an_unapproved_key_is_named(
    vault: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Attacker: someone with write access to the vault (not to ella's home) adds a key of
    their own to ella's keys.md and writes entries as ella with it. verify names the key and
    every entry it signed, so a person knows exactly what to distrust (or approve)."""
    v = make_keys(vault, "ella")
    log.append(v, "ella", "the real ella")
    monkeypatch.setenv("VAULTMEM_HOME", str(tmp_path / "mallory-home"))
    vm = Vault.open(vault)
    info = keyring.create_key(vm, "ella")
    assert not info.approved
    planted = [log.append(vm, "ella", f"as ella: step {i}").entry.id for i in (1, 2)]
    found = [(p.kind, p.id) for p in verify.verify(vm).problems]
    assert sorted(found) == sorted(
        [("unapproved-key", info.key_id)] + [("unapproved-key", i) for i in planted]
    )


def info_device(v: Vault, key_id: str) -> str:
    return keyring.public_keys(v)[key_id].device


def test_a_world_readable_private_key_is_refused(vault: Path) -> None:
    v = Vault.open(vault)
    info = keyring.create_key(v, "ella")
    os.chmod(info.private_path, 0o644)
    with pytest.raises(IntegrityError, match="readable by other users"):
        log.append(v, "ella", "x")


def test_init_creates_keys_and_never_replaces_them(tmp_path: Path) -> None:
    root = tmp_path / "v"
    result = init(root, agents=["ella"], reviewers=["chiara"])
    assert "agents/ella/keys.md" in result.created
    v = Vault.open(root)
    keys = keyring.agent_keys(v, "ella")
    assert len(keys) == 1 and keyring.has_usable_key(v, "ella")
    keys_md = (root / "agents/ella/keys.md").read_text()
    again = init(root, agents=["ella", "lyra"], reviewers=[])
    assert "agents/lyra/keys.md" in again.created and "agents/ella/keys.md" not in again.created
    assert (root / "agents/ella/keys.md").read_text() == keys_md
    e = log.append(Vault.open(root), "lyra", "hello").entry
    assert e.key == keyring.agent_keys(Vault.open(root), "lyra")[0].key_id


def test_signature_checks(vault: Path) -> None:
    v = make_keys(vault, "ella")
    e = log.append(v, "ella", "x").entry
    pk = keyring.public_keys(v)[e.key]  # type: ignore[index]
    assert signing.verify_signature(pk.public, e.hash, e.sig)  # type: ignore[arg-type]
    assert not signing.verify_signature(pk.public, e.hash.replace("a", "b"), e.sig)  # type: ignore[arg-type]
    assert not signing.verify_signature(pk.public, e.hash, "not base64!")


# --- the memo of checked signatures -------------------------------------------------------


def _swap_second_signature(vault: Path) -> tuple[str, entry.Entry]:
    """The attacker's edit: the second entry carries the first entry's (valid) signature."""
    v = Vault.open(vault)
    first = log.append(v, "ella", "first").entry
    second = log.append(v, "ella", "second").entry
    path = vault / "nexus/live-context.md"
    text = path.read_text(encoding="utf-8")
    assert text.count(second.sig) == 1  # type: ignore[arg-type]
    path.write_text(text.replace(second.sig, first.sig), encoding="utf-8")  # type: ignore[arg-type]
    return first.sig, second  # type: ignore[return-value]


def test_the_memo_remembers_checked_signatures_and_full_ignores_it(vault: Path) -> None:
    v = make_keys(vault, "ella")
    for i in range(3):
        log.append(v, "ella", f"entry {i}")
    assert verify.verify(v).ok
    memo = v.state("verified", "signatures.txt")
    lines = memo.read_text().split()
    assert len(lines) == 3
    assert verify.verify(v).ok and memo.read_text().split() == lines  # nothing new to remember
    assert verify.verify(v, full=True).ok
    secret = environment.home_dir() / "memo.key"
    assert stat.S_IMODE(secret.stat().st_mode) == 0o600 and len(secret.read_bytes()) == 32


def test_a_memo_line_written_by_an_agent_cannot_hide_a_forged_signature(vault: Path) -> None:
    """Attacker: an agent that can write the vault (`.vaultmem/` included) but not
    VAULTMEM_HOME. It pastes a valid signature onto another entry and adds the memo line the
    unkeyed digest would give. The digest is keyed with a secret it cannot read: still forged."""
    import hashlib

    v = make_keys(vault, "ella")
    sig, second = _swap_second_signature(vault)
    pk = keyring.public_keys(v)[second.key]  # type: ignore[index]
    raw = f"{second.hash}|{second.key}|{pk.public}|{sig}".encode()
    forged = [hashlib.blake2b(raw, digest_size=n).hexdigest() for n in (12, 16, 32)]
    memo = v.state("verified", "signatures.txt")
    memo.parent.mkdir(parents=True, exist_ok=True)
    memo.write_text("\n".join(forged) + "\n")
    report = verify.verify(Vault.open(vault))
    assert [(p.kind, p.id) for p in report.problems] == [("forged", second.id)]


def test_a_signature_replaced_after_the_memo_remembered_it_is_checked_again(vault: Path) -> None:
    """The memo remembers one signature, not one entry: this machine verified both entries,
    then the second one's signature is swapped for the first's (same hash, same key). Its memo
    line no longer matches, so it is checked afresh and reported, as a fresh clone would."""
    v = make_keys(vault, "ella")
    first = log.append(v, "ella", "first").entry
    second = log.append(v, "ella", "second").entry
    assert verify.verify(v).ok  # both signatures are in the memo now
    path = vault / "nexus/live-context.md"
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace(second.sig, first.sig), encoding="utf-8")  # type: ignore[arg-type]
    assert [(p.kind, p.id) for p in verify.verify(Vault.open(vault)).problems] == [
        ("forged", second.id)
    ]


def test_without_a_writable_home_every_signature_is_checked(vault: Path) -> None:
    v = make_keys(vault, "ella")
    (environment.home_dir() / "memo.key").write_bytes(b"short")  # damaged: no memo at all
    log.append(v, "ella", "x")
    assert verify.verify(v).ok
    assert not v.state("verified", "signatures.txt").exists()


def test_the_signer_is_kept_while_its_files_are_unchanged(vault: Path) -> None:
    """A process appending in a loop loads the private key once; a new key, a replaced key
    file or a key made world-readable is seen at the next append."""
    v = make_keys(vault, "ella")
    first = signing.signer_for(v, "ella")
    assert first is not None and signing.signer_for(v, "ella") is first
    log.append(v, "ella", "with the first key")
    second_key = keyring.create_key(v, "ella")
    now = signing.signer_for(v, "ella")
    assert now is not None and now is not first and now.key_id == second_key.key_id
    private = Path(second_key.private_path)
    private.chmod(0o644)
    with pytest.raises(IntegrityError, match="readable by other users"):
        log.append(v, "ella", "with a key anyone can read")
