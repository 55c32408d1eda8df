"""The MCP tools for coordination: the inbox, alerts, resolve and working memory (the same
names and options as the commands). Offered by `vaultmem.mcp.server` with `mcp.tools`."""

from __future__ import annotations

from typing import Annotated, Any

from vaultmem.core.secrets import notices
from vaultmem.mcp.call import ADDS, READS, Call, Text, clean, tool
from vaultmem.mcp.schema import Arg

Key = Annotated[str, Arg("A name for the value (letters, digits, - _ . :).")]
Thread = Annotated[str | None, Arg("Keep it per thread (a conversation, a task).")]
Ttl = Annotated[str | None, Arg("How long it lives: 30m, 2h, 7d or never (default 24h).")]


@tool(READS)
def inbox(
    call: Call,
) -> Text:
    """What is open for you: entries addressed to you (or to all) that you have not acked
    and nobody resolved, however old, oldest first. Ack one with `append` (type "ack",
    `acks`: [its id]) once handled."""
    from vaultmem.app.pack.inbox import inbox as do_inbox
    from vaultmem.app.pack.inbox import inbox_section
    from vaultmem.app.pack.receipts import record

    v = call.vault()
    who = call.me(v)
    view = do_inbox(v, who)
    data = view.to_dict()  # each item's summary and body: the text the model needs
    section = inbox_section(view)
    ids = [i.id for i in view.items]
    call.after(lambda: record(v, who, "inbox", ids))
    markdown = f"## {section.title}\n\n{section.text}"
    return Text(markdown, data)


@tool(READS)
def alerts(
    call: Call,
    all: Annotated[bool, Arg("Resolved alerts too.")] = False,
) -> dict[str, Any]:
    """Open alerts, oldest first, with how often each was raised again. Raise one with
    `append` type "alert"; close it with `resolve`."""
    from vaultmem.nexus import alerts as alerts_mod

    v = call.vault()
    call.me(v)
    return {"alerts": [a.to_dict() for a in alerts_mod.alerts(v, include_resolved=all)]}


@tool(ADDS)
def resolve(
    call: Call,
    id: Annotated[str, Arg("The alert (or handoff, question) to close.")],
    why: Annotated[str, Arg("What was done.")] = "",
) -> dict[str, Any]:
    """Close an alert (or a handoff, question or addressed entry) for everyone with a
    signed `resolve` entry."""
    from vaultmem.nexus.alerts import resolve as do_resolve

    v = call.vault()
    result = do_resolve(v, call.me(v), id.strip(), why=why)
    return {**result.to_dict(), "warnings": [*notices(result.redactions), *result.warnings]}


@tool(ADDS)
def wm_set(
    call: Call,
    key: Key,
    value: Annotated[str, Arg("What to hold.")],
    thread: Thread = None,
    ttl: Ttl = None,
) -> dict[str, Any]:
    """Hold a value in your working memory under `key` until it expires. Only you see it."""
    from vaultmem.nexus.working import wm_set as do_set

    v = call.vault()
    item, found = do_set(v, call.me(v), key.strip(), value, thread=clean(thread), ttl=clean(ttl))
    return {**item.to_dict(), "warnings": notices(found)}


@tool(READS)
def wm_get(call: Call, key: Key, thread: Thread = None) -> dict[str, Any]:
    """A value from your working memory (an error when unset or expired)."""
    from vaultmem.nexus.working import wm_get as do_get

    v = call.vault()
    return dict(do_get(v, call.me(v), key.strip(), thread=clean(thread)).to_dict())


@tool(READS)
def wm_list(call: Call, thread: Thread = None) -> dict[str, Any]:
    """Everything in your working memory that has not expired (one thread, or all)."""
    from vaultmem.nexus import working as working_mod

    v = call.vault()
    return dict(working_mod.wm_list(v, call.me(v), thread=clean(thread)).to_dict())


@tool(ADDS)
def wm_del(call: Call, key: Key, thread: Thread = None) -> dict[str, Any]:
    """Drop a value from your working memory."""
    from vaultmem.nexus.working import wm_del as do_del

    v = call.vault()
    return {"deleted": do_del(v, call.me(v), key.strip(), thread=clean(thread)).to_dict()}


@tool(ADDS)
def wm_push(
    call: Call,
    value: Annotated[str, Arg("The turn to add.")],
    thread: Thread = None,
    keep: Annotated[int | None, Arg("How many recent turns the thread keeps (default 20).")] = None,
    ttl: Ttl = None,
) -> dict[str, Any]:
    """Add a turn to a thread's recent turns in your working memory, keeping the last
    `keep`."""
    from vaultmem.nexus.working import wm_push as do_push

    v = call.vault()
    item, dropped, found = do_push(
        v, call.me(v), value, thread=clean(thread), keep=keep, ttl=clean(ttl)
    )
    return {**item.to_dict(), "dropped": dropped, "warnings": notices(found)}


TOOLS = (inbox, alerts, resolve, wm_set, wm_get, wm_list, wm_del, wm_push)
