"""The MCP server's own protocol (vaultmem/mcp/protocol.py) from the client's side, including a
hostile or careless one: raw JSON-RPC lines to a real `vaultmem mcp` process, per
https://modelcontextprotocol.io/specification/2025-11-25 (basic: JSON-RPC messages and error
codes; basic/lifecycle: version negotiation; basic/transports: stdio, one message per line)."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from vaultmem.core.vault import Vault


def _init(rid: int = 0, version: str = "2025-11-25") -> dict[str, Any]:
    params = {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "t"}}
    return {"jsonrpc": "2.0", "id": rid, "method": "initialize", "params": params}


def _call(rid: int, name: str, arguments: object) -> dict[str, Any]:
    params = {"name": name, "arguments": arguments}
    return {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params}


def exchange(vault: Path, lines: list[str | dict[str, Any]], agent: str = "ella") -> list[Any]:
    """Every line the server wrote, parsed, for `lines` sent at once then stdin closed."""
    text = "".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines)
    env = {k: v for k, v in os.environ.items() if k.startswith(("VAULTMEM_", "HOME", "PATH"))}
    done = subprocess.run(
        [sys.executable, "-m", "vaultmem", "mcp", "--vault", str(vault), "--agent", agent],
        input=text,
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=True,
    )
    return [json.loads(line) for line in done.stdout.splitlines()]  # every line is JSON


def by_id(replies: list[Any]) -> dict[Any, Any]:
    return {r.get("id"): r for r in replies}


def test_every_request_read_before_stdin_closes_is_answered_in_order(vault: Path) -> None:
    # the SDK's server dropped the replies still in flight when stdin closed
    calls = [_call(i, "decisions", {}) for i in range(1, 13)]
    replies = exchange(vault, [_init(), *calls])
    assert [r["id"] for r in replies] == list(range(13))
    assert all("result" in r and not r["result"].get("isError") for r in replies)


def test_malformed_messages_get_json_rpc_errors_and_the_session_goes_on(vault: Path) -> None:
    replies = exchange(
        vault,
        [
            _init(),
            "{not json",
            "\xff\xfe garbage",
            "[1, 2]",  # a batch: not in MCP since 2025-06-18
            '{"jsonrpc": "1.0", "id": 5, "method": "ping"}',
            '{"jsonrpc": "2.0", "id": {"x": 1}, "method": "ping"}',
            '{"jsonrpc": "2.0", "id": 6, "method": "bogus/method"}',
            '{"jsonrpc": "2.0", "method": "notifications/whatever"}',  # never answered
            '{"jsonrpc": "2.0", "method": "tools/list"}',  # a request sent as a notification
            '{"jsonrpc": "2.0", "id": 7, "method": "tools/list", "params": [1]}',
            '{"jsonrpc": "2.0", "id": 8, "method": "server/discover"}',
            '{"jsonrpc": "2.0", "id": 9, "method": "ping"}',
        ],
    )
    codes = [(r["id"], r.get("error", {}).get("code")) for r in replies[1:]]
    assert codes == [
        (None, -32700),
        (None, -32700),
        (None, -32600),
        (None, -32600),
        (None, -32600),
        (6, -32601),
        (7, -32602),
        (8, -32601),  # a handshake-era server: the SDK's client falls back to initialize
        (9, None),
    ]
    assert replies[-1]["result"] == {}


def test_version_negotiation(vault: Path) -> None:
    replies = exchange(vault, [_init(1, "2024-11-05"), _init(2, "1999-01-01"), _init(3, "zzz")])
    versions = [r["result"]["protocolVersion"] for r in replies]
    assert versions == ["2024-11-05", "2025-11-25", "2025-11-25"]
    info = replies[0]["result"]
    assert info["serverInfo"]["name"] == "vaultmem" and "tools" in info["capabilities"]


def test_bad_arguments_are_tool_errors_that_name_the_argument(vault: Path) -> None:
    replies = by_id(
        exchange(
            vault,
            [
                _init(),
                _call(1, "log", {"tail": 0}),
                _call(2, "log", {"tial": 3}),  # a typo is refused, not ignored
                _call(3, "append", {"channel": "x"}),
                _call(4, "append", {"summary": "s", "type": "gossip"}),
                _call(5, "recall", {"query": "q", "limit": 51}),
                _call(6, "read", {"peek": "maybe"}),
                _call(7, "append", {"summary": ["a"]}),
                _call(8, "log", "tail=3"),
                _call(9, "nope", {}),
                _call(10, "log", {"tail": "3"}),  # a model's quoted number is fine
            ],
        )
    )
    text = {i: replies[i]["result"]["content"][0]["text"] for i in range(1, 9)}
    assert all(replies[i]["result"]["isError"] for i in range(1, 9))
    assert "`tail` must be a whole number of at least 1 (got 0)" in text[1]
    assert "unknown argument `tial`" in text[2] and "tail" in text[2]
    assert "`summary` is required" in text[3]
    assert "`type` must be one of note, handoff" in text[4]
    assert "at most 50" in text[5]
    assert "`peek` must be true or false" in text[6]
    assert "`summary` must be a string" in text[7]
    assert "object of named values" in text[8]
    assert all(t.startswith("UsageError (exit 2): ") for t in text.values())
    assert replies[9]["error"]["code"] == -32602  # an unknown tool is a protocol error
    assert not replies[10]["result"].get("isError")


def test_a_tool_that_prints_cannot_corrupt_stdout(vault: Path) -> None:
    # stdout carries protocol messages only: a library print while a tool runs goes to stderr
    from vaultmem.mcp import protocol

    out = io.BytesIO()

    def noisy(params: dict[str, Any], after: Any) -> dict[str, Any]:
        print("hello from a library")
        return {"ok": True}

    line = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "noisy"}).encode() + b"\n"
    protocol.serve({"noisy": noisy}, io.BytesIO(line), out)
    assert [json.loads(x) for x in out.getvalue().splitlines()] == [
        {"jsonrpc": "2.0", "id": 1, "result": {"ok": True}}
    ]


class _Broken(io.BytesIO):
    def write(self, data: Any) -> int:
        raise BrokenPipeError("the client went away")


def _read_request() -> bytes:
    return json.dumps(_call(1, "read", {})).encode() + b"\n"


@pytest.mark.parametrize("delivered", [True, False])
def test_entries_count_as_read_only_once_the_reply_is_out(vault: Path, delivered: bool) -> None:
    from tests._cli import run_cli
    from tests._layer3_helpers import make_keys
    from vaultmem.app.pack.build import load_cursor
    from vaultmem.mcp.protocol import serve
    from vaultmem.mcp.server import Server

    make_keys(vault, "lyra")
    run_cli("append", "the webhook retries are fixed", "--vault", str(vault), "--agent", "lyra")
    v = Vault.open(vault)
    before = load_cursor(v, "ella")
    out = io.BytesIO() if delivered else _Broken()
    serve(Server(vault, "ella").methods, io.BytesIO(_read_request()), out)
    after = load_cursor(Vault.open(vault), "ella")
    if delivered:
        assert after != before and after is not None
        assert "the webhook retries are fixed" in out.getvalue().decode()
    else:
        assert after == before  # not delivered: shown again next time


def test_a_line_longer_than_the_limit_is_refused_and_the_next_one_served(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from vaultmem.mcp import protocol

    monkeypatch.setattr(protocol, "MAX_LINE", 1000)
    ping = json.dumps({"jsonrpc": "2.0", "id": 2, "method": "ping"}).encode()
    big = b'{"jsonrpc": "2.0", "id": 1, "method": "ping", "pad": "' + b"x" * 5000 + b'"}'
    out = io.BytesIO()
    methods: dict[str, protocol.Handler] = {"ping": lambda params, after: {}}
    protocol.serve(methods, io.BytesIO(big + b"\n" + ping + b"\n"), out)
    replies = [json.loads(x) for x in out.getvalue().splitlines()]
    assert replies[0]["error"]["code"] == -32700 and replies[1] == {
        "jsonrpc": "2.0",
        "id": 2,
        "result": {},
    }


def test_time_arguments_take_the_cli_grammar(vault: Path) -> None:
    replies = by_id(
        exchange(
            vault,
            [
                _init(),
                _call(1, "recall", {"query": "stripe", "since": "3650d"}),
                _call(2, "recall", {"query": "stripe", "since": "last tuesday"}),
                _call(3, "log", {"since": "2000-01-01", "until": "1d"}),
                _call(4, "log", {"until": "soon"}),
            ],
        )
    )
    assert not replies[1]["result"].get("isError") and replies[1]["result"]["structuredContent"]
    assert replies[2]["result"]["isError"] and "since" in replies[2]["result"]["content"][0]["text"]
    assert not replies[3]["result"].get("isError")
    assert replies[4]["result"]["isError"]
