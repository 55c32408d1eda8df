"""Property tests: whatever text an agent writes, the block parses back to exactly one entry with
the same summary and body, and the canonical form (hence the hash) is stable."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vaultmem.core.records import evolve
from vaultmem.nexus import entry as fmt  # `entry` names the helper below
from vaultmem.nexus import reading

# text rich in the characters that matter: markdown headings, comments, backslashes, newlines
PIECES = st.sampled_from(
    ["###", "### ", "<!--", "-->", "<\\!--", "\\", "\n", " · ", "<!-- vaultmem {", "}", "~~~", "`"]
)
TEXT = st.lists(st.one_of(PIECES, st.text(max_size=8)), max_size=25).map("".join)


def entry(summary: str, body: str) -> fmt.Entry:
    e = fmt.Entry(
        id="ella.1",
        agent="ella",
        seq=1,
        time="2026-11-29T15:00:00.000Z",
        channel="c",
        type="note",
        summary=fmt.fold_summary(summary) or "x",
        body=fmt.normalize_body(body),
        extra={"why": body},
    )
    return evolve(e, hash=e.compute_hash())


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(TEXT, TEXT)
def test_any_text_round_trips_as_exactly_one_entry(summary: str, body: str) -> None:
    e = entry(summary, body)
    before = "# Live context\n\nsome text a person wrote\n"
    parsed = fmt.parse_bytes((before + fmt.render(e) + fmt.render(e)).encode())
    assert parsed.fragments == ()
    assert len(parsed.entries) == 2
    got = parsed.entries[0]
    assert (got.summary, got.body, got.extra) == (e.summary, e.body, e.extra)
    assert got.compute_hash() == e.hash == got.hash


@settings(max_examples=100, deadline=None)
@given(TEXT, TEXT)
def test_reading_from_the_end_agrees_with_reading_from_the_top(summary: str, body: str) -> None:
    import tempfile
    from pathlib import Path

    blocks = [entry(summary + str(i), body) for i in range(3)]
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "live.md"
        path.write_text("intro\n" + "".join(fmt.render(b) for b in blocks), encoding="utf-8")
        rev = list(reading.iter_reverse(path, chunk=64))
    assert [(e.summary, e.body) for e in reversed(rev)] == [(b.summary, b.body) for b in blocks]


def test_canonical_form_is_fixed() -> None:
    e = entry("Webhook retries are idempotent now", "Line one\nLine two")
    assert e.canonical() == (
        b'{"acks":[],"agent":"ella","body":"Line one\\nLine two","channel":"c",'
        b'"extra":{"why":"Line one\\nLine two"},"id":"ella.1","key":null,"log":"live",'
        b'"prev":null,"seq":1,"summary":"Webhook retries are idempotent now",'
        b'"time":"2026-11-29T15:00:00.000Z","type":"note","v":1}'
    )
    assert e.hash == "sha256:" + __import__("hashlib").sha256(e.canonical()).hexdigest()


NAMES = st.sampled_from(["lyra", "nova", "all", "a", "b-2", "x_y"])


@settings(max_examples=200, deadline=None)
@given(st.lists(NAMES, min_size=1, max_size=4, unique=True), TEXT, TEXT)
def test_addressed_entries_round_trip(to: list[str], summary: str, body: str) -> None:
    """Recipients are read back from the header, whatever the summary says (even `→ x · y`)."""
    e = evolve(entry("→ " + summary, body), to=tuple(to))
    e = evolve(e, hash=e.compute_hash())
    parsed = fmt.parse_bytes(fmt.render(e).encode())
    assert parsed.fragments == ()
    (got,) = parsed.entries
    assert (got.to, got.summary, got.body) == (e.to, e.summary, e.body)
    assert got.version == 2 and got.compute_hash() == e.hash
    plain = entry(summary, body)  # without recipients: the version 1 bytes, no "to" key
    assert fmt.parse_bytes(fmt.render(plain).encode()).entries[0].to == ()
    assert b'"to"' not in plain.canonical()
