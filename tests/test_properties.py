"""Property tests: human frontmatter survives vaultmem's edits; paths never escape the vault."""

from __future__ import annotations

import string
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vaultmem.core import notes
from vaultmem.core.errors import PathOutsideVaultError, UsageError
from vaultmem.core.vault import Vault
from vaultmem.memory.facts import OWNED_KEYS, slugify, validate_fact_name

KEY = st.text(
    alphabet=string.ascii_letters + string.digits + "_- ", min_size=1, max_size=12
).filter(lambda k: k.strip() == k and not k.startswith("-") and k not in OWNED_KEYS)
SCALAR = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**9), max_value=10**9),
    st.text(max_size=40).filter(lambda s: "\x00" not in s),
)
VALUE = st.recursive(
    SCALAR,
    lambda children: st.one_of(
        st.lists(children, max_size=3), st.dictionaries(KEY, children, max_size=3)
    ),
    max_leaves=6,
)
OWNED = st.dictionaries(
    st.sampled_from(["name", "status", "updated", "retract_reason"]),
    st.text(max_size=30),
    max_size=4,
)


@pytest.mark.slow
@settings(max_examples=150, deadline=None)
@given(human=st.dictionaries(KEY, VALUE, max_size=6), owned=OWNED, body=st.text(max_size=80))
def test_set_frontmatter_keeps_human_keys(
    human: dict[str, object], owned: dict[str, str], body: str
) -> None:
    text = notes.render({"name": "fact", **human}, body)
    before = notes.parse(text)
    assert before.ok, before.error
    out = notes.set_frontmatter(text, dict(owned))
    after = notes.parse(out)
    assert after.ok, after.error
    for key, value in before.meta.items():
        if key not in owned:
            assert after.meta[key] == value
    for key, value in owned.items():
        assert after.meta[key] == value
    assert after.body == before.body


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.sampled_from(["# a person's comment", "", "extra: keep", "list:\n  - 1\n  - 2"]),
        max_size=5,
    )
)
def test_set_frontmatter_keeps_human_lines_verbatim(lines: list[str]) -> None:
    fm = "\n".join(["name: x", *lines, "status: active"])
    text = f"---\n{fm}\n---\nbody\n"
    out = notes.set_frontmatter(text, {"status": "retracted"})
    for line in lines:
        assert line in out
    assert notes.parse(out).meta["status"] == "retracted"


@settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(rel=st.text(alphabet=st.sampled_from(list("ab./\\~\x00 ")), max_size=12))
def test_paths_never_escape(vault: Path, rel: str) -> None:
    v = Vault.open(vault)
    try:
        path = v.path(rel)
    except PathOutsideVaultError:
        return
    real = path.resolve()
    assert real == vault.resolve() or vault.resolve() in real.parents


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=200))
def test_fact_names_give_safe_slugs(name: str) -> None:
    try:
        validate_fact_name(name)
    except UsageError:
        return
    slug = slugify(name)
    assert slug and "/" not in slug and ".." not in slug and len(slug) <= 60
    assert set(slug) <= set(string.ascii_lowercase + string.digits + "-")
