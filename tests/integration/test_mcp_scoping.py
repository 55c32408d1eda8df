"""Privacy over MCP: every tool, called from ella's server through the real `mcp` client, never
returns lyra's private notes or her facts pending review.

One server session makes every call (one process is slow enough); each tool then has its own
test on its own reply.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

pytest.importorskip("mcp")

from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from tests._cli import EXAMPLE, run_cli

MARK = "zebracorn"
PRIVATE = f"Lyra keeps the {MARK} migration plan to herself: stripe webhook retries, refunds."
CALLS: dict[str, dict[str, Any]] = {
    "read": {"query": f"{MARK} stripe webhook retries", "peek": True},
    "recall": {"query": f"{MARK} stripe webhook retries", "limit": 50},
    "recall-bank": {"query": MARK, "kind": "bank"},
    "recall-memory": {"query": MARK, "kind": "memory", "limit": 50},
    "memories": {},
    "log": {"tail": 100},
    "decisions": {"all": True},
    "checkpoint": {},
    "state": {},
    "status": {},
    "retain": {"text": f"The {MARK} migration plan lives in the wiki.", "type": "fact"},
    "append": {"summary": "Looking at retries", "channel": "backend"},
    "decide": {"text": "Retries back off for 60 seconds", "why": "Stripe retries for longer"},
}


async def _session(vault: Path) -> dict[str, Any]:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "vaultmem", "mcp", "--vault", str(vault), "--agent", "ella"],
        env={k: v for k, v in os.environ.items() if k.startswith(("VAULTMEM_", "HOME", "PATH"))},
    )
    out: dict[str, Any] = {}
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        for key, args in CALLS.items():
            out[key] = await session.call_tool(key.split("-")[0], args)
        for uri in ("vaultmem://memory/shared", "vaultmem://agent/memory", "vaultmem://state"):
            out[uri] = (await session.read_resource(uri)).contents  # type: ignore[arg-type]
        prompt = await session.get_prompt("start-session", {"topic": MARK})
        out["start-session"] = prompt.messages
    return out


@pytest.fixture(scope="module")
def replies(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    home = tmp_path_factory.mktemp("home")
    with pytest.MonkeyPatch.context() as mp:  # never the real home, even at module scope
        for name in list(os.environ):
            if name.startswith(("VAULTMEM_", "ANTHROPIC_")):
                mp.delenv(name)
        mp.setenv("VAULTMEM_HOME", str(home / "vaultmem-home"))
        mp.setenv("HOME", str(home))
        vault = tmp_path_factory.mktemp("scoping") / "vault"
        shutil.copytree(EXAMPLE, vault, ignore=shutil.ignore_patterns(".vaultmem"))
        for agent in ("ella", "lyra"):
            assert run_cli("keys", "create", "--vault", str(vault), "--agent", agent).exit_code == 0
        res = run_cli(
            "remember", PRIVATE, "--name", f"The {MARK} plan", "--description",
            f"{MARK}: lyra only", "--type", "project", "--scope", "agent",
            "--vault", str(vault), "--agent", "lyra",
        )  # fmt: skip
        assert res.exit_code == 0, res.stderr
        res = run_cli(
            "retain", f"Pending: the {MARK} plan needs review before stripe retries change.",
            "--type", "fact", "--vault", str(vault), "--agent", "lyra",
        )  # fmt: skip
        assert res.exit_code == 0, res.stderr
        (vault / "agents" / "lyra" / "notes.md").write_text(f"# Lyra's notes\n\n{PRIVATE}\n")
        # Review.md lists every agent's pending facts for people: it stays, and must not leak
        assert MARK in (vault / "Review.md").read_text()
        yield anyio.run(_session, vault)


def _text(result: Any) -> str:
    if isinstance(result, list):  # resource contents or prompt messages
        return json.dumps([getattr(x, "text", None) or str(x) for x in result])
    assert not result.is_error, result.content
    return json.dumps(
        {"content": [c.text for c in result.content], "structured": result.structured_content}
    )


@pytest.mark.parametrize(
    "key",
    [
        *CALLS,
        "vaultmem://memory/shared",
        "vaultmem://agent/memory",
        "vaultmem://state",
        "start-session",
    ],
)
def test_no_private_notes_or_pending_facts_of_another_agent(
    replies: dict[str, Any], key: str
) -> None:
    text = _text(replies[key])
    # queries echo the marker word: look for lyra's text itself
    assert "plan to herself" not in text and "needs review before stripe" not in text
    assert f"{MARK}: lyra only" not in text and f"The {MARK} plan" not in text
    assert "agents/lyra/memory" not in text and "agents/lyra/bank" not in text
    assert "agents/lyra/notes.md" not in text


def test_recall_still_finds_what_ella_may_see(replies: dict[str, Any]) -> None:
    hits = replies["recall"].structured_content["hits"]
    assert any(h["path"] == "memory/stripe-webhook-race.md" for h in hits)
