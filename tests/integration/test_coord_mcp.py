"""Coordination over MCP, through a real MCP client and a real `vaultmem mcp` process: addressed
entries, the inbox, per-recipient acks, alerts and resolve, working memory, receipts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("mcp")

from tests._mcp import call, make_keys, payload


def test_inbox_acks_alerts_and_resolve_over_mcp(vault: Path) -> None:
    make_keys(vault, "ella", "lyra")
    tools, (handoff, alert, repeat) = call(
        vault,
        "lyra",
        (
            "append",
            {"summary": "Checkout sends Idempotency-Key", "type": "handoff", "to": ["ella"]},
        ),
        ("append", {"summary": "Staging is down", "type": "alert"}),
        ("append", {"summary": "staging is DOWN", "type": "alert"}),
    )
    assert {
        "inbox",
        "alerts",
        "resolve",
        "wm_set",
        "wm_get",
        "wm_list",
        "wm_del",
        "wm_push",
    } <= set(tools)
    h, a = payload(handoff), payload(alert)
    assert h["to"] == ["ella"]
    assert payload(repeat)["duplicate_of"] == a["id"]
    _tools, (box, pack, alerts, ack, resolved, after, box_after, bad) = call(
        vault,
        "ella",
        ("inbox", {}),
        ("read", {"peek": True}),
        ("alerts", {}),
        ("append", {"summary": "Using it", "type": "ack", "acks": [h["id"]]}),
        ("resolve", {"id": a["id"], "why": "restarted the pod"}),
        ("alerts", {"all": True}),
        ("inbox", {}),
        ("resolve", {"id": "lyra.99"}),
    )
    items = payload(box)["items"]
    assert [i["id"] for i in items] == [h["id"]] and items[0]["waiting_for"] == ["ella"]
    data = payload(pack)
    assert data["sections"][0]["key"] == "inbox" and data["inbox"] == [h["id"]]
    assert h["id"] in pack.content[0].text.split("## ", 2)[1]  # the markdown opens with it
    open_alerts = {x["id"]: x for x in payload(alerts)["alerts"]}
    assert open_alerts[a["id"]]["seen_again"] == 1
    assert payload(ack)["acks"] == [h["id"]]
    assert payload(resolved)["resolved"] == a["id"]
    assert payload(resolved)["entry"]["resolves"] == a["id"]
    every = {x["id"]: x for x in payload(after)["alerts"]}
    assert every[a["id"]]["resolved"]["by"] == "ella"
    assert payload(box_after)["items"] == []
    assert bad.is_error
    receipts = (vault / ".vaultmem" / "receipts" / "ella.jsonl").read_text().splitlines()
    assert [json.loads(ln)["line"]["command"] for ln in receipts] == ["inbox", "read"]  # sealed


def test_working_memory_over_mcp(vault: Path) -> None:
    _tools, results = call(
        vault,
        "ella",
        ("wm_set", {"key": "current-task", "value": "refunds in cents", "ttl": "2h"}),
        ("wm_set", {"key": "branch", "value": "feat/x", "thread": "checkout"}),
        ("wm_push", {"value": "turn 1", "thread": "checkout", "keep": 1}),
        ("wm_push", {"value": "turn 2", "thread": "checkout", "keep": 1}),
        ("wm_get", {"key": "current-task"}),
        ("wm_list", {}),
        ("wm_del", {"key": "current-task"}),
        ("wm_get", {"key": "current-task"}),
        ("wm_set", {"key": "bad key", "value": "x"}),
    )
    set_, _branch, _p1, pushed, got, listed, deleted, missing, bad = results
    assert payload(set_)["expires"] is not None
    assert payload(pushed)["dropped"] == 1
    assert payload(got)["value"] == "refunds in cents"
    values = [i["value"] for i in payload(listed)["items"]]
    assert values == ["refunds in cents", "feat/x", "turn 2"]
    assert payload(deleted)["deleted"]["key"] == "current-task"
    assert missing.is_error and bad.is_error
    assert (vault / "agents" / "ella" / "working.md").is_file()
