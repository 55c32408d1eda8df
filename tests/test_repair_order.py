"""`repair` writes a log file that is out of order, or holds an entry twice, in its canonical
order; `verify` still names a reordered chain until then."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests._layer3_helpers import fresh_vault, make_keys
from vaultmem.core import clock
from vaultmem.core.vault import Vault
from vaultmem.nexus import entry, log, repair, verify


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    return fresh_vault(tmp_path)


def _blocks(text: str) -> tuple[str, list[str]]:
    """(preamble, entry blocks each with its leading blank line) of a log text."""
    es = entry.parse_entries(text)
    lines = text.split("\n")
    pre = "\n".join(lines[: es[0].line_start - 2]) + "\n" if es else text
    return pre, ["\n" + "\n".join(lines[e.line_start - 1 : e.line_end]) + "\n" for e in es]


def test_a_really_reordered_chain_is_named_then_repaired(vault: Path) -> None:
    v = make_keys(vault)
    for i in range(6):
        log.append(v, "ella" if i % 2 == 0 else "lyra", f"entry {i}")
    original = v.live_context.read_text()
    pre, blocks = _blocks(original)
    blocks[0], blocks[2] = blocks[2], blocks[0]  # ella.2 now stands before ella.1
    v.live_context.write_text(pre + "".join(blocks))
    assert ("reordered", "ella.1") in [(p.kind, p.id) for p in verify.verify(v).problems]
    report = repair.repair(v)
    assert report.after.ok, report.after.problems
    assert any("back in order" in a for a in report.actions), report.actions
    ids = [e.id for e in entry.parse_entries(v.live_context.read_text())]
    assert ids.index("ella.1") < ids.index("ella.2") < ids.index("ella.3")
    assert repair.repair(v).actions == ()  # nothing left to do, and the file stays as it is


def test_a_copy_glued_in_twice_is_removed_and_a_persons_text_stays(vault: Path) -> None:
    v = make_keys(vault)
    for i in range(3):
        log.append(v, "ella", f"entry {i}")
    pre, blocks = _blocks(v.live_context.read_text())
    text = pre + blocks[0] + blocks[1] + "\nA note a person wrote.\n" + blocks[1] + blocks[2]
    v.live_context.write_text(text)
    assert "duplicate" in {p.kind for p in verify.verify(v).problems}
    report = repair.repair(v)
    assert report.after.ok, report.after.problems
    assert report.actions == ("removed a second copy of entry ella.2 from nexus/live-context.md "
                              "(a merge glued it in twice)",)  # fmt: skip
    after = v.live_context.read_text()
    assert "A note a person wrote." in after
    assert after == pre + blocks[0] + blocks[1] + "\nA note a person wrote.\n" + blocks[2]


def test_a_file_in_order_is_left_byte_for_byte(vault: Path) -> None:
    v = make_keys(vault)
    for i in range(4):
        log.append(v, "lyra" if i % 2 else "ella", f"entry {i}")
    before = v.live_context.read_bytes()
    assert repair.repair(v).actions == ()
    assert v.live_context.read_bytes() == before


_CHAINS = ["ella", "lyra", "ella.k2f7"]


@st.composite
def _entries(draw: st.DrawFn) -> list[entry.Entry]:
    t0 = clock.parse_time("2026-11-29T10:00:00Z")
    assert t0 is not None
    out = []
    for chain in _CHAINS:
        for seq in range(1, draw(st.integers(0, 5)) + 1):
            # each chain's clock may go back (a machine's clock was set back)
            when = t0 + timedelta(seconds=draw(st.integers(0, 20)))
            out.append(
                entry.Entry(
                    id=f"{chain}.{seq}",
                    agent=chain.split(".")[0],
                    seq=seq,
                    time=clock.stamp_ms(when),
                    channel="c",
                    type="note",
                    summary=f"{chain} {seq}",
                    body="",
                    hash=f"sha256:{chain}{seq}",
                )
            )
    return out


@settings(max_examples=200, deadline=None)
@given(_entries(), st.randoms(use_true_random=False))
def test_canonical_order_keeps_every_chain_in_seq_order_whatever_the_file_order(
    entries: list[entry.Entry], rnd: object
) -> None:
    import random

    assert isinstance(rnd, random.Random)
    shuffled = list(entries)
    rnd.shuffle(shuffled)
    order = repair.canonical_order(shuffled)
    assert sorted(e.id for e in order) == sorted(e.id for e in entries)
    for chain in _CHAINS:
        seqs = [e.seq for e in order if entry.chain_of(e.id) == chain]
        assert seqs == sorted(seqs)
    # the same entries in any file order give the same order: two clones write the same bytes
    assert [e.id for e in order] == [e.id for e in repair.canonical_order(entries)]


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.data())
def test_any_interleaving_with_copies_repairs_to_verify_clean(
    tmp_path_factory: pytest.TempPathFactory, data: st.DataObject
) -> None:
    """Whatever order a merge leaves the entry blocks in, and whichever it glues in twice,
    repair ends at a file verify accepts, with every entry once."""
    global _SIGNED
    if _SIGNED is None:
        root = fresh_vault(tmp_path_factory.mktemp("signed"))
        v = make_keys(root)
        for i in range(9):
            log.append(v, ("ella", "lyra")[i % 2], f"entry {i}")
        _SIGNED = (v, v.live_context.read_text())
    v, original = _SIGNED
    pre, blocks = _blocks(original)
    order = data.draw(st.permutations(blocks))
    copies = data.draw(st.lists(st.sampled_from(blocks), max_size=3))
    for block in copies:
        order.insert(data.draw(st.integers(0, len(order))), block)
    # a union merge may glue two blocks without the blank line between them
    glued = [b[1:] if n and data.draw(st.booleans()) else b for n, b in enumerate(order)]
    v.live_context.write_text(pre + "".join(glued))
    report = repair.repair(v)
    assert report.after.ok, report.after.problems
    after = v.live_context.read_text()
    ids = [e.id for e in entry.parse_entries(after)]
    assert sorted(ids) == sorted(e.id for e in entry.parse_entries(original))
    if report.actions:  # rewritten: the canonical bytes, whatever the merge left
        assert after == pre + "".join(_blocks(after)[1])  # one blank line between entries
        global _CANONICAL
        _CANONICAL = _CANONICAL or after
        assert after == _CANONICAL


_SIGNED: tuple[Vault, str] | None = None
_CANONICAL = ""


def test_a_reorder_rebuilds_the_coordination_cache_and_keeps_every_handoff(vault: Path) -> None:
    from vaultmem.nexus import coord

    v = make_keys(vault)
    log.append(v, "ella", "first")
    coord.load(v)  # the cache now trusts the file up to ella.1
    log.append(v, "ella", "second")
    log.append(v, "ella", "please review", to=["lyra"])
    pre, blocks = _blocks(v.live_context.read_text())
    v.live_context.write_text(pre + blocks[2] + blocks[0] + blocks[1])  # the handoff moves first
    assert coord.index_path(v).exists()
    assert any("back in order" in a for a in repair.repair(v).actions)
    assert not coord.index_path(v).exists()
    assert [i.id for i in coord.load(v).inbox("lyra")] == ["ella.3"]
