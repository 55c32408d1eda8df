"""A chain that forked (one key wrote on two machines) is a conflict until one signed merge
entry joins it; nothing already written is rewritten."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests._cli import run_cli
from tests._layer3_helpers import fresh_vault, make_keys
from vaultmem.core.vault import Vault
from vaultmem.nexus import entry, forks, log, repair, verify


def kinds(report: verify.VerifyReport) -> list[tuple[str, str | None]]:
    return [(p.kind, p.id) for p in report.problems]


def _union(base: bytes, ours: bytes, theirs: bytes) -> bytes:
    """What git's union merge makes of two appends to one base: ours, then theirs."""
    assert ours.startswith(base) and theirs.startswith(base)
    return ours + theirs[len(base) :]


@pytest.fixture
def forked(tmp_path: Path) -> tuple[Path, list[entry.Entry], list[entry.Entry]]:
    """Machine A and machine B share a vault and one VAULTMEM_HOME (copied): both write ella's
    chain from ella.2 on: A two entries, B three; then A merges B's log as git's union would."""
    a = fresh_vault(tmp_path)
    va = make_keys(a, "ella", "lyra")
    log.append(va, "ella", "before the split")
    log.append(va, "lyra", "lyra before the split")
    b = tmp_path / "machine-b"
    shutil.copytree(a, b)
    live = "nexus/live-context.md"
    base = (a / live).read_bytes()
    on_a = [log.append(va, "ella", f"on A {i}").entry for i in range(2)]
    vb = Vault.open(b)
    on_b = [log.append(vb, "ella", f"on B {i}").entry for i in range(3)]
    on_b.append(log.append(vb, "lyra", "lyra saw B's ella").entry)
    (a / live).write_bytes(_union(base, (a / live).read_bytes(), (b / live).read_bytes()))
    return a, on_a, on_b


def test_a_fork_is_a_conflict_that_names_the_repair(
    forked: tuple[Path, list[entry.Entry], list[entry.Entry]],
) -> None:
    a, on_a, on_b = forked
    report = verify.verify(Vault.open(a))
    assert not report.ok
    assert {k for k, _ in kinds(report)} == {"conflict"}
    assert {i for _, i in kinds(report)} == {"ella.2", "ella.3"}
    assert "repair --merge-forks" in report.problems[0].message
    [fork] = forks.find_forks(Vault.open(a), "live")
    assert fork.chain == "ella" and fork.since == 3
    assert [t.hash for t in fork.tips] == [on_b[2].hash, on_a[1].hash]


def test_merge_forks_joins_with_one_signed_entry_and_rewrites_nothing(
    forked: tuple[Path, list[entry.Entry], list[entry.Entry]],
) -> None:
    a, on_a, on_b = forked
    live = a / "nexus/live-context.md"
    before = live.read_bytes()
    v = Vault.open(a)
    report = repair.repair(v, merge_forks=True)
    assert report.after.ok, kinds(report.after)
    assert any("joined the fork of ella" in act for act in report.actions)
    after = live.read_bytes()
    assert after.startswith(before)  # appended to, never rewritten
    joined = entry.parse_entries(after.decode())[-1]
    assert (joined.type, joined.id, joined.seq) == ("merge", "ella.5", 5)
    assert joined.prev == on_b[2].hash and joined.extra["merges"] == [on_a[1].hash]
    # once: a second run finds nothing to join, and the chain goes on from the merge
    assert not [x for x in repair.repair(v, merge_forks=True).actions if "joined" in x]
    nxt = log.append(v, "ella", "after the merge").entry
    assert (nxt.id, nxt.prev) == ("ella.6", joined.hash)
    assert verify.verify(v).ok


def test_a_merge_entry_that_names_a_missing_entry_is_a_broken_chain(
    forked: tuple[Path, list[entry.Entry], list[entry.Entry]],
) -> None:
    """Attacker: an agent with ella's key cannot paper over a fork with a merge entry that
    joins something that is not there; the fork still shows."""
    a, _on_a, _on_b = forked
    v = Vault.open(a)
    log.append(v, "ella", "fake join", joins=("sha256:" + "0" * 64,))
    report = verify.verify(v)
    assert ("broken-chain", "ella.5") in kinds(report)
    assert ("conflict", "ella.2") in kinds(report)


def test_an_agent_cannot_write_a_merge_entry_through_the_cli(
    forked: tuple[Path, list[entry.Entry], list[entry.Entry]],
) -> None:
    a, _on_a, _on_b = forked
    res = run_cli("append", "x", "--type", "merge", "--agent", "ella", "--vault", str(a))
    assert res.exit_code == 2 and "merge" in res.stderr


def test_repair_merge_forks_on_the_cli(
    forked: tuple[Path, list[entry.Entry], list[entry.Entry]],
) -> None:
    a, _on_a, _on_b = forked
    res = run_cli("verify", "--vault", str(a))
    assert res.exit_code == 5 and "merge-forks" in res.stdout + res.stderr
    res = run_cli("repair", "--merge-forks", "--vault", str(a))
    assert res.exit_code == 0, res.stderr
    assert "joined the fork of ella" in res.stdout
    assert run_cli("verify", "--vault", str(a)).exit_code == 0


def test_a_fork_whose_key_is_elsewhere_is_left_for_that_machine(
    forked: tuple[Path, list[entry.Entry], list[entry.Entry]],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    a, _on_a, _on_b = forked
    before = (a / "nexus/live-context.md").read_bytes()
    monkeypatch.setenv("VAULTMEM_HOME", str(tmp_path / "a-machine-without-keys"))
    report = repair.repair(Vault.open(a), merge_forks=True)
    assert any("its key is on another machine" in x for x in report.actions)
    assert not report.after.ok
    assert (a / "nexus/live-context.md").read_bytes() == before
