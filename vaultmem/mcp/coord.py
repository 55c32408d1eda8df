"""The MCP tools for coordination: the inbox, alerts, resolve and working memory (the same
names and options as the commands). Registered by `vaultmem.mcp.server`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

from mcp.server.mcpserver import Context
from mcp_types import CallToolResult, TextContent
from pydantic import Field

from vaultmem.core.secrets import notices
from vaultmem.core.vault import Vault
from vaultmem.mcp.replies import Deliveries

Key = Annotated[str, Field(description="A name for the value (letters, digits, - _ . :).")]
Thread = Annotated[str | None, Field(description="Keep it per thread (a conversation, a task).")]
Ttl = Annotated[
    str | None, Field(description="How long it lives: 30m, 2h, 7d or never (default 24h).")
]


def coordination_tools(
    vault: Callable[[], Vault],
    me: Callable[[Vault], str],
    deliveries: Deliveries,
    *,
    reads: Any,
    adds: Any,
) -> tuple[tuple[Callable[..., Any], Any], ...]:
    """(tool, annotations) for the inbox, alerts, resolve and working-memory tools."""

    def strip(value: str | None) -> str | None:
        return value.strip() if isinstance(value, str) else value

    def inbox(ctx: Context | None = None) -> CallToolResult:
        """What is open for you: entries addressed to you (or to all) that you have not acked
        and nobody resolved, however old, oldest first. Ack one with `append` (type "ack",
        `acks`: [its id]) once handled."""
        from vaultmem.app.pack.inbox import inbox as do_inbox
        from vaultmem.app.pack.inbox import inbox_section
        from vaultmem.app.pack.receipts import record

        v = vault()
        who = me(v)
        view = do_inbox(v, who)
        data = view.to_dict()  # each item's summary and body: the text the model needs
        section = inbox_section(view)
        ids = [i.id for i in view.items]
        deliveries.after(ctx.request_id if ctx else None, lambda: record(v, who, "inbox", ids))
        markdown = f"## {section.title}\n\n{section.text}"
        return CallToolResult(
            content=[TextContent(type="text", text=markdown)],
            structured_content=data,
        )

    def alerts(
        all: Annotated[bool, Field(description="Resolved alerts too.")] = False,
    ) -> dict[str, Any]:
        """Open alerts, oldest first, with how often each was raised again. Raise one with
        `append` type "alert"; close it with `resolve`."""
        from vaultmem.nexus import alerts as alerts_mod

        v = vault()
        me(v)
        return {"alerts": [a.to_dict() for a in alerts_mod.alerts(v, include_resolved=all)]}

    def resolve(
        id: Annotated[str, Field(description="The alert (or handoff, question) to close.")],
        why: Annotated[str, Field(description="What was done.")] = "",
    ) -> dict[str, Any]:
        """Close an alert (or a handoff, question or addressed entry) for everyone with a
        signed `resolve` entry."""
        from vaultmem.nexus.alerts import resolve as do_resolve

        v = vault()
        result = do_resolve(v, me(v), id.strip(), why=why)
        return {**result.to_dict(), "warnings": [*notices(result.redactions), *result.warnings]}

    def wm_set(
        key: Key,
        value: Annotated[str, Field(description="What to hold.")],
        thread: Thread = None,
        ttl: Ttl = None,
    ) -> dict[str, Any]:
        """Hold a value in your working memory under `key` until it expires. Only you see it."""
        from vaultmem.nexus.working import wm_set as do_set

        v = vault()
        item, found = do_set(v, me(v), key.strip(), value, thread=strip(thread), ttl=strip(ttl))
        return {**item.to_dict(), "warnings": notices(found)}

    def wm_get(key: Key, thread: Thread = None) -> dict[str, Any]:
        """A value from your working memory (an error when unset or expired)."""
        from vaultmem.nexus.working import wm_get as do_get

        v = vault()
        return dict(do_get(v, me(v), key.strip(), thread=strip(thread)).to_dict())

    def wm_list(thread: Thread = None) -> dict[str, Any]:
        """Everything in your working memory that has not expired (one thread, or all)."""
        from vaultmem.nexus import working as working_mod

        v = vault()
        return dict(working_mod.wm_list(v, me(v), thread=strip(thread)).to_dict())

    def wm_del(key: Key, thread: Thread = None) -> dict[str, Any]:
        """Drop a value from your working memory."""
        from vaultmem.nexus.working import wm_del as do_del

        v = vault()
        return {"deleted": do_del(v, me(v), key.strip(), thread=strip(thread)).to_dict()}

    def wm_push(
        value: Annotated[str, Field(description="The turn to add.")],
        thread: Thread = None,
        keep: Annotated[
            int | None, Field(description="How many recent turns the thread keeps (default 20).")
        ] = None,
        ttl: Ttl = None,
    ) -> dict[str, Any]:
        """Add a turn to a thread's recent turns in your working memory, keeping the last
        `keep`."""
        from vaultmem.nexus.working import wm_push as do_push

        v = vault()
        item, dropped, found = do_push(
            v, me(v), value, thread=strip(thread), keep=keep, ttl=strip(ttl)
        )
        return {**item.to_dict(), "dropped": dropped, "warnings": notices(found)}

    return (
        (inbox, reads),
        (alerts, reads),
        (resolve, adds),
        (wm_set, adds),
        (wm_get, reads),
        (wm_list, reads),
        (wm_del, adds),
        (wm_push, adds),
    )
