"""A local fake of the Anthropic Messages API on 127.0.0.1, for the real `anthropic` client.

Tests queue replies (status, JSON body, headers); each POST /v1/messages takes the next one and is
recorded (headers and JSON body) so tests can check what the client sent. When the queue is
empty the server answers 500 with `x-should-retry: false`, so a test that forgot a reply fails
fast instead of hanging in retries.
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest


@dataclass
class Reply:
    status: int
    body: Any
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0  # seconds to wait before answering (timeouts)


@dataclass
class Request:
    path: str
    headers: dict[str, str]
    body: Any


def tool_call_reply(
    name: str,
    data: dict[str, Any],
    *,
    stop_reason: str = "tool_use",
    usage: dict[str, int] | None = None,
) -> Reply:
    """A message whose content is one call of the tool `name` with input `data`."""
    return Reply(
        200,
        {
            "id": "msg_fake",
            "type": "message",
            "role": "assistant",
            "model": "claude-haiku-4-5",
            "content": [{"type": "tool_use", "id": "toolu_fake", "name": name, "input": data}],
            "stop_reason": stop_reason,
            "stop_sequence": None,
            "usage": usage
            or {
                "input_tokens": 120,
                "output_tokens": 40,
                "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": 900,
            },
        },
    )


def tool_reply(facts: list[dict[str, Any]], *, stop_reason: str = "tool_use") -> Reply:
    return tool_call_reply("record_facts", {"facts": facts}, stop_reason=stop_reason)


def text_reply(text: str) -> Reply:
    """A well-formed message that is not the tool call we forced: malformed for our purposes."""
    return Reply(
        200,
        {
            "id": "msg_fake",
            "type": "message",
            "role": "assistant",
            "model": "claude-haiku-4-5",
            "content": [{"type": "text", "text": text}],
            "stop_reason": "end_turn",
            "stop_sequence": None,
            "usage": {"input_tokens": 10, "output_tokens": 5},
        },
    )


def error_reply(status: int, kind: str, message: str, **headers: str) -> Reply:
    return Reply(status, {"type": "error", "error": {"type": kind, "message": message}}, headers)


def overloaded() -> Reply:
    # retry-after-ms keeps the SDK's backoff at a few milliseconds in tests
    return error_reply(529, "overloaded_error", "Overloaded", **{"retry-after-ms": "5"})


class FakeAnthropic:
    def __init__(self, responder: Callable[[Request], Reply] | None = None) -> None:
        self.replies: deque[Reply] = deque()
        self.requests: list[Request] = []
        # answers each request the queue does not (benchmarks compute replies from requests)
        self.responder = responder
        self._lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:  # quiet
                return

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length)
                try:
                    body = json.loads(raw or b"null")
                except ValueError:
                    body = raw.decode("utf-8", "replace")
                with fake._lock:
                    request = Request(
                        self.path, {k.lower(): v for k, v in self.headers.items()}, body
                    )
                    fake.requests.append(request)
                    if fake.replies:
                        reply = fake.replies.popleft()
                    elif fake.responder is not None:
                        reply = fake.responder(request)
                    else:
                        reply = error_reply(
                            500, "api_error", "no reply queued", **{"x-should-retry": "false"}
                        )
                if reply.delay:
                    time.sleep(reply.delay)
                data = json.dumps(reply.body).encode()
                try:
                    self.send_response(reply.status)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(data)))
                    self.send_header("request-id", "req_fake")
                    for key, value in reply.headers.items():
                        self.send_header(key, value)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (a timeout test): nothing to answer

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    @property
    def url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host!s}:{port}"

    def queue(self, *replies: Reply) -> None:
        self.replies.extend(replies)

    def start(self) -> FakeAnthropic:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def fake_anthropic(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeAnthropic]:
    """The fake server, with ANTHROPIC_BASE_URL pointing at it and a test key set."""
    fake = FakeAnthropic().start()
    monkeypatch.setenv("ANTHROPIC_BASE_URL", fake.url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-not-a-real-key")
    try:
        yield fake
    finally:
        fake.stop()
