"""The MCP server through a real MCP client over stdio (a real `vaultmem mcp` process)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

pytest.importorskip("mcp")

from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from tests._mcp import call, make_keys, payload


def test_tools_and_read(vault: Path) -> None:
    tools, (pack, facts) = call(vault, "ella", ("read", {}), ("memories", {"type": "project"}))
    assert {"read", "memories", "status"} <= set(tools)
    assert not {"approve", "reject", "forget", "remember", "promote"} & set(tools)
    markdown, data = pack.content[0].text, payload(pack)
    assert markdown.startswith("# Session context for ella")
    assert "Ella is the backend engineer" in markdown
    assert data["agent"] == "ella" and "identity" in [s["key"] for s in data["sections"]]
    names = {f["name"] for f in payload(facts)["facts"]}
    assert "Project Orbit" in names and "Test suite rules" in names


def test_read_reply_is_the_pack_plus_compact_data(vault: Path) -> None:
    from tests._cli import run_cli

    cli = run_cli("read", "--vault", str(vault), "--agent", "ella", "--peek")
    _tools, (full, small) = call(
        vault, "ella", ("read", {"peek": True}), ("read", {"peek": True, "budget": 700})
    )
    assert full.content[0].text.strip() == cli.stdout.strip()  # the pack as the CLI prints it
    # Claude Code and Codex show the model the structured part when there is one: it carries
    # the markdown too, and the compact data, not every section again
    assert full.structured_content["markdown"] == full.content[0].text
    assert len(full.content) == 1
    assert len(json.dumps(full.structured_content)) < 1.3 * len(cli.stdout)
    data = payload(small)
    assert data["tokens"] <= 700 and data["budget"] == 700 and data["dropped"]
    shown = max(len(small.content[0].text), len(json.dumps(small.structured_content)))
    assert (shown + 3) // 4 <= 700  # the budget counts what the model is shown


def test_errors_are_tool_errors(vault: Path) -> None:
    _tools, (bad,) = call(vault, "lyra", ("memories", {"type": 3}))
    assert bad.is_error


def test_unknown_agent_is_a_readable_error(vault: Path) -> None:
    tools, (read, recall) = call(vault, "bob", ("read", {}), ("recall", {"query": "stripe"}))
    assert "read" in tools  # the server started: the client sees the error, not a lost connection
    for result in (read, recall):
        assert result.is_error
        text = result.content[0].text
        assert "unknown agent 'bob'" in text and "known agents: ella, lyra" in text


async def _schema(vault: Path) -> tuple[list[Any], list[Any], list[Any]]:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "vaultmem", "mcp", "--vault", str(vault), "--agent", "ella"],
        env={k: v for k, v in os.environ.items() if k.startswith(("VAULTMEM_", "HOME", "PATH"))},
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        tools = (await session.list_tools()).tools
        resources = (await session.list_resources()).resources
        prompts = (await session.list_prompts()).prompts
    return list(tools), list(resources), list(prompts)


def test_schema_descriptions_enums_and_annotations(vault: Path) -> None:
    tools, resources, prompts = anyio.run(_schema, vault)
    by_name = {t.name: t for t in tools}
    for tool in tools:
        assert tool.description, tool.name
        for name, prop in tool.input_schema.get("properties", {}).items():
            assert prop.get("description"), f"{tool.name}.{name}"
    props = {name: t.input_schema["properties"] for name, t in by_name.items()}
    assert props["append"]["type"]["enum"] == [
        "note", "handoff", "fix", "question", "answer", "decision", "alert", "ack", "state",
        "resolve",
    ]  # fmt: skip
    assert "decision" in props["retain"]["type"]["enum"]
    assert "checkpoint" in props["recall"]["kind"]["enum"]
    assert props["log"]["tail"] == {
        "type": "integer", "description": "How many of the newest entries.", "minimum": 1,
        "default": 20,
    }  # fmt: skip
    assert by_name["append"].input_schema["required"] == ["summary"]
    for name in ("log", "recall", "decisions", "memories", "status"):
        assert by_name[name].annotations.read_only_hint is True, name
    for name in ("append", "decide", "retain", "checkpoint", "read"):
        notes = by_name[name].annotations
        assert notes.read_only_hint is False and notes.destructive_hint is False, name
    assert by_name["state"].annotations.destructive_hint is True
    assert all(t.annotations.open_world_hint is False for t in tools)
    assert {str(r.uri) for r in resources} == {
        "vaultmem://memory/shared",
        "vaultmem://agent/identity",
        "vaultmem://agent/memory",
        "vaultmem://state",
        "vaultmem://decisions",
    }
    assert {p.name for p in prompts} == {"start-session", "end-session"}


async def _resources_and_prompts(vault: Path, agent: str) -> dict[str, str]:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "vaultmem", "mcp", "--vault", str(vault), "--agent", agent],
        env={k: v for k, v in os.environ.items() if k.startswith(("VAULTMEM_", "HOME", "PATH"))},
    )
    out: dict[str, str] = {}
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        for res in (await session.list_resources()).resources:
            got = await session.read_resource(res.uri)
            out[str(res.uri)] = got.contents[0].text  # type: ignore[union-attr]
        for name, args in (("start-session", {"topic": "stripe webhooks"}), ("end-session", {})):
            prompt = await session.get_prompt(name, args)
            out[name] = prompt.messages[0].content.text  # type: ignore[union-attr]
    return out


def test_resources_and_prompts(vault: Path) -> None:
    out = anyio.run(_resources_and_prompts, vault, "ella")
    assert "# Ella" in out["vaultmem://agent/identity"]
    assert "Test suite rules" in out["vaultmem://agent/memory"]
    assert "Project Orbit" in out["vaultmem://memory/shared"]
    assert "integer euro cents" in out["vaultmem://decisions"]
    assert "## " in out["vaultmem://state"]
    assert "You are agent `ella`" in out["start-session"]
    assert "What the vault holds about: stripe webhooks" in out["start-session"]
    assert "`checkpoint` where you stopped" in out["end-session"]
    assert "`retain`" in out["end-session"] and "`append`" in out["end-session"]


def test_two_agents_coordinate_over_mcp(vault: Path) -> None:
    make_keys(vault, "ella", "lyra")
    # ella reads once so that her cursor sits at the end of the shipped log
    call(vault, "ella", ("read", {}))
    _tools, (entry,) = call(
        vault,
        "lyra",
        (
            "append",
            {"summary": "Checkout sends Idempotency-Key", "channel": "web", "type": "handoff"},
        ),
    )
    lyra_entry = payload(entry)
    assert lyra_entry["agent"] == "lyra" and lyra_entry["type"] == "handoff"
    _tools, (first, second, ack, tail) = call(
        vault,
        "ella",
        ("read", {}),
        ("read", {}),
        ("append", {"summary": "Got it", "type": "ack", "acks": [lyra_entry["id"]]}),
        ("log", {"tail": 2}),
    )
    assert "Checkout sends Idempotency-Key" in first.content[0].text
    assert payload(first)["new_entries"] == [lyra_entry["id"]]
    assert payload(first)["awaiting_ack"] == [lyra_entry["id"]]
    assert payload(second)["new_entries"] == []
    assert "0 new entries from other agents" in second.content[0].text
    assert payload(ack)["acks"] == [lyra_entry["id"]]
    assert [e["id"] for e in payload(tail)["entries"]][-2:] == [
        lyra_entry["id"],
        payload(ack)["id"],
    ]
    from tests._cli import run_cli

    assert run_cli("verify", "--vault", str(vault)).exit_code == 0


def test_shared_state_and_retain_and_recall_tools(vault: Path) -> None:
    make_keys(vault, "ella")
    _tools, results = call(
        vault,
        "ella",
        ("decide", {"text": "Prices are stored in cents", "why": "no float rounding"}),
        ("decisions", {}),
        (
            "checkpoint",
            {"text": "Half-way through the refund endpoint", "task": "refunds", "next": ["tests"]},
        ),
        ("checkpoint", {}),
        ("state", {"section": "Status", "text": "Refunds in progress"}),
        ("state", {}),
        ("retain", {"text": "The staging database resets every Sunday", "type": "fact"}),
        ("recall", {"query": "refund endpoint", "limit": 3}),
    )
    decided, listed, _saved, shown, _changed, state, retained, hits = (payload(r) for r in results)
    assert decided["id"] in {d["id"] for d in listed["decisions"]}
    assert shown["task"] == "refunds" and "refund endpoint" in shown["text"]
    assert "Refunds in progress" in state["text"]
    assert retained["outcome"] == "inserted"
    assert any(h["path"] == "agents/ella/checkpoint.md" for h in hits["hits"])


def test_text_tools_carry_their_text_in_the_structured_part(vault: Path) -> None:
    # Claude Code and Codex hand the model structuredContent alone when it is present
    _tools, (pack, shown) = call(
        vault, "ella", ("read", {"peek": True}), ("show", {"spec": "agents/ella/IDENTITY.md:1-5"})
    )
    assert "Ella is the backend engineer" in pack.structured_content["markdown"]
    assert pack.structured_content["markdown"] == pack.content[0].text
    assert shown.structured_content["path"] == "agents/ella/IDENTITY.md"
    assert shown.structured_content["text"] in shown.content[0].text


def test_the_server_setup_writes_starts_without_typer() -> None:
    # a runtime gives the server about a second before its first request (claude -p does not
    # wait): `vaultmem mcp --vault V --agent A` skips typer's start-up
    import subprocess
    import sys

    code = (
        "import sys, vaultmem.mcp.server as s\n"
        "s.serve = lambda v, a: print('typer' in sys.modules, v, a)\n"
        "from vaultmem.cli.main import _serve_mcp\n"
        "print(_serve_mcp(['--vault', '/v', '--agent=ella']), _serve_mcp(['--agent', 'ella']))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "/v", "ella", "True", "False"]


def test_a_diff_appended_over_mcp_is_fenced_like_one_piped_to_the_cli(vault: Path) -> None:
    make_keys(vault, "ella")
    patch = "diff --git a/app.py b/app.py\n@@ -1,2 +1,2 @@\n-import os\n+import sys\n"
    prose = "- first point\n- second point"
    _tools, (diff_entry, list_entry) = call(
        vault,
        "ella",
        ("append", {"summary": "Patched the import", "body": patch}),
        ("append", {"summary": "Two points", "body": prose}),
    )
    assert not diff_entry.is_error and not list_entry.is_error
    log = (vault / "nexus" / "live-context.md").read_text(encoding="utf-8")
    assert "```diff\n" + patch.rstrip("\n") + "\n```" in log  # Obsidian shows a diff, not lists
    assert "\n- first point\n- second point" in log  # markdown stays markdown
    from tests._cli import run_cli

    assert run_cli("verify", "--vault", str(vault)).exit_code == 0


def test_a_long_lived_server_recalls_what_changed_between_its_calls(vault: Path) -> None:
    """The server keeps its index warm (`search.watch.Warm`): a note written, edited or removed
    between two calls of one session is found (or gone) at the next call, as with the CLI."""
    note = vault / "wiki" / "Zebra crossing.md"

    def write() -> None:
        note.parent.mkdir(exist_ok=True)
        note.write_text("# Zebra crossing\nThe quokka service owns zebra crossings.\n")

    def edit() -> None:
        note.write_text("# Zebra crossing\nThe wombat service owns zebra crossings now.\n")

    _tools, (before, first, second, moved, again, gone) = call(
        vault,
        "ella",
        ("recall", {"query": "quokka"}),
        write,
        ("recall", {"query": "quokka"}),
        edit,
        ("recall", {"query": "quokka"}),
        ("recall", {"query": "wombat"}),
        ("recall", {"query": "wombat"}),  # nothing changed in between
        note.unlink,
        ("recall", {"query": "wombat"}),
    )
    assert payload(before)["hits"] == []
    assert [h["path"] for h in payload(first)["hits"]] == ["wiki/Zebra crossing.md"]
    assert payload(second)["hits"] == []
    assert [h["path"] for h in payload(moved)["hits"]] == ["wiki/Zebra crossing.md"]
    assert payload(again)["hits"] == payload(moved)["hits"]
    assert payload(again)["index"]["checked_by"] == "watcher"  # no walk: the server's own watch
    assert payload(gone)["hits"] == []
    assert not list((vault / ".vaultmem" / "locks").glob("warm-*"))  # closed with the session


def test_codex_starts_the_server_setup_wrote(
    vault: Path, tmp_path: Path, isolated_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The server of `setup codex`'s [mcp_servers.vaultmem] table, started as Codex starts
    it: its command and args, the table's `env` over Codex's default whitelist alone (HOME,
    PATH, ...: openai/codex rmcp-client/src/utils.rs DEFAULT_ENV_VARS), so no VAULTMEM_HOME
    of the shell that ran setup. An `append` is signed with this machine's key (issue 37)."""
    import tomllib

    from tests._cli import run_cli, setup_codex_user

    make_keys(vault, "lyra")
    home, project = tmp_path / "codex-home", tmp_path / "web"
    monkeypatch.setenv("CODEX_HOME", str(home))
    setup_codex_user(vault, home, project)
    table = tomllib.loads((home / "config.toml").read_text())["mcp_servers"]["vaultmem"]
    whitelist = {k: os.environ[k] for k in ("HOME", "PATH", "USER", "LANG") if k in os.environ}

    async def go() -> Any:
        params = StdioServerParameters(
            command=table["command"], args=table["args"], env={**whitelist, **table["env"]}
        )
        async with stdio_client(params) as (r, w), ClientSession(r, w) as session:
            await session.initialize()
            return await session.call_tool(
                "append",
                {"summary": "Checkout sends Idempotency-Key", "type": "fix", "channel": "api"},
            )

    result = anyio.run(go)
    assert not result.is_error, result.content
    log = json.loads(run_cli("log", "--json", "--vault", str(vault)).stdout)["entries"]
    assert log[-1]["agent"] == "lyra" and log[-1]["summary"] == "Checkout sends Idempotency-Key"
