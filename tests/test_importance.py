"""Importance and decay: the score, and `read --budget` keeping the highest-scoring items."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests._cli import run_cli
from tests._layer3_helpers import fresh_vault, make_keys, set_toml
from vaultmem.app.pack import importance, receipts
from vaultmem.app.pack.sections import Item, Section
from vaultmem.core import importance as core_importance
from vaultmem.core.config import ImportanceSettings
from vaultmem.core.records import evolve
from vaultmem.core.vault import Vault
from vaultmem.nexus import log

NOW = datetime(2026, 11, 30, 12, tzinfo=UTC)


def test_the_score_follows_type_evidence_use_and_age() -> None:
    s = ImportanceSettings()

    def score(kind: str, time: str | None = "2026-11-30T12:00:00Z", **kw: int) -> float:
        return core_importance.score(s, kind, time=time, now=NOW, **kw)

    assert score("decision") > score("failure") > score("fix") > score("note") > score("ack")
    assert score("preference", evidence=4) > score("preference")
    assert score("fact", used=3) > score("fact")
    month = score("decision", "2026-10-31T12:00:00Z")  # one half-life old
    assert month == pytest.approx(3.0 * (0.25 + 0.75 * 0.5), abs=1e-3)
    ancient = score("decision", "2016-11-30T12:00:00Z")
    assert ancient == pytest.approx(3.0 * 0.25, abs=1e-3)  # never below the floor
    assert score("decision", None) == 3.0  # no time: no decay
    assert score("something-else") == s.fact


def test_fit_cuts_items_lowest_score_first_then_drops_sections() -> None:
    items = tuple(Item(f"e{i}", f"- entry {i} " + "x" * 40, score=float(i)) for i in range(1, 7))
    listed = Section(
        "new",
        "New",
        "intro\n" + "\n".join(i.text for i in items),
        {"entries": [{"id": i.id} for i in items]},
        priority=30,
        items=items,
    )
    whole = Section("state", "State", "y" * 400, priority=50)
    ident = Section("identity", "Identity", "me", priority=0)
    budget = ident.tokens + listed.tokens - 20
    kept, dropped, sizes, cut = importance.fit([ident, listed, whole], budget)
    assert dropped == ("state",) and set(sizes) == {"state"}  # the lower-priority block first
    n = len(cut["new"])  # then the lowest-scoring items
    assert n >= 2 and cut == {"new": [f"e{i}" for i in range(1, n + 1)]}
    shown = next(s for s in kept if s.key == "new")
    assert "entry 1 " not in shown.text and "entry 6 " in shown.text
    assert f"({n} more not shown: cut to fit the budget" in shown.text
    assert [e["id"] for e in shown.data["entries"]] == [f"e{i}" for i in range(n + 1, 7)]
    assert sum(s.tokens for s in kept) <= budget


def test_receipts_count_as_use(vault: Path) -> None:
    v = Vault.open(vault)
    a = Item("memory/a.md", "- a", path="memory/project-orbit.md")
    b = Item("memory/b.md", "- b", path="memory/who-owns-what.md")
    section = Section("memory", "Memory", "x\n- a\n- b", items=(a, b), priority=60)
    (before,) = importance.rate(v, "ella", [section], NOW)
    receipts.record(v, "ella", "recall", [], ["memory/who-owns-what.md:3-9"] * 1)
    receipts.record(v, "ella", "recall", [], ["memory/who-owns-what.md:3-9"])
    (after,) = importance.rate(v, "ella", [section], NOW)
    assert before.items[0].score == pytest.approx(before.items[1].score, rel=0.5)
    assert after.items[1].score > before.items[1].score
    assert after.items[0].score == before.items[0].score


@pytest.fixture
def busy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("VAULTMEM_NOW", "2026-11-30T12:00:00Z")
    root = fresh_vault(tmp_path)
    v = make_keys(root)
    for n in range(12):
        log.append(
            v,
            "lyra",
            f"Routine note number {n} about the calendar",
            time=f"2026-11-30T09:{n:02d}:00.000Z",
        )
    log.append(
        v,
        "lyra",
        "Capacity check counts pending bookings",
        type_="fix",
        time="2026-11-30T09:30:00.000Z",
    )
    log.append(
        v, "lyra", "Prices are integer cents", type_="decision", extra={"decision": "lyra.d1"},
        time="2026-11-30T09:31:00.000Z",
    )  # fmt: skip
    return root


def _pack(root: Path, *args: str) -> dict:  # type: ignore[type-arg]
    res = run_cli("read", "--vault", str(root), "--agent", "ella", "--peek", "--json", *args)
    assert res.exit_code == 0, res.stderr
    return json.loads(res.stdout)  # type: ignore[no-any-return]


def _budget_for_half_the_entries(root: Path) -> int:
    full = _pack(root)
    above = sum(s["tokens"] for s in full["sections"].values() if s["priority"] < 30)
    return above + full["sections"]["new_entries"]["tokens"] // 2


def test_read_budget_keeps_the_highest_scoring_entries(busy: Path) -> None:
    budget = _budget_for_half_the_entries(busy)
    small = _pack(busy, "--budget", str(budget))
    assert small["tokens"] <= budget
    assert {"memory", "agent_memory", "project_state"} <= set(small["dropped"])
    kept = [e["id"] for e in small["sections"]["new_entries"]["data"]["entries"]]
    cut = small["cut"]["new_entries"]
    assert "lyra.13" in kept and "lyra.14" in kept  # the fix and the decision stay
    assert cut and all(int(i.split(".")[1]) <= 12 for i in cut)  # routine notes go first
    assert cut[0] == "lyra.1"  # the oldest of equal notes first
    res = run_cli(
        "read", "--vault", str(busy), "--agent", "ella", "--peek", "--budget", str(budget)
    )
    assert (
        f"Cut to fit the budget, lowest importance first: {len(cut)} from New on the live log"
        in res.stdout
    )


def test_weights_are_settings(busy: Path) -> None:
    set_toml(busy, "importance", "note", "9.0")
    budget = _budget_for_half_the_entries(busy)
    small = _pack(busy, "--budget", str(budget))
    assert "lyra.13" in small["cut"]["new_entries"]  # now the fix is worth less than a note
    set_toml(busy, "importance", "half_life_days", "0")
    res = run_cli("read", "--vault", str(busy), "--agent", "ella", "--peek")
    assert res.exit_code == 3 and "half_life_days" in res.stderr


def _one_by_one(s: Section, total: int, budget: int) -> tuple[Section, list[Item], int]:
    """How `fit` cut a section's items before it estimated: one `with_items` per item."""
    order = sorted(s.items, key=lambda i: (i.score, i.time or "", i.id))
    current, remaining, removed = s, list(s.items), []
    for victim in order:
        if total <= budget or len(remaining) <= 1:
            break
        remaining.remove(victim)
        removed.append(victim)
        smaller = s.with_items(tuple(remaining), len(removed))
        total += smaller.tokens - current.tokens
        current = smaller
    return current, removed, total


@settings(max_examples=300, deadline=None)
@given(
    lines=st.lists(
        st.sampled_from(["- a", "- ab", "- a b", "- entry one", "- entry one two", "x", "- é"])
        | st.text("ab -\n", min_size=1, max_size=12),
        min_size=1,
        max_size=30,
    ),
    scores=st.lists(st.integers(0, 5), min_size=30, max_size=30),
    over=st.integers(-5, 400),
    rest=st.integers(0, 50),
)
def test_cutting_items_on_an_estimate_cuts_what_one_at_a_time_cut(
    lines: list[str], scores: list[int], over: int, rest: int
) -> None:
    """The same section, items and total as cutting them one `with_items` at a time, also
    when lines repeat or one is part of another (then the estimate is not used)."""
    items = tuple(Item(f"i{n}", t, score=float(scores[n])) for n, t in enumerate(lines))
    s = Section("s", "S", "head\n" + "\n".join(lines), [{"id": i.id} for i in items], items=items)
    total = rest + s.tokens
    budget = total - over
    assert importance._cut_items(s, total, budget) == _one_by_one(s, total, budget)


def _old_fit(
    sections: list[Section], budget: int, rescore: Any
) -> tuple[list[Section], tuple[str, ...], dict[str, int], dict[str, list[str]]]:
    """`fit` as it was: every section scored first, items cut one `with_items` at a time."""
    kept = sorted(sections, key=lambda s: s.priority)
    total = sum(s.tokens for s in kept)
    if budget <= 0 or total <= budget:
        return kept, (), {}, {}
    kept = rescore(kept)
    dropped: list[str] = []
    sizes: dict[str, int] = {}
    cut: dict[str, list[str]] = {}
    for s in sorted(kept, key=lambda s: -s.priority):
        if total <= budget:
            break
        if s.key in importance.KEEP:
            continue
        index = kept.index(s)
        current = s
        if s.items:
            current, removed, total = _one_by_one(s, total, budget)
            if removed:
                cut[s.key] = [i.id for i in removed]
            kept[index] = current
            if total <= budget:
                break
        kept.remove(current)
        dropped.append(s.key)
        sizes[s.key] = s.tokens
        cut.pop(s.key, None)
        total -= current.tokens
    return kept, tuple(dropped), sizes, cut


@settings(max_examples=300, deadline=None)
@given(
    shapes=st.lists(
        st.tuples(
            st.lists(
                st.sampled_from(["- a", "- ab", "- entry one", "x", "- é", "- a\n  b"])
                | st.text("ab -", min_size=1, max_size=20),
                max_size=25,
            ),
            st.integers(1, 80),
        ),
        min_size=1,
        max_size=5,
    ),
    seed=st.integers(0, 10_000),
    budget=st.integers(1, 600),
)
def test_fit_cuts_and_drops_what_it_did_when_it_scored_everything_first(
    shapes: list[tuple[list[str], int]], seed: int, budget: int
) -> None:
    """Scores only for the sections the budget cuts one by one, whole drops decided on the
    smallest one-item section, the cut found on an estimate: the same pack as before."""
    sections = [Section("identity", "Identity", "me", priority=0)]
    for n, (lines, priority) in enumerate(shapes):
        items = tuple(Item(f"s{n}.{k}", t) for k, t in enumerate(lines))
        text = f"head {n}\n" + "\n".join(lines)
        sections.append(Section(f"s{n}", f"S{n}", text, priority=priority, items=items))

    def rescore(found: list[Section]) -> list[Section]:  # deterministic, by item id
        return [
            evolve(s, items=tuple(evolve(i, score=(hash(i.id) ^ seed) % 7) for i in s.items))
            for s in found
        ]

    def shown(out: list[Section]) -> list[tuple[str, str, tuple[str, ...]]]:
        return [(s.key, s.text, s.ids) for s in out]

    new = importance.fit(list(sections), budget, rescore=rescore)
    old = _old_fit(list(sections), budget, rescore)
    assert shown(new[0]) == shown(old[0])
    assert new[1:] == old[1:]
