"""The MCP adapter: the same use cases as the CLI, as MCP tools with the same names.

One server acts for one agent in one vault (fixed when it starts: `vaultmem mcp --agent A`),
and every tool is scoped to that agent exactly as the CLI is with `--agent A`: `recall` and
`read` never return another agent's private notes or pending facts. Agents propose, people
decide: there is deliberately no tool to approve or reject a fact, to forget or retract memory,
or to write shared memory directly (`remember`).

Besides tools (with a description per parameter, enums where the values are fixed, and the MCP
annotations `readOnlyHint` / `destructiveHint` / `openWorldHint`), the server offers resources
(shared and own memory indexes, identity, project state, active decisions) and prompts
(`start-session`, `end-session`), per https://modelcontextprotocol.io/specification (server
features). If the agent named at start is unknown, the server still starts and every call
answers with that error, so the client shows it instead of "connection closed".

This is the only module that imports mcp (an optional extra: `pip install vaultmem[mcp]`;
`vaultmem mcp` says so when it is missing).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from functools import wraps
from pathlib import Path
from typing import Annotated, Any, Literal, ParamSpec, TypeVar

from mcp.server.mcpserver import Context
from mcp_types import CallToolResult, TextContent, ToolAnnotations
from pydantic import Field

from vaultmem.core.errors import UsageError, VaultmemError
from vaultmem.core.secrets import notices
from vaultmem.core.vault import Vault
from vaultmem.mcp import replies
from vaultmem.memory import facts as facts_mod
from vaultmem.memory.facts import FactType
from vaultmem.nexus.entry import EntryType
from vaultmem.search.documents import Kind

P = ParamSpec("P")
R = TypeVar("R")

Channel = Annotated[
    str, Field(description="A free word grouping entries by topic or area: backend, web, api…")
]
Tags = Annotated[list[str] | None, Field(description="Tags, one word each.")]
READS = ToolAnnotations(read_only_hint=True, open_world_hint=False)
ADDS = ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False)
REPLACES = ToolAnnotations(read_only_hint=False, destructive_hint=True, open_world_hint=False)


def _tool_errors(fn: Callable[P, R]) -> Callable[P, R]:
    """Report a VaultmemError as a tool error the model can read: type, message and hint."""
    from mcp.server.mcpserver.exceptions import ToolError

    @wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return fn(*args, **kwargs)
        except VaultmemError as exc:
            raise ToolError(f"{exc.kind} (exit {exc.exit_code}): {exc}") from exc

    return wrapper


def clean(value: str | None) -> str | None:
    """An identifier-like argument (a channel, an id, a date) with surrounding whitespace
    removed: a trailing newline from a model is an accident, not an attack; the grammar that
    follows is still a full match."""
    return value.strip() if isinstance(value, str) else value


def cleaned(values: list[str] | None) -> list[str]:
    return [v.strip() for v in values or []]


def text_result(text: str, data: dict[str, Any]) -> CallToolResult:
    """A reply whose value is text for the model: the text block, and structured content that
    carries the same text (the part Claude Code and Codex show the model when it is there)."""
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=data)


def build_server(
    vault_path: Path | None, agent: str, deliveries: replies.Deliveries | None = None
) -> Any:
    """Create the MCP server for `agent` in the vault at `vault_path` (or found from cwd).

    What a tool marks as seen waits in `deliveries` until the transport has written its result
    (`serve`); without a transport that reports it, nothing is marked."""
    from mcp.server.mcpserver import MCPServer

    from vaultmem import __version__

    root: Path | None = None
    problem: VaultmemError | None = None
    try:
        opened = Vault.open(vault_path)
        root = opened.root
        opened.require_agent(agent)
    except VaultmemError as exc:
        problem = exc
        sys.stderr.write(f"vaultmem mcp: {exc}; every call will report this\n")
    deliveries = deliveries if deliveries is not None else replies.Deliveries()
    instructions = replies.INSTRUCTIONS.format(agent=agent or "?")
    if problem is not None:
        instructions = f"vaultmem cannot serve agent {agent!r}: {problem}\n\n" + instructions
    server: Any = MCPServer(name="vaultmem", version=__version__, instructions=instructions)

    def vault() -> Vault:
        # re-read vaultmem.toml on each call: a person may add an agent or change a setting
        return Vault.open(root if root is not None else vault_path)

    def me(v: Vault) -> str:
        return v.require_agent(agent)

    def read(
        query: Annotated[
            str | None, Field(description="What this session is about: adds recall hits.")
        ] = None,
        budget: Annotated[
            int | None,
            Field(
                description="Keep the whole reply under about this many tokens, dropping the "
                "lowest-priority sections first (default: [read] budget in vaultmem.toml)."
            ),
        ] = None,
        peek: Annotated[
            bool, Field(description="Leave the new log entries unread (the cursor stays).")
        ] = False,
        ctx: Context | None = None,
    ) -> CallToolResult:
        """Your session pack as markdown (identity, active decisions, your checkpoint, log
        entries from other agents since your last read, project state, memory indexes, your
        facts pending review), then compact data: the new entry ids, the ones awaiting your
        ack, what the budget dropped. Call it at the start of a session and before answering."""
        from vaultmem.app.pack.build import commit_cursor, record_receipt

        v = vault()
        markdown, data, pack = replies.read_reply(v, me(v), budget=budget, peek=peek, query=query)

        def seen() -> None:  # once the reply reached the client: these entries count as read
            commit_cursor(v, pack)
            record_receipt(v, pack)

        deliveries.after(ctx.request_id if ctx else None, seen)
        return text_result(markdown, replies.with_markdown(markdown, data))

    def append(
        summary: Annotated[str, Field(description="One line: what happened or what is needed.")],
        channel: Channel = "general",
        type: Annotated[
            EntryType,
            Field(description="handoff, question and alert wait for another agent's ack."),
        ] = EntryType.NOTE,
        body: Annotated[str, Field(description="Detail, markdown (optional).")] = "",
        acks: Annotated[
            list[str] | None, Field(description="Ids of the entries this one acknowledges.")
        ] = None,
        to: Annotated[
            list[str] | None,
            Field(
                description='Agents it is addressed to (or ["all"]): it stays in their inbox '
                "until each acks it."
            ),
        ] = None,
    ) -> dict[str, Any]:
        """Append one signed entry to the shared live-context log after a significant turn
        (a fix, a decision, a handoff, a question, an alert). An alert that repeats an open one
        is not written (`duplicate_of`). Returns the entry with its id."""
        from vaultmem.nexus.log import append as do_append

        v = vault()
        result = do_append(
            v,
            me(v),
            summary,
            channel=channel.strip(),
            type_=type,
            body=body,
            acks=cleaned(acks),
            to=cleaned(to),
        )
        return {
            **result.to_dict(),
            "warnings": [*notices(result.redactions), *result.warnings],
        }

    def log(
        tail: Annotated[int, Field(description="How many of the newest entries.", ge=1)] = 20,
        since: Annotated[
            str | None, Field(description="Everything after this entry id or ISO time instead.")
        ] = None,
        agent: Annotated[str | None, Field(description="Only entries by this agent.")] = None,
        channel: Annotated[str | None, Field(description="Only this channel.")] = None,
        type: Annotated[EntryType | None, Field(description="Only this entry type.")] = None,
    ) -> dict[str, Any]:
        """Entries of the live-context log, oldest first (the log is shared by every agent)."""
        from vaultmem.nexus import reading as reading_mod

        v = vault()
        me(v)
        from vaultmem.nexus.shown import ShowCheck

        entries = reading_mod.log(
            v, tail=None if since else tail, since=since, agent=agent, channel=channel, type_=type
        )
        check = ShowCheck(v)  # what fails verification is left out, and said (issue 20)
        entries = check.genuine(entries)
        check.save()
        reply: dict[str, Any] = {"entries": [e.to_dict() for e in entries]}
        if check.failed:
            reply["not_verified"] = {"entries": check.failed, "note": check.note()}
        return reply

    def recall(
        query: Annotated[
            str,
            Field(
                description='Words, "quoted phrases" and filters like type:decision or '
                "tag:payments."
            ),
        ],
        limit: Annotated[int, Field(description="At most this many hits.", ge=1, le=50)] = 10,
        kind: Annotated[Kind | None, Field(description="Only this kind of document.")] = None,
        type: Annotated[FactType | None, Field(description="Only facts of this type.")] = None,
        under: Annotated[
            str | None, Field(description="Only files under this vault folder.")
        ] = None,
        since: Annotated[
            str | None, Field(description="Only documents dated on or after YYYY-MM-DD.")
        ] = None,
        mode: Annotated[
            Literal["keyword", "semantic", "hybrid"] | None,
            Field(description="keyword, semantic or hybrid (default: the vault's setting)."),
        ] = None,
        ctx: Context | None = None,
    ) -> dict[str, Any]:
        """Search what you may see in the vault (shared notes and facts, the log, decisions,
        your own folder; never another agent's private notes or pending facts). Each hit has
        path, heading and line range."""
        from vaultmem.app.pack.receipts import record
        from vaultmem.search.filters import RecallFilters
        from vaultmem.search.query import recall as do_recall

        v = vault()
        who = me(v)
        filters = RecallFilters.of(kind=kind, type=type, under=clean(under), since=clean(since))
        result = do_recall(v, query, limit=limit, filters=filters, agent=who, mode=mode)
        data = dict(result.to_dict())
        ids = [h.id for h in result.hits if h.id]
        paths = [f"{h.path}:{h.line_start}-{h.line_end}" for h in result.hits if not h.id]
        deliveries.after(
            ctx.request_id if ctx else None, lambda: record(v, who, "recall", ids, paths)
        )
        return data

    def show(
        spec: Annotated[
            str,
            Field(
                description="A note and optional line range, as a recall hit gives it: "
                "wiki/stripe.md:12-30."
            ),
        ],
        lines: Annotated[
            int, Field(description="How many lines without an end line.", ge=1, le=2000)
        ] = 40,
        ctx: Context | None = None,
    ) -> CallToolResult:
        """The lines of a note a recall hit points at (scoped like recall: shared notes and
        your own folder). The text is the note's own markdown."""
        from vaultmem.app.pack.receipts import record
        from vaultmem.search.show import show as do_show

        v = vault()
        who = me(v)
        shown = do_show(v, spec, agent=who, lines=lines)
        where = f"{shown.path}:{shown.line_start}-{shown.line_end}"
        tail = " (more lines follow)" if shown.cut else ""
        text = f"{where} of {shown.total_lines} lines{tail}\n\n{shown.text}"
        deliveries.after(
            ctx.request_id if ctx else None, lambda: record(v, who, "show", [], [where])
        )
        return text_result(text, shown.to_dict())

    def decide(
        text: Annotated[str, Field(description="The decision, one line.")],
        why: Annotated[str, Field(description="The reason (kept with the decision).")],
        supersedes: Annotated[
            str | None, Field(description="The id of a decision this one replaces (ella.d1).")
        ] = None,
        tags: Tags = None,
    ) -> dict[str, Any]:
        """Record a decision with its rationale on the decision log and announce it on the
        live log."""
        from vaultmem.nexus.decisions import decide as do_decide

        v = vault()
        result = do_decide(v, me(v), text, why=why, supersedes=supersedes, tags=tags or ())
        return {
            **result.decision.to_dict(),
            "announcement": result.announcement.id,
            "warnings": [*notices(result.redactions), *result.warnings],
        }

    def decisions(
        all: Annotated[bool, Field(description="Superseded decisions too, marked.")] = False,
    ) -> dict[str, Any]:
        """Active decisions, oldest first."""
        from vaultmem.nexus import decisions as decisions_mod

        v = vault()
        me(v)
        return {
            "decisions": [d.to_dict() for d in decisions_mod.decisions(v, include_superseded=all)]
        }

    def checkpoint(
        text: Annotated[
            str | None,
            Field(description="Where you stopped. Leave it out to get your current checkpoint."),
        ] = None,
        task: Annotated[str | None, Field(description="The task, one line.")] = None,
        next: Annotated[list[str] | None, Field(description="The next steps, in order.")] = None,
    ) -> dict[str, Any]:
        """Save your working checkpoint (replaces the previous one; every version is kept) so
        a new session resumes where this one stopped; without `text`, return it."""
        from vaultmem.nexus import checkpoints as checkpoints_mod
        from vaultmem.nexus.checkpoints import show_checkpoint

        v = vault()
        if text is None:
            return dict(show_checkpoint(v, me(v)).to_dict())
        cp, found = checkpoints_mod.checkpoint(v, me(v), text, task=task, next_steps=next or ())
        return {**cp.to_dict(), "warnings": notices(found)}

    def state(
        section: Annotated[
            str | None, Field(description="A `## section` of the project state to replace.")
        ] = None,
        text: Annotated[str | None, Field(description="The section's new body.")] = None,
    ) -> dict[str, Any]:
        """The project-state file; with `section` and `text`, replace that section's body
        (other sections and what people wrote stay) and log the change."""
        from vaultmem.nexus.state import read_state, set_state

        v = vault()
        who = me(v)
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

    def retain(
        text: Annotated[str, Field(description="The fact, one to three sentences.")],
        type: Annotated[FactType, Field(description="What the fact is about.")] = FactType.FACT,
        tags: Tags = None,
        source: Annotated[
            str | None, Field(description="Where it comes from (session, ticket, file).")
        ] = None,
        valid_until: Annotated[
            str | None, Field(description="YYYY-MM-DD after which it no longer holds.")
        ] = None,
    ) -> dict[str, Any]:
        """Propose a fact worth keeping into your bank; a person reviews it before it becomes
        memory. Says inserted, duplicate <id> or may_supersede <id>."""
        from vaultmem.bank.retain import retain as do_retain

        v = vault()
        result = do_retain(
            v,
            text,
            agent=me(v),
            type_=type,
            tags=tags or (),
            source=source,
            valid_until=valid_until,
        )
        return {**result.to_dict(), "warnings": notices(result.findings)}

    def memories(
        type: Annotated[FactType | None, Field(description="Only facts of this type.")] = None,
    ) -> dict[str, Any]:
        """Active facts in shared memory and in your own memory (never another agent's)."""

        v = vault()
        who = me(v)
        facts = facts_mod.memories(v, type_=type, include_inactive=False)
        return {"facts": [f.to_dict() for f in facts if f.agent in (None, who)]}

    def status() -> dict[str, Any]:
        """Vault health: agents, facts by type and status, problems found."""
        from vaultmem.app.lifecycle.status import status as vault_status

        v = vault()
        me(v)
        return dict(vault_status(v).to_dict())

    def profile() -> dict[str, Any]:
        """The compact profile built from approved memory: the shared one and your own, as
        markdown (each line cites the memory it comes from), and whether it is stale."""
        from vaultmem.app.condense.profile import checked_profile, stale

        v = vault()
        agent = me(v)
        out: dict[str, Any] = {}
        for scope in (None, agent):
            found = checked_profile(v, scope)
            if found is None:
                continue
            rel = v.rel(found.path)
            if found.problem is not None:  # never shown as genuine (issue 20)
                out[rel] = {
                    "markdown": "",
                    "stale": True,
                    "not_verified": found.problem[0],
                    "note": f"{found.problem[1]}; run `vaultmem verify`",
                }
                continue
            stale_now = stale(v, scope, found.sources)
            out[rel] = {"markdown": found.body.strip(), "stale": stale_now}
        return {"profiles": out}

    for fn, hints in (
        (read, ADDS),  # moves the agent's read cursor
        (append, ADDS),
        (log, READS),
        (recall, READS),
        (show, READS),
        (decide, ADDS),
        (decisions, READS),
        (checkpoint, ADDS),  # replaces the checkpoint; every version stays in the journal
        (state, REPLACES),  # replaces a section's text
        (retain, ADDS),
        (memories, READS),
        (status, READS),
        (profile, READS),
    ):
        server.tool(name=fn.__name__, description=fn.__doc__, annotations=hints)(_tool_errors(fn))
    from vaultmem.mcp.coord import coordination_tools

    for fn, hints in coordination_tools(vault, me, deliveries, reads=READS, adds=ADDS):
        server.tool(name=fn.__name__, description=fn.__doc__, annotations=hints)(_tool_errors(fn))
    from vaultmem.mcp.views import resources_and_prompts

    resources_and_prompts(server, vault, me)
    return server


def serve(vault_path: Path | None, agent: str) -> None:
    """Run the server on stdio until the client disconnects."""
    from vaultmem.mcp.stdio import run

    deliveries = replies.Deliveries()
    run(build_server(vault_path, agent, deliveries), deliveries)
