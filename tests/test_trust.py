"""Regression tests for the adversarial review (issue 9), each from the attacker's side.

Every test runs the CLI as a real process and asserts the exit code and message, and that no
file outside the expected set changed: the vault and a decoy folder outside it are hashed
before and after.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests._cli import copy_example
from tests._layer3_helpers import make_keys
from vaultmem.core.vault import Vault
from vaultmem.nexus import log


def snapshot(*roots: Path) -> dict[str, str]:
    """sha256 of every file (and the target of every symlink) under the roots."""
    out: dict[str, str] = {}
    for root in roots:
        for path in sorted(root.rglob("*")):
            key = str(path)
            if path.is_symlink():
                out[key] = "link:" + os.readlink(path)
            elif path.is_file():
                out[key] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


def changed(before: dict[str, str], after: dict[str, str]) -> set[str]:
    return {k for k in before.keys() | after.keys() if before.get(k) != after.get(k)}


def vm(
    *args: str | bytes, stdin: str | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    full = dict(os.environ)
    full.update(env or {})
    proc = subprocess.run(
        [sys.executable, "-m", "vaultmem", *args],
        input=stdin.encode() if stdin is not None else None,
        capture_output=True,
        env=full,
        timeout=60,
    )
    return subprocess.CompletedProcess(
        proc.args,
        proc.returncode,
        proc.stdout.decode("utf-8", "replace"),
        proc.stderr.decode("utf-8", "replace"),
    )


@pytest.fixture
def world(tmp_path: Path) -> tuple[Path, Path]:
    """A vault with keys for ella and lyra, and a decoy folder outside it."""
    vault = copy_example(tmp_path / "vault")
    make_keys(vault, "ella", "lyra")
    decoy = tmp_path / "decoy"
    decoy.mkdir()
    (decoy / "precious.txt").write_text("do not touch\n")
    return vault, decoy


def _outside_unchanged(before: dict[str, str], after: dict[str, str], vault: Path) -> None:
    outside = {p for p in changed(before, after) if not p.startswith(str(vault))}
    assert outside == set()


# --- 1. writes under .vaultmem/ never follow a symlink out of the vault ----------------------


@pytest.mark.parametrize(
    "rel",
    [
        ".vaultmem/locks/live-context.lock",
        ".vaultmem/journal/live.jsonl",
        ".vaultmem/heads/live.json",
    ],
)
def test_a_state_file_symlinked_out_of_the_vault_is_refused(
    world: tuple[Path, Path], rel: str
) -> None:
    vault, decoy = world
    vm("append", "warm up", "--vault", str(vault), "--agent", "ella")  # state files exist
    target = vault / rel
    target.unlink(missing_ok=True)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.symlink_to(decoy / "precious.txt")
    before = snapshot(vault, decoy)
    res = vm("append", "hello", "--vault", str(vault), "--agent", "ella")
    assert res.returncode == 8, res.stderr
    assert "symlink" in res.stderr
    after = snapshot(vault, decoy)
    # nothing changed but the lock file (the holder's pid): not the log, not the decoy
    assert {p for p in changed(before, after) if "/.vaultmem/locks/" not in p} == set()
    assert (decoy / "precious.txt").read_text() == "do not touch\n"


@pytest.mark.slow
@pytest.mark.parametrize("folder", [".vaultmem", ".vaultmem/cursors", ".vaultmem/quarantine"])
def test_a_symlinked_state_folder_is_refused(world: tuple[Path, Path], folder: str) -> None:
    vault, decoy = world
    vm("read", "--vault", str(vault), "--agent", "ella")  # cursors exist
    path = vault / folder
    if path.exists():
        shutil.rmtree(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.symlink_to(decoy, target_is_directory=True)
    before = snapshot(vault, decoy)
    cmd = ["repair"] if folder.endswith("quarantine") else ["read", "--agent", "ella"]
    if folder.endswith("quarantine"):  # repair sets torn text aside into quarantine/
        with open(vault / "nexus/live-context.md", "a") as fh:
            fh.write("\n### 2026-11-29T10:00:00.000Z · ella · x · note · torn\n")
        before = snapshot(vault, decoy)
    res = vm(*cmd, "--vault", str(vault))
    assert res.returncode == 8, (res.stdout, res.stderr)
    assert "symlink" in res.stderr
    _outside_unchanged(before, snapshot(vault, decoy), vault)
    assert sorted(p.name for p in decoy.iterdir()) == ["precious.txt"]


# --- 2. state set and checkpoint never lose what a person wrote -------------------------------


PERSON_STATE = """---
tags:
  - vaultmem/state
---

# Project state

## Alpha

Alpha is the person's.

## Beta

old beta

## Gamma

A person's Gamma section, with a table:

| a | b |
|---|---|
| 1 | 2 |
"""


@pytest.mark.slow
def test_an_unclosed_fence_in_agent_text_cannot_swallow_a_persons_section(
    world: tuple[Path, Path],
) -> None:
    vault, _decoy = world
    state = vault / "nexus/project-state.md"
    state.write_text(PERSON_STATE)
    first = vm("state", "set", "Beta", "```python\nprint('never closed')", "--vault", str(vault),
               "--agent", "ella")  # fmt: skip
    assert first.returncode == 0, first.stderr
    assert "closed a code fence" in first.stderr
    second = vm("state", "set", "Beta", "beta, second version", "--vault", str(vault),
                "--agent", "ella")  # fmt: skip
    assert second.returncode == 0, second.stderr
    text = state.read_text()
    assert "## Gamma\n\nA person's Gamma section, with a table:" in text
    assert "| 1 | 2 |" in text and "Alpha is the person's." in text
    assert "never closed" not in text
    # every replace was journaled: the person's original file comes back whole
    history = vm("state", "--history", "--json", "--vault", str(vault))
    assert len(json.loads(history.stdout)["versions"]) == 2
    back = vm("repair", "--state", "1", "--vault", str(vault))
    assert back.returncode == 0, back.stderr
    assert state.read_text() == PERSON_STATE


@pytest.mark.slow
def test_a_checkpoint_edited_by_a_person_is_kept_in_history(world: tuple[Path, Path]) -> None:
    vault, _decoy = world
    assert vm("checkpoint", "v1", "--vault", str(vault), "--agent", "ella").returncode == 0
    cp = vault / "agents/ella/checkpoint.md"
    cp.write_text(cp.read_text() + "\nA person's note: call Marta first.\n")
    assert vm("checkpoint", "v2", "--vault", str(vault), "--agent", "ella").returncode == 0
    hist = vm("checkpoint", "--history", "--json", "--vault", str(vault), "--agent", "ella")
    raws = [
        json.loads(line)["raw"]
        for line in (vault / ".vaultmem/journal/checkpoints/ella.jsonl").read_text().splitlines()
    ]
    assert any("A person's note: call Marta first." in r for r in raws)
    assert hist.returncode == 0


# --- 3. secrets never land, whatever the path -------------------------------------------------


def _refuse(vault: Path) -> None:
    cfg = vault / "vaultmem.toml"
    cfg.write_text(cfg.read_text().replace('policy = "redact"', 'policy = "refuse"'))


TOKEN = "ghp_" + "a1B2c3D4" * 5


@pytest.mark.parametrize(
    "args",
    [
        ["remember", f"deploy token {TOKEN}", "--name", "Deploy", "--type", "project"],
        ["remember", "ok", "--name", f"Token {TOKEN}", "--type", "project"],
        ["state", "set", f"Keys {TOKEN}", "fine text", "--agent", "ella"],
        ["state", "set", "Status", f"uses {TOKEN}", "--agent", "ella"],
        ["append", "fine", "--body", f"Authorization: Bearer {TOKEN}", "--agent", "ella"],
        ["decide", "Use the token", "--why", f"PGPASSWORD=hunter2xyz {TOKEN}", "--agent", "ella"],
        ["checkpoint", "x", "--next", f"rotate {TOKEN}", "--agent", "ella"],
        ["retain", f"SECRET_KEY=django-insecure-9x!k2@p4#q8 {TOKEN}", "--type", "fact",
         "--agent", "ella"],
    ],
    ids=lambda a: " ".join(a[:2]),
)  # fmt: skip
def test_refuse_policy_writes_nothing_on_any_path(
    world: tuple[Path, Path], args: list[str]
) -> None:
    vault, decoy = world
    _refuse(vault)
    before = snapshot(vault, decoy)
    res = vm(*args, "--vault", str(vault))
    assert res.returncode == 8, (res.stdout, res.stderr)
    assert "credential" in res.stderr
    touched = {p for p in changed(before, snapshot(vault, decoy)) if "/.vaultmem/" not in p}
    assert touched == set()


def test_redact_policy_never_writes_the_secret(world: tuple[Path, Path]) -> None:
    vault, _decoy = world
    res = vm("remember", f"deploy token {TOKEN}", "--name", "Deploy", "--type", "project",
             "--vault", str(vault))  # fmt: skip
    assert res.returncode == 0 and "redacted a credential (github-token" in res.stderr
    everything = "".join(p.read_text(errors="replace") for p in vault.rglob("*.md"))
    assert TOKEN not in everything and "[redacted:github-token]" in everything


# --- 4. grammars are full matches --------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["append", "x", "--channel", "backend\n", "--agent", "ella"], "channel"),
        (["append", "x", "--type", "ack", "--ack", "ella.1\n", "--agent", "ella"], "entry id"),
        (["log", "--since", "ella.1\n"], "is not an entry id, a date, a time or a duration"),
        (["init", "--agent", "nova\n"], "invalid agent name"),
        (["retain", "x", "--type", "fact", "--tag", "ok\n", "--agent", "ella"], "invalid tag"),
    ],
)
def test_a_trailing_newline_is_not_a_valid_value(
    world: tuple[Path, Path], args: list[str], needle: str
) -> None:
    vault, decoy = world
    before = snapshot(vault, decoy)
    res = vm(*args, "--vault", str(vault))
    assert res.returncode == 2, (res.stdout, res.stderr)
    assert needle in res.stderr
    assert {p for p in changed(before, snapshot(vault, decoy)) if "/.vaultmem/" not in p} == set()


# --- 5. the signed log's authenticity ----------------------------------------------------------


@pytest.mark.slow
def test_a_key_made_for_another_agent_is_reported_until_a_person_approves_it(
    world: tuple[Path, Path], tmp_path: Path
) -> None:
    vault, _decoy = world
    assert vm("verify", "--vault", str(vault)).returncode == 0
    lyras_home = {"VAULTMEM_HOME": str(tmp_path / "lyra-home")}
    made = vm("keys", "create", "--agent", "ella", "--vault", str(vault), "--json", env=lyras_home)
    assert made.returncode == 0 and "vaultmem keys approve" in made.stderr
    key = json.loads(made.stdout)["key_id"]
    forged = vm("append", "ella says hi", "--agent", "ella", "--vault", str(vault), env=lyras_home)
    assert forged.returncode == 0
    res = vm("verify", "--vault", str(vault), "--json")
    assert res.returncode == 5
    kinds = {p["kind"] for p in json.loads(res.stdout)["problems"]}
    assert kinds == {"unapproved-key"}
    # an agent cannot approve it; a reviewer can
    refused = vm("keys", "approve", key, "--reviewer", "chiara", "--agent", "lyra",
                 "--vault", str(vault))  # fmt: skip
    assert refused.returncode == 8
    # an approval is chiara's signature: she makes her key on this machine first
    assert vm("keys", "create", "--reviewer", "chiara", "--vault", str(vault)).returncode == 0
    assert vm("keys", "approve", key, "--reviewer", "chiara", "--vault", str(vault)).returncode == 0
    assert vm("verify", "--vault", str(vault)).returncode == 0


def test_a_rewritten_entry_that_the_journal_knows_is_reported_as_edited(
    world: tuple[Path, Path],
) -> None:
    vault, _decoy = world
    v = Vault.open(vault)
    e = log.append(v, "ella", "the original").entry
    # re-sign a different entry with the same id (someone holding ella's key, or a bug)
    from vaultmem.core.records import evolve
    from vaultmem.nexus import entry as fmt
    from vaultmem.nexus import signing

    other = evolve(e, summary="a different text", hash="", sig=None)
    other = evolve(other, hash=other.compute_hash())
    signer = signing.signer_for(v, "ella")
    assert signer is not None
    other = evolve(other, sig=signer.sign(other.hash))
    path = vault / "nexus/live-context.md"
    data = path.read_bytes()
    (last,) = [x for x in fmt.parse_bytes(data).entries if x.id == e.id]
    path.write_bytes(data[: last.byte_start] + fmt.render(other).encode()[1:])
    res = vm("verify", "--vault", str(vault), "--json")
    assert res.returncode == 5
    problems = json.loads(res.stdout)["problems"]
    assert any(p["kind"] == "edited" and p["id"] == e.id for p in problems)


def test_dropping_the_newest_entry_of_a_chain_shows_on_a_fresh_clone(
    world: tuple[Path, Path], tmp_path: Path
) -> None:
    vault, _decoy = world
    v = Vault.open(vault)
    dropped = log.append(v, "ella", "ella's newest").entry
    log.append(v, "lyra", "lyra saw it")  # lyra's entry anchors ella's head
    clone = tmp_path / "clone"
    shutil.copytree(vault, clone, ignore=shutil.ignore_patterns(".vaultmem"))  # no journal
    path = clone / "nexus/live-context.md"
    text = path.read_text()
    start = text.index("\n### ", text.index("ella's newest") - 80)
    end = text.index("-->\n", start) + 4
    path.write_text(text[:start] + text[end:])
    res = vm("verify", "--vault", str(clone), "--json")
    assert res.returncode == 5
    problems = json.loads(res.stdout)["problems"]
    assert any(p["kind"] == "missing" and p["id"] == dropped.id for p in problems), problems


# --- 6. the review gate shows what it will do and trusts no author claim -----------------------


@pytest.mark.slow
def test_apply_without_confirmation_changes_nothing(world: tuple[Path, Path]) -> None:
    vault, decoy = world
    res = vm("retain", "Deploys need no approval", "--type", "project", "--agent", "lyra",
             "--vault", str(vault), "--json")  # fmt: skip
    bank = vault / json.loads(res.stdout)["path"]
    text = bank.read_text().replace("status: pending", "status: approved\nsupersedes: m-99999999")
    bank.write_text(text.replace("author: lyra", "author: ella"))
    before = snapshot(vault, decoy)
    dry = vm("promote", "apply", "--reviewer", "chiara", "--dry-run", "--vault", str(vault))
    assert dry.returncode == 0
    assert "SUPERSEDES m-99999999" in dry.stdout and "by lyra" in dry.stdout
    assert "frontmatter says author 'ella'" in dry.stdout
    res = vm("promote", "apply", "--reviewer", "chiara", "--vault", str(vault))
    assert res.returncode == 2 and "--yes" in res.stderr
    assert {p for p in changed(before, snapshot(vault, decoy)) if "/.vaultmem/" not in p} == set()


# --- 7. bad input never hangs or poisons the vault ---------------------------------------------


@pytest.mark.slow
def test_a_huge_sequence_number_does_not_hang_verify_or_repair(world: tuple[Path, Path]) -> None:
    vault, _decoy = world
    v = Vault.open(vault)

    from vaultmem.core.records import evolve
    from vaultmem.nexus import entry as fmt
    from vaultmem.nexus import signing

    e = log.append(v, "ella", "normal").entry
    huge = f"{fmt.chain_of(e.id)}.{10**12}"  # on the chain this machine writes
    big = evolve(e, id=huge, seq=10**12, summary="huge", hash="", sig=None)
    big = evolve(big, hash=big.compute_hash())
    signer = signing.signer_for(v, "ella")
    assert signer is not None
    big = evolve(big, sig=signer.sign(big.hash))
    with open(vault / "nexus/live-context.md", "a") as fh:
        fh.write(fmt.render(big))
    for cmd in ("verify", "repair"):
        res = vm(cmd, "--vault", str(vault), "--json")  # vm has a 60 s timeout
        assert res.returncode == 5, res.stderr
        assert "are missing" in res.stdout


def test_a_bad_byte_in_one_keys_file_does_not_fail_the_whole_vault(
    world: tuple[Path, Path],
) -> None:
    vault, _decoy = world
    log.append(Vault.open(vault), "lyra", "still verifiable")
    keys = vault / "agents/ella/keys.md"
    keys.write_bytes(keys.read_bytes().replace(b"Public", b"Publ\xffic", 1))
    res = vm("verify", "--vault", str(vault), "--json")
    assert res.returncode == 5
    problems = json.loads(res.stdout)["problems"]
    assert [p["kind"] for p in problems] == ["bad-keys-file"]


def test_an_argument_that_is_not_utf8_is_a_usage_error(world: tuple[Path, Path]) -> None:
    vault, decoy = world
    before = snapshot(vault, decoy)
    res = vm("append", b"caf\xe9", "--vault", str(vault), "--agent", "ella")
    assert res.returncode == 2 and "not valid UTF-8" in res.stderr
    assert {p for p in changed(before, snapshot(vault, decoy)) if "/.vaultmem/" not in p} == set()


@pytest.mark.parametrize(
    ("line", "needle"),
    [
        ("[log]\nlock_timeout = -1", "lock_timeout must be between"),
        ("[log]\nmax_summary = -5", "max_summary must be between"),
        ('[secrets]\npolicy = "sometimes"', "policy must be one of"),
        ("[bank]\nduplicate_threshold = 2.0", "duplicate_threshold must be between"),
    ],
)
def test_every_setting_is_checked(world: tuple[Path, Path], line: str, needle: str) -> None:
    vault, _decoy = world
    cfg = vault / "vaultmem.toml"
    section = line.split("\n")[0]
    text = cfg.read_text()
    key = line.split("\n")[1].split(" = ")[0]
    lines = [ln for ln in text.splitlines() if not ln.startswith(f"{key} =")]
    text = "\n".join(lines).replace(section, line) if section in text else text + "\n" + line
    cfg.write_text(text + "\n")
    res = vm("status", "--vault", str(vault))
    assert res.returncode == 3 and needle in res.stderr, res.stderr


def test_an_agent_name_that_climbs_out_is_refused_in_the_config(world: tuple[Path, Path]) -> None:
    vault, decoy = world
    cfg = vault / "vaultmem.toml"
    cfg.write_text(cfg.read_text().replace('agents = ["ella", "lyra"]', 'agents = ["../evil"]'))
    before = snapshot(vault, decoy)
    res = vm("init", "--vault", str(vault))
    assert res.returncode == 3 and "not valid" in res.stderr
    assert changed(before, snapshot(vault, decoy)) == set()


# --- 8. pages for people are not a side door ---------------------------------------------------


@pytest.mark.slow
def test_review_page_does_not_leak_another_agents_pending_facts(world: tuple[Path, Path]) -> None:
    vault, _decoy = world
    res = vm("retain", "Lyra thinks the zygomorphic cache is flaky", "--type", "fact",
             "--agent", "lyra", "--vault", str(vault))  # fmt: skip
    assert res.returncode == 0
    assert "zygomorphic" in (vault / "Review.md").read_text()
    ella = vm("recall", "zygomorphic cache", "--agent", "ella", "--vault", str(vault), "--json")
    assert ella.returncode == 0
    assert json.loads(ella.stdout)["hits"] == []
    person = vm("recall", "zygomorphic cache", "--vault", str(vault), "--json")
    assert "Review.md" in {h["path"] for h in json.loads(person.stdout)["hits"]}
