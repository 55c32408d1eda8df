"""Hermes Agent's memory provider: vaultmem in process, no command per turn.

Hermes Agent (PyPI `hermes-agent`, read at 0.19.0) runs at most one external memory provider,
the one `memory.provider` names in `$HERMES_HOME/config.yaml`, loaded from
`$HERMES_HOME/plugins/<name>/` (an `__init__.py` whose `register(ctx)` calls
`ctx.register_memory_provider`, and a `plugin.yaml`: hermes-agent's plugins/memory/__init__.py,
`_load_provider_from_dir`). `vaultmem setup hermes` writes that folder as a shim which loads
this module from vaultmem's own install, never from the vault (`app.setup.hermes`). Hermes
calls the `MemoryProvider` interface (agent/memory_provider.py) at these points:

- `system_prompt_block()`: whenever Hermes builds a system prompt, at a session's first turn
  and again after a compression (agent/conversation_compression.py rebuilds it when an
  external provider is active): the session pack, as the session-start hook gives Claude Code
  (`app.hooks.events.session_start`); the log entries in it count as read once it is returned.
- `prefetch(query)`: once per user turn, before the tool loop (agent/turn_context.py); Hermes
  puts the text in a `<memory-context>` block on the API copy of the user message: what the
  prompt hook gives Claude Code (`events.prompt`): other agents' entries new since the last
  delivery and recall hits the message names, and only what it returns counts as seen. A
  session whose system prompt never held the pack (restored from Hermes's session store, as a
  gateway does every turn, but built before setup) gets the pack here instead.
- `sync_turn(user, assistant, messages=...)`: on Hermes's background worker
  (agent/memory_manager.py `sync_all`): the turn's messages join the session's retention queue
  file (`bank.retention.enqueue(grow=True)`), redacted as every transcript is; then, as Claude
  Code's Stop hook, the automatic checkpoint and the background sync.
- `on_pre_compress(messages)`: the automatic checkpoint from the messages
  (`events.checkpoint_from`); returns the open inbox (handoffs and questions awaiting this
  agent's ack), which Hermes hands to its compression summary so it survives.
- `on_session_end(messages)`: the checkpoint, the session's record in local state and
  `retain --queued` in the background when a key is set (`app.hooks.ending.finish_session`).
- tools `vaultmem_read`, `vaultmem_append`, `vaultmem_ack`, `vaultmem_recall`,
  `vaultmem_retain`: the MCP server's tools (`mcp.tools`) with the same parameters, argument
  check, replies and errors, the reply being the structured content the MCP server sends.

Nothing here raises into Hermes: a failure is one record in `.vaultmem/hooks.log` (as a hook's
failure is), one warning for the person where Hermes gives a callback, and an empty block.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, TypeVar

from vaultmem.app.hooks.contract import HookEvent, HookInput, Outcome, hook_vault, write_log
from vaultmem.core.errors import VaultmemError
from vaultmem.core.vault import Vault
from vaultmem.mcp import tools
from vaultmem.mcp.call import ADDS, Call, Session, Text, Tool, cleaned, tool
from vaultmem.mcp.schema import Arg
from vaultmem.nexus.entry import EntryType

T = TypeVar("T")
NAME = "vaultmem"  # the provider's name: the plugin folder and `memory.provider`
TOOL_PREFIX = "vaultmem_"  # Hermes's own tools are read_file, memory, ...: ours say whose
# Hermes waits this long for a prefetch and then drops its answer (memory_manager.py,
# _EXTERNAL_PREFETCH_TIMEOUT_S = 8.0): an answer later than this is not marked seen
PREFETCH_DEADLINE = 7.0
INTRO = (
    "vaultmem tools here: vaultmem_read (the whole pack again), vaultmem_append (after each "
    "significant turn), vaultmem_ack (what you handled), vaultmem_recall, vaultmem_retain."
)


@tool(ADDS)
def ack(
    call: Call,
    ids: Annotated[
        list[str], Arg("The ids of the entries you handled (handoff, question, alert).")
    ],
    summary: Annotated[str, Arg("One line: what you did about them.")],
    channel: Annotated[str, Arg("The channel of the ack (default: general).")] = "general",
) -> dict[str, Any]:
    """Acknowledge entries that wait for your ack (marked AWAITING ACK), saying what you did:
    an `ack` entry on the shared log, as `append` with type "ack" and `acks`."""
    value = tools.append.fn(call, summary, channel=channel, type=EntryType.ACK, acks=cleaned(ids))
    assert isinstance(value, dict)
    return value


TOOLS: tuple[Tool, ...] = (tools.read, tools.append, ack, tools.recall, tools.retain)


class Provider:
    """One Hermes agent's memory: the vault and the agent fixed by setup, the session Hermes
    names in `initialize`. Hermes's `MemoryProvider` is mixed in by `provider_class` when it
    is importable (inside Hermes); the tests drive this class as it is."""

    def __init__(self, vault: str, agent: str) -> None:
        self.vault_path, self.agent = Path(vault), agent
        self.session_id = ""
        self.primary = True  # Hermes: "skip writes for non-primary contexts" (cron, flush)
        self.warn: Callable[[str], object] | None = None
        self._session: Session | None = None
        self._lock = threading.Lock()  # prefetch, the sync worker and tools, one at a time

    # --- MemoryProvider ------------------------------------------------------------------

    @property
    def name(self) -> str:
        return NAME

    def is_available(self) -> bool:
        """Configured and present: no network, as Hermes asks."""
        return (self.vault_path / "vaultmem.toml").is_file()

    def initialize(self, session_id: str, **kwargs: Any) -> None:
        self.session_id = session_id or ""
        self.primary = kwargs.get("agent_context", "primary") == "primary"
        warn = kwargs.get("warning_callback")
        self.warn = warn if callable(warn) else None
        self._session = Session(self.vault_path, self.agent)

    def system_prompt_block(self) -> str:
        if not self.primary:
            return ""
        return self._guarded(HookEvent.SESSION_START, self._pack, "")

    def prefetch(self, query: str, *, session_id: str = "") -> str:
        if not self.primary:
            return ""
        start = time.monotonic()
        return self._guarded(HookEvent.PROMPT, lambda: self._prefetch(query, session_id, start), "")

    def sync_turn(
        self,
        user_content: str,
        assistant_content: str,
        *,
        session_id: str = "",
        messages: list[dict[str, Any]] | None = None,
    ) -> None:
        if not self.primary:
            return
        self._guarded(
            HookEvent.STOP,
            lambda: self._sync(user_content, assistant_content, session_id, messages),
            None,
        )

    def on_pre_compress(self, messages: list[dict[str, Any]]) -> str:
        if not self.primary:
            return ""
        return self._guarded(HookEvent.PRE_COMPACT, lambda: self._pre_compress(messages), "")

    def on_session_end(self, messages: list[dict[str, Any]]) -> None:
        if not self.primary:
            return
        self._guarded(HookEvent.SESSION_END, lambda: self._end(messages), None)

    def on_session_switch(
        self, new_session_id: str, *, parent_session_id: str = "", reset: bool = False, **kw: Any
    ) -> None:
        """A compression, `/resume` or `/branch` goes on with the conversation (and its pack)
        under a new id: the vault's session state follows it, so the next prefetch does not
        give the pack again. `/new` (`reset`) starts one: its first prompt gets the pack."""
        old, self.session_id = self.session_id, new_session_id or self.session_id
        if reset or not new_session_id or not self.primary:
            return
        self._guarded(HookEvent.SESSION_START, lambda: self._follow(old, parent_session_id), None)

    def get_tool_schemas(self) -> list[dict[str, Any]]:
        return [
            {
                "name": TOOL_PREFIX + t.name,
                "description": t.description,
                "parameters": t.signature.schema(),
            }
            for t in TOOLS
        ]

    def handle_tool_call(self, tool_name: str, args: dict[str, Any], **kwargs: Any) -> str:
        """The MCP server's `tools/call`, answered as a JSON string (what Hermes wants): the
        structured content, or `{"error": "kind (exit N): message"}` the model can act on."""
        found = next((t for t in TOOLS if TOOL_PREFIX + t.name == tool_name), None)
        if found is None:
            return json.dumps({"error": f"unknown tool: {tool_name!r}"})
        pending: list[Callable[[], object]] = []
        try:
            with self._lock:
                kwargs_ = found.signature.bind(args)
                value = found.fn(Call(self._open_session(), pending.append), **kwargs_)
                for fn in pending:  # the reply is out once we return it: read means read
                    fn()
        except VaultmemError as exc:
            return json.dumps({"error": f"{exc.kind} (exit {exc.exit_code}): {exc}"})
        except Exception as exc:
            self._failed(HookEvent.PROMPT, exc)
            return json.dumps({"error": f"unexpected {type(exc).__name__} in {tool_name}: {exc}"})
        data = value.data if isinstance(value, Text) else value
        return json.dumps(data, ensure_ascii=False)

    def shutdown(self) -> None:
        if self._session is not None:
            self._session.close()
            self._session = None

    # --- the work ----------------------------------------------------------------------------

    def _vault(self) -> Vault:
        return hook_vault(Vault.open(self.vault_path))  # re-read: a person may edit the config

    def _open_session(self) -> Session:
        if self._session is None:
            self._session = Session(self.vault_path, self.agent)
        return self._session

    def _payload(self, session_id: str = "", **fields: Any) -> HookInput:
        return HookInput(session_id=session_id or self.session_id or None, **fields)

    def _deliver(self, outcome: Outcome) -> str:
        if outcome.after is not None:
            outcome.after()
        return outcome.context

    def _pack(self) -> str:
        from vaultmem.app.hooks.events import session_start

        v = self._vault()
        outcome = session_start(v, self.agent, self._payload(source="startup"))
        return INTRO + "\n\n" + self._deliver(outcome) if outcome.context else ""

    def _prefetch(self, query: str, session_id: str, start: float) -> str:
        from vaultmem.app.hooks.events import prompt, session_start
        from vaultmem.app.hooks.session import load_session

        v = self._vault()
        payload = self._payload(session_id, prompt=query or None)
        given = load_session(v, self.agent).get("session_id")
        if payload.session_id is not None and given != payload.session_id:
            outcome = session_start(v, self.agent, evolve_source(payload, "startup"))
            if outcome.context:
                outcome = Outcome(context=INTRO + "\n\n" + outcome.context, after=outcome.after)
        else:
            outcome = prompt(v, self.agent, payload)
        if time.monotonic() - start > PREFETCH_DEADLINE:
            return ""  # Hermes has gone on without it: nothing counts as seen
        return self._deliver(outcome)

    def _follow(self, old: str, parent: str) -> None:
        from vaultmem.app.hooks.session import load_session, save_session

        v = self._vault()
        session = load_session(v, self.agent)
        if session and session.get("session_id") in {old, parent} - {""}:
            save_session(v, self.agent, {**session, "session_id": self.session_id})

    def _sync(
        self, user: str, assistant: str, session_id: str, messages: list[dict[str, Any]] | None
    ) -> None:
        from vaultmem.app.hooks.background import start_sync
        from vaultmem.app.hooks.events import checkpoint_from
        from vaultmem.bank.retention import enqueue
        from vaultmem.bank.transcripts import from_messages
        from vaultmem.core import clock

        v = self._vault()
        turn = _last_turn(messages) if messages else []
        first = len(messages or []) - len(turn) + 1
        if not turn:
            turn = [{"role": "user", "content": user}, {"role": "assistant", "content": assistant}]
        sid = session_id or self.session_id or None
        t = from_messages(turn, first_line=first, time=clock.stamp_ms(), session_id=sid)
        enqueue(v, self.agent, t, f"hermes-{sid or 'session'}", sid, grow=True)
        # as Claude Code's Stop hook: the checkpoint after every turn (a session killed
        # mid-task resumes from it), then the turn's writes start for the other machines
        whole = from_messages(messages, session_id=sid) if messages else t
        checkpoint_from(v, self.agent, whole, sid, None, HookEvent.STOP)
        start_sync(v)

    def _pre_compress(self, messages: list[dict[str, Any]]) -> str:
        from vaultmem.app.hooks.events import checkpoint_from
        from vaultmem.app.pack.inbox import inbox, inbox_section
        from vaultmem.app.pack.sections import fence
        from vaultmem.bank.transcripts import from_messages

        v = self._vault()
        t = from_messages(messages, session_id=self.session_id or None)
        checkpoint_from(v, self.agent, t, self.session_id or None, None, HookEvent.PRE_COMPACT)
        view = inbox(v, self.agent)
        if not view.items:
            return ""
        section = inbox_section(view)
        return (
            f"vaultmem (shared memory of agent {self.agent}): keep these open items, they wait "
            "for this agent's ack:\n\n" + fence(section.text)
        )

    def _end(self, messages: list[dict[str, Any]]) -> None:
        from vaultmem.app.hooks.ending import finish_session
        from vaultmem.app.hooks.events import checkpoint_from
        from vaultmem.bank.retention import queued
        from vaultmem.bank.transcripts import from_messages

        v = self._vault()
        sid = self.session_id or None
        t = from_messages(messages, session_id=sid)
        checkpoint_from(v, self.agent, t, sid, None, HookEvent.SESSION_END)
        mine = [q for q in queued(v, self.agent) if q.session_id == sid and not q.attempts]
        payload = self._payload(reason="session end")
        finish_session(v, self.agent, payload, len(t.turns), t.files, mine[-1] if mine else None)

    # --- never raising ---------------------------------------------------------------------

    def _guarded(self, event: HookEvent, work: Callable[[], T], fallback: T) -> T:
        try:
            with self._lock:
                return work()
        except KeyboardInterrupt:
            raise
        except BaseException as exc:  # the agent's turn goes on without its memory
            self._failed(event, exc)
            return fallback

    def _failed(self, event: HookEvent, exc: BaseException) -> None:
        from vaultmem.app.hooks.run import describe

        short, detail = describe(exc)
        vault: Vault | None
        try:
            vault = Vault.open(self.vault_path)
        except VaultmemError:
            vault = None
        where = write_log(vault, f"hermes {event.value}", self._payload(), self.agent, detail)
        if self.warn is not None:
            import contextlib

            with contextlib.suppress(Exception):  # the person's display is Hermes's; ours the log
                self.warn(f"vaultmem memory: {short} (details in {where})")


def evolve_source(payload: HookInput, source: str) -> HookInput:
    from vaultmem.core.records import evolve

    return evolve(payload, source=source)


def _last_turn(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The completed turn's messages: from the last user message to the end."""
    for i in range(len(messages) - 1, -1, -1):
        m = messages[i]
        if isinstance(m, dict) and m.get("role") == "user":
            return messages[i:]
    return []


def provider_class() -> type[Provider]:
    """`Provider` with Hermes's `MemoryProvider` base mixed in, when Hermes is the host (its
    manager calls providers through that interface); plain `Provider` elsewhere."""
    try:
        from agent.memory_provider import MemoryProvider  # type: ignore[import-not-found]
    except ImportError:
        return Provider
    return type("VaultmemMemoryProvider", (Provider, MemoryProvider), {})


def register(ctx: Any, *, vault: str, agent: str, python: str | None = None) -> Provider:
    """What the plugin folder's `register(ctx)` calls (Hermes's plugin context, or its memory
    loader's `_ProviderCollector`): one provider for `agent` in `vault`. `python` is vaultmem's
    own interpreter, for the processes vaultmem starts (Hermes's is not vaultmem's)."""
    if python:
        from vaultmem.core.environment import use_python

        use_python(python)
    provider = provider_class()(vault, agent)
    ctx.register_memory_provider(provider)
    return provider
