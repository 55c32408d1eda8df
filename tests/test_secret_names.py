"""A secret in a name is refused (exit 8) under every secret policy, with nothing written.

A name becomes a file name, a frontmatter key, a heading or a channel: it cannot carry a
`[redacted:...]` marker. These run each command an agent could use to put a token in a name,
under the default policy ("redact") and under "refuse", and check that no file of the vault
changed. (They kill the mutant "identifier secret check applied only under policy = refuse".)
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path

import pytest

from tests._cli import run_cli
from tests._layer3_helpers import make_keys, set_toml

TOKEN = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"  # fake, shaped like a GitHub token


def snapshot(root: Path) -> dict[str, str]:
    """Every file of the vault (outside .vaultmem/ and the signing keys' folder) and its hash."""
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file() and ".vaultmem" not in p.parts
    }


def vault_text(root: Path) -> str:
    return "\n".join(
        p.read_text(encoding="utf-8", errors="replace") + str(p)
        for p in root.rglob("*")
        if p.is_file()
    )


COMMANDS: dict[str, Callable[[Path], list[str]]] = {
    "remember --name": lambda v: [
        "remember", "ok", "--name", f"Token {TOKEN}", "--type", "project", "--vault", str(v),
    ],
    "remember --description (a name for the index line)": lambda v: [
        "remember", "ok", "--name", "Token", "--description", f"use {TOKEN}", "--type",
        "project", "--scope", "agent", "--agent", "ella", "--vault", str(v),
    ],
    "retain --name": lambda v: [
        "retain", "ok fact", "--name", f"Token {TOKEN}", "--type", "project", "--agent", "ella",
        "--vault", str(v),
    ],
    "retain --tag": lambda v: [
        "retain", "ok fact", "--tag", TOKEN, "--type", "project", "--agent", "ella",
        "--vault", str(v),
    ],
    "decide --tag": lambda v: [
        "decide", "use postgres", "--why", "it is boring", "--tag", TOKEN, "--agent", "ella",
        "--vault", str(v),
    ],
    "decide --channel": lambda v: [
        "decide", "use postgres", "--why", "it is boring", "--channel", TOKEN, "--agent",
        "ella", "--vault", str(v),
    ],
    "append --channel": lambda v: [
        "append", "hello", "--channel", TOKEN, "--type", "note", "--agent", "ella", "--vault",
        str(v),
    ],
    "state set SECTION": lambda v: [
        "state", "set", f"Keys {TOKEN}", "text", "--agent", "ella", "--vault", str(v),
    ],
    "wm set KEY": lambda v: ["wm", "set", TOKEN, "value", "--agent", "ella", "--vault", str(v)],
}  # fmt: skip


@pytest.mark.parametrize("policy", ["redact", "refuse"])
@pytest.mark.parametrize("what", COMMANDS)
def test_a_secret_in_a_name_is_refused_and_nothing_is_written(
    vault: Path, policy: str, what: str
) -> None:
    make_keys(vault)
    set_toml(vault, "secrets", "policy", f'"{policy}"')
    before = snapshot(vault)
    result = run_cli(*COMMANDS[what](vault))
    if what.startswith("remember --description"):
        # a description is text, not a name: redacted (or refused), never written as given
        assert result.exit_code in (0, 8), result.stderr
        assert (result.exit_code == 8) == (policy == "refuse")
        assert TOKEN not in vault_text(vault)
        return
    assert result.exit_code == 8, (result.stdout, result.stderr)
    assert "credential" in result.stderr and TOKEN not in result.stderr
    assert snapshot(vault) == before
    assert TOKEN not in vault_text(vault)


def test_a_tag_an_agent_wrote_into_a_bank_note_is_refused_on_approval(vault: Path) -> None:
    """retain scans its tags, but an agent can edit its bank note's frontmatter afterwards:
    approving it must not copy the token into shared memory."""
    made = run_cli(
        "retain", "Reviews happen on Fridays", "--type", "project", "--tag", "process",
        "--agent", "ella", "--json", "--vault", str(vault),
    )  # fmt: skip
    assert made.exit_code == 0, made.stderr
    note = next((vault / "agents" / "ella" / "bank").glob("*.md"))
    note.write_text(note.read_text().replace("- process", f"- {TOKEN}"), encoding="utf-8")
    fact_id = note.read_text().split("id: ", 1)[1].split()[0]
    result = run_cli("promote", "approve", fact_id, "--reviewer", "chiara", "--vault", str(vault))
    assert result.exit_code == 8, (result.stdout, result.stderr)
    assert TOKEN not in (vault / "memory" / "MEMORY.md").read_text()
    assert not [p for p in (vault / "memory").rglob("*.md") if TOKEN in p.read_text()]
