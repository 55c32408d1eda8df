"""The MCP adapter: the same use cases as the CLI, as MCP tools with the same names.

One server acts for one agent in one vault (fixed when it starts: `vaultmem mcp --agent A`),
and every tool is scoped to that agent exactly as the CLI is with `--agent A` (`mcp.tools`,
`mcp.coord`). Besides tools (with a description per parameter, enums where the values are
fixed, and the annotations `readOnlyHint` / `destructiveHint` / `openWorldHint`), the server
offers resources and prompts (`mcp.views`), per https://modelcontextprotocol.io/specification
(2025-11-25: server features). If the agent named at start is unknown, the server still
starts and every call answers with that error, so the client shows it instead of "connection
closed".

The protocol is vaultmem's own (`mcp.protocol`: JSON-RPC over stdio, the handshake revisions
2024-11-05 to 2025-11-25): it needs no package beyond vaultmem's own, and it answers
`initialize` before the MCP SDK would have finished importing (about a second on a small
machine, the time a runtime gives a server before its first request). The tests drive it with
the SDK's real client.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from vaultmem.core.errors import VaultmemError
from vaultmem.mcp import protocol, replies
from vaultmem.mcp.call import Call, Session, Text, Tool
from vaultmem.mcp.protocol import INVALID_PARAMS, RESOURCE_NOT_FOUND, RpcError


def _tools() -> dict[str, Tool]:
    from vaultmem.mcp import coord, tools

    return {t.name: t for t in (*tools.TOOLS, *coord.TOOLS)}


def _result(value: dict[str, Any] | Text) -> dict[str, Any]:
    """A tool's value as a `CallToolResult`: a text block for the model, and the structured
    content (the same data) that Claude Code and Codex show the model when it is there."""
    if isinstance(value, Text):
        text, data = value.text, value.data
    else:
        text, data = json.dumps(value, indent=2, ensure_ascii=False), value
    return {"content": [{"type": "text", "text": text}], "structuredContent": data}


def _tool_error(text: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text}], "isError": True}


class Server:
    """The method table of one server (`methods`), for `protocol.serve`."""

    def __init__(self, vault_path: Path | None, agent: str) -> None:
        self.session = Session(vault_path, agent)
        self.tools = _tools()
        if self.session.problem is not None:
            sys.stderr.write(f"vaultmem mcp: {self.session.problem}; every call will report this\n")
        self.methods: dict[str, protocol.Handler] = {
            "initialize": self.initialize,
            "ping": lambda params, after: {},
            "notifications/initialized": lambda params, after: {},
            "notifications/cancelled": lambda params, after: {},
            "tools/list": self.list_tools,
            "tools/call": self.call_tool,
            "resources/list": self.list_resources,
            "resources/templates/list": lambda params, after: {"resourceTemplates": []},
            "resources/read": self.read_resource,
            "prompts/list": self.list_prompts,
            "prompts/get": self.get_prompt,
        }

    def instructions(self) -> str:
        text = replies.INSTRUCTIONS.format(agent=self.session.agent or "?")
        if self.session.problem is not None:
            text = (
                f"vaultmem cannot serve agent {self.session.agent!r}: {self.session.problem}\n\n"
                + text
            )
        return text

    def initialize(self, params: dict[str, Any], after: Any) -> dict[str, Any]:
        from vaultmem import __version__

        return {
            "protocolVersion": protocol.negotiate(params.get("protocolVersion")),
            "capabilities": {
                "tools": {"listChanged": False},
                "resources": {"listChanged": False, "subscribe": False},
                "prompts": {"listChanged": False},
            },
            "serverInfo": {"name": "vaultmem", "version": __version__},
            "instructions": self.instructions(),
        }

    def list_tools(self, params: dict[str, Any], after: Any) -> dict[str, Any]:
        return {
            "tools": [
                {
                    "name": t.name,
                    "description": t.description,
                    "inputSchema": t.signature.schema(),
                    "annotations": t.annotations,
                }
                for t in self.tools.values()
            ]
        }

    def call_tool(self, params: dict[str, Any], after: Any) -> dict[str, Any]:
        name = params.get("name")
        found = self.tools.get(name) if isinstance(name, str) else None
        if found is None:
            raise RpcError(INVALID_PARAMS, f"unknown tool: {name!r}")
        pending: list[Any] = []
        try:
            kwargs = found.signature.bind(params.get("arguments"))
            value = found.fn(Call(self.session, pending.append), **kwargs)
        except VaultmemError as exc:  # type, exit code, message and hint: the model can act
            return _tool_error(f"{exc.kind} (exit {exc.exit_code}): {exc}")
        except Exception as exc:
            import traceback

            sys.stderr.write(f"vaultmem mcp: tool {name} failed:\n{traceback.format_exc()}")
            return _tool_error(f"unexpected {type(exc).__name__} in {name}: {exc}")
        for fn in pending:
            after(fn)
        return _result(value)

    def list_resources(self, params: dict[str, Any], after: Any) -> dict[str, Any]:
        from vaultmem.mcp.views import RESOURCES

        return {
            "resources": [
                {
                    "uri": r.uri,
                    "name": r.name,
                    "description": r.description,
                    "mimeType": "text/markdown",
                }
                for r in RESOURCES
            ]
        }

    def read_resource(self, params: dict[str, Any], after: Any) -> dict[str, Any]:
        from vaultmem.mcp.views import RESOURCES

        uri = params.get("uri")
        found = next((r for r in RESOURCES if r.uri == uri), None)
        if found is None:
            raise RpcError(RESOURCE_NOT_FOUND, "resource not found", {"uri": uri})
        text = found.read(Call(self.session, after))
        return {"contents": [{"uri": found.uri, "mimeType": "text/markdown", "text": text}]}

    def list_prompts(self, params: dict[str, Any], after: Any) -> dict[str, Any]:
        import inspect

        from vaultmem.mcp.schema import Signature
        from vaultmem.mcp.views import PROMPTS

        out = []
        for name, fn in PROMPTS.items():
            arguments = [
                {"name": p.name, "description": p.arg.description, "required": p.required}
                for p in Signature(fn).params
            ]
            out.append(
                {
                    "name": name,
                    "description": inspect.cleandoc(fn.__doc__ or ""),
                    "arguments": arguments,
                }
            )
        return {"prompts": out}

    def get_prompt(self, params: dict[str, Any], after: Any) -> dict[str, Any]:
        import inspect

        from vaultmem.mcp.schema import Signature
        from vaultmem.mcp.views import PROMPTS

        name = params.get("name")
        fn = PROMPTS.get(name) if isinstance(name, str) else None
        if fn is None:
            raise RpcError(INVALID_PARAMS, f"unknown prompt: {name!r}")
        try:
            kwargs = Signature(fn).bind(params.get("arguments"))
        except VaultmemError as exc:
            raise RpcError(INVALID_PARAMS, str(exc)) from exc
        text = fn(Call(self.session, after), **kwargs)
        return {
            "description": inspect.cleandoc(fn.__doc__ or ""),
            "messages": [{"role": "user", "content": {"type": "text", "text": text}}],
        }


def serve(vault_path: Path | None, agent: str) -> None:
    """Run the server on stdio until the client disconnects."""
    server = Server(vault_path, agent)
    try:
        protocol.serve(server.methods)
    finally:
        server.session.close()
