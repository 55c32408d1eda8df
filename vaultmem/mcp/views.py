"""The MCP server's resources (read-only views a client can attach: shared and own memory
indexes, identity, project state, active decisions) and its two prompts (`start-session`,
`end-session`), per https://modelcontextprotocol.io/specification/2025-11-25/server/resources
and /server/prompts. Each is a function of the `Call` (a prompt's arguments after it); a
vaultmem error becomes text the client shows instead of a failed request."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated

from vaultmem.core.errors import VaultmemError
from vaultmem.mcp import replies
from vaultmem.mcp.call import Call
from vaultmem.mcp.schema import Arg


class Resource:
    __slots__ = ("description", "fn", "name", "uri")

    def __init__(self, uri: str, name: str, description: str, fn: Callable[[Call], str]) -> None:
        self.uri, self.name, self.description, self.fn = uri, name, description, fn

    def read(self, call: Call) -> str:
        try:
            return self.fn(call)
        except VaultmemError as exc:
            return f"vaultmem: {exc.kind} (exit {exc.exit_code}): {exc}"


def _shared_memory(call: Call) -> str:
    v = call.vault()
    call.me(v)
    return replies.file_text(v, "memory/MEMORY.md")


def _identity(call: Call) -> str:
    v = call.vault()
    return replies.file_text(v, v.rel(v.identity(call.me(v))))


def _agent_memory(call: Call) -> str:
    v = call.vault()
    return replies.file_text(v, v.rel(v.agent_memory_index(call.me(v))))


def _project_state(call: Call) -> str:
    v = call.vault()
    call.me(v)
    return replies.file_text(v, "nexus/project-state.md")


def _decisions(call: Call) -> str:
    v = call.vault()
    call.me(v)
    return replies.decisions_text(v)


RESOURCES = (
    Resource(
        "vaultmem://memory/shared",
        "shared-memory",
        "memory/MEMORY.md: the shared index of facts.",
        _shared_memory,
    ),
    Resource("vaultmem://agent/identity", "identity", "Your IDENTITY.md: who you are.", _identity),
    Resource("vaultmem://agent/memory", "agent-memory", "Your own MEMORY.md index.", _agent_memory),
    Resource(
        "vaultmem://state",
        "project-state",
        "nexus/project-state.md: one section per topic.",
        _project_state,
    ),
    Resource(
        "vaultmem://decisions",
        "decisions",
        "The active decisions, with their reasons.",
        _decisions,
    ),
)


def start_session(
    call: Call,
    topic: Annotated[str | None, Arg("What the session is about (adds recall hits).")] = None,
) -> str:
    """Load your session context from the shared memory (the `read` pack, peeked: the
    cursor moves when you call `read`)."""
    try:
        v = call.vault()
        who = call.me(v)
        markdown, _data, _pack = replies.read_reply(v, who, budget=None, peek=True, query=topic)
    except VaultmemError as exc:
        return f"vaultmem: {exc}"
    return replies.start_session_text(v, who, markdown)


def end_session(call: Call) -> str:
    """Wrap up a session: append what the others must know, save your checkpoint, retain
    the facts worth keeping."""
    from vaultmem.nexus.checkpoints import show_checkpoint

    try:
        v = call.vault()
        who = call.me(v)
        cp = show_checkpoint(v, who)
    except VaultmemError as exc:
        return f"vaultmem: {exc}"
    current = "\n".join(x for x in (cp.task and f"Task: {cp.task}", cp.text) if x) or None
    return replies.end_session_text(who, current)


PROMPTS: dict[str, Callable[..., str]] = {
    "start-session": start_session,
    "end-session": end_session,
}
