"""Helpers shared by the layer-3 tests (log, signing, context, shared state)."""

from __future__ import annotations

from pathlib import Path

from vaultmem.core.vault import Vault


def open_vault(path: Path) -> Vault:
    return Vault.open(path)


def make_keys(path: Path, *agents: str) -> Vault:
    """example-vault ships without private keys: create them in the test's VAULTMEM_HOME."""
    from vaultmem.nexus import keyring

    v = Vault.open(path)
    for agent in agents or v.known_agents():
        info = keyring.create_key(v, agent)
        if not info.approved:  # a copy of example-vault: a person approves the new key
            if not keyring.has_usable_key(v, "chiara"):
                keyring.create_key(v, "chiara")  # an approval is the reviewer's signature
            keyring.approve_key(v, info.key_id, reviewer="chiara")
    return v


def set_toml(path: Path, section: str, key: str, value: str) -> None:
    """Set `key = value` under `[section]` of the vault's vaultmem.toml (line edit)."""
    toml = path / "vaultmem.toml"
    lines = toml.read_text(encoding="utf-8").splitlines()
    out, in_section, done = [], False, False
    for line in lines:
        stripped = line.strip()
        if stripped.startswith("["):
            if in_section and not done:
                out.append(f"{key} = {value}")
                done = True
            in_section = stripped == f"[{section}]"
        elif in_section and stripped.split("=")[0].strip() == key:
            out.append(f"{key} = {value}")
            done = True
            continue
        out.append(line)
    if not done:
        if not in_section:
            out.append(f"[{section}]")
        out.append(f"{key} = {value}")
    toml.write_text("\n".join(out) + "\n", encoding="utf-8")


def fresh_vault(tmp_path: Path) -> Path:
    """A copy of example-vault with empty logs and no keys or checkpoints, so that ids in the
    layer-3 tests start at 1 whatever example entries the example vault ships with."""
    import shutil

    from vaultmem.core.templates import template

    example = Path(__file__).resolve().parent.parent / "example-vault"
    root = tmp_path / "vault"
    shutil.copytree(example, root, ignore=shutil.ignore_patterns(".vaultmem"))
    for rel in ("nexus/live-context.md", "nexus/decisions.md"):
        (root / rel).write_text(template(rel), encoding="utf-8")
    shutil.rmtree(root / "nexus" / "archive", ignore_errors=True)
    for pattern in ("agents/*/checkpoint.md", "agents/*/keys.md"):
        for path in root.glob(pattern):
            path.unlink()
    return root


def bulk_append(path: Path, agent: str, n: int, *, summary: str = "noise") -> None:
    """Append `n` signed entries by `agent` in one write: a long log in a fraction of the time
    `n` appends take (each fsyncs twice). The chain continues from the agent's head."""
    from vaultmem.core import clock
    from vaultmem.core.records import evolve
    from vaultmem.nexus import entry, log, signing

    v = Vault.open(path)
    signer = signing.signer_for(v, agent)
    assert signer is not None
    seq, prev = log.rebuild_heads(v, "live").get(agent, [0, None])
    now = clock.stamp_ms()
    blocks = []
    for i in range(n):
        seq += 1
        e = entry.Entry(
            id=entry.entry_id(agent, seq, "live"),
            agent=agent,
            seq=seq,
            time=now,
            channel="ops",
            type="note",
            summary=f"{summary} {i}",
            body="",
            prev=prev,
            key=signer.key_id,
        )
        digest = e.compute_hash()
        e = evolve(e, hash=digest, sig=signer.sign(digest))
        prev = digest
        blocks.append(entry.render(e))
    with open(v.live_context, "a", encoding="utf-8") as fh:
        fh.write("".join(blocks))
