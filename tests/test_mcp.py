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
