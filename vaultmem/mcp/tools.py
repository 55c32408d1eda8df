"""The MCP tools for memory and shared state: the same use cases as the CLI commands of the
same names, scoped to the agent the server acts for (`recall` and `read` never return another
agent's private notes or pending facts). Agents propose, people decide: there is deliberately
no tool to approve or reject a fact, to forget or retract memory, or to write shared memory
directly (`remember`).

Each tool is a function whose first parameter is the `Call` and whose other parameters are
its arguments, each with an `Arg` description the model reads (`mcp.schema`); the docstring is
the tool's description. `TOOLS` (with `mcp.coord.TOOLS`) is what the server offers."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from vaultmem.core.errors import UsageError
from vaultmem.core.secrets import notices
from vaultmem.mcp import replies
from vaultmem.mcp.call import ADDS, READS, REPLACES, Call, Text, Tool, clean, cleaned, tool
from vaultmem.mcp.schema import Arg
from vaultmem.memory.facts import FactType
from vaultmem.memory.facts import memories as memories_of
from vaultmem.nexus.entry import EntryType
from vaultmem.search.documents import Kind

Channel = Annotated[str, Arg("A free word grouping entries by topic or area: backend, web, api…")]
Tags = Annotated[list[str] | None, Arg("Tags, one word each.")]


@tool(ADDS)
def read(
    call: Call,
    query: Annotated[str | None, Arg("What this session is about: adds recall hits.")] = None,
    budget: Annotated[
        int | None,
        Arg(
            "Keep the whole reply under about this many tokens, dropping the "
            "lowest-priority sections first (default: [read] budget in vaultmem.toml)."
        ),
    ] = None,
    peek: Annotated[bool, Arg("Leave the new log entries unread (the cursor stays).")] = False,
) -> Text:
    """Your session pack as markdown (identity, active decisions, your checkpoint, log
    entries from other agents since your last read, project state, memory indexes, your
    facts pending review), then compact data: the new entry ids, the ones awaiting your
    ack, what the budget dropped. Call it at the start of a session and before answering."""
    from vaultmem.app.pack.build import delivered

    v = call.vault()
    markdown, data, pack = replies.read_reply(v, call.me(v), budget=budget, peek=peek, query=query)
    call.after(lambda: delivered(v, pack))  # once out, its entries count as read
    return Text(markdown, replies.with_markdown(markdown, data))


@tool(ADDS)
def append(
    call: Call,
    summary: Annotated[str, Arg("One line: what happened or what is needed.")],
    channel: Channel = "general",
    type: Annotated[
        EntryType,
        Arg("handoff, question and alert wait for another agent's ack."),
    ] = EntryType.NOTE,
    body: Annotated[
        str, Arg("Detail, markdown (optional); a diff or code is fenced if it is not already.")
    ] = "",
    acks: Annotated[list[str] | None, Arg("Ids of the entries this one acknowledges.")] = None,
    to: Annotated[
        list[str] | None,
        Arg('Agents it is addressed to (or ["all"]): it stays in their inbox until each acks it.'),
    ] = None,
) -> dict[str, Any]:
    """Append one signed entry to the shared live-context log after a significant turn
    (a fix, a decision, a handoff, a question, an alert). An alert that repeats an open one
    is not written (`duplicate_of`). Returns the entry with its id."""
    from vaultmem.core.fences import fence_code
    from vaultmem.nexus.log import append as do_append

    v = call.vault()
    result = do_append(
        v,
        call.me(v),
        summary,
        channel=channel.strip(),
        type_=type,
        body=fence_code(body),
        acks=cleaned(acks),
        to=cleaned(to),
    )
    if not result.duplicate_of and (result.entry.to or result.entry.type == "decision"):
        # an entry others wait for leaves the machine soon, not at the next hook (issue 37)
        from vaultmem.app.hooks.background import start_sync

        start_sync(v)
    return {
        **result.to_dict(),
        "warnings": [*notices(result.redactions), *result.warnings],
    }


@tool(READS)
def log(
    call: Call,
    tail: Annotated[int, Arg("How many of the newest entries.", ge=1)] = 20,
    since: Annotated[
        str | None,
        Arg("Everything after this instead: an entry id, a date or time, or a duration (2h, 7d)."),
    ] = None,
    until: Annotated[
        str | None, Arg("Only up to this: an entry id, a date or time, or a duration ago.")
    ] = None,
    agent: Annotated[str | None, Arg("Only entries by this agent.")] = None,
    channel: Annotated[str | None, Arg("Only this channel.")] = None,
    type: Annotated[EntryType | None, Arg("Only this entry type.")] = None,
) -> dict[str, Any]:
    """Entries of the live-context log, oldest first (the log is shared by every agent)."""
    from vaultmem.nexus import reading as reading_mod

    v = call.vault()
    call.me(v)
    from vaultmem.nexus.shown import ShowCheck

    entries = reading_mod.log(
        v,
        tail=None if since else tail,
        since=clean(since),
        until=clean(until),
        agent=agent,
        channel=channel,
        type_=type,
    )
    check = ShowCheck(v)  # what fails verification is left out, and said (issue 20)
    entries = check.genuine(entries)
    check.save()
    reply: dict[str, Any] = {"entries": [e.to_dict() for e in entries]}
    if check.failed:
        reply["not_verified"] = {"entries": check.failed, "note": check.note()}
    return reply


@tool(READS)
def recall(
    call: Call,
    query: Annotated[
        str,
        Arg('Words, "quoted phrases" and filters like type:decision or tag:payments.'),
    ],
    limit: Annotated[int, Arg("At most this many hits.", ge=1, le=50)] = 10,
    kind: Annotated[Kind | None, Arg("Only this kind of document.")] = None,
    type: Annotated[FactType | None, Arg("Only facts of this type.")] = None,
    under: Annotated[str | None, Arg("Only files under this vault folder.")] = None,
    since: Annotated[
        str | None, Arg("Only documents dated on or after this: a date, a time or a duration (7d).")
    ] = None,
    mode: Annotated[
        Literal["keyword", "semantic", "hybrid"] | None,
        Arg("keyword, semantic or hybrid (default: the vault's setting)."),
    ] = None,
) -> dict[str, Any]:
    """Search what you may see in the vault (shared notes and facts, the log, decisions,
    your own folder; never another agent's private notes or pending facts). Each hit has
    path, heading and line range."""
    from vaultmem.app.pack.receipts import record
    from vaultmem.core.clock import point_day
    from vaultmem.search.filters import RecallFilters

    v = call.vault()
    who = call.me(v)
    day = point_day(since.strip(), "since") if since else None  # the CLI's one time grammar
    filters = RecallFilters.of(kind=kind, type=type, under=clean(under), since=day)
    result = call.recall(v, query, limit=limit, filters=filters, agent=who, mode=mode)
    data = dict(result.to_dict())
    ids = [h.id for h in result.hits if h.id]
    paths = [f"{h.path}:{h.line_start}-{h.line_end}" for h in result.hits if not h.id]
    call.after(lambda: record(v, who, "recall", ids, paths))
    return data


@tool(READS)
def show(
    call: Call,
    spec: Annotated[
        str,
        Arg("A note and optional line range, as a recall hit gives it: wiki/stripe.md:12-30."),
    ],
    lines: Annotated[int, Arg("How many lines without an end line.", ge=1, le=2000)] = 40,
) -> Text:
    """The lines of a note a recall hit points at (scoped like recall: shared notes and
    your own folder). The text is the note's own markdown."""
    from vaultmem.app.pack.receipts import record
    from vaultmem.search.show import show as do_show

    v = call.vault()
    who = call.me(v)
    shown = do_show(v, spec, agent=who, lines=lines)
    where = f"{shown.path}:{shown.line_start}-{shown.line_end}"
    tail = " (more lines follow)" if shown.cut else ""
    text = f"{where} of {shown.total_lines} lines{tail}\n\n{shown.text}"
    call.after(lambda: record(v, who, "show", [], [where]))
    return Text(text, shown.to_dict())


@tool(ADDS)
def decide(
    call: Call,
    text: Annotated[str, Arg("The decision, one line.")],
    why: Annotated[str, Arg("The reason (kept with the decision).")],
    supersedes: Annotated[
        str | None, Arg("The id of a decision this one replaces (ella.d1).")
    ] = None,
    tags: Tags = None,
) -> dict[str, Any]:
    """Record a decision with its rationale on the decision log and announce it on the
    live log."""
    from vaultmem.nexus.decisions import decide as do_decide

    v = call.vault()
    result = do_decide(v, call.me(v), text, why=why, supersedes=supersedes, tags=tags or ())
    return {
        **result.decision.to_dict(),
        "announcement": result.announcement.id,
        "warnings": [*notices(result.redactions), *result.warnings],
    }


@tool(READS)
def decisions(
    call: Call,
    all: Annotated[bool, Arg("Superseded decisions too, marked.")] = False,
) -> dict[str, Any]:
    """Active decisions, oldest first."""
    from vaultmem.nexus import decisions as decisions_mod

    v = call.vault()
    call.me(v)
    return {"decisions": [d.to_dict() for d in decisions_mod.decisions(v, include_superseded=all)]}


@tool(ADDS)
def checkpoint(
    call: Call,
    text: Annotated[
        str | None,
        Arg("Where you stopped. Leave it out to get your current checkpoint."),
    ] = None,
    task: Annotated[str | None, Arg("The task, one line.")] = None,
    next: Annotated[list[str] | None, Arg("The next steps, in order.")] = None,
) -> dict[str, Any]:
    """Save your working checkpoint (replaces the previous one; every version is kept) so
    a new session resumes where this one stopped; without `text`, return it."""
    from vaultmem.nexus import checkpoints as checkpoints_mod
    from vaultmem.nexus.checkpoints import show_checkpoint

    v = call.vault()
    if text is None:
        return dict(show_checkpoint(v, call.me(v)).to_dict())
    cp, found = checkpoints_mod.checkpoint(v, call.me(v), text, task=task, next_steps=next or ())
    return {**cp.to_dict(), "warnings": notices(found)}


@tool(REPLACES)
def state(
    call: Call,
    section: Annotated[str | None, Arg("A `## section` of the project state to replace.")] = None,
    text: Annotated[str | None, Arg("The section's new body.")] = None,
) -> dict[str, Any]:
    """The project-state file; with `section` and `text`, replace that section's body
    (other sections and what people wrote stay) and log the change."""
    from vaultmem.nexus.state import read_state, set_state

    v = call.vault()
    who = call.me(v)
    if section is None:
        return {"path": v.rel(v.project_state), "text": read_state(v)}
    if text is None:
        raise UsageError("state needs `text` with `section`", "pass the section's new body")
    change = set_state(v, who, section, text)
    return {
        "section": change.section,
        "created": change.created,
        "entry": change.entry.id,
        "warnings": [*notices(change.redactions), *change.warnings],
    }


@tool(ADDS)
def retain(
    call: Call,
    text: Annotated[str, Arg("The fact, one to three sentences.")],
    type: Annotated[FactType, Arg("What the fact is about.")] = FactType.FACT,
    tags: Tags = None,
    source: Annotated[str | None, Arg("Where it comes from (session, ticket, file).")] = None,
    valid_until: Annotated[str | None, Arg("YYYY-MM-DD after which it no longer holds.")] = None,
) -> dict[str, Any]:
    """Propose a fact worth keeping into your bank; a person reviews it before it becomes
    memory. Says inserted, duplicate <id> or may_supersede <id>."""
    from vaultmem.bank.retain import retain as do_retain

    v = call.vault()
    result = do_retain(
        v,
        text,
        agent=call.me(v),
        type_=type,
        tags=tags or (),
        source=source,
        valid_until=valid_until,
    )
    return {**result.to_dict(), "warnings": notices(result.findings)}


@tool(READS)
def memories(
    call: Call,
    type: Annotated[FactType | None, Arg("Only facts of this type.")] = None,
) -> dict[str, Any]:
    """Active facts in shared memory and in your own memory (never another agent's)."""

    v = call.vault()
    who = call.me(v)
    facts = memories_of(v, type_=type, include_inactive=False, visible_to=who)
    return {"facts": [f.to_dict() for f in facts]}


@tool(READS)
def status(
    call: Call,
) -> dict[str, Any]:
    """Vault health: agents, facts by type and status, problems found."""
    from vaultmem.app.lifecycle.status import status as vault_status

    v = call.vault()
    call.me(v)
    return dict(vault_status(v).to_dict())


@tool(READS)
def profile(call: Call) -> dict[str, Any]:
    """The compact profile built from approved memory: the shared one and your own, as
    markdown (each line cites the memory it comes from), and whether it is stale."""
    from vaultmem.app.condense.profile import profiles_view

    v = call.vault()
    return {"profiles": profiles_view(v, call.me(v))}


TOOLS: tuple[Tool, ...] = (read, append, log, recall, show, decide, decisions, checkpoint)
TOOLS += (state, retain, memories, status, profile)
