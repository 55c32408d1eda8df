"""Codex (the real CLI from npm) after `vaultmem setup codex`, its model provider pointed at
the fake Responses API: what the model is shown."""

from __future__ import annotations

from pathlib import Path

from tests._fake_model_api import FakeModelAPI
from tests.e2e._runtimes import PACK, Codex, make_keys, packs_in, tool_results, turn_text
from tests.e2e.test_claude_code import vaultmem_append

# Codex runs a new hook only once a person has trusted it (the TUI records its hash in
# config.toml; openai/codex#46210): `codex exec` stands for that with this flag
TRUSTED_HOOKS = "--dangerously-bypass-hook-trust"


def test_mcp_read_shows_the_model_the_markdown_and_the_handoff(
    api: FakeModelAPI, vault: Path, tmp_path: Path
) -> None:
    make_keys(vault, "ella", "lyra")
    handoff = vaultmem_append(vault, "ella", "Refund endpoint ready for the web", "handoff")
    cx = Codex(api, Path.home(), tmp_path / "web")
    cx.setup(vault, "lyra")
    cx.run("Read the shared memory first. [[tool: read {}]]")
    results = [r for r in tool_results(api) if "waited-for-tools" not in r]
    assert len(results) == 1, results
    shown = results[0]
    assert "Session context for lyra" in shown  # the markdown, not section names and counts
    assert "Lyra builds the web front end" in shown
    assert "Refund endpoint ready for the web" in shown  # the handoff's text, not only its id
    assert str(handoff["id"]) in shown


def test_the_pack_reaches_the_model_unasked(api: FakeModelAPI, vault: Path, tmp_path: Path) -> None:
    make_keys(vault, "lyra")
    cx = Codex(api, Path.home(), tmp_path / "web")
    cx.setup(vault, "lyra")
    cx.run("What should I work on today?", TRUSTED_HOOKS)
    first = turn_text(api.main_calls()[0].body)
    assert packs_in(first) == 1 and PACK + "lyra" in first
