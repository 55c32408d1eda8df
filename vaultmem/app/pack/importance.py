"""Importance and decay: which items a `read --budget` keeps when it must cut.

Every memory, log entry, decision, pending fact, digest and profile line the pack shows as a
list item gets a score (docs/cli.md, under `vaultmem read`: "Importance and decay"):

    score = (type weight + evidence * ln(evidence count) + used * ln(1 + uses))
            * (floor + (1 - floor) * 0.5 ** (age in days / half_life_days))

The type weight comes from `[importance]` (decisions, failures and preferences high; acks and
plain notes low); the evidence count is how many times a fact was proposed or merged; uses are
how often the reading agent was given the item by `recall` (the last 256 KB of its receipts)
plus, for a log entry, whether someone acked it; the age is from the item's time (an entry's
time, a fact's `updated`, a digest's period end). Scores are computed only when the pack is
over its budget.

When it must cut, `fit` goes through the sections from the least important (the highest
priority number) up, as before; a section made of items loses its lowest-scoring items first
(ties: the older first) and is dropped only when its last item does not fit either. The pack lists what was cut (ids, per section) and
what was dropped.
"""

from __future__ import annotations

import re
from collections import Counter
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vaultmem.app.pack.sections import Item, Section, estimate_tokens
from vaultmem.core.errors import PathOutsideVaultError
from vaultmem.core.importance import score
from vaultmem.core.patterns import later
from vaultmem.core.records import evolve

if TYPE_CHECKING:
    from vaultmem.core.vault import Vault

KEEP = ("identity", "inbox")  # sections a budget never drops


# --- what an item is worth ---------------------------------------------------------------------

_QUICK = later(r"^(type|evidence|updated|created)[ \t]*:[ \t]*['\"]?(.*?)['\"]?[ \t]*$", re.M)


def fact_meta(vault: Vault, path: Path) -> dict[str, str]:
    """type, evidence, updated of a fact note, without YAML (only when the pack must cut)."""
    try:
        head = vault.read_bytes(path, 4000)[:4000].decode("utf-8", errors="replace")
    except (OSError, PathOutsideVaultError):
        return {}
    if not head.startswith("---"):
        return {}
    end = head.find("\n---", 3)
    found: dict[str, str] = {}
    for m in _QUICK.finditer(head[: end if end > 0 else len(head)]):
        found.setdefault(m.group(1), m.group(2))
    return found


def uses(vault: Vault, agent: str) -> Counter[str]:
    """How often `recall` recently gave the agent each id or file (its receipts)."""
    from vaultmem.app.pack.receipts import recent_uses

    out: Counter[str] = Counter()
    for r in recent_uses(vault, agent, "recall"):
        out.update(r.ids)
        out.update(p.split(":", 1)[0] for p in r.paths)
    return out


def rate(
    vault: Vault,
    agent: str,
    sections: list[Section],
    now: datetime,
    *,
    used: Counter[str] | None = None,
) -> list[Section]:
    """The sections with every item scored (`used`: `uses(vault, agent)`, if already read)."""
    settings = vault.config.importance
    used = uses(vault, agent) if used is None else used
    out = []
    for s in sections:
        if not s.items:
            out.append(s)
            continue
        items = []
        for item in s.items:
            kind, time, evidence = item.type, item.time, item.evidence
            if item.path and (not kind or not time):
                meta = fact_meta(vault, vault.root / item.path)
                kind = kind or meta.get("type", "fact")
                time = time or meta.get("updated") or meta.get("created")
                evidence = int(meta["evidence"]) if meta.get("evidence", "").isdigit() else evidence
            count = used.get(item.id, 0) + (used.get(item.path, 0) if item.path else 0)
            count += item.acked
            items.append(
                evolve(
                    item,
                    score=score(
                        settings, kind or "fact", time=time, now=now, evidence=evidence, used=count
                    ),
                )
            )
        out.append(evolve(s, items=tuple(items)))
    return out


def scorer(vault: Vault, agent: str, now: datetime) -> Any:
    """`rate` for `fit`'s `rescore`, reading the agent's receipts once however often called."""
    read: list[Counter[str]] = []

    def rescore(sections: list[Section]) -> list[Section]:
        if not read:
            read.append(uses(vault, agent))
        return rate(vault, agent, sections, now, used=read[0])

    return rescore


# --- fitting a budget ----------------------------------------------------------------------------


def fit(
    sections: list[Section],
    budget: int,
    *,
    rescore: Any = None,
) -> tuple[list[Section], tuple[str, ...], dict[str, int], dict[str, list[str]]]:
    """(kept sections, dropped section keys, their tokens, cut item ids per section).

    Least important sections first; within a section of items, the lowest-scoring items first
    (ties: the older first). `rescore(sections)` scores the items: called with each section
    whose items the budget cuts one by one, only then (a section that goes whole even with
    one item left needs no scores: scoring a memory line reads its fact note)."""
    kept = sorted(sections, key=lambda s: s.priority)
    if budget <= 0:
        return kept, (), {}, {}
    total = sum(s.tokens for s in kept)
    if total <= budget:
        return kept, (), {}, {}
    dropped: list[str] = []
    sizes: dict[str, int] = {}
    cut: dict[str, list[str]] = {}
    for s in sorted(kept, key=lambda s: -s.priority):
        if total <= budget:
            break
        if s.key in KEEP:
            continue
        index = kept.index(s)
        current = s
        if s.items and not _goes_whole(s, total, budget):
            if rescore is not None:
                s = kept[index] = rescore([s])[0]
            current, removed, total = _cut_items(s, total, budget)
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


def _goes_whole(s: Section, total: int, budget: int) -> bool:
    """Whether cutting `s`'s items one by one would end with the one left still over the
    budget, whichever that is (then `s` is dropped whole, and the order does not matter): the
    smallest one-item section is over. Only when every item's line stands once in the text
    (else what a removal takes is not its line's length); each state before the last is
    larger (a line of 1+ characters goes, the note grows by a digit at most per 9 lines)."""
    if len(s.items) <= 1:
        return total > budget
    needles = ["\n" + i.text for i in s.items]
    if not all(len(n) > 1 and s.text.count(n) == 1 for n in needles):
        return False
    n = len(s.items)
    left = len(s.text) - sum(map(len, needles)) + min(map(len, needles))
    note = f"({n - 1} more not shown: cut to fit the budget, lowest importance first)"
    smallest = estimate_tokens(s.title) + 4 + (left + 2 + len(note) + 3) // 4
    return total - s.tokens + smallest > budget


def _cut_items(s: Section, total: int, budget: int) -> tuple[Section, list[Item], int]:
    """(the section, the items cut, the pack's new total): its lowest-scoring items go one at
    a time until the pack fits or one is left. The number to cut is found on a running
    estimate of the text (one line out per item: cheap), then checked with `with_items` at
    that number and the one before; should the two disagree (a line that is part of another),
    the items go one at a time through `with_items`, as they always did."""
    order = sorted(s.items, key=lambda i: (i.score, i.time or "", i.id))
    base = total - s.tokens  # the rest of the pack

    def stop(k: int, size: int) -> bool:  # where cutting one item at a time stops
        return k >= len(order) or base + size <= budget or len(s.items) - k <= 1

    def without(k: int) -> list[Item]:  # the items left once the k lowest are cut
        gone = {id(victim) for victim in order[:k]}
        return [i for i in s.items if id(i) not in gone]

    title = estimate_tokens(s.title) + 4
    text, k = s.text, 0
    needles = ["\n" + i.text for i in s.items]
    alone = all(text.count(n) == 1 for n in needles)  # else the order of removals may matter
    if alone and not stop(0, s.tokens):
        for k, victim in enumerate(order, 1):
            text = text.replace("\n" + victim.text, "", 1)
            note = f"({k} more not shown: cut to fit the budget, lowest importance first)"
            if stop(k, title + estimate_tokens(f"{text}\n\n{note}")):
                break
    if not alone:
        k = -1
    elif k == 0:
        return s, [], total
    if k > 0:
        smaller = s.with_items(tuple(without(k)), k)
        before = s.with_items(tuple(without(k - 1)), k - 1).tokens if k > 1 else s.tokens
        if stop(k, smaller.tokens) and not stop(k - 1, before):
            return smaller, order[:k], base + smaller.tokens
    current, n = s, 0  # no estimate, or it was off: one at a time
    if stop(0, s.tokens):
        return s, [], total
    for n in range(1, len(order) + 1):
        current = s.with_items(tuple(without(n)), n)
        if stop(n, current.tokens):
            break
    return current, order[:n], base + current.tokens


def cut_note(cut: dict[str, list[str]], sections: list[Section]) -> str:
    """One line for the pack: what the budget cut inside sections, and how to see it."""
    if not cut:
        return ""
    titles = {s.key: s.title for s in sections}
    parts = [
        f"{len(ids)} from {titles.get(key, key)} ({', '.join(ids[:8])}{' …' if len(ids) > 8 else ''})"
        for key, ids in cut.items()
    ]
    return "Cut to fit the budget, lowest importance first: " + "; ".join(parts)
