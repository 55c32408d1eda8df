"""The stdio transport of the MCP server: the SDK's own, with a stdout that tells
`replies.Deliveries` each line it has written and flushed, so that what a tool marks as seen
(the read cursor, receipts) is recorded once its result has reached the client."""

from __future__ import annotations

import io
import sys
from contextlib import suppress
from typing import TYPE_CHECKING, Any, cast

from vaultmem.mcp import replies

if TYPE_CHECKING:
    from anyio import AsyncFile


class _Wire(io.TextIOWrapper):
    """UTF-8 text over stdout's buffer that leaves the buffer open when it goes away."""

    def close(self) -> None:
        with suppress(ValueError):
            self.detach()


class ReportingOut:
    """stdout for the stdio transport that tells `deliveries` each line it has flushed."""

    def __init__(self, out: Any, deliveries: replies.Deliveries) -> None:
        self._out, self._deliveries = out, deliveries
        self._lines: list[str] = []

    async def write(self, text: str) -> None:
        await self._out.write(text)
        self._lines.append(text)

    async def flush(self) -> None:
        await self._out.flush()
        lines, self._lines = self._lines, []
        for line in lines:
            self._deliveries.sent(line)


def run(server: Any, deliveries: replies.Deliveries) -> None:
    """Serve `server` (an SDK `MCPServer`) on stdin/stdout until the client disconnects."""
    import anyio
    from mcp.server.stdio import stdio_server

    lowlevel = server._lowlevel_server  # the SDK's own run_stdio_async, with our stdout

    async def serve() -> None:
        wire = _Wire(sys.stdout.buffer, encoding="utf-8")
        out = ReportingOut(anyio.wrap_file(wire), deliveries)
        # stdio_server only writes and flushes its stdout
        async with stdio_server(stdout=cast("AsyncFile[str]", out)) as (read_stream, write_stream):
            await lowlevel.run(read_stream, write_stream, lowlevel.create_initialization_options())

    anyio.run(serve)
