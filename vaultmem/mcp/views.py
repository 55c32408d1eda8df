"""The MCP server's resources (read-only views a client can attach: shared and own memory
indexes, identity, project state, active decisions) and its two prompts (`start-session`,
`end-session`). Registered by `vaultmem.mcp.server`."""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Annotated, Any

from pydantic import Field

from vaultmem.core.errors import VaultmemError
from vaultmem.core.vault import Vault
from vaultmem.mcp import replies


def resources_and_prompts(
    server: Any, vault: Callable[[], Vault], me: Callable[[Vault], str]
) -> None:
    """Read-only views a client can attach, and the two prompts of a session."""

    def resource(uri: str, name: str, description: str) -> Callable[[Callable[[], str]], None]:
        def register(fn: Callable[[], str]) -> None:
            @wraps(fn)
            def guarded() -> str:
                try:
                    return fn()
                except VaultmemError as exc:
                    return f"vaultmem: {exc.kind} (exit {exc.exit_code}): {exc}"

            server.resource(uri, name=name, description=description, mime_type="text/markdown")(
                guarded
            )

        return register

    @resource(
        "vaultmem://memory/shared", "shared-memory", "memory/MEMORY.md: the shared index of facts."
    )
    def shared_memory() -> str:
        v = vault()
        me(v)
        return replies.file_text(v, "memory/MEMORY.md")

    @resource("vaultmem://agent/identity", "identity", "Your IDENTITY.md: who you are.")
    def identity() -> str:
        v = vault()
        return replies.file_text(v, v.rel(v.identity(me(v))))

    @resource("vaultmem://agent/memory", "agent-memory", "Your own MEMORY.md index.")
    def agent_memory() -> str:
        v = vault()
        return replies.file_text(v, v.rel(v.agent_memory_index(me(v))))

    @resource("vaultmem://state", "project-state", "nexus/project-state.md: one section per topic.")
    def project_state() -> str:
        v = vault()
        me(v)
        return replies.file_text(v, "nexus/project-state.md")

    @resource("vaultmem://decisions", "decisions", "The active decisions, with their reasons.")
    def active_decisions() -> str:
        v = vault()
        me(v)
        return replies.decisions_text(v)

    def start_session(
        topic: Annotated[
            str | None, Field(description="What the session is about (adds recall hits).")
        ] = None,
    ) -> str:
        """Load your session context from the shared memory (the `read` pack, peeked: the
        cursor moves when you call `read`)."""
        try:
            v = vault()
            who = me(v)
            markdown, _data, _pack = replies.read_reply(v, who, budget=None, peek=True, query=topic)
        except VaultmemError as exc:
            return f"vaultmem: {exc}"
        return replies.start_session_text(v, who, markdown)

    def end_session() -> str:
        """Wrap up a session: append what the others must know, save your checkpoint, retain
        the facts worth keeping."""
        from vaultmem.nexus.checkpoints import show_checkpoint

        try:
            v = vault()
            who = me(v)
            cp = show_checkpoint(v, who)
        except VaultmemError as exc:
            return f"vaultmem: {exc}"
        current = "\n".join(x for x in (cp.task and f"Task: {cp.task}", cp.text) if x) or None
        return replies.end_session_text(who, current)

    server.prompt(name="start-session", description=start_session.__doc__)(start_session)
    server.prompt(name="end-session", description=end_session.__doc__)(end_session)
