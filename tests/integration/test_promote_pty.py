"""Interactive `vaultmem promote`, driven through a real pseudo-terminal (stdlib pty).

The process is the real CLI (`python -m vaultmem`), its stdin/stdout/stderr a pty; `$EDITOR` is
a small script that rewrites the file it is given, as a person would.
"""

from __future__ import annotations

import json
import os
import pty
import re
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests._cli import run_cli
from vaultmem.bank import retain, store
from vaultmem.core import notes
from vaultmem.core.vault import Vault

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="needs a POSIX pty")

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07|\r")

EDITOR_SCRIPT = """\
import sys
path = sys.argv[1]
old = open(path, encoding="utf-8").read()
assert old.startswith("Backups are encrypted"), old
open(path, "w", encoding="utf-8").write("Backups are encrypted with age and restored weekly.\\n")
"""


class Terminal:
    """A child process on a pty, with expect/send."""

    def __init__(self, args: list[str], env: dict[str, str], *, pipe_stdout: bool = False) -> None:
        master, slave = pty.openpty()
        self.proc = subprocess.Popen(
            args,
            stdin=slave,
            stdout=subprocess.PIPE if pipe_stdout else slave,
            stderr=slave,
            env=env,
            close_fds=True,
        )
        os.close(slave)
        self.master = master
        self.raw = b""
        self.pos = 0

    @property
    def text(self) -> str:
        return _ANSI.sub("", self.raw.decode("utf-8", "replace"))

    def _read(self, timeout: float) -> bool:
        ready, _, _ = select.select([self.master], [], [], timeout)
        if not ready:
            return True
        try:
            chunk = os.read(self.master, 65536)
        except OSError:  # EIO: the child closed the terminal
            return False
        if not chunk:
            return False
        self.raw += chunk
        return True

    def expect(self, pattern: str, timeout: float = 15) -> re.Match[str]:
        deadline = time.monotonic() + timeout
        while True:
            match = re.compile(pattern).search(self.text, self.pos)
            if match:
                self.pos = match.end()
                return match
            if time.monotonic() > deadline or not self._read(0.2):
                raise AssertionError(f"never saw {pattern!r}; output:\n{self.text[-3000:]}")

    def send(self, line: str) -> None:
        os.write(self.master, (line + "\n").encode())

    def finish(self, timeout: float = 30) -> int:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and self._read(0.2):
            if self.proc.poll() is not None and not select.select([self.master], [], [], 0)[0]:
                break
        code = self.proc.wait(timeout=timeout)
        os.close(self.master)
        return code


def _spawn(
    vault: Path,
    tmp_path: Path,
    *extra: str,
    env: dict[str, str] | None = None,
    pipe_stdout: bool = False,
) -> Terminal:
    editor = tmp_path / "editor.py"
    editor.write_text(EDITOR_SCRIPT)
    full = dict(os.environ)
    full.update(
        {
            "EDITOR": f"{sys.executable} {editor}",
            "TERM": "xterm",
            "NO_COLOR": "1",
            "COLUMNS": "120",
            "LINES": "50",
        }
    )
    full.update(env or {})
    args = [sys.executable, "-m", "vaultmem", "promote", "--vault", str(vault), *extra]
    return Terminal(args, full, pipe_stdout=pipe_stdout)


def _queue(vault: Path) -> dict[str, str]:
    v = Vault.open(vault)
    facts = {
        "a": ("Always run the linter before pushing", "preference"),
        "b": ("Backups are encrypted with age before upload", "fact"),
        "c": (
            "Check Stripe webhooks: they can arrive before the booking commit, so retry for "
            "up to 60 s",
            "failure",
        ),
        "d": ("Deploys happen on Fridays", "project"),
        "e": ("Every new endpoint gets an OpenAPI example", "reference"),
    }
    ids = {}
    for key, (text, kind) in facts.items():
        res = retain.retain(v, text, agent="ella", type_=kind, source="s1")
        assert res.id
        ids[key] = res.id
    return ids


def _meta(vault: Path, fid: str) -> dict[str, object]:
    return store.find_bank(Vault.open(vault), fid)[1].meta


@pytest.mark.slow
def test_interactive_review_approve_edit_merge_reject_quit(vault: Path, tmp_path: Path) -> None:
    ids = _queue(vault)
    term = _spawn(vault, tmp_path, "--reviewer", "chiara")
    term.expect(r"5 fact\(s\) to review, as chiara")
    # 1: approve, shared, keep the proposed name
    term.expect(r"\[1/5\] " + ids["a"])
    term.expect(r"author ella\s+evidence 1")
    term.expect(r"Action")
    term.send("a")
    term.expect(r"Scope")
    term.send("")
    term.expect(r"Name")
    term.send("Lint before push")
    term.expect(r"approved → m-[0-9a-f]{8} memory/lint-before-push\.md")
    # 2: edit in $EDITOR, see the new text, then approve it in the author's scope
    term.expect(r"\[2/5\] " + ids["b"])
    term.expect(r"Action")
    term.send("e")
    term.expect(r"edited")
    term.expect(r"Backups are encrypted with age and restored weekly\.")
    term.expect(r"Action")
    term.send("a")
    term.expect(r"Scope")
    term.send("agent")
    term.expect(r"Name")
    term.send("")
    term.expect(r"approved → m-[0-9a-f]{8} agents/ella/memory/")
    # 3: merge into the most similar memory (listed first)
    term.expect(r"\[3/5\] " + ids["c"])
    term.expect(r"Most similar memories")
    term.expect(r"1[\s│]+m-[0-9a-f]{8}[\s│]+0\.\d+[\s│]+failure[\s│]+Stripe webhook race")
    term.expect(r"Action")
    term.send("m")
    term.expect(r"Merge into")
    term.send("1")
    term.expect(r"merged into m-[0-9a-f]{8} memory/stripe-webhook-race\.md")
    # 4: reject with a reason (an empty reason is asked again)
    term.expect(r"\[4/5\] " + ids["d"])
    term.expect(r"Action")
    term.send("r")
    term.expect(r"Reason")
    term.send("")
    term.expect(r"Reason \(required\)")
    term.send("we never deploy on Fridays")
    term.expect(r"rejected " + ids["d"])
    # 5: quit: the rest stays untouched
    term.expect(r"\[5/5\] " + ids["e"])
    term.expect(r"Action")
    term.send("q")
    term.expect(r"Done: 4 decided, 0 skipped, 1 left in the queue\.")
    assert term.finish() == 0

    assert _meta(vault, ids["a"])["status"] == "approved"
    lint = notes.read(vault / "memory/lint-before-push.md")
    assert lint.meta["approved_by"] == "chiara" and lint.meta["source_bank_id"] == ids["a"]
    assert (
        "[[memory/lint-before-push|Lint before push]]" in (vault / "memory/MEMORY.md").read_text()
    )

    b = _meta(vault, ids["b"])
    assert b["status"] == "approved" and b["edited_by"] == "chiara"
    agent_memory = (vault / "agents/ella/MEMORY.md").read_text()
    assert "Backups are encrypted with age and restored weekly." in agent_memory

    c = _meta(vault, ids["c"])
    stripe = notes.read(vault / "memory/stripe-webhook-race.md")
    assert c["status"] == "approved" and c["merged_into"] == stripe.meta["id"]
    assert "so retry for up to 60 s" in stripe.body and stripe.meta["evidence"] == 2

    d = _meta(vault, ids["d"])
    assert d["status"] == "rejected" and d["reason"] == "we never deploy on Fridays"

    e = _meta(vault, ids["e"])
    assert e["status"] == "pending" and "approved_by" not in e
    assert store.pending_count(Vault.open(vault)) == 1


@pytest.mark.slow
def test_quit_at_once_and_skip_leave_everything_pending(vault: Path, tmp_path: Path) -> None:
    ids = _queue(vault)
    before = {p: p.read_text() for p in (vault / "agents/ella/bank").glob("*.md")}
    term = _spawn(vault, tmp_path, env={"VAULTMEM_REVIEWER": "chiara"})
    term.expect(r"\[1/5\] " + ids["a"])
    term.expect(r"Action")
    term.send("s")
    term.expect(r"\[2/5\] " + ids["b"])
    term.expect(r"Action")
    term.send("x")  # not a key: asked again
    term.expect(r"Please select one of the available options")
    term.send("q")
    term.expect(r"Done: 0 decided, 1 skipped, 4 left in the queue\.")
    assert term.finish() == 0
    after = {p: p.read_text() for p in (vault / "agents/ella/bank").glob("*.md")}
    assert after == before


@pytest.mark.slow
def test_end_of_input_quits(vault: Path, tmp_path: Path) -> None:
    _queue(vault)
    term = _spawn(vault, tmp_path, "--reviewer", "chiara")
    term.expect(r"Action")
    os.write(term.master, b"\x04")  # Ctrl-D
    term.expect(r"Done: 0 decided")
    assert term.finish() == 0
    assert store.pending_count(Vault.open(vault)) == 5


@pytest.mark.slow
def test_agent_in_environment_is_refused_before_the_queue(vault: Path, tmp_path: Path) -> None:
    _queue(vault)
    term = _spawn(vault, tmp_path, "--reviewer", "chiara", env={"VAULTMEM_AGENT": "ella"})
    term.expect(r"refused: an agent \(ella\) is acting")
    assert term.finish() == 8
    assert store.pending_count(Vault.open(vault)) == 5


def test_interactive_needs_a_terminal(vault: Path) -> None:
    _queue(vault)
    res = run_cli("promote", "--reviewer", "chiara", "--vault", str(vault))
    assert res.exit_code == 2 and "needs a terminal" in res.stderr
    refused = run_cli("promote", "--reviewer", "lyra", "--vault", str(vault))
    assert refused.exit_code == 8


@pytest.mark.slow
def test_supersede_prompt_and_json_summary_on_stdout(vault: Path, tmp_path: Path) -> None:
    v = Vault.open(vault)
    text = "Store all times in UTC and convert to Europe/Rome in the UI and in emails"
    res = retain.retain(v, text, agent="ella", type_="decision")
    assert res.outcome == "may_supersede" and res.target == "m-7f15c837"
    term = _spawn(vault, tmp_path, "--reviewer", "chiara", "--json", pipe_stdout=True)
    term.expect(r"may supersede m-7f15c837")
    term.expect(r"Action")
    term.send("a")
    term.expect(r"Scope")
    term.send("")
    term.expect(r"Name")
    term.send("UTC everywhere")
    term.expect(r"Supersede m-7f15c837\?")
    term.send("y")
    term.expect(r"approved → m-[0-9a-f]{8} memory/utc-everywhere\.md")
    term.expect(r"Done: 1 decided")
    assert term.finish() == 0
    assert term.proc.stdout is not None
    data = json.loads(term.proc.stdout.read())
    (decision,) = data["decisions"]
    assert decision["action"] == "approved" and decision["memory"]["name"] == "UTC everywhere"
    old = notes.read(vault / "memory/times-are-utc-in-storage.md").meta
    assert old["status"] == "superseded" and old["superseded_by"] == decision["memory"]["id"]
