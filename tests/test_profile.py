"""`vaultmem profile`: built from approved memory only, every line linking its memory, stale
when the memories change, near the top of `read`; offline and through the fake Messages API."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests._cli import copy_example, run_cli
from tests._fake_anthropic import (
    FakeAnthropic,
    error_reply,
    fake_anthropic,
    text_reply,
    tool_call_reply,
)
from tests._layer3_helpers import make_keys, set_toml
from vaultmem.bank import retain, review
from vaultmem.core.vault import Vault
from vaultmem.memory import facts

__all__ = ["fake_anthropic"]  # the fixture, imported for pytest

# a citation: readable link text for people, then the id (`[[memory/x|Review days]] `m-…``)
LINK = re.compile(r"\[\[([^\]|#]+)(?:#\^([A-Za-z0-9-]+))?\|([^\]]+)\]\] `([^`]+)`")


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    """A copy of example-vault with the agents' keys on this machine: a profile is signed
    like a digest, and `read` shows only one that verifies."""
    root = copy_example(tmp_path / "vault")
    make_keys(root)
    return root


def profile(vault: Path, *args: str) -> object:
    return run_cli("profile", "--vault", str(vault), *args)


def _text(vault: Path, rel: str = "memory/PROFILE.md") -> str:
    return (vault / rel).read_text(encoding="utf-8")


def test_profile_is_built_from_approved_memory_only(vault: Path) -> None:
    v = Vault.open(vault)
    retain.retain(v, "Zebra pending fact nobody reviewed", agent="ella", type_="preference")
    rejected = retain.retain(v, "Quokka rejected fact", agent="lyra", type_="user")
    assert rejected.id
    review.reject(v, rejected.id, why="not true", reviewer="chiara")
    old = facts.remember(v, "Wombat retracted fact", name="Wombat", type_="user")
    facts.retract(v, old.id, why="moved on")
    facts.write(
        v, "Platypus expired fact", name="Platypus", type_="project", author="person",
        extra={"valid_until": "2020-01-01"},
    )  # fmt: skip
    res = profile(vault)
    assert res.exit_code == 0, res.stderr
    assert "wrote memory/PROFILE.md" in res.stdout and "offline" in res.stdout
    text = _text(vault)
    for word in ("Zebra", "Quokka", "Wombat", "Platypus"):
        assert word not in text
    body = text.split("\n---\n", 1)[1]
    lines = [ln for ln in body.splitlines() if ln.startswith("- ")]
    assert len(lines) >= 8
    listed = {f.id: f for f in facts.memories(v, include_inactive=False)}
    for line in lines:  # every line links the memory (or decision) it comes from
        links = LINK.findall(line)
        assert links, line
        for target, block, label, ident in links:
            assert (vault / f"{target}.md").exists(), line
            if target == "nexus/decisions":
                assert ident == "ella.d1" and block == "ella-d1"
                assert f"^{block}\n" in (vault / f"{target}.md").read_text()
                assert label.startswith("decision of 20")
            else:
                assert listed[ident].path == f"{target}.md"
                assert label == listed[ident].name  # readable text, not the id
    assert "## Preferences and how to work" in text and "## Conventions and decisions" in text
    assert "Prices are stored as integer euro cents" in text  # the active decision
    # the profile is not a fact: memories and recall do not list it as one
    assert all(f.path != "memory/PROFILE.md" for f in facts.memories(v))


def test_unchanged_sources_leave_it_and_a_change_marks_it_stale(vault: Path) -> None:
    assert profile(vault).exit_code == 0
    res = profile(vault)
    assert "unchanged memory/PROFILE.md" in res.stdout
    pack = json.loads(
        run_cli("read", "--vault", str(vault), "--agent", "lyra", "--peek", "--json").stdout
    )
    keys = list(pack["sections"])
    assert keys[:2] == ["identity", "profile"]  # near the top
    assert pack["sections"]["profile"]["data"]["stale"] is False
    facts.remember(
        Vault.open(vault), "Deploys happen on Thursdays only.", name="Deploy day", type_="project"
    )
    pack = json.loads(
        run_cli("read", "--vault", str(vault), "--agent", "lyra", "--peek", "--json").stdout
    )
    section = pack["sections"]["profile"]
    assert section["data"]["stale"] is True and "stale" in section["title"]
    assert "Deploys happen on Thursdays" not in section["text"]
    assert "wrote memory/PROFILE.md" in profile(vault).stdout
    pack = json.loads(
        run_cli("read", "--vault", str(vault), "--agent", "lyra", "--peek", "--json").stdout
    )
    assert pack["sections"]["profile"]["data"]["stale"] is False
    assert "Deploys happen on Thursdays" in pack["sections"]["profile"]["text"]
    assert "[[" not in pack["sections"]["profile"]["text"]  # plain ids in a prompt


def test_an_agent_profile_stays_with_its_agent(vault: Path) -> None:
    v = Vault.open(vault)
    facts.remember(
        v, "Ella keeps her okapi notes private.", name="Okapi", type_="preference",
        scope="agent", agent="ella",
    )  # fmt: skip
    res = profile(vault, "--agent", "ella")
    assert res.exit_code == 0, res.stderr
    assert "wrote memory/PROFILE.md" in res.stdout and "wrote agents/ella/PROFILE.md" in res.stdout
    own = _text(vault, "agents/ella/PROFILE.md")
    assert "okapi notes" in own and "okapi" not in _text(vault)
    ella = json.loads(
        run_cli("read", "--vault", str(vault), "--agent", "ella", "--peek", "--json").stdout
    )
    lyra = json.loads(
        run_cli("read", "--vault", str(vault), "--agent", "lyra", "--peek", "--json").stdout
    )
    assert "agent_profile" in ella["sections"] and "agent_profile" not in lyra["sections"]
    hits = json.loads(
        run_cli("recall", "okapi", "--vault", str(vault), "--agent", "lyra", "--json").stdout
    )["hits"]
    assert not any(h["path"].startswith("agents/ella/") for h in hits)
    mine = json.loads(
        run_cli("recall", "okapi", "--vault", str(vault), "--agent", "ella", "--json").stdout
    )["hits"]
    assert any(h["path"] == "agents/ella/PROFILE.md" for h in mine)
    shown = profile(vault, "--show", "--agent", "ella", "--json")
    assert set(json.loads(shown.stdout)["profiles"]) == {
        "memory/PROFILE.md",
        "agents/ella/PROFILE.md",
    }


def test_a_budget_keeps_the_profile_and_cuts_its_least_important_lines(vault: Path) -> None:
    assert profile(vault).exit_code == 0
    full = json.loads(
        run_cli("read", "--vault", str(vault), "--agent", "lyra", "--peek", "--json").stdout
    )
    ident = full["sections"]["identity"]["tokens"]
    prof = full["sections"]["profile"]["tokens"]
    small = json.loads(
        run_cli(
            "read", "--vault", str(vault), "--agent", "lyra", "--peek", "--json",
            "--budget", str(ident + prof - 60),
        ).stdout
    )  # fmt: skip
    assert small["tokens"] <= ident + prof - 60
    assert "profile" in small["sections"] and small["cut"]["profile"]
    assert "cut to fit the budget" in small["sections"]["profile"]["text"]
    res = run_cli(
        "read",
        "--vault",
        str(vault),
        "--agent",
        "lyra",
        "--peek",
        "--budget",
        str(ident + prof - 60),
    )
    assert "Cut to fit the budget, lowest importance first:" in res.stdout


# --- through the model ----------------------------------------------------------------------


@pytest.fixture
def llm_vault(vault: Path) -> Path:
    set_toml(vault, "llm", "timeout", "5.0")
    set_toml(vault, "llm", "max_retries", "2")
    return vault


def test_model_profile_through_the_fake_api(llm_vault: Path, fake_anthropic: FakeAnthropic) -> None:
    # a person pasted a key into a memory note in Obsidian: it never leaves the machine
    note = llm_vault / "memory" / "production-setup.md"
    note.write_text(note.read_text() + "\nDeploy key AKIAIOSFODNN7EXAMPLE.\n")
    lines = [
        {"group": "preferences", "text": "Chiara wants short answers.", "ids": ["m-4463349c"]},
        {"group": "conventions", "text": "Prices in cents.", "ids": ["ella.d1", "m-nope"]},
        {"group": "people", "text": "Invented person.", "ids": ["m-00000000"]},
        {"group": "weird", "text": "Token ghp_" + "x" * 36 + " here.", "ids": ["m-bacc2cb0"]},
    ]
    fake_anthropic.queue(tool_call_reply("record_profile", {"lines": lines}))
    res = profile(llm_vault, "--json")
    assert res.exit_code == 0, res.stderr
    (result,) = json.loads(res.stdout)["profiles"]
    assert result["made_by"] == "claude-haiku-4-5" and result["requests"] == 1
    text = _text(llm_vault)
    assert (
        "Chiara wants short answers. "
        "([[memory/answer-style-for-chiara|Answer style for Chiara]] `m-4463349c`)"
    ) in text
    assert (
        "Prices in cents. ([[nexus/decisions#^ella-d1|decision of 2026-11-29]] `ella.d1`)" in text
    )
    assert "Invented person" not in text  # cites no real source: dropped
    assert "ghp_" not in text and "[redacted:" in text  # scrubbed before disk
    assert "## Other facts" in text  # an unknown group lands in "facts"
    (req,) = fake_anthropic.requests
    body = req.body
    assert body["tool_choice"] == {"type": "tool", "name": "record_profile"}
    assert body["tools"][0]["cache_control"] == {"type": "ephemeral"}
    assert body["system"][0]["cache_control"] == {"type": "ephemeral"}
    sent = body["messages"][0]["content"]
    assert "AKIAIOSFODNN7EXAMPLE" not in sent and "[redacted:" in sent
    assert "m-4463349c | memory | feedback |" in sent
    assert "ella.d1 | decision | decision |" in sent


@pytest.mark.parametrize(
    "reply",
    [
        text_reply("Here is a profile."),
        error_reply(401, "authentication_error", "invalid x-api-key"),
        tool_call_reply("record_profile", {"lines": "none"}),
    ],
    ids=["malformed", "401", "not-a-list"],
)
def test_a_failed_request_writes_nothing(
    llm_vault: Path, fake_anthropic: FakeAnthropic, reply: object
) -> None:
    fake_anthropic.queue(reply)  # type: ignore[arg-type]
    res = profile(llm_vault)
    assert res.exit_code == 7 and "nothing was written" in res.stderr
    assert not (llm_vault / "memory" / "PROFILE.md").exists()


def test_offline_flag_needs_no_request(llm_vault: Path, fake_anthropic: FakeAnthropic) -> None:
    res = profile(llm_vault, "--offline")
    assert res.exit_code == 0 and "offline" in res.stdout
    assert fake_anthropic.requests == []


@pytest.mark.slow
def test_mcp_profile_tool_is_read_only_and_scoped(vault: Path) -> None:
    pytest.importorskip("mcp")
    from tests._mcp import call, payload

    facts.remember(
        Vault.open(vault), "Ella's okapi preference.", name="Okapi", type_="preference",
        scope="agent", agent="ella",
    )  # fmt: skip
    assert profile(vault, "--agent", "ella").exit_code == 0
    tools, (mine,) = call(vault, "ella", ("profile", {}))
    assert "profile" in tools
    profiles = payload(mine)["profiles"]
    assert set(profiles) == {"memory/PROFILE.md", "agents/ella/PROFILE.md"}
    assert profiles["memory/PROFILE.md"]["stale"] is False
    _tools, (theirs,) = call(vault, "lyra", ("profile", {}))
    assert set(payload(theirs)["profiles"]) == {"memory/PROFILE.md"}  # never ella's own
