"""A real MCP client over stdio against a real `vaultmem mcp` process (import only after
`pytest.importorskip("mcp")`)."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

Step = tuple[str, dict[str, Any]] | Callable[[], object]


async def _session_call(vault: Path, agent: str, calls: list[Step]) -> tuple[list[str], list[Any]]:
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
        results = []
        for step in calls:
            if callable(step):  # something done between two calls of the one session
                step()
                continue
            name, args = step
            results.append(await session.call_tool(name, args))
    return tools, results


def call(vault: Path, agent: str, *calls: Step) -> tuple[list[str], list[Any]]:
    """Start a server for `agent`, run the tool calls in one session (a callable among them
    runs between the calls around it), return the tool names and each call's result."""
    return anyio.run(_session_call, vault, agent, list(calls))


def payload(result: Any) -> Any:
    assert not result.is_error, result.content
    if result.structured_content is not None:
        return result.structured_content
    return json.loads(result.content[0].text)


def make_keys(vault: Path, *agents: str) -> None:
    """Keys for `agents` on this machine, approved by the reviewer (whose signature an
    approval is: tests._layer3_helpers creates the reviewer's key first)."""
    from tests._layer3_helpers import make_keys as create

    create(vault, *agents)
