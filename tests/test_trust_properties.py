"""Property test: whatever text an agent writes (fences, headings, comment markers, control
and zero-width characters, trailing newlines), `state set`, `checkpoint`, `append` and
`decide` never change a byte of text a person wrote."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests._cli import copy_example
from tests._layer3_helpers import make_keys
from vaultmem.core.errors import VaultmemError
from vaultmem.core.vault import Vault
from vaultmem.nexus import checkpoints, decisions, log, state

PIECES = st.sampled_from(
    [
        "```", "```python", "~~~", "````", "# Top", "## Gamma", "## Beta", "### sub", "---",
        "<!--", "-->", "<!-- vaultmem {} -->", "\\", "\x00", "\x1b[2J", "\u200b", "\ufeff",
        "\r", "\n", "\n\n", "| a | b |", "- item", "> quote", "text", " ", "\t", "é",
    ]
)  # fmt: skip
AGENT_TEXT = st.lists(st.one_of(PIECES, st.text(max_size=8)), max_size=14).map("".join)

PERSON = """---
tags:
  - vaultmem/state
---

# Project state

A person's preamble.

## Alpha

Alpha is the person's.

```
## not a heading: inside a person's fence
```

## Beta

old beta

## Gamma

Gamma is the person's too.
"""


def _section(text: str, title: str) -> str:
    """The raw lines of `## title` up to the next `## ` line the person wrote."""
    start = text.index(f"## {title}\n")
    nxt = text.find("\n## Gamma\n", start + 1) if title != "Gamma" else -1
    return text[start:] if nxt < 0 else text[start : nxt + 1]


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = copy_example(tmp_path_factory.mktemp("prop") / "vault")
    return root


@pytest.mark.slow
@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(first=AGENT_TEXT, second=AGENT_TEXT, name=st.sampled_from(["Beta", "Delta"]))
def test_state_set_never_changes_a_persons_sections(
    base: Path, tmp_path_factory: pytest.TempPathFactory, first: str, second: str, name: str
) -> None:
    import shutil

    root = tmp_path_factory.mktemp("s") / "v"
    shutil.copytree(base, root)
    v = make_keys(root, "ella")
    path = root / "nexus/project-state.md"
    path.write_text(PERSON)
    for text in (first, second):
        try:
            state.set_state(v, "ella", name, text)
        except VaultmemError:
            continue  # refused (a secret-looking text): nothing was written
    after = path.read_text()
    head = PERSON[: PERSON.index("## Alpha")]
    assert after.startswith(head)
    alpha = PERSON[PERSON.index("## Alpha") : PERSON.index("## Beta")]
    assert alpha in after
    assert after.count("## Gamma\n\nGamma is the person's too.\n") == 1
    if name == "Delta":
        assert PERSON[PERSON.index("## Beta") :].rstrip("\n") in after


@pytest.mark.slow
@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(summary=AGENT_TEXT, body=AGENT_TEXT)
def test_append_and_decide_only_add_bytes(
    base: Path, tmp_path_factory: pytest.TempPathFactory, summary: str, body: str
) -> None:
    import shutil

    root = tmp_path_factory.mktemp("a") / "v"
    shutil.copytree(base, root)
    v = make_keys(root, "ella")
    live, dec = root / "nexus/live-context.md", root / "nexus/decisions.md"
    live.write_text(live.read_text() + "\nA person's note between entries.\n")
    before_live, before_dec = live.read_bytes(), dec.read_bytes()
    for call in (
        lambda: log.append(v, "ella", summary or "x", body=body),
        lambda: decisions.decide(v, "ella", summary or "x", why=body or "because"),
    ):
        with contextlib.suppress(VaultmemError):  # refused (a secret-like text): no write
            call()
    assert live.read_bytes().startswith(before_live)
    assert dec.read_bytes().startswith(before_dec)


@settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))
@given(text=AGENT_TEXT, person=AGENT_TEXT)
def test_checkpoint_keeps_what_a_person_wrote_in_history(
    base: Path, tmp_path_factory: pytest.TempPathFactory, text: str, person: str
) -> None:
    import shutil

    root = tmp_path_factory.mktemp("c") / "v"
    shutil.copytree(base, root)
    v = Vault.open(root)
    cp = root / "agents/ella/checkpoint.md"
    cp.write_bytes(cp.read_bytes() + person.encode("utf-8", "surrogatepass"))
    mine = cp.read_bytes().decode("utf-8", "surrogatepass")
    try:
        checkpoints.checkpoint(v, "ella", text or "x")
    except VaultmemError:
        assert cp.read_bytes().decode("utf-8", "surrogatepass") == mine
        return
    journal = root / ".vaultmem/journal/checkpoints/ella.jsonl"
    raws = [json.loads(ln)["raw"] for ln in journal.read_bytes().split(b"\n") if ln]
    assert mine in raws
