"""Working memory with a time to live: `vaultmem wm`, agents/<agent>/working.md."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests._cli import run_cli
from tests._layer3_helpers import fresh_vault
from vaultmem.core.vault import Vault
from vaultmem.nexus import working

T0 = "2026-11-29T10:00:00Z"


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    return fresh_vault(tmp_path)


def wm_at(vault: Path, *args: str, now: str | None = None) -> Any:
    with pytest.MonkeyPatch.context() as mp:
        if now:
            mp.setenv("VAULTMEM_NOW", now)
        return run_cli("wm", *args, "--vault", str(vault))


def wm_json_at(vault: Path, *args: str, now: str | None = None) -> Any:
    res = wm_at(vault, *args, "--json", now=now)
    assert res.exit_code == 0, (res.stdout, res.stderr)
    return json.loads(res.stdout)


wm, wm_json = wm_at, wm_json_at


def test_set_get_list_del(vault: Path) -> None:
    # every call at one fixed moment: the TTL is measured from T0, whatever the date today
    def wm(*args: str) -> Any:
        return wm_at(vault, *args, now=T0)

    def wm_json(*args: str) -> Any:
        return wm_json_at(vault, *args, now=T0)

    res = wm("set", "current-task", "refunds in cents", "--agent", "ella")
    assert res.exit_code == 0 and res.stdout == "set current-task (expires 2026-11-30T10:00:00Z)\n"
    wm(
        "set",
        "branch",
        "feat/checkout",
        "--thread",
        "checkout",
        "--ttl",
        "never",
        "--agent",
        "ella",
    )
    assert wm("get", "current-task", "--agent", "ella").stdout == "refunds in cents\n"
    assert wm("get", "branch", "--agent", "ella").exit_code == 4  # not in ella's own scope
    item = wm_json("get", "branch", "--thread", "checkout", "--agent", "ella")
    assert item["value"] == "feat/checkout" and item["expires"] is None
    listed = wm_json("list", "--agent", "ella")
    assert [(i["thread"], i["key"]) for i in listed["items"]] == [
        (None, "current-task"),
        ("checkout", "branch"),
    ]
    assert [
        i["key"] for i in wm_json("list", "--thread", "checkout", "--agent", "ella")["items"]
    ] == ["branch"]
    wm("set", "current-task", "refunds, then invoices", "--agent", "ella")  # replaced
    assert wm("get", "current-task", "--agent", "ella").stdout == "refunds, then invoices\n"
    assert wm("del", "current-task", "--agent", "ella").exit_code == 0
    assert wm("del", "current-task", "--agent", "ella").exit_code == 4
    assert wm("list", "--agent", "lyra").stdout == "lyra holds nothing\n"


def test_the_file_reads_well_and_round_trips_anything(vault: Path) -> None:
    value = 'line one\nline two <!-- vaultmem-wm {"kind":"key"} --> ### not a heading\u2028x'
    wm(vault, "set", "tricky", value, "--agent", "ella")
    path = vault / "agents" / "ella" / "working.md"
    text = path.read_text(encoding="utf-8")
    assert text.startswith("---\nagent: ella\n") and "# Working memory of ella" in text
    assert "## Agent" in text and "- `tricky`: line one line two <\\!-- vaultmem-wm" in text
    assert len([ln for ln in text.split("\n") if "<!-- vaultmem-wm" in ln]) == 1
    assert wm_json(vault, "get", "tricky", "--agent", "ella")["value"] == value
    assert working.parse(text)[0].value == value


def test_items_expire_with_a_fixed_clock(vault: Path) -> None:
    wm(vault, "set", "short", "x", "--ttl", "2h", "--agent", "ella", now=T0)
    wm(vault, "set", "long", "y", "--ttl", "1d", "--agent", "ella", now=T0)
    wm(vault, "push", "turn one", "--thread", "t", "--ttl", "90m", "--agent", "ella", now=T0)
    assert wm(vault, "get", "short", "--agent", "ella", now="2026-11-29T11:59:59Z").exit_code == 0
    gone = wm(vault, "get", "short", "--agent", "ella", now="2026-11-29T12:00:00Z")
    assert gone.exit_code == 4 and "expired" in gone.stderr
    later = wm_json(vault, "list", "--agent", "ella", now="2026-11-29T12:00:00Z")
    assert [i["key"] for i in later["items"]] == ["long"]
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("VAULTMEM_NOW", "2026-11-29T12:00:00Z")
        res = run_cli("read", "--vault", str(vault), "--agent", "ella", "--peek", "--json")
    shown = json.loads(res.stdout)["sections"]["working"]["data"]["items"]
    assert [i["key"] for i in shown] == ["long"]
    # still in the file until the next write compacts it away
    path = vault / "agents" / "ella" / "working.md"
    assert '"key":"short"' in path.read_text()
    wm(vault, "set", "other", "z", "--agent", "ella", now="2026-11-29T12:00:00Z")
    text = path.read_text()
    assert '"key":"short"' not in text and "turn one" not in text and '"key":"long"' in text


def test_the_pack_shows_own_working_memory_only(vault: Path) -> None:
    wm(vault, "set", "current-task", "refunds in cents", "--agent", "ella")

    def sections(agent: str) -> dict[str, Any]:
        res = run_cli("read", "--vault", str(vault), "--agent", agent, "--peek", "--json")
        return json.loads(res.stdout)["sections"]  # type: ignore[no-any-return]

    mine = sections("ella")["working"]
    assert "current-task = refunds in cents" in mine["text"]
    assert mine["source"] == "agents/ella/working.md"
    assert "working" not in sections("lyra")


def test_push_keeps_the_last_n(vault: Path) -> None:
    for i in range(15):
        wm(vault, "push", f"turn {i}", "--thread", "checkout", "--keep", "10", "--agent", "ella")
    wm(vault, "push", "elsewhere", "--thread", "other", "--agent", "ella")
    items = wm_json(vault, "list", "--thread", "checkout", "--agent", "ella")["items"]
    assert [i["value"] for i in items] == [f"turn {i}" for i in range(5, 15)]
    res = wm_json(
        vault, "push", "turn 15", "--thread", "checkout", "--keep", "3", "--agent", "ella"
    )
    assert res["dropped"] == 8
    assert len(wm_json(vault, "list", "--thread", "other", "--agent", "ella")["items"]) == 1
    assert wm(vault, "push", "x", "--keep", "0", "--agent", "ella").exit_code == 2


@pytest.mark.parametrize(
    "args",
    [
        ["set", "key\n", "v"],
        ["set", "two words", "v"],
        ["set", "k", "v", "--thread", "t\n"],
        ["set", "k", "v", "--ttl", "2 hours"],
        ["set", "k", "v", "--ttl", "0h"],
        ["set", "k", "   "],
        ["get", "k\n"],
    ],
)
def test_bad_input_is_exit_2_and_writes_nothing(vault: Path, args: list[str]) -> None:
    res = wm(vault, *args, "--agent", "ella")
    assert res.exit_code == 2, res.stderr
    assert not (vault / "agents" / "ella" / "working.md").exists()


def test_secrets_never_reach_the_file(vault: Path) -> None:
    key = "sk-ant-api03-" + "a" * 40
    res = wm(vault, "set", "k", f"token {key}", "--agent", "ella")
    assert res.exit_code == 0 and "redacted" in res.stderr
    assert key not in (vault / "agents" / "ella" / "working.md").read_text()
    assert wm(vault, "set", key, "v", "--agent", "ella").exit_code == 8
    long = wm(vault, "set", "k", "x" * 3000, "--agent", "ella")
    assert long.exit_code == 2 and "max_value" in long.stderr


def test_recall_never_returns_working_memory(vault: Path) -> None:
    wm(vault, "set", "secret-plan", "zanzibarquokka refactor", "--agent", "ella")
    for agent in ("ella", "lyra"):
        res = run_cli("recall", "zanzibarquokka", "--vault", str(vault), "--agent", agent, "--json")
        assert res.exit_code == 0 and json.loads(res.stdout)["hits"] == []
    res = run_cli("recall", "zanzibarquokka", "--vault", str(vault), "--json")
    assert json.loads(res.stdout)["hits"] == []


_WRITER = """
import sys
from vaultmem.core.vault import Vault
from vaultmem.nexus.working import wm_set
v = Vault.open(sys.argv[1])
for i in range(int(sys.argv[3])):
    wm_set(v, "ella", f"{sys.argv[2]}-{i}", f"value {i}", ttl="never")
"""


@pytest.mark.slow
def test_concurrent_sets_from_two_processes_lose_nothing(vault: Path) -> None:
    n = 40
    procs = [
        subprocess.Popen([sys.executable, "-c", _WRITER, str(vault), name, str(n)])
        for name in ("a", "b")
    ]
    assert all(p.wait(timeout=120) == 0 for p in procs)
    keys = {i.key for i in working.wm_list(Vault.open(vault), "ella").items}
    assert keys == {f"{name}-{i}" for name in ("a", "b") for i in range(n)}
    # and through the CLI, as two real `vaultmem wm set` processes at once
    cmds = [
        [
            sys.executable,
            "-m",
            "vaultmem",
            "wm",
            "set",
            f"cli-{x}",
            "v",
            "--vault",
            str(vault),
            "--agent",
            "ella",
        ]
        for x in ("a", "b")
    ]
    procs = [subprocess.Popen(c, stdout=subprocess.DEVNULL) for c in cmds]
    assert all(p.wait(timeout=60) == 0 for p in procs)
    keys = {i.key for i in working.wm_list(Vault.open(vault), "ella").items}
    assert {"cli-a", "cli-b"} <= keys and len(keys) == 2 * n + 2
