"""Helpers shared by the layer-3 tests (log, signing, context, shared state)."""

from __future__ import annotations

from pathlib import Path

from vaultmem.vault import Vault


def open_vault(path: Path) -> Vault:
    return Vault.open(path)


def make_keys(path: Path, *agents: str) -> Vault:
    """example-vault ships without private keys: create them in the test's VAULTMEM_HOME."""
    from vaultmem import signing

    v = Vault.open(path)
    for agent in agents or v.known_agents():
        signing.create_key(v, agent)
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
