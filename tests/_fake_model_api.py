"""A fake model API on 127.0.0.1 for the real agent CLIs: the streaming Messages API (Claude
Code) and the Responses API (Codex), one server, every request body recorded.

What the "model" does is scripted by the prompt itself, so a test reads as what a user types:

- `[[bash: COMMAND]]` in the newest user message: the model runs COMMAND with the runtime's
  shell tool (Claude Code `Bash`, Codex `shell` / `exec_command`, OpenClaw `exec`);
- `[[tool: NAME {JSON}]]`: the model calls the tool whose name ends with NAME (an MCP tool:
  `mcp__vaultmem__read` in Claude Code, `mcp__vaultmem__read` or `vaultmem__read` in Codex),
  with the JSON arguments;
- anything else, or a turn whose newest message is a tool's result: a short text answer.

The recorded bodies are what each model call was shown: tests assert on them (the pack a hook
injected, a tool result's text), not on what the CLI prints.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

DIRECTIVE = re.compile(r"\[\[(bash|tool):\s*(.*?)\]\]", re.S)
ANSWER = "All done."
WAIT_ECHO = "waited-for-tools"
WAIT = f"sleep 1; echo {WAIT_ECHO}"
MAX_WAITS = 6


@dataclass
class Call:
    path: str
    body: dict[str, Any]
    agent: str = ""  # the User-Agent: claude-cli/…, codex_exec/…, or vaultmem's own client
    at: float = field(default_factory=time.monotonic)

    @property
    def text(self) -> str:
        """Everything the request carries, as one string (for `in` checks)."""
        return json.dumps(self.body, ensure_ascii=False)

    @property
    def main(self) -> bool:
        """A call of the runtime's agent loop (it offers tools), not a side call (titles,
        summaries) nor vaultmem's own retention (the `anthropic` Python client)."""
        return bool(self.body.get("tools")) and not self.retention

    @property
    def retention(self) -> bool:
        """A call vaultmem itself made (`retain --queued` through the `anthropic` client, one
        forced tool: core/llm.py). Hermes Agent's loop uses the same client, never forced."""
        choice = self.body.get("tool_choice")
        forced = not isinstance(choice, dict) or choice.get("type") == "tool"
        return self.agent.lower().startswith("anthropic/") and forced


def _texts(content: Any) -> Iterator[tuple[str, str]]:
    """(kind, text) of a message's content: kind is "text" or "result" (a tool's result)."""
    if isinstance(content, str):
        yield "text", content
        return
    for block in content or ():
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind in ("text", "input_text"):
            yield "text", str(block.get("text", ""))
        elif kind in ("tool_result", "function_call_output"):
            yield "result", json.dumps(block)


OPENCLAW_CONTEXT = "<<<BEGIN_OPENCLAW_INTERNAL_CONTEXT>>>"


def _runtime_context(content: Any) -> bool:
    """A message OpenClaw adds after the person's turn (its own runtime context)."""
    texts = [t for k, t in _texts(content) if k == "text"]
    return bool(texts) and all(t.lstrip().startswith(OPENCLAW_CONTEXT) for t in texts)


def last_turn(body: dict[str, Any]) -> tuple[str, bool]:
    """(the newest user text, whether the newest item is a tool's result that was no wait)."""
    if "messages" in body:  # Messages API
        # Claude Code appends a `system` message (the environment) after the user's turn;
        # OpenClaw a user message of its own runtime context (exec sessions, subagents)
        items = [
            m
            for m in body["messages"]
            if m.get("role") != "system" and not _runtime_context(m.get("content"))
        ]
        parts = [list(_texts(m.get("content"))) for m in items]
        last = parts[-1] if parts else []
        result = any(k == "result" for k, _ in last)
        waited = result and WAIT_ECHO in json.dumps(last)
        for part in reversed(parts):
            texts = [t for k, t in part if k == "text"]
            if texts:
                return "\n".join(texts), result and not waited
        return "", result and not waited
    inputs = body.get("input") or []  # Responses API
    if isinstance(inputs, str):
        return inputs, False
    result = bool(inputs) and inputs[-1].get("type") == "function_call_output"
    waited = result and WAIT_ECHO in json.dumps(inputs[-1])
    for item in reversed(inputs):
        if item.get("role") == "user":
            text = "\n".join(t for _, t in _texts(item.get("content")))
            return text, result and not waited
    return "", result and not waited


def tool_names(body: dict[str, Any]) -> list[str]:
    """The tools offered; a namespace's (Codex groups an MCP server's tools in one) as
    `NAMESPACE.NAME`."""
    names = []
    for tool in body.get("tools") or ():
        if tool.get("type") == "namespace":
            names += [f"{tool['name']}.{t.get('name')}" for t in tool.get("tools") or ()]
            continue
        name = tool.get("name") or (tool.get("function") or {}).get("name")
        if name:
            names.append(str(name))
    return names


def decide(body: dict[str, Any]) -> tuple[str, dict[str, Any]] | str:
    """The scripted model: a tool call (name, arguments) or a text answer."""
    text, after_result = last_turn(body)
    if after_result or not tool_names(body):
        return ANSWER
    found = DIRECTIVE.findall(text)
    if not found:
        return ANSWER
    kind, arg = found[-1]
    names = tool_names(body)
    if kind == "bash":
        if "Bash" in names:
            return "Bash", {"command": arg, "description": "run it"}
        if "exec_command" in names:
            return "exec_command", {"cmd": arg}
        if "exec" in names:  # OpenClaw's shell tool (docs/tools/exec.md: `command`)
            return "exec", {"command": arg}
        return "shell", {"command": ["bash", "-lc", arg]}
    name, _, raw = arg.strip().partition(" ")
    args = json.loads(raw) if raw.strip() else {}
    for candidate in names:
        if candidate.endswith(name) and "vaultmem" in candidate:
            return candidate, args
    # the runtime did not wait for the MCP server to start: wait the way a model can, with
    # a shell command, a few times (`waits` counts them), then give up in words
    if json.dumps(body).count(WAIT) < MAX_WAITS:
        return decide(
            {
                "tools": body.get("tools"),
                "messages": [{"role": "user", "content": f"[[bash: {WAIT}]]"}],
            }
        )
    return f"(no tool named {name} among {names})"


def waits(body: dict[str, Any]) -> int:
    """How many times this conversation waited for a tool that was not offered yet."""
    return json.dumps(body).count(WAIT) // 2  # each wait: the call and its echo in the result


class FakeModelAPI:
    """`with FakeModelAPI() as api:` a server on 127.0.0.1; `api.url`, `api.calls`."""

    def __init__(self) -> None:
        self.calls: list[Call] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._n = 0

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def __enter__(self) -> FakeModelAPI:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def main_calls(self) -> list[Call]:
        with self._lock:
            return [c for c in self.calls if c.main]

    def shown(self) -> str:
        """Everything the agent loop's calls showed the model, as one string."""
        return "\n".join(c.text for c in self.main_calls())

    def _next_id(self) -> int:
        with self._lock:
            self._n += 1
            return self._n

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        api = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def _json(self, status: int, data: Any) -> None:
                raw = json.dumps(data).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

            def do_HEAD(self) -> None:
                self.send_response(200)
                self.send_header("content-length", "0")
                self.end_headers()

            def do_GET(self) -> None:
                if self.path.rstrip("/").endswith("/models"):
                    self._json(200, {"data": [], "models": []})
                else:
                    self._json(200, {})

            def do_POST(self) -> None:
                size = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(size) if size else b""
                try:
                    body = json.loads(raw or b"{}")
                except ValueError:
                    body = {}
                path = self.path.split("?", 1)[0]
                if path.endswith("/count_tokens"):
                    self._json(200, {"input_tokens": 100})
                    return
                with api._lock:
                    api.calls.append(Call(path, body, self.headers.get("user-agent") or ""))
                n = api._next_id()
                choice = decide(body)
                if path.endswith("/responses"):
                    self._responses(n, choice, body)
                elif body.get("stream"):
                    self._messages_stream(n, choice, body)
                else:
                    self._json(200, _message(n, choice, body))

            def _sse(self, events: list[tuple[str, dict[str, Any]]]) -> None:
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("cache-control", "no-cache")
                self.send_header("connection", "close")
                self.end_headers()
                for event, data in events:
                    self.wfile.write(f"event: {event}\ndata: {json.dumps(data)}\n\n".encode())
                self.wfile.flush()
                self.close_connection = True

            def _messages_stream(self, n: int, choice: Any, body: dict[str, Any]) -> None:
                msg = _message(n, choice, body)
                content = msg.pop("content")
                stop = msg["stop_reason"]
                start = {**msg, "content": [], "stop_reason": None}
                events: list[tuple[str, dict[str, Any]]] = [
                    ("message_start", {"type": "message_start", "message": start})
                ]
                for i, block in enumerate(content):
                    if block["type"] == "text":
                        opened = {"type": "text", "text": ""}
                        delta = {"type": "text_delta", "text": block["text"]}
                    else:
                        opened = {**block, "input": {}}
                        delta = {
                            "type": "input_json_delta",
                            "partial_json": json.dumps(block["input"]),
                        }
                    events += [
                        (
                            "content_block_start",
                            {"type": "content_block_start", "index": i, "content_block": opened},
                        ),
                        (
                            "content_block_delta",
                            {"type": "content_block_delta", "index": i, "delta": delta},
                        ),
                        ("content_block_stop", {"type": "content_block_stop", "index": i}),
                    ]
                events += [
                    (
                        "message_delta",
                        {
                            "type": "message_delta",
                            "delta": {"stop_reason": stop, "stop_sequence": None},
                            "usage": {"output_tokens": 12},
                        },
                    ),
                    ("message_stop", {"type": "message_stop"}),
                ]
                self._sse(events)

            def _responses(self, n: int, choice: Any, body: dict[str, Any]) -> None:
                rid = f"resp_{n}"
                if isinstance(choice, str):
                    item: dict[str, Any] = {
                        "type": "message",
                        "id": f"msg_{n}",
                        "role": "assistant",
                        "status": "completed",
                        "content": [{"type": "output_text", "text": choice, "annotations": []}],
                    }
                else:
                    name, args = choice
                    space, _, short = name.rpartition(".")
                    item = {
                        "type": "function_call",
                        "id": f"fc_{n}",
                        "call_id": f"call_{n}",
                        "name": short,
                        "arguments": json.dumps(args),
                        "status": "completed",
                    }
                    if space:
                        item["namespace"] = space
                usage = {
                    "input_tokens": 100,
                    "input_tokens_details": {"cached_tokens": 0},
                    "output_tokens": 10,
                    "output_tokens_details": {"reasoning_tokens": 0},
                    "total_tokens": 110,
                }
                response = {
                    "id": rid,
                    "object": "response",
                    "status": "completed",
                    "model": body.get("model"),
                    "output": [item],
                    "usage": usage,
                }
                events = [
                    (
                        "response.created",
                        {
                            "type": "response.created",
                            "response": {**response, "status": "in_progress", "output": []},
                        },
                    ),
                    (
                        "response.output_item.added",
                        {"type": "response.output_item.added", "output_index": 0, "item": item},
                    ),
                ]
                if isinstance(choice, str):
                    events.append(
                        (
                            "response.output_text.delta",
                            {
                                "type": "response.output_text.delta",
                                "item_id": item["id"],
                                "output_index": 0,
                                "content_index": 0,
                                "delta": choice,
                            },
                        )
                    )
                events += [
                    (
                        "response.output_item.done",
                        {"type": "response.output_item.done", "output_index": 0, "item": item},
                    ),
                    ("response.completed", {"type": "response.completed", "response": response}),
                ]
                self._sse(events)

        return Handler


def _message(n: int, choice: Any, body: dict[str, Any]) -> dict[str, Any]:
    if isinstance(choice, str):
        content: list[dict[str, Any]] = [{"type": "text", "text": choice}]
        stop = "end_turn"
    else:
        name, args = choice
        content = [{"type": "tool_use", "id": f"toolu_{n:04d}", "name": name, "input": args}]
        stop = "tool_use"
    return {
        "id": f"msg_{n:04d}",
        "type": "message",
        "role": "assistant",
        "model": body.get("model") or "claude-sonnet-4-5",
        "content": content,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": {
            "input_tokens": 100,
            "output_tokens": 12,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
        },
    }
