"""Issue 25 over MCP: the server `setup` wires needs no package beyond vaultmem's own (the README's
plain install wrote `.mcp.json`, then `vaultmem mcp` exited 7 for want of the `mcp` extra), and
its `show` tool prints a recall hit scoped like recall: never another agent's private note."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.integration.test_mcp_protocol import _call, _init, by_id

# `vaultmem mcp` with every `mcp` import failing, as on a machine without the SDK
NO_SDK = """
import sys
class NoSdk:
    def find_spec(self, name, path=None, target=None):
        if name == "mcp" or name.startswith("mcp."):
            raise ImportError("no module named " + repr(name) + " (blocked by the test)")
        return None
sys.meta_path.insert(0, NoSdk())
sys.argv = ["vaultmem", "mcp", *sys.argv[1:]]
from vaultmem.cli.main import main
main()
"""


def exchange(vault: Path, agent: str, messages: list[dict[str, Any]]) -> dict[Any, Any]:
    env = {k: v for k, v in os.environ.items() if k.startswith(("VAULTMEM_", "HOME", "PATH"))}
    done = subprocess.run(
        [sys.executable, "-c", NO_SDK, "--vault", str(vault), "--agent", agent],
        input="".join(json.dumps(m) + "\n" for m in messages),
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return by_id([json.loads(line) for line in done.stdout.splitlines()])


def test_the_server_starts_and_answers_without_the_mcp_package(vault: Path) -> None:
    replies = exchange(
        vault, "ella", [_init(), {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}]
    )
    assert replies[0]["result"]["serverInfo"]["name"]
    names = {t["name"] for t in replies[1]["result"]["tools"]}
    assert {"read", "recall", "show", "append"} <= names


def test_show_is_scoped_like_recall(vault: Path) -> None:
    private = next((vault / "agents" / "lyra" / "memory").glob("*.md"))
    rel = private.relative_to(vault).as_posix()
    calls = [_init(), _call(1, "show", {"spec": rel}), _call(2, "show", {"spec": "Review.md"})]
    calls.append(_call(3, "show", {"spec": "memory/MEMORY.md:1-2"}))
    as_ella = exchange(vault, "ella", calls)
    for rid in (1, 2):  # lyra's private note and the page for people: as if they did not exist
        result = as_ella[rid]["result"]
        assert result["isError"], result
        assert "no note" in result["content"][0]["text"]
        assert private.read_text().splitlines()[-1] not in json.dumps(result)
    shown = as_ella[3]["result"]
    assert not shown.get("isError") and shown["structuredContent"]["path"] == "memory/MEMORY.md"
    as_lyra = exchange(vault, "lyra", [_init(), _call(1, "show", {"spec": rel})])
    assert not as_lyra[1]["result"].get("isError")
    assert as_lyra[1]["result"]["structuredContent"]["path"] == rel
