"""Obsidian-native ids and links (issue 25): entries' block ids, digests' links to where entries
are, facts' aliases, and bodies piped from stdin fenced as code."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests._cli import run_cli, run_proc
from tests._layer3_helpers import fresh_vault, make_keys
from vaultmem.core import notes
from vaultmem.core.fences import fence_code, fence_for
from vaultmem.core.vault import Vault
from vaultmem.memory import facts
from vaultmem.nexus import digests, entry, log, repair, verify

# --- block ids on entries -----------------------------------------------------------------------


@pytest.fixture
def v(tmp_path: Path) -> Vault:
    return make_keys(fresh_vault(tmp_path))


def _problems(vault: Vault) -> list[str]:
    return [f"{p.kind}: {p.message}" for p in verify.verify(vault).problems]


def test_every_entry_has_its_block_id_line_and_parses_without_it(v: Vault) -> None:
    a = log.append(v, "ella", "No body", channel="api").entry
    b = log.append(v, "lyra", "A body", body="first\n\n- a list\n- ends here").entry
    d = log.append(v, "ella", "Ends like a block id", body="text\n\n^ella-2").entry
    text = v.live_context.read_text()
    assert "· No body\n^ella-1\n<!-- vaultmem " in text
    assert "- ends here\n\n^lyra-1\n<!-- vaultmem " in text  # a blank line: not the list's
    assert "text\n\n^ella-2\n\n^ella-2\n<!-- vaultmem " in text
    parsed = {e.id: e for e in entry.parse_entries(text)}
    assert parsed[a.id].body == "" and parsed[b.id].body == "first\n\n- a list\n- ends here"
    assert parsed[d.id].body == "text\n\n^ella-2"  # the agent's own line stays its text
    assert all(e.compute_hash() == e.hash for e in parsed.values())
    assert entry.block_id("ella.k2f7.12") == "ella-k2f7-12"
    assert entry.block_id("my_bot.d3") == "my-bot-d3"
    assert _problems(v) == []


def _without_block_lines(text: str) -> str:
    """The log as vaultmem wrote it before block ids."""
    return re.sub(r"\n\^[A-Za-z0-9-]+\n(<!-- vaultmem )", r"\n\1", text)


def test_entries_written_before_block_ids_parse_and_verify(v: Vault) -> None:
    log.append(v, "ella", "No body")
    log.append(v, "lyra", "A body", body="x = 1\n\nmore")
    old = _without_block_lines(v.live_context.read_text())
    assert "^ella-1" not in old and "^lyra-1" not in old
    v.live_context.write_text(old)
    log.rebuild_heads(v, "live")
    assert [e.body for e in entry.parse_entries(old)] == ["", "x = 1\n\nmore"]
    assert _problems(v) == []


def test_a_block_id_that_is_not_the_entrys_own_is_text_and_so_an_edit(v: Vault) -> None:
    log.append(v, "ella", "Mine", body="text")
    path = v.live_context
    path.write_text(path.read_text().replace("^ella-1\n", "^lyra-7\n"))
    assert any(p.startswith("edited") for p in _problems(v))


def test_repair_puts_a_lost_entry_back_with_its_block_id(v: Vault) -> None:
    log.append(v, "ella", "First")
    log.append(v, "ella", "Second", body="b")
    text = v.live_context.read_text()
    start = text.index("\n### ", text.index("· First"))
    v.live_context.write_text(text[:start] + "\n")  # an editor saved a stale copy
    assert any(p.startswith("missing") for p in _problems(v))
    repair.repair(v)
    assert "b\n\n^ella-2\n<!-- vaultmem " in v.live_context.read_text()
    assert _problems(v) == []


def test_rotated_and_decision_entries_keep_their_block_ids(v: Vault) -> None:
    from vaultmem.nexus import decisions, rotate

    log.append(v, "ella", "Old one", time="2026-10-03T09:00:00.000Z")
    d = decisions.decide(v, "ella", "Cents", why="No floats").decision
    rotate.rotate(v, keep_days=30)
    archive = (v.root / "nexus/archive/live-context-2026-10.md").read_text()
    assert "^ella-1\n<!-- vaultmem " in archive and "[[nexus/live-context|" in archive
    assert f"^{entry.block_id(d.id)}\n<!-- vaultmem " in v.decisions.read_text()
    announce = entry.parse_entries(v.live_context.read_text())[-1]
    assert f"[[decisions#^ella-d1|{d.id}]]" in announce.body
    assert _problems(v) == []


# --- digests link where the entries are ---------------------------------------------------------


def test_digest_links_follow_the_entries_into_the_archive(
    v: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    from vaultmem.app.condense.digest import digest
    from vaultmem.nexus import rotate

    monkeypatch.setenv("VAULTMEM_NOW", "2026-12-09T12:00:00Z")
    log.append(v, "ella", "November fix", type_="fix", time="2026-11-30T09:00:00.000Z")
    log.append(v, "ella", "December note", time="2026-12-02T09:00:00.000Z")
    digest(v, "ella", kind="week", offline=True)
    path = digests.digest_path(v, "2026-W49")
    before = path.read_text()
    signed = before[: before.index("<!-- vaultmem-digest")]
    assert "live-context-2026-1" not in signed  # no link to an archive that does not exist
    assert "[[nexus/live-context#^ella-1|ella.1]], [[nexus/live-context#^ella-2|ella.2]]" in before
    rotate.rotate(v, keep_days=8)  # November leaves the live log; December stays
    after = path.read_text()
    assert after.startswith(signed)  # the signed part, byte for byte
    assert "- in [[nexus/archive/live-context-2026-11|live-context-2026-11]]: " in after
    assert "[[nexus/archive/live-context-2026-11#^ella-1|ella.1]]" in after
    assert (
        "- in [[nexus/live-context|live-context]]: [[nexus/live-context#^ella-2|ella.2]]" in after
    )
    note = digests.read_digest(v, path)
    assert note.meta is not None and note.meta.compute_hash(note.body) == note.meta.hash
    assert _problems(v) == []
    # a digest made before: `digest` gives it its links (nothing else changes)
    path.write_text(signed + after[len(signed) :].split("\n", 1)[0] + "\n")
    res = digest(v, "ella", kind="week", offline=True)
    assert [p.status for p in res.periods] == ["unchanged"]
    assert path.read_text() == after


# --- facts have aliases -------------------------------------------------------------------------


def test_a_fact_has_its_name_as_alias_and_a_persons_aliases_survive(v: Vault) -> None:
    made = facts.remember(
        v, "Chiara reviews on Tuesdays.", name="Chiara's review days", type_="user"
    )
    path = v.path(made.path)
    assert notes.parse(path.read_text()).meta["aliases"] == ["Chiara's review days"]
    edited = path.read_text().replace(
        "- Chiara's review days\n", "- Chiara's review days\n- Review days\n"
    )
    path.write_text(edited)
    facts.retract(v, made.id, why="moved to Wednesdays")
    meta = notes.parse(path.read_text()).meta
    assert meta["aliases"] == ["Chiara's review days", "Review days"]
    assert meta["status"] == "retracted"


def test_promote_apply_writes_a_memory_with_its_alias(vault: Path) -> None:
    make_keys(vault)
    out = run_cli("retain", "Invoices are sent on the 1st", "--type", "project", "--agent",
                  "ella", "--vault", str(vault), "--json")  # fmt: skip
    assert out.exit_code == 0, out.stderr
    bank = next(Path(vault).glob("agents/ella/bank/*invoices*.md"))
    bank.write_text(bank.read_text().replace("status: pending", "status: approved"))
    dry = run_cli(
        "promote", "apply", "--dry-run", "--reviewer", "chiara", "--vault", str(vault), "--json"
    )
    plan = json.loads(dry.stdout)["plan"]
    res = run_cli(
        "promote", "apply", "--yes", "--plan", plan, "--reviewer", "chiara", "--vault", str(vault)
    )
    assert res.exit_code == 0, res.stderr
    memory = notes.parse(bank.read_text()).meta["memory_id"]
    _path, note = facts.find_fact(Vault.open(vault), memory)
    assert note.meta["aliases"] == [note.meta["name"]]


# --- bodies from stdin: diffs and code are fenced -----------------------------------------------

DIFF = "diff --git a/x.py b/x.py\n--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-a = 1\n+a = 2\n"


@pytest.mark.parametrize(
    ("text", "fenced"),
    [
        (DIFF, "```diff\n" + DIFF.rstrip("\n") + "\n```"),
        ("--- old.txt\n+++ new.txt\n-x\n+y", "```diff\n--- old.txt\n+++ new.txt\n-x\n+y\n```"),
        ("@@ -3,2 +3,4 @@ def f():\n x\n+y", "```diff\n@@ -3,2 +3,4 @@ def f():\n x\n+y\n```"),
        ("def f(x):\n    return x\n", "```\ndef f(x):\n    return x\n```"),
        ("int main() {\n  return 0;\n}", "```\nint main() {\n  return 0;\n}\n```"),
        ("x = `a` and ```b```\ny = f(\n)", "````\nx = `a` and ```b```\ny = f(\n)\n````"),
    ],
)
def test_a_diff_or_code_is_fenced_longer_than_any_backtick_run(text: str, fenced: str) -> None:
    assert fence_code(text) == fenced


@pytest.mark.parametrize(
    "text",
    [
        "",
        "   \n",
        "Webhook retries are idempotent now.\nWe store the event id (see ella.3).",
        "- first item;\n- second item;\n- third (done)",
        "# Plan\n\n> quoted;\n\n1. do it;",
        "```python\ndef f(): pass\n```\n",
        "--- a rule of dashes\nand text after it",
        "one line of code();",
    ],
)
def test_prose_markdown_and_fenced_text_are_left_as_they_are(text: str) -> None:
    assert fence_code(text) == text


@given(st.text(alphabet="`ab \n-+@{};", max_size=60))
def test_a_fence_is_never_closed_by_what_it_holds(text: str) -> None:
    out = fence_code(text)
    if out == text:
        return
    lines = out.split("\n")
    fence = lines[0].removesuffix("diff")
    assert set(fence) == {"`"} and len(fence) >= 3 and lines[-1] == fence
    inner = "\n".join(lines[1:-1])
    assert all(len(run) < len(fence) for run in re.findall("`+", inner))
    assert fence == fence_for(inner)


def test_append_body_from_stdin_is_fenced_on_both_paths(v: Vault) -> None:
    root = str(v.root)
    res = run_cli(
        "append", "Typer path", "--body", "-", "--agent", "ella", "--vault", root, stdin=DIFF
    )
    assert res.exit_code == 0, res.stderr
    proc = run_proc("append", "Fast path", "--body", "-", "--agent", "lyra", "--vault", root, "--json", stdin=DIFF)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["body"].startswith("```diff\ndiff --git a/x.py")
    inline = run_cli("append", "Inline", "--body", DIFF, "--agent", "ella", "--vault", root)
    assert inline.exit_code == 0, inline.stderr
    bodies = {e.summary: e.body for e in entry.parse_entries(v.live_context.read_text())}
    assert bodies["Typer path"] == bodies["Fast path"] == "```diff\n" + DIFF.rstrip("\n") + "\n```"
    assert bodies["Inline"] == DIFF.rstrip("\n")  # only what is piped in is judged
