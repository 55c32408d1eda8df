"""MCP over stdio: JSON-RPC 2.0, one message per line, one request at a time.

Follows https://modelcontextprotocol.io/specification/2025-11-25 — basic/transports (stdio:
newline-delimited UTF-8 JSON-RPC messages, no embedded newlines, nothing else on stdout, logs
on stderr), basic/lifecycle (`initialize` negotiates the version: the client's if this server
speaks it, else the newest it does; then `notifications/initialized`), basic (JSON-RPC error
codes: -32700 parse error, -32600 invalid request, -32601 method not found, -32602 invalid
params, -32603 internal error) and basic/utilities/ping.

Requests are answered in order, each completely before the next is read, and every request
read before stdin closes is answered: what a tool marks as seen (the read cursor, receipts) is
recorded only after its result was written and flushed to the client (`Call.after`), so a reply
that never left the process marks nothing. While a tool runs, `sys.stdout` points at stderr:
a stray print can never corrupt the protocol.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import IO, Any

# the revisions reachable with the initialize handshake, oldest first
VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
MAX_LINE = 32 * 1024 * 1024  # a message longer than this is refused, not read into memory

PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS, INTERNAL_ERROR = (
    -32700,
    -32600,
    -32601,
    -32602,
    -32603,
)
RESOURCE_NOT_FOUND = -32002


class RpcError(Exception):
    """A JSON-RPC error response (the request itself was wrong, not the tool's work)."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code, self.message, self.data = code, message, data

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            out["data"] = self.data
        return out


# a method's handler: (params, register-a-callback-for-after-delivery) -> result
Handler = Callable[[dict[str, Any], Callable[[Callable[[], object]], None]], dict[str, Any]]


def negotiate(requested: object) -> str:
    """The protocol revision to answer `initialize` with."""
    return requested if isinstance(requested, str) and requested in VERSIONS else VERSIONS[-1]


def _write(out: IO[bytes], message: dict[str, Any]) -> bool:
    line = json.dumps(message, ensure_ascii=False, separators=(",", ":"))
    try:
        out.write(line.encode("utf-8") + b"\n")
        out.flush()
    except (OSError, ValueError):  # the client went away
        return False
    return True


def _lines(stream: IO[bytes]) -> Any:
    """Each line of `stream` (bytes), or None for a line longer than MAX_LINE (skipped)."""
    while True:
        line = stream.readline(MAX_LINE + 1)
        if not line:
            return
        if len(line) > MAX_LINE and not line.endswith(b"\n"):
            while line and not line.endswith(b"\n"):  # drop the rest of the long line
                line = stream.readline(1024 * 1024)
            yield None
            continue
        if line.strip():
            yield line


def handle(
    methods: dict[str, Handler], raw: bytes | None, after: list[Callable[[], object]]
) -> dict[str, Any] | None:
    """The response to one line (None for a notification); callbacks to run once it is out
    are added to `after`."""
    if raw is None:
        return _error(None, RpcError(PARSE_ERROR, f"message longer than {MAX_LINE} bytes"))
    try:
        message = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        return _error(None, RpcError(PARSE_ERROR, f"not JSON: {exc}"))
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
        return _error(None, RpcError(INVALID_REQUEST, "not a JSON-RPC 2.0 message object"))
    has_id = "id" in message
    rid = message.get("id")
    if has_id and (isinstance(rid, bool) or not isinstance(rid, str | int)):
        return _error(None, RpcError(INVALID_REQUEST, "the id must be a string or an integer"))
    method = message.get("method")
    if not isinstance(method, str):
        # a response to something we never sent, or garbage: nothing to answer
        return (
            None
            if not has_id or "result" in message or "error" in message
            else _error(rid, RpcError(INVALID_REQUEST, "no method"))
        )
    params = message.get("params", {})
    if params is None:
        params = {}
    if not isinstance(params, dict):
        return _error(rid, RpcError(INVALID_PARAMS, "params must be an object")) if has_id else None
    handler = methods.get(method)
    if not has_id:  # a notification: never answered, even when it fails
        if handler is not None and method.startswith("notifications/"):
            try:
                handler(params, lambda fn: None)
            except Exception as exc:
                sys.stderr.write(f"vaultmem mcp: {method}: {exc}\n")
        return None
    if handler is None:
        return _error(rid, RpcError(METHOD_NOT_FOUND, f"method not found: {method}"))
    pending: list[Callable[[], object]] = []
    try:
        result = handler(params, pending.append)
    except RpcError as exc:
        return _error(rid, exc)
    except Exception as exc:
        import traceback

        sys.stderr.write(f"vaultmem mcp: {method} failed:\n{traceback.format_exc()}")
        return _error(rid, RpcError(INTERNAL_ERROR, f"internal error: {type(exc).__name__}"))
    after.extend(pending)
    return {"jsonrpc": "2.0", "id": rid, "result": result}


def _error(rid: object, exc: RpcError) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "error": exc.to_dict()}


def serve(
    methods: dict[str, Handler], stdin: IO[bytes] | None = None, stdout: IO[bytes] | None = None
) -> None:
    """Answer requests from `stdin` on `stdout` (the process's own by default) until stdin
    closes or stdout breaks."""
    stdin = stdin if stdin is not None else sys.stdin.buffer
    stdout = stdout if stdout is not None else sys.stdout.buffer
    saved = sys.stdout
    sys.stdout = sys.stderr  # nothing but protocol messages on the real stdout
    try:
        for raw in _lines(stdin):
            after: list[Callable[[], object]] = []
            response = handle(methods, raw, after)
            if response is None:
                continue
            if not _write(stdout, response):
                return  # not delivered: nothing it showed counts as seen
            if "error" in response or response["result"].get("isError"):
                continue
            for fn in after:
                try:
                    fn()
                except Exception as exc:
                    sys.stderr.write(f"vaultmem mcp: could not record a delivery: {exc}\n")
    finally:
        sys.stdout = saved
