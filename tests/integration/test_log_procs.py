"""Real processes: concurrent writers, writers killed with SIGKILL, a lock held past the
timeout, and `log --follow` seeing another process's appends."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests._cli import run_proc
from tests._layer3_helpers import fresh_vault, make_keys, set_toml
from vaultmem.nexus import entry, log, verify


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    """Empty logs (example-vault may ship example entries): ids start at 1."""
    return fresh_vault(tmp_path)


WRITER = r"""
import sys
from vaultmem.core.vault import Vault
from vaultmem.nexus.log import append
v = Vault.open(sys.argv[1])
agent, n, tag = sys.argv[2], int(sys.argv[3]), sys.argv[4]
for i in range(n):
    e = append(v, agent, f"{tag} {i}", channel="load", body=f"from {tag}\nline two {i}").entry
    sys.stdout.write(e.id + "\n")
    sys.stdout.flush()
"""


def start_writer(vault: Path, agent: str, n: int, tag: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", WRITER, str(vault), agent, str(n), tag],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.mark.slow
def test_eight_processes_append_at_once_and_lose_nothing(vault: Path) -> None:
    v = make_keys(vault)
    n = 40
    procs = [start_writer(vault, ("ella", "lyra")[i % 2], n, f"w{i}") for i in range(8)]
    acknowledged: list[str] = []
    for p in procs:
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
        acknowledged += out.split()
    assert len(acknowledged) == 8 * n
    parsed = entry.read_file(v.live_context)
    assert parsed.fragments == ()
    ids = [e.id for e in parsed.entries]
    assert sorted(ids) == sorted(acknowledged) and len(set(ids)) == len(ids)
    for agent in ("ella", "lyra"):
        seqs = sorted(e.seq for e in parsed.entries if e.agent == agent)
        assert seqs == list(range(1, 4 * n + 1))
    # no interleaved bytes: every body is exactly what its writer wrote
    for e in parsed.entries:
        tag, i = e.summary.split()
        assert e.body == f"from {tag}\nline two {i}"
    report = verify.verify(v)
    assert report.ok, report.problems[:3]
    assert len(log.read_journal(v, "live")) == 8 * n


@pytest.mark.slow
def test_writers_killed_with_sigkill_leave_whole_entries(vault: Path) -> None:
    v = make_keys(vault)
    rng = random.Random(7)
    acknowledged: list[str] = []
    for round_ in range(2):
        procs = [
            start_writer(vault, ("ella", "lyra")[i % 2], 100_000, f"r{round_}w{i}")
            for i in range(4)
        ]
        firsts = []
        for p in procs:  # wait until every writer is appending, however slow the machine
            assert p.stdout is not None
            firsts.append(p.stdout.readline().strip())
        for p in procs:
            time.sleep(rng.uniform(0.0, 0.25))
            os.kill(p.pid, signal.SIGKILL)
        for p, first in zip(procs, firsts, strict=True):
            out, _ = p.communicate(timeout=30)
            assert p.returncode == -signal.SIGKILL
            # only whole lines were acknowledged (printed after append returned)
            acknowledged += [first, *(ln for ln in out.split("\n")[:-1] if ln)]
    assert len(acknowledged) > 8
    parsed = entry.read_file(v.live_context)
    assert parsed.fragments == ()
    present = {e.id for e in parsed.entries}
    assert set(acknowledged) <= present
    report = verify.verify(v)
    assert report.ok, report.problems[:3]
    # and the log keeps working after the massacre
    nxt = log.append(v, "ella", "still fine").entry
    assert nxt.seq == max(e.seq for e in parsed.entries if e.agent == "ella") + 1


HOLDER = r"""
import fcntl, sys, time
fh = open(sys.argv[1], "a+b")
fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
print("locked", flush=True)
time.sleep(float(sys.argv[2]))
"""


def test_lock_held_by_another_process_times_out_with_exit_6(vault: Path) -> None:
    make_keys(vault, "ella")
    set_toml(vault, "log", "lock_timeout", "0.5")
    lock = vault / ".vaultmem" / "locks" / "live-context.lock"
    lock.parent.mkdir(parents=True, exist_ok=True)
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(lock), "30"], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        before = (vault / "nexus/live-context.md").read_bytes()
        started = time.monotonic()
        res = run_proc("append", "blocked", "--agent", "ella", "--vault", str(vault))
        assert res.returncode == 6, res.stderr
        assert time.monotonic() - started < 20
        assert "timed out after 0.5s" in res.stderr and "retry" in res.stderr
        assert (vault / "nexus/live-context.md").read_bytes() == before
    finally:
        holder.kill()
        holder.wait()
    res = run_proc("append", "now it works", "--agent", "ella", "--vault", str(vault))
    assert res.returncode == 0 and res.stdout.strip() == "ella.1"


def _tickets(state: Path) -> int:
    from vaultmem.core import commit

    fd = os.open(state, os.O_RDONLY | os.O_CREAT, 0o644)
    try:
        return commit._read(fd, commit.TICKETS) or 0
    finally:
        os.close(fd)


def _commit_round(vault: Path, crash_victim: bool) -> tuple[list[str], bool]:
    """Hold the commit lock from outside while three writers append one entry each (one of
    them, with `crash_victim`, dies before its batch's fsync if it leads the batch); check
    they all wrote and all wait; release. Returns the acknowledged ids and whether the victim
    was killed."""
    commit_lock = vault / ".vaultmem" / "locks" / "live-context.commit"
    commit_lock.parent.mkdir(parents=True, exist_ok=True)
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(commit_lock), "60"], stdout=subprocess.PIPE, text=True
    )
    assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
    live = vault / "nexus" / "live-context.md"
    tickets = _tickets(commit_lock) + 3  # what the count reads once all three wait
    procs = []
    for i, agent in enumerate(("ella", "lyra", "ella")):
        env = dict(os.environ)
        env.pop("VAULTMEM_CRASH_AT", None)
        if crash_victim and i == 0:
            env["VAULTMEM_CRASH_AT"] = "step:3"  # the log, the journal, then the batch's fsync
        procs.append(
            subprocess.Popen(
                [sys.executable, "-c", WRITER, str(vault), agent, "1", f"batch{i}"],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                env=env,
            )
        )
    try:
        deadline = time.monotonic() + 60
        while not all(f"batch{i} 0" in live.read_text(encoding="utf-8") for i in range(3)):
            assert time.monotonic() < deadline, "the writers never wrote their entries"
            time.sleep(0.05)
        # and took their tickets (just after the entry: a loaded machine can pause a writer
        # in between, and a batch led without the victim's ticket leaves it leading alone)
        while _tickets(commit_lock) != tickets:
            assert time.monotonic() < deadline, "the writers never took their tickets"
            time.sleep(0.05)
        # written, but not acknowledged: nobody made them durable yet
        assert all(p.poll() is None for p in procs)
    finally:
        holder.kill()
        holder.wait()
    acknowledged, killed = [], False
    for i, p in enumerate(procs):
        out, err = p.communicate(timeout=60)
        if p.returncode == -signal.SIGKILL and crash_victim and i == 0:
            killed = True
            continue
        assert p.returncode == 0, err
        acknowledged += out.split()
    return acknowledged, killed


@pytest.mark.slow
def test_one_fsync_makes_a_batch_durable_and_a_leader_killed_mid_batch_loses_nothing(
    vault: Path,
) -> None:
    """Group commit from the crash's side: writers append while the commit lock is held, so
    their entries form one batch; the writer that leads it may be SIGKILLed just before the
    batch's fsync. Every writer that returned success has its entry in the log and the
    journal, and the durable count covers every ticket: a later leader redid the fsync."""
    from vaultmem.core import commit

    v = make_keys(vault)
    acknowledged: list[str] = []
    kills = rounds = 0
    while kills == 0 and rounds < 12:  # the victim leads the batch in about one round in 3
        rounds += 1
        acked, killed = _commit_round(vault, crash_victim=True)
        acknowledged += acked
        kills += killed
        state = vault / ".vaultmem" / "locks" / "live-context.commit"
        fd = os.open(state, os.O_RDONLY)
        try:
            assert (
                commit._read(fd, commit.DURABLE) == commit._read(fd, commit.TICKETS) == 3 * rounds
            )
        finally:
            os.close(fd)
    assert kills == 1, f"the victim never led a batch in {rounds} rounds"
    parsed = entry.read_file(v.live_context)
    assert parsed.fragments == ()
    present = {e.id for e in parsed.entries}
    journaled = {e.id for e in log.read_journal(v, "live")}
    assert set(acknowledged) <= present and set(acknowledged) <= journaled
    assert len(present) == 3 * rounds  # the victim's entry too: written before it died
    report = verify.verify(v)
    assert report.ok, report.problems[:3]


@pytest.mark.slow
def test_log_follow_streams_appends_from_another_process(vault: Path) -> None:
    make_keys(vault)
    proc = subprocess.Popen(
        [sys.executable, "-m", "vaultmem", "log", "--follow", "--json", "--vault", str(vault)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        time.sleep(1.5)  # let it start and reach the end of the file
        for i in range(3):
            res = run_proc("append", f"live {i}", "--agent", "lyra", "--vault", str(vault))
            assert res.returncode == 0, res.stderr
        import json

        assert proc.stdout is not None
        got = [json.loads(proc.stdout.readline()) for _ in range(3)]
        assert [g["summary"] for g in got] == ["live 0", "live 1", "live 2"]
        assert got[0]["id"] == "lyra.1"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@pytest.mark.slow
def test_two_agents_set_different_state_sections_at_once(vault: Path) -> None:
    make_keys(vault)
    procs = []
    for agent, section in (("ella", "Backend"), ("lyra", "Frontend")) * 3:
        procs.append(
            subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "vaultmem",
                    "state",
                    "set",
                    section,
                    f"{agent} was here",
                    "--agent",
                    agent,
                    "--vault",
                    str(vault),
                ],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
        )
    for p in procs:
        _, err = p.communicate(timeout=60)
        assert p.returncode == 0, err
    text = (vault / "nexus/project-state.md").read_text()
    assert "## Backend\n\nella was here\n" in text
    assert "## Frontend\n\nlyra was here\n" in text
    assert text.count("## Backend") == 1 and text.count("## Frontend") == 1
    assert "Launch Orbit" in text  # the Goal section a person wrote is untouched
    entries = entry.read_file(vault / "nexus/live-context.md").entries
    assert len([e for e in entries if e.type == "state"]) == 6


IMPORTS = r"""
import sys
from vaultmem.cli.app import run

try:
    run(sys.argv[1:])
except SystemExit as exc:
    assert not exc.code, exc.code
print(" ".join(sorted({m.split(".")[0] for m in sys.modules})))
"""


def test_append_and_read_import_nothing_heavy(vault: Path) -> None:
    make_keys(vault)
    base = ["--vault", str(vault), "--agent", "ella"]
    append = (
        subprocess.run(
            [sys.executable, "-c", IMPORTS, "append", "hello", *base],
            capture_output=True,
            text=True,
            check=True,
        )
        .stdout.splitlines()[-1]
        .split()
    )
    for heavy in ("yaml", "rich", "whoosh", "anthropic", "watchdog", "mcp", "portalocker"):
        assert heavy not in append, heavy
    # read checks the signature of each entry it shows (issue 20); signatures this machine
    # already checked come from verify's memo, so a read after them loads no cryptography
    from tests._cli import run_cli

    assert run_cli("verify", "--vault", str(vault)).exit_code == 0
    read = (
        subprocess.run(
            [sys.executable, "-c", IMPORTS, "read", *base],
            capture_output=True,
            text=True,
            check=True,
        )
        .stdout.splitlines()[-1]
        .split()
    )
    for heavy in ("whoosh", "anthropic", "watchdog", "mcp", "cryptography"):
        assert heavy not in read, heavy
