"""Several machines: git sync with a real bare repository and clones, and the merge drivers."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests._proc import git, vm
from vaultmem.app.sync.merge import merge_checkpoint, merge_index, merge_snapshot, merge_state

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")


# --- merge drivers (pure) ----------------------------------------------------------------------

INDEX = "# Memory\n\n- [[memory/a|A]] — a\n- [[memory/b|B]] — b\n"


def test_index_merge_keeps_a_line_added_on_both_sides_once() -> None:
    ours = INDEX + "- [[memory/c|C]] — c\n"
    theirs = INDEX + "- [[memory/c|C]] — c\n- [[memory/d|D]] — d\n"
    merged, conflict = merge_index(INDEX, ours, theirs)
    assert not conflict
    assert merged.count("memory/c|C") == 1 and "memory/d|D" in merged


def test_index_merge_keeps_a_retraction_and_an_edit() -> None:
    ours = INDEX.replace("— b\n", "— b, better described\n")  # a person edits B
    theirs = (
        "# Memory\n\n- [[memory/a|A]] — a\n\n## Retracted\n\n- [[memory/b|B]] — b (retracted)\n"
    )
    merged, conflict = merge_index(INDEX, ours, theirs)
    assert not conflict
    assert "- [[memory/b|B]] — b, better described" in merged
    assert "- [[memory/b|B]] — b (retracted)" in merged
    assert merged.index("better described") < merged.index("## Retracted")


def test_index_merge_applies_a_removal_the_other_side_did_not_touch() -> None:
    theirs = "# Memory\n\n- [[memory/a|A]] — a\n"
    ours = INDEX + "- [[memory/c|C]] — c\n"
    merged, _ = merge_index(INDEX, ours, theirs)
    assert "memory/b" not in merged and "memory/c" in merged


STATE = "# Project state\n\n## Goal\n\nship\n\n## Status\n\nfine\n\n## Risks\n\nnone\n"


def test_state_merge_lands_two_different_sections() -> None:
    ours = STATE.replace("ship", "ship in April")
    theirs = STATE.replace("none", "the vendor")
    merged, conflict = merge_state(STATE, ours, theirs)
    assert not conflict
    assert "ship in April" in merged and "the vendor" in merged


def test_state_merge_of_the_same_section_is_a_conflict_with_both_versions() -> None:
    ours = STATE.replace("fine", "green")
    theirs = STATE.replace("fine", "red")
    merged, conflict = merge_state(STATE, ours, theirs)
    assert conflict
    assert "green" in merged and "red" in merged and "<<<<<<< this machine (status)" in merged
    assert "ship" in merged and "none" in merged


def test_state_merge_of_one_section_two_agents_set_keeps_the_later_on_both_sides() -> None:
    def page(text: str, who: str, at: str) -> str:
        return f"# State\n\n## Status\n\n{text}\n<!-- vaultmem: set by {who} at {at} -->\n"

    base = page("amber", "ella", "2026-12-01T09:00:00.000Z")
    a = page("green", "ella", "2026-12-07T10:00:00.000Z")
    b = page("red", "lyra", "2026-12-07T10:00:01.000Z")
    ours, c1 = merge_state(base, a, b)
    theirs, c2 = merge_state(base, b, a)
    assert not c1 and not c2 and ours == theirs  # both machines compute the same file
    assert "red" in ours and "green" not in ours
    assert "Superseded at a merge: ella set this section at 2026-12-07T10:00:00.000Z" in ours
    person = base.replace("amber", "amber, says Chiara")  # the stamp is as it was
    merged, conflict = merge_state(base, person, b)
    assert conflict and "says Chiara" in merged and "red" in merged


def test_state_merge_adds_a_new_section_from_either_side() -> None:
    merged, conflict = merge_state(STATE, STATE + "\n## Ours\n\nx\n", STATE + "\n## Theirs\n\ny\n")
    assert not conflict and "## Ours" in merged and "## Theirs" in merged


def test_checkpoint_merge_keeps_the_newer_whole() -> None:
    old = "---\nagent: ella\nupdated: 2026-11-29T10:00:00Z\n---\n\nold\n"
    new = "---\nagent: ella\nupdated: 2026-11-29T11:00:00Z\n---\n\nnew\n"
    assert merge_checkpoint(old, old, new) == (new, False)
    assert merge_checkpoint(old, new, old) == (new, False)


def test_a_digest_or_profile_made_on_two_machines_merges_to_the_newer_whole() -> None:
    digest = "---\nperiod: 2026-W48\nentries: {n}\ncreated: {t}\n---\n\n# Digest\n\n{n} entries\n"
    older = digest.format(n=10, t="2026-11-30T07:00:00Z")
    newer = digest.format(n=12, t="2026-11-30T08:00:00Z")
    assert merge_snapshot("", older, newer) == (newer, False)  # add/add: no common version
    assert merge_snapshot(older, newer, older) == (newer, False)
    profile = "---\nscope: shared\nbuilt: {t}\n---\n\n# Profile\n"
    assert merge_snapshot("", profile.format(t="2026-11-30T09:00:00Z"),
                          profile.format(t="2026-11-30T08:00:00Z"))[0].count("09:00") == 1  # fmt: skip


# --- real repositories ------------------------------------------------------------------------


@pytest.fixture
def machines(tmp_path: Path) -> dict[str, Path]:
    """A vault made on machine A with --git, a bare remote, and a clone on machine B."""
    a = tmp_path / "a"
    res = vm("init", str(a), "--agent", "ella", "--agent", "lyra", "--reviewer", "chiara",
             "--git", home=tmp_path / "home-a")  # fmt: skip
    assert res.returncode == 0, res.stderr
    _reviewer_key(a, tmp_path / "home-a")
    bare = tmp_path / "origin.git"
    git(tmp_path, "init", "--quiet", "--bare", str(bare))
    git(a, "remote", "add", "origin", str(bare))
    git(a, "push", "--quiet", "-u", "origin", "HEAD")
    b = tmp_path / "b"
    res = vm("clone", str(bare), str(b), "--agent", "lyra", home=tmp_path / "home-b")
    assert res.returncode == 0, res.stderr
    return {
        "a": a,
        "b": b,
        "home-a": tmp_path / "home-a",
        "home-b": tmp_path / "home-b",
        "bare": bare,
    }


def _reviewer_key(root: Path, home: Path) -> None:
    """chiara's key, made on machine A and committed: every clone pins it on first use."""
    res = vm("keys", "create", "--reviewer", "chiara", "--vault", str(root), home=home)
    assert res.returncode == 0, res.stderr
    git(root, "add", "-A")
    git(root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "--quiet", "-m", "chiara")


def _approve_b_keys(m: dict[str, Path]) -> None:
    # an approval is chiara's signature: she carries her key (made on A) to this machine
    mine = m["home-b"].parent / "home-a" / "keys" / "chiara"
    if not (m["home-b"] / "keys" / "chiara").exists():
        shutil.copytree(mine, m["home-b"] / "keys" / "chiara")
    keys = json.loads(vm("keys", "list", "--json", "--vault", str(m["b"]), home=m["home-b"]).stdout)
    for k in keys["keys"]:
        if not k["approved"]:
            res = vm("keys", "approve", k["key_id"], "--reviewer", "chiara", "--vault", str(m["b"]),
                     home=m["home-b"])  # fmt: skip
            assert res.returncode == 0, res.stderr


def test_two_machines_two_agents_sync_and_verify(machines: dict[str, Path]) -> None:
    m = machines
    _approve_b_keys(m)
    assert (
        vm(
            "append", "ella on A", "--agent", "ella", "--vault", str(m["a"]), home=m["home-a"]
        ).returncode
        == 0
    )
    assert (
        vm(
            "append", "lyra on B", "--agent", "lyra", "--vault", str(m["b"]), home=m["home-b"]
        ).returncode
        == 0
    )
    first = vm("sync", "--json", "--vault", str(m["a"]), home=m["home-a"])
    assert first.returncode == 0, first.stderr
    second = vm("sync", "--json", "--vault", str(m["b"]), home=m["home-b"])
    assert second.returncode == 0, second.stderr
    report = json.loads(second.stdout)
    assert report["entries_in"] == 1 and report["verify_ok"] is True
    third = vm("sync", "--json", "--vault", str(m["a"]), home=m["home-a"])
    assert third.returncode == 0, third.stderr
    for side in ("a", "b"):
        text = (m[side] / "nexus/live-context.md").read_text()
        assert "ella on A" in text and "lyra on B" in text
        assert vm("verify", "--vault", str(m[side]), home=m[f"home-{side}"]).returncode == 0
    again = vm("sync", "--vault", str(m["a"]), home=m["home-a"])
    assert again.returncode == 0 and "nothing to do" in again.stdout
    # recall on A finds what B wrote, without a rebuild in the agent's recall
    hits = json.loads(
        vm("recall", "lyra on B", "--json", "--vault", str(m["a"]), home=m["home-a"]).stdout
    )
    assert any("lyra on B" in (h["title"] or "") for h in hits["hits"])


def test_offline_keeps_the_work_committed(machines: dict[str, Path]) -> None:
    m = machines
    vm("append", "written offline", "--agent", "ella", "--vault", str(m["a"]), home=m["home-a"])
    m["bare"].rename(m["bare"].with_name("gone.git"))
    res = vm("sync", "--vault", str(m["a"]), home=m["home-a"])
    assert res.returncode == 6, (res.stdout, res.stderr)
    assert "committed here" in res.stderr
    assert "written offline" in git(m["a"], "show", "HEAD:nexus/live-context.md")
    m["bare"].with_name("gone.git").rename(m["bare"])
    assert vm("sync", "--vault", str(m["a"]), home=m["home-a"]).returncode == 0


def _state_set(m: dict[str, Path], machine: str, agent: str, section: str, text: str) -> Any:
    return vm("state", "set", section, text, "--agent", agent, "--vault", str(m[machine]),
              home=m[f"home-{machine}"])  # fmt: skip


def _sync(m: dict[str, Path], machine: str) -> Any:
    return vm("sync", "--vault", str(m[machine]), home=m[f"home-{machine}"])


def test_two_agents_setting_one_section_on_two_machines_keep_the_later_and_sync_on(
    machines: dict[str, Path],
) -> None:
    """No person needed: the later `state set` is current on every machine, the other is
    named under it (its text is in the log), and every sync exits 0."""
    m = machines
    _approve_b_keys(m)
    assert _state_set(m, "a", "ella", "Status", "green").returncode == 0
    assert _state_set(m, "b", "lyra", "Status", "red").returncode == 0  # the later one
    for machine in ("a", "b", "a"):
        res = _sync(m, machine)
        assert res.returncode == 0, (machine, res.stdout, res.stderr)
    texts = {x: (m[x] / "nexus/project-state.md").read_text() for x in ("a", "b")}
    assert texts["a"] == texts["b"]
    status = texts["a"].split("## Status", 1)[1]
    assert "red" in status and "green" not in status and "<<<<<<<" not in status
    assert "Superseded at a merge: ella set this section at" in status
    shown = json.loads(vm("read", "--json", "--vault", str(m["a"]), "--agent", "ella",
                          home=m["home-a"]).stdout)  # fmt: skip
    assert "vaultmem: set by" not in json.dumps(shown)  # the stamp is for merges, not models
    assert vm("verify", "--vault", str(m["b"]), home=m["home-b"]).returncode == 0


def test_a_persons_edit_against_an_agents_write_waits_for_the_person_alone(
    machines: dict[str, Path],
) -> None:
    """A person's hand edit of a section and an agent's write of it: both versions kept for
    the person (exit 5, the file named); agents go on writing every other section, and the
    kept versions stay byte for byte."""
    m = machines
    _approve_b_keys(m)
    assert _state_set(m, "a", "ella", "Status", "green").returncode == 0
    assert _sync(m, "a").returncode == 0
    assert _sync(m, "b").returncode == 0
    page = m["a"] / "nexus/project-state.md"
    page.write_text(page.read_text().replace("green", "green, says Chiara"))  # in Obsidian
    assert _state_set(m, "b", "lyra", "Status", "red").returncode == 0
    assert _sync(m, "a").returncode == 0
    res = _sync(m, "b")
    assert res.returncode == 5, (res.stdout, res.stderr)
    assert "nexus/project-state.md" in res.stderr
    text = (m["b"] / "nexus/project-state.md").read_text()
    assert "green, says Chiara" in text and "red" in text
    assert _sync(m, "b").returncode == 5  # a second sync does not pretend
    kept = text[text.index("<<<<<<<") : text.index(">>>>>>>")]
    other = _state_set(m, "b", "lyra", "Goal", "ship on Friday")
    assert other.returncode == 0, other.stderr
    same = _state_set(m, "b", "lyra", "Status", "amber")
    assert same.returncode == 5 and "section 'Status'" in same.stderr, same.stderr
    after = (m["b"] / "nexus/project-state.md").read_text()
    assert kept in after and "ship on Friday" in after and "amber" not in after


def test_review_md_never_conflicts_it_is_made_again_after_the_merge(
    machines: dict[str, Path],
) -> None:
    """Review.md's list is derived from the bank: two machines that each proposed a fact both
    sync with exit 0, and each page lists both facts, with the person's own text kept."""
    m = machines
    _approve_b_keys(m)
    page_a = m["a"] / "Review.md"
    page_a.write_text(page_a.read_text() + "\nChiara's note: review on Mondays.\n")
    for machine, agent, fact in (("a", "ella", "The staging database is Postgres 16"),
                                 ("b", "lyra", "Deploys freeze on Fridays after noon")):  # fmt: skip
        res = vm("retain", fact, "--type", "project", "--agent", agent,
                 "--vault", str(m[machine]), home=m[f"home-{machine}"])  # fmt: skip
        assert res.returncode == 0, res.stderr
    assert vm("sync", "--vault", str(m["a"]), home=m["home-a"]).returncode == 0
    res = vm("sync", "--vault", str(m["b"]), home=m["home-b"])
    assert res.returncode == 0, (res.stdout, res.stderr)
    res = vm("sync", "--vault", str(m["a"]), home=m["home-a"])
    assert res.returncode == 0, (res.stdout, res.stderr)
    for machine in ("a", "b"):
        page = (m[machine] / "Review.md").read_text()
        assert "<<<<<<<" not in page
        assert "Postgres 16" in page and "Fridays after noon" in page, (machine, page)
    assert "Chiara's note: review on Mondays." in (m["b"] / "Review.md").read_text()


def test_sync_status(machines: dict[str, Path]) -> None:
    m = machines
    vm("append", "not yet synced", "--agent", "ella", "--vault", str(m["a"]), home=m["home-a"])
    res = vm("sync", "--status", "--json", "--vault", str(m["a"]), home=m["home-a"])
    assert res.returncode == 0, res.stderr
    st = json.loads(res.stdout)
    assert st["changed_files"] and st["behind"] == 0


# --- three machines, every interleaving the test can drive -------------------------------------


class Machine:
    def __init__(self, name: str, root: Path, home: Path) -> None:
        self.name, self.root, self.home = name, root, home

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        return vm(*args, "--vault", str(self.root), home=self.home)

    def append(self, agent: str, summary: str) -> str:
        res = self.run("append", summary, "--agent", agent, "--json")
        assert res.returncode == 0, res.stderr
        return str(json.loads(res.stdout)["id"])

    def sync(self, expect: int = 0) -> subprocess.CompletedProcess[str]:
        res = self.run("sync")
        assert res.returncode == expect, (self.name, res.stdout, res.stderr)
        return res

    def ids(self) -> list[str]:
        from vaultmem.nexus.entry import parse_entries

        text = (self.root / "nexus/live-context.md").read_text(encoding="utf-8")
        return [e.id for e in parse_entries(text)]

    def new_for(self, agent: str) -> list[str]:
        res = self.run("read", "--agent", agent, "--json", "--budget", "100000")
        assert res.returncode == 0, res.stderr
        section = json.loads(res.stdout)["sections"].get("new_entries") or {}
        data = section.get("data") or {}
        assert not data.get("more"), "the pack left new entries out"
        return [str(e["id"]) for e in data.get("entries") or []]


def _racing_appends(m: Machine, agent: str, n: int) -> subprocess.Popen[str]:
    """`n` appends from another process, started while the test runs a sync."""
    code = (
        "import sys, json\n"
        "from vaultmem.core.vault import Vault\n"
        "from vaultmem.nexus.log import append\n"
        f"v = Vault.open({str(m.root)!r})\n"
        f"for i in range({n}):\n"
        f"    print(append(v, {agent!r}, f'raced a sync {{i}} on {m.name}').entry.id, flush=True)\n"
    )
    env = dict(os.environ, VAULTMEM_HOME=str(m.home))
    return subprocess.Popen(
        [sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, text=True
    )


def test_three_machines_converge_with_every_entry_once(tmp_path: Path) -> None:
    """A bare repository and three clones. ella writes on A and on B (two chains), lyra on A
    and B, mira on C. Appends race a sync; C is offline for two rounds and writes meanwhile;
    a person edits MEMORY.md on C while another retracts the same fact on B. Afterwards every
    clone holds every acknowledged entry exactly once and verifies, a read shows each new
    entry once, and recall finds what other machines wrote."""
    res = vm("init", str(tmp_path / "a"), "--agent", "ella", "--agent", "lyra", "--agent",
             "mira", "--reviewer", "chiara", "--git", home=tmp_path / "home-a")  # fmt: skip
    assert res.returncode == 0, res.stderr
    _reviewer_key(tmp_path / "a", tmp_path / "home-a")
    bare = tmp_path / "origin.git"
    git(tmp_path, "init", "--quiet", "--bare", str(bare))
    a = Machine("a", tmp_path / "a", tmp_path / "home-a")
    git(a.root, "remote", "add", "origin", str(bare))
    git(a.root, "push", "--quiet", "-u", "origin", "HEAD")
    remembered = ("remember", "Launch is on 3 March", "--name", "Launch date", "--type", "project")
    fact = json.loads(a.run(*remembered, "--json").stdout)  # a person: agents only propose
    a.sync()
    b = Machine("b", tmp_path / "b", tmp_path / "home-b")
    c = Machine("c", tmp_path / "c", tmp_path / "home-c")
    for m, agents in ((b, ("ella", "lyra")), (c, ("mira",))):
        args = [x for agent in agents for x in ("--agent", agent)]
        res = vm("clone", str(bare), str(m.root), *args, home=m.home)
        assert res.returncode == 0, res.stderr
        _approve_b_keys({"b": m.root, "home-b": m.home})
        m.sync()
    a.sync()
    acked: list[str] = []
    seen_by_mira = set(c.new_for("mira"))

    # round 1: everyone writes, everyone syncs
    acked += [a.append("ella", "A1 ella on the booking API"), a.append("lyra", "A1 lyra")]
    acked += [b.append("ella", "B1 ella from the laptop"), b.append("lyra", "B1 lyra")]
    acked += [c.append("mira", "C1 mira pangolin")]
    for m in (a, b, c, a, b):
        m.sync()

    # rounds 2 and 3: C is offline and writes anyway; appends race A's sync; the same fact
    # is edited by a person on C and retracted by a person on B
    git(c.root, "remote", "set-url", "origin", str(tmp_path / "unreachable.git"))
    index = c.root / "memory/MEMORY.md"
    index.write_text(
        index.read_text(encoding="utf-8").replace("Launch is on 3 March", "Launch: 3 March, 9:00"),
        encoding="utf-8",
    )
    res = b.run("retract", fact["id"], "--why", "moved to April")
    assert res.returncode == 0, res.stderr
    for r in (2, 3):
        racer = _racing_appends(a, "ella", 5)
        a.sync()
        out, _ = racer.communicate(timeout=120)
        assert racer.returncode == 0
        acked += out.split()
        acked += [b.append("lyra", f"B{r} lyra quokka"), c.append("mira", f"C{r} mira offline")]
        c.sync(expect=6)
        for m in (b, a, b):
            m.sync()

    # C comes back
    git(c.root, "remote", "set-url", "origin", str(bare))
    for m in (c, a, b, c):
        m.sync()

    assert len(acked) == len(set(acked)) == 5 + 2 * (5 + 2)
    for m in (a, b, c):
        ids = m.ids()
        missing = [i for i in acked if ids.count(i) != 1]
        assert not missing, (m.name, missing)
        res = m.run("verify")
        assert res.returncode == 0, (m.name, res.stdout, res.stderr)
        text = (m.root / "memory/MEMORY.md").read_text(encoding="utf-8")
        assert "Launch: 3 March, 9:00" in text and "## Retracted" in text, (m.name, text)

    # mira on C sees every other agent's entry once, including those that arrived "in the past"
    others = {i for i in acked if not i.startswith("mira.")}
    first = set(c.new_for("mira"))
    assert others <= first | seen_by_mira, sorted(others - first - seen_by_mira)
    assert not (set(c.new_for("mira")) & others)
    hits = json.loads(c.run("recall", "booking API", "--json").stdout)["hits"]
    assert any("A1 ella" in (h["title"] or "") for h in hits)


def test_a_copied_home_forks_a_chain_and_merge_forks_joins_it(
    machines: dict[str, Path], tmp_path: Path
) -> None:
    """The old way to fork (before device chains) still happens when a person copies
    VAULTMEM_HOME to a second machine: ella writes one chain from two clones. The sync that
    meets the fork exits 5 and says what to run; one `repair --merge-forks` joins it, and
    every clone verifies after the next syncs."""
    m = machines
    a = Machine("a", m["a"], m["home-a"])
    d = Machine("d", tmp_path / "d", tmp_path / "home-d")
    shutil.copytree(m["home-a"], d.home)  # the same key and device id
    assert vm("clone", str(m["bare"]), str(d.root), home=d.home).returncode == 0
    a.append("ella", "before the copy")
    a.sync()
    d.sync()
    a.append("ella", "on A after the copy")
    d.append("ella", "on D after the copy")
    d.append("ella", "on D again")
    a.sync()
    res = d.sync(expect=5)
    assert "merge-forks" in res.stderr and "conflict" in res.stderr
    res = d.run("repair", "--merge-forks")
    assert res.returncode == 0, (res.stdout, res.stderr)
    assert "joined the fork of ella" in res.stdout
    d.sync()
    a.sync()
    for machine in (a, d):
        assert machine.run("verify").returncode == 0, machine.name
        assert machine.ids().count("ella.2") == 2  # both branches kept, nothing rewritten


def test_two_syncs_on_one_machine_do_not_race(machines: dict[str, Path]) -> None:
    """A second sync while one runs (a real lock held by another process) exits 6 at once,
    says why, and changes nothing; the next one goes through."""
    m = machines
    vm("append", "waiting to sync", "--agent", "ella", "--vault", str(m["a"]), home=m["home-a"])
    head = git(m["a"], "rev-parse", "HEAD")
    code = (
        "import sys, time\n"
        "from vaultmem.core.vault import Vault\n"
        "from vaultmem.core.locking import exclusive, lock_path\n"
        f"v = Vault.open({str(m['a'])!r})\n"
        "with exclusive(lock_path(v, 'sync'), 5, what='sync'):\n"
        "    print('held', flush=True)\n"
        "    sys.stdin.readline()\n"
    )
    holder = subprocess.Popen(
        [sys.executable, "-c", code],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=dict(os.environ, VAULTMEM_HOME=str(m["home-a"])),
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        res = vm("sync", "--vault", str(m["a"]), home=m["home-a"])
        assert res.returncode == 6, (res.stdout, res.stderr)
        assert "another vaultmem sync is running" in res.stderr
        assert git(m["a"], "rev-parse", "HEAD") == head
    finally:
        holder.communicate("\n", timeout=30)
    assert vm("sync", "--vault", str(m["a"]), home=m["home-a"]).returncode == 0


def test_clone_takes_relative_paths_as_the_shell_does(tmp_path: Path) -> None:
    """`vaultmem clone ../shared.git machines/laptop` from a folder: both paths are relative to
    where the person typed it (git once ran in the destination's parent, so the remote was
    looked up in `machines/` and the clone failed)."""
    home = tmp_path / "home"
    res = vm("init", str(tmp_path / "first"), "--agent", "ella", "--git", home=home)
    assert res.returncode == 0, res.stderr
    git(tmp_path, "init", "--quiet", "--bare", "shared.git")
    git(tmp_path / "first", "remote", "add", "origin", str(tmp_path / "shared.git"))
    git(tmp_path / "first", "push", "--quiet", "-u", "origin", "HEAD")
    work = tmp_path / "work"
    (work / "machines").mkdir(parents=True)
    res = vm("clone", "../shared.git", "machines/laptop", cwd=work, home=tmp_path / "home2")
    assert res.returncode == 0, (res.stdout, res.stderr)
    assert (work / "machines" / "laptop" / "vaultmem.toml").is_file()
    assert not (work / "machines" / "shared.git").exists()


def test_clone_prints_the_one_step_left_and_following_it_leaves_both_machines_clean(
    machines: dict[str, Path], tmp_path: Path
) -> None:
    """A machine that joins is ready but for the approval a person gives: `clone` names it,
    the machine to run it on, and the exact commands; run word for word, every machine syncs
    and verifies clean."""
    m = machines
    home_c, c = tmp_path / "home-c", tmp_path / "c"
    res = vm("clone", str(m["bare"]), str(c), "--agent", "lyra", home=home_c)
    assert res.returncode == 0, res.stderr
    assert "one step is left, for a person:" in res.stdout, res.stdout
    step = next(ln for ln in res.stdout.splitlines() if "holds chiara's signing key" in ln)
    command = step.split("`")[1]
    assert re.fullmatch(
        r"vaultmem sync; vaultmem keys approve k-[0-9a-f]{16} --reviewer chiara && vaultmem sync",
        command,
    ), command
    other = vm("clone", str(m["bare"]), str(tmp_path / "d"), "--agent", "ella", "--json",
               home=tmp_path / "home-d")  # fmt: skip
    assert "vaultmem keys approve" in json.loads(other.stdout)["next"][0]
    # machine C pushes its key (and says it waits); the person runs the step on machine A
    assert vm("sync", "--vault", str(c), home=home_c).returncode in (0, 5)
    first, rest = command.split("; ", 1)
    assert vm(*first.split()[1:], "--vault", str(m["a"]), home=m["home-a"]).returncode in (0, 5)
    # status on either machine says what waits, for whom, and the same command
    for root, home in ((m["a"], m["home-a"]), (c, home_c)):
        waits = json.loads(vm("status", "--json", "--vault", str(root), home=home).stdout)
        (key,) = [w for w in waits["waiting"] if "approve lyra's key" in w["what"]]
        assert key["command"] == command and "chiara" in key["who"]
    for part in rest.split(" && "):
        res = vm(*part.split()[1:], "--vault", str(m["a"]), home=m["home-a"])
        assert res.returncode == 0, (part, res.stdout, res.stderr)
    assert vm("sync", "--vault", str(c), home=home_c).returncode == 0  # "then here"
    wrote = vm("append", "lyra on C", "--agent", "lyra", "--vault", str(c), home=home_c)
    assert wrote.returncode == 0, wrote.stderr
    assert vm("sync", "--vault", str(c), home=home_c).returncode == 0
    assert vm("sync", "--vault", str(m["a"]), home=m["home-a"]).returncode == 0
    for root, home in ((m["a"], m["home-a"]), (c, home_c)):
        res = vm("verify", "--vault", str(root), home=home)
        assert res.returncode == 0, (root, res.stdout, res.stderr)
