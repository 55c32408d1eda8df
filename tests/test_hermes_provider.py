"""The Hermes Agent memory provider (`vaultmem.mcp.hermes`), driven as Hermes drives it
(hermes-agent 0.19.0: agent/memory_manager.py calls `initialize`, `system_prompt_block` when it
builds a system prompt, `prefetch(query)` once per user turn, `sync_turn` on its background
worker, `on_pre_compress`, `on_session_switch`, `on_session_end`, and the tools), against a
real vault: the same deliveries as Claude Code's hooks, the same tools as the MCP server."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests._layer3_helpers import make_keys
from vaultmem.app.hooks.session import load_session
from vaultmem.bank.retention import queued
from vaultmem.core.vault import Vault
from vaultmem.mcp.hermes import NAME, PREFETCH_DEADLINE, Provider, provider_class, register
from vaultmem.nexus.log import append

PACK = "# Session context for lyra"


@pytest.fixture
def v(vault: Path) -> Vault:
    return make_keys(vault, "ella", "lyra")


def started(v: Vault, session: str = "s1", **kw: Any) -> Provider:
    p = Provider(str(v.root), "lyra")
    assert p.is_available() and p.name == NAME
    p.initialize(session, hermes_home="/nowhere", platform="cli", **kw)
    return p


def test_the_system_prompt_gets_the_pack_and_prefetch_only_what_is_new(v: Vault) -> None:
    handoff = append(v, "ella", "Refund endpoint ready for the web", type_="handoff", to=["lyra"])
    p = started(v)
    block = p.system_prompt_block()
    assert PACK in block and "Refund endpoint ready for the web" in block
    assert str(handoff.entry.id) in block and "vaultmem_append" in block
    assert p.prefetch("hello there") == ""  # nothing new since the pack
    fix = append(v, "ella", "Webhook retries fixed", type_="fix", channel="api")
    first = p.prefetch("what changed?")
    assert "Webhook retries fixed" in first and str(fix.entry.id) in first and PACK not in first
    assert p.prefetch("and now?") == ""  # delivered once
    own = append(v, "lyra", "My own note")
    assert own.entry.id and p.prefetch("anything?") == ""  # the agent's own entries: not news


def test_a_session_whose_system_prompt_never_had_the_pack_gets_it_on_the_first_prefetch(
    v: Vault,
) -> None:
    """A gateway builds a new agent every turn and restores the system prompt from its store:
    `system_prompt_block` is not called; the first prefetch of the session is the pack, the
    next turn's fresh provider (same session) gets only what is new."""
    append(v, "ella", "Refund endpoint ready", type_="handoff", to=["lyra"])
    first = started(v, "g1").prefetch("What should I do?")
    assert first.count(PACK) == 1 and "Refund endpoint ready" in first
    append(v, "ella", "Second entry after the pack")
    again = started(v, "g1").prefetch("next question")
    assert PACK not in again and "Second entry after the pack" in again


def test_recall_hits_the_message_names_are_added_once(v: Vault) -> None:
    p = started(v)
    p.system_prompt_block()
    hit = p.prefetch("How do we store prices in euro cents with VAT?")
    assert "vault has notes on this" in hit
    assert "the vault has notes" not in p.prefetch("How do we store prices in euro cents with VAT?")


def test_a_compression_keeps_the_session_so_the_pack_is_not_given_twice(v: Vault) -> None:
    """Hermes rebuilds the system prompt (our block: the pack), then rotates the session id
    and calls on_session_switch (agent/conversation_compression.py): the next prefetch is a
    delta, not a second pack."""
    p = started(v, "before")
    p.system_prompt_block()
    p.on_session_switch("after", parent_session_id="before")
    assert load_session(v, "lyra")["session_id"] == "after"
    assert PACK not in p.prefetch("go on")
    p.on_session_switch("fresh", reset=True)  # /new: a new conversation
    assert p.prefetch("new topic").count(PACK) == 1


def test_a_prefetch_hermes_gave_up_on_marks_nothing_seen(
    v: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    p = started(v)
    p.system_prompt_block()
    append(v, "ella", "Late entry")
    ticks = iter([0.0, PREFETCH_DEADLINE + 1])
    monkeypatch.setattr("vaultmem.mcp.hermes.time.monotonic", lambda: next(ticks))
    assert p.prefetch("slow turn") == ""
    monkeypatch.undo()
    assert "Late entry" in p.prefetch("next turn")  # still new: it was never shown


def turn(user: str, answer: str) -> list[dict[str, Any]]:
    return [
        {"role": "system", "content": "You are Hermes."},
        {"role": "user", "content": user},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "terminal", "arguments": '{"command": "make test"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": '{"output": "ok", "exit_code": 0}'},
        {"role": "assistant", "content": answer},
    ]


def test_each_turn_joins_the_session_queue_file_redacted(v: Vault) -> None:
    p = started(v)
    one = turn("Fix the refund rounding", "Done: amounts stay in cents.")
    p.sync_turn("Fix the refund rounding", "Done", session_id="s1", messages=one)
    key = "sk-ant-api03-" + "A" * 90
    two = [
        *one,
        {"role": "user", "content": f"Use key {key}"},
        {"role": "assistant", "content": "No."},
    ]
    p.sync_turn("Use key", "No.", session_id="s1", messages=two)
    items = queued(v, "lyra")
    assert len(items) == 1 and items[0].session_id == "s1"  # one file for the session
    turns = items[0].transcript.turns
    assert [t.role for t in turns] == ["user", "tool", "assistant", "user", "assistant"]
    assert turns[1].text == "terminal: make test → ok"
    assert key not in json.dumps([t.text for t in turns])  # redacted as every transcript
    assert [t.line for t in turns] == [2, 3, 5, 6, 7]  # the messages' places in the session
    cp = (v.root / "agents/lyra/checkpoint.md").read_text()  # as the Stop hook's, each turn
    assert "Last request: Use key" in cp and "at its stop" in cp and key not in cp
    p.sync_turn("Use key", "No.", session_id="s1", messages=two)  # the same turn again
    assert len(queued(v, "lyra")[0].transcript.turns) == 7  # a new turn by time, never lost


def test_pre_compress_checkpoints_and_returns_the_open_inbox(v: Vault) -> None:
    handoff = append(v, "ella", "Refund endpoint ready", type_="handoff", to=["lyra"])
    p = started(v)
    kept = p.on_pre_compress(turn("Wire the refund button", "Wired."))
    assert str(handoff.entry.id) in kept and "Refund endpoint ready" in kept
    cp = (v.root / "agents/lyra/checkpoint.md").read_text()
    assert "Wire the refund button" in cp and "pre compact" in cp
    p.on_session_end(turn("Wire the refund button", "Wired."))
    history = v.state("sessions", "lyra-history.jsonl").read_text()
    assert '"session_id": "s1"' in history


def call(p: Provider, name: str, **args: Any) -> dict[str, Any]:
    out = json.loads(p.handle_tool_call(name, args))
    assert isinstance(out, dict)
    return out


def test_the_tools_are_the_mcp_servers(v: Vault) -> None:
    handoff = append(v, "ella", "Refund endpoint ready", type_="handoff", to=["lyra"])
    p = started(v)
    names = [s["name"] for s in p.get_tool_schemas()]
    assert names == [
        "vaultmem_read",
        "vaultmem_append",
        "vaultmem_ack",
        "vaultmem_recall",
        "vaultmem_retain",
    ]
    schema = next(s for s in p.get_tool_schemas() if s["name"] == "vaultmem_append")
    assert schema["parameters"]["required"] == ["summary"]
    read = call(p, "vaultmem_read")
    assert PACK in read["markdown"] and str(handoff.entry.id) in read["markdown"]
    acked = call(p, "vaultmem_ack", ids=[str(handoff.entry.id)], summary="Refund button wired")
    assert acked["type"] == "ack" and acked["acks"] == [str(handoff.entry.id)]
    assert "Refund endpoint ready" not in call(p, "vaultmem_read")["markdown"]  # acked, read
    added = call(p, "vaultmem_append", summary="Checkout copy sent", channel="web")
    assert added["agent"] == "lyra"
    assert call(p, "vaultmem_recall", query="euro cents")["hits"]
    assert "inserted" in json.dumps(call(p, "vaultmem_retain", text="Marta reviews Italian copy."))
    bad = call(p, "vaultmem_append", summary="x", type="gossip")
    assert bad["error"].startswith("UsageError (exit 2)") and "`type`" in bad["error"]
    assert "unknown tool" in call(p, "vaultmem_forget")["error"]


def test_failures_never_reach_hermes(v: Vault) -> None:
    p = Provider(str(v.root), "nobody")
    p.initialize("s1", warning_callback=(warned := []).append)
    assert p.system_prompt_block() == "" and p.prefetch("hi") == ""
    p.sync_turn("a", "b")
    assert warned and "nobody" in warned[0]
    log = v.state("hooks.log").read_text()
    assert "hermes session-start agent=nobody" in log
    assert "error" in call(p, "vaultmem_read")


def test_a_cron_or_flush_context_writes_nothing(v: Vault) -> None:
    p = started(v, agent_context="cron")
    assert p.system_prompt_block() == "" and p.prefetch("hi") == ""
    p.sync_turn("a", "b", messages=turn("a", "b"))
    assert queued(v, "lyra") == []


def test_register_outside_hermes_gives_the_plain_provider(v: Vault) -> None:
    class Ctx:
        provider: object = None

        def register_memory_provider(self, provider: object) -> None:
            self.provider = provider

    ctx = Ctx()
    got = register(ctx, vault=str(v.root), agent="lyra")
    assert ctx.provider is got and type(got) is Provider is provider_class()
