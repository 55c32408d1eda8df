"""The frontmatter subset read without YAML (`notes.simple_mapping`): whatever it accepts reads
exactly as PyYAML reads it, and what vaultmem itself writes stays inside it."""

from __future__ import annotations

from typing import Any

import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from vaultmem.core import notes


def _yaml(source: str) -> dict[str, Any] | str:
    """PyYAML's reading, as `load_yaml_mapping` returns it (or the error's class name)."""
    try:
        data = yaml.load(source, Loader=yaml.SafeLoader)
    except (yaml.YAMLError, ValueError) as exc:
        return type(exc).__name__
    if data is None:  # an empty block: no properties
        return {}
    if not isinstance(data, dict):
        return "not a mapping"
    return {str(k): notes._jsonable(v) for k, v in data.items()}


# tokens near the grammar's edges: YAML 1.1 words, numbers that are not decimal ints, dates that
# do not exist, quotes, indicators, characters YAML treats specially
SCALARS = [
    "x", "ella", "a b", "a  b", "a - b", "a/b", "v1.2", "x+y", "yes", "No", "ON", "off", "y",
    "n", "true", "False", "null", "Null", "~", "", "0", "7", "-3", "-0", "007", "1_000", "0x1f",
    "1.5", "1e3", ".inf", ".nan", "1:20", "2026-11-29", "2026-13-01", "2026-02-30", "2026-1-2",
    "2026-11-29T15:20:01Z", "2026-11-29T25:20:01Z", "2026-11-29T15:20:01.5Z",
    "2026-11-29 15:20:01", '""', '"a: b #c"', '"x\\ny"', '"tab\there"', "''", "'it''s'",
    "'a \"b\"'", "[]", "{}", "[a, b]", "{a: 1}", "a #c", "a: b", "#x", "&a", "*a", "!t x",
    "|", ">", "-", "- x", "%x", "@x", "`x`", "=", "<<", "é", '"é"', '"\u2028"', "x ", " x",
    '"\x85"', "'\ufeff'",
]  # fmt: skip
KEYS = ["name", "a", "tags", "my_key", "a-b", "on", "yes", "Null", "_x", "1", "é", "a b"]


@st.composite
def blocks(draw: st.DrawFn) -> str:
    lines: list[str] = [""]
    for _ in range(draw(st.integers(0, 6))):
        key = draw(st.sampled_from(KEYS))
        if draw(st.booleans()):
            lines.append(f"{key}: {draw(st.sampled_from(SCALARS))}")
        else:
            lines.append(f"{key}:")
            indent = draw(st.sampled_from(["", "  ", "    "]))
            for _ in range(draw(st.integers(0, 3))):
                lines.append(f"{indent}{draw(st.sampled_from(['', ' ']))}- ")
                lines[-1] += draw(st.sampled_from(SCALARS))
                if draw(st.integers(0, 9)) == 0:
                    lines.append(draw(st.sampled_from(["", "# c", "\tx: 1", "  nested: 1"])))
    return "\n".join(lines) + "\n"


@settings(max_examples=1500, deadline=None)
@given(blocks())
def test_what_the_plain_reader_accepts_reads_as_yaml_reads_it(source: str) -> None:
    plain = notes.simple_mapping(source)
    if plain is not None:
        assert plain == _yaml(source), source


def test_every_edge_token_alone() -> None:
    for token in SCALARS:
        for source in (f"k: {token}\n", f"k:\n  - {token}\n"):
            plain = notes.simple_mapping(source)
            if plain is not None:
                assert plain == _yaml(source), source


def test_what_vaultmem_writes_is_read_without_yaml() -> None:
    """The frontmatter init, remember, retain and checkpoints write stays in the subset, so a
    read pack or a hook that opens such notes never loads PyYAML."""
    meta = {
        "name": "agent0",
        "role": "",
        "created": "2026-12-02T17:46:26Z",
        "day": "2026-12-02",
        "tags": ["vaultmem/identity", "memory/fact"],
        "type": "project",
        "evidence": 2,
        "status": "pending",
        "supersedes": [],
        "approved_by": None,
    }
    block = notes.dump_mapping(meta)
    assert notes.simple_mapping("\n" + block) == meta
    text = notes.render(meta, "# agent0\n")
    assert notes.parse(text).meta == meta


def test_a_block_outside_the_subset_goes_to_yaml() -> None:
    for source in ("k: 1.5\n", "k: v # c\n", "k:\n  x: 1\n", "k: |\n  a\n", "k:\n  - a\n\n  - b\n"):
        assert notes.simple_mapping(source) is None, source
    note = notes.parse("---\nk: 1.5\nn:\n  x: 1\n---\nbody\n")
    assert note.ok and note.meta == {"k": 1.5, "n": {"x": 1}}
    broken = notes.parse("---\nk: 2026-13-01\n---\nbody\n")
    assert not broken.ok and broken.error
