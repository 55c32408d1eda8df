"""The MCP server through a real MCP client over stdio (a real `vaultmem mcp` process)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

pytest.importorskip("mcp")

from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client


async def _session_call(
    vault: Path, agent: str, calls: list[tuple[str, dict[str, Any]]]
) -> tuple[list[str], list[Any]]:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "vaultmem", "mcp", "--vault", str(vault), "--agent", agent],
        env={
            k: v
            for k, v in os.environ.items()
            if k.startswith(("VAULTMEM_", "HOME", "PATH", "XDG_"))
        },
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        tools = [t.name for t in (await session.list_tools()).tools]
        results = [await session.call_tool(name, args) for name, args in calls]
    return tools, results


def call(
    vault: Path, agent: str, *calls: tuple[str, dict[str, Any]]
) -> tuple[list[str], list[Any]]:
    return anyio.run(_session_call, vault, agent, list(calls))


def payload(result: Any) -> Any:
    assert not result.is_error, result.content
    if result.structured_content is not None:
        return result.structured_content
    return json.loads(result.content[0].text)


def test_tools_and_read(vault: Path) -> None:
    tools, (pack, facts) = call(vault, "ella", ("read", {}), ("memories", {"type": "project"}))
    assert {"read", "memories", "status"} <= set(tools)
    assert not {"approve", "reject", "forget", "remember", "promote"} & set(tools)
    data = payload(pack)
    assert (
        data["agent"] == "ella"
        and "Ella is the backend engineer" in data["sections"]["identity"]["text"]
    )
    names = {f["name"] for f in payload(facts)["facts"]}
    assert "Project Orbit" in names and "Test suite rules" in names


def test_errors_are_tool_errors(vault: Path) -> None:
    _tools, (bad,) = call(vault, "lyra", ("memories", {"type": 3}))
    assert bad.is_error


def test_unknown_agent_refused_at_start(vault: Path) -> None:
    from conftest import run_proc

    proc = run_proc("mcp", "--vault", str(vault), "--agent", "bob")
    assert proc.returncode == 4 and "unknown agent" in proc.stderr


def make_keys(vault: Path, *agents: str) -> None:
    from conftest import run_cli

    for agent in agents:
        res = run_cli("keys", "create", "--vault", str(vault), "--agent", agent, "--json")
        assert res.exit_code == 0, res.stderr
        key = json.loads(res.stdout)["key_id"]
        res = run_cli("keys", "approve", key, "--vault", str(vault), "--reviewer", "chiara")
        assert res.exit_code == 0, res.stderr


def test_two_agents_coordinate_over_mcp(vault: Path) -> None:
    make_keys(vault, "ella", "lyra")
    # ella reads once so that her cursor sits at the end of the shipped log
    call(vault, "ella", ("read", {}))
    _tools, (entry,) = call(
        vault,
        "lyra",
        (
            "append",
            {"summary": "Checkout sends Idempotency-Key", "channel": "web", "type": "handoff"},
        ),
    )
    lyra_entry = payload(entry)
    assert lyra_entry["agent"] == "lyra" and lyra_entry["type"] == "handoff"
    _tools, (first, second, ack, tail) = call(
        vault,
        "ella",
        ("read", {}),
        ("read", {}),
        ("append", {"summary": "Got it", "type": "ack", "acks": [lyra_entry["id"]]}),
        ("log", {"tail": 2}),
    )
    new_first = payload(first)["sections"]["new_entries"]["text"]
    assert "Checkout sends Idempotency-Key" in new_first
    assert (
        "new_entries" not in payload(second)["sections"]
        or "Idempotency-Key" not in payload(second)["sections"]["new_entries"]["text"]
    )
    assert payload(ack)["acks"] == [lyra_entry["id"]]
    assert [e["id"] for e in payload(tail)["entries"]][-2:] == [
        lyra_entry["id"],
        payload(ack)["id"],
    ]
    from conftest import run_cli

    assert run_cli("verify", "--vault", str(vault)).exit_code == 0


def test_shared_state_and_retain_and_recall_tools(vault: Path) -> None:
    make_keys(vault, "ella")
    _tools, results = call(
        vault,
        "ella",
        ("decide", {"text": "Prices are stored in cents", "why": "no float rounding"}),
        ("decisions", {}),
        (
            "checkpoint",
            {"text": "Half-way through the refund endpoint", "task": "refunds", "next": ["tests"]},
        ),
        ("checkpoint", {}),
        ("state", {"section": "Status", "text": "Refunds in progress"}),
        ("state", {}),
        ("retain", {"text": "The staging database resets every Sunday", "type": "fact"}),
        ("recall", {"query": "refund endpoint", "limit": 3}),
    )
    decided, listed, _saved, shown, _changed, state, retained, hits = (payload(r) for r in results)
    assert decided["id"] in {d["id"] for d in listed["decisions"]}
    assert shown["task"] == "refunds" and "refund endpoint" in shown["text"]
    assert "Refunds in progress" in state["text"]
    assert retained["outcome"] == "inserted"
    assert any(h["path"] == "agents/ella/checkpoint.md" for h in hits["hits"])
