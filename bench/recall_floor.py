"""Recall that knows when it knows nothing: `[recall] min_similarity`, calibrated and checked.

    python bench/recall_floor.py [--data ../shared/data/locomo] [--work DIR]
        [--floors 0,0.2,0.25,...] [--removed N]

Hybrid recall adds what the embeddings find; a note that keyword search does not find is shown
only when its cosine with the question reaches the floor. This script measures, for each floor
in `--floors`, what that costs on questions that have an answer (R@k) and what it buys on
questions that have none (the abstention rate: the share answered "No hits").

Sets, all from LoCoMo (the data stays where it is; the vaults go to a temporary folder or
--work), none of them what the ranker was tuned on unless said:

- **calibration**: the fact-level vault (`bench/recall_facts.py`), conversations 0-4, its
  questions as they are and without their answer (below): the floor is chosen here, and only
  here (the rule is printed with the choice);
- **held out**: the fact-level vault's conversations 5-9, the session vault's
  (`bench/recall_quality.py`) conversations 5-9, each as asked and without its answer;
  **nonsense**: 200 made-up one- and two-word queries (`zorblaxquen`), which no note holds;
- the session vault's conversations 0-4 are printed too, marked: every ranker knob and the
  hybrid weight were tuned on them.

*Without its answer*: the question asked of the vault with its gold notes taken out. Whether
anything qualifies does not depend on the gold notes being there (keyword matches and cosines
are per note), so abstention is read from the same recall with the gold notes' hits dropped;
`--removed N` checks that for N questions by really moving their gold notes out of the vault
and recalling again. For each question one hybrid recall runs with the floor off (limit 40;
each hit carries its keyword rank and its cosine); a floor keeps the keyword hits and the
dense-only hits at or above it, and changes no score (cosines are rescaled over every dense
candidate), so its ranking is that list filtered. The chosen floor is then run end to end
(`recall()` with `min_similarity` set) and must give the same figures. Keyword and plain stemmed
BM25 rows: their own rankings (BM25 abstains when no note holds any word of the question).
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from recall_facts import fact_vault
from recall_quality import (
    DEFAULT_DATA,
    SYLLABLES,
    TUNED_CONVERSATIONS,
    build_vault,
    mean,
    no_shared_word,
    score,
)

LIMIT = 40  # hits kept per question with the floor off: a floor's top 10 come from these
FLOORS = (0.0, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45)
# the calibration rule: the floor is the 99th percentile of the best cosine that a made-up
# query reaches in the calibration vault (rounded up to 0.01): 99% of such queries say nothing
NONSENSE_SHARE = 0.99

Row = dict[str, Any]
# (path, keyword rank or None, cosine or None) per hit, best first
Listing = list[tuple[str, int | None, float | None]]


def nonsense(n: int = 200, seed: int = 38) -> list[Row]:
    """Made-up one- and two-word queries (`zorblaxquen`): no note holds them."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        words = [
            "".join(rng.choice(SYLLABLES) for _ in range(3 + rng.randrange(2)))
            for _ in range(1 + i % 2)
        ]
        out.append({"question": " ".join(words), "evidence_sessions": [], "conv": "-"})
    return out


def set_floor(root: Path, floor: float) -> None:
    """`[recall] min_similarity` in the vault's config (the rest of it kept)."""
    toml = root / "vaultmem.toml"
    lines = [
        line
        for line in toml.read_text(encoding="utf-8").splitlines()
        if not line.startswith("min_similarity")
    ]
    if "[recall]" not in lines:
        lines.append("[recall]")
    lines.insert(lines.index("[recall]") + 1, f"min_similarity = {floor}")
    toml.write_text("\n".join(lines) + "\n", encoding="utf-8")


def listings(root: Path, rows: list[Row], mode: str, limit: int = LIMIT) -> list[Listing]:
    from vaultmem.core.vault import Vault
    from vaultmem.search.query import recall

    vault = Vault.open(root)
    out = []
    for q in rows:
        res = recall(vault, str(q["question"]), limit=limit, mode=mode)  # ranks, similarity: always
        out.append([(h.path, h.ranks[0], h.similarity) for h in res.hits])
    return out


def shown(listing: Listing, floor: float, drop: frozenset[str] = frozenset()) -> list[str]:
    """The paths a floor shows, best first (at most 10)."""
    kept = [
        p
        for p, kw, cos in listing
        if p not in drop and (kw is not None or (cos is not None and cos >= floor))
    ]
    return kept[:10]


def bm25_ranked(root: Path, rows: list[Row]) -> list[list[str]]:
    """Plain stemmed BM25 over whole notes, as `recall_quality.bm25_baseline`, ranked paths."""
    import math
    from collections import Counter

    from vaultmem.search.whoosh_analysis import analyzer

    ana = analyzer("en")
    docs = {
        p.relative_to(root).as_posix(): Counter(t.text for t in ana(p.read_text(encoding="utf-8")))
        for p in sorted(root.rglob("*.md"))
        if ".vaultmem" not in p.relative_to(root).parts
    }
    avg = sum(sum(c.values()) for c in docs.values()) / len(docs)
    df = Counter(t for c in docs.values() for t in c)
    out = []
    for q in rows:
        terms = {t.text for t in ana(str(q["question"]))}
        scores = {}
        for path, c in docs.items():
            length = sum(c.values())
            s = sum(
                math.log(1 + (len(docs) - df[t] + 0.5) / (df[t] + 0.5))
                * c[t]
                * 2.2
                / (c[t] + 1.2 * (0.25 + 0.75 * length / avg))
                for t in terms
                if t in c
            )
            if s:
                scores[path] = s
        out.append(sorted(scores, key=lambda p: -scores[p]))
    return out


def figures(ranked: list[list[str]], rows: list[Row], gone: list[list[str]]) -> dict[str, float]:
    """R@1/5/10/MRR and abstention as asked, abstention without the answer, and the dense-only
    padding is not counted here (see `padding`)."""
    answered = [r for r in rows if r["evidence_sessions"]]
    out: dict[str, float] = {"n": len(rows)}
    if answered:
        scored = [
            score(p, set(q["evidence_sessions"]))
            for p, q in zip(ranked, rows, strict=True)
            if q["evidence_sessions"]
        ]
        out.update(zip(("r1", "r5", "r10", "mrr"), mean(scored), strict=True))
    out["abstain"] = sum(not p for p in ranked) / len(rows)
    out["abstain_no_answer"] = sum(not p for p in gone) / len(rows)
    return out


def table(
    name: str, rows: list[Row], hybrid: list[Listing], keyword: list[Listing], bm25: list[list[str]]
) -> dict[str, dict[str, float]]:
    gold = [frozenset(q["evidence_sessions"]) for q in rows]
    res: dict[str, dict[str, float]] = {}
    res["BM25"] = figures(
        bm25, rows, [[p for p in r if p not in g] for r, g in zip(bm25, gold, strict=True)]
    )
    kw = [shown(x, 2.0) for x in keyword]
    res["keyword"] = figures(
        kw, rows, [shown(x, 2.0, g) for x, g in zip(keyword, gold, strict=True)]
    )
    for f in FLOORS:
        ranked = [shown(x, f) for x in hybrid]
        gone = [shown(x, f, g) for x, g in zip(hybrid, gold, strict=True)]
        row = figures(ranked, rows, gone)
        # dense-only hits shown per question without its answer: what the floor removes
        row["padding"] = sum(
            sum(1 for p, kwr, _c in x if p in s and kwr is None)
            for x, s in zip(hybrid, gone, strict=True)
        ) / len(rows)
        res[f"hybrid {f:g}"] = row
    print(f"\n{name}: {len(rows)} questions")
    print(
        f"  {'ranker':12} {'R@1':>6} {'R@5':>6} {'R@10':>6} {'MRR':>6} {'abst.':>6} {'abst. no answer':>16} {'dense-only shown':>17}"
    )
    for label, r in res.items():
        nums = " ".join(f"{r.get(k, float('nan')):>6.3f}" for k in ("r1", "r5", "r10", "mrr"))
        pad = f"{r['padding']:>17.2f}" if "padding" in r else " " * 17
        print(f"  {label:12} {nums} {r['abstain']:>6.3f} {r['abstain_no_answer']:>16.3f} {pad}")
    return res


def choose(junk: list[Listing]) -> tuple[float, str]:
    """The floor from made-up queries' nearest notes (semantic listings), and how it was had."""
    import math

    best = sorted(max((c or 0.0) for _p, _k, c in x) if x else 0.0 for x in junk)
    at = best[min(len(best) - 1, math.ceil(NONSENSE_SHARE * len(best)) - 1)]
    floor = math.ceil(at * 100) / 100
    quartiles = " / ".join(f"{best[int(q * (len(best) - 1))]:.3f}" for q in (0.0, 0.5, 0.9, 1.0))
    return floor, (
        f"best cosine of {len(best)} made-up queries in the calibration vault: min / median / "
        f"90th / max {quartiles}; {NONSENSE_SHARE:.0%} at or below {at:.3f}: floor {floor:g}"
    )


def removed_check(root: Path, rows: list[Row], hybrid: list[Listing], n: int, floor: float) -> str:
    """For n questions, move the gold notes out, recall, put them back: the same paths shown?"""
    step = max(1, len(rows) // n)
    same = total = agree = 0
    with tempfile.TemporaryDirectory() as aside:
        for i in range(0, len(rows), step)[:n]:
            gold = [str(p) for p in rows[i]["evidence_sessions"]]
            for rel in gold:
                (Path(aside) / rel).parent.mkdir(parents=True, exist_ok=True)
                shutil.move(str(root / rel), str(Path(aside) / rel))
            try:
                real = listings(root, [rows[i]], "hybrid")[0]
            finally:
                for rel in gold:
                    shutil.move(str(Path(aside) / rel), str(root / rel))
            total += 1
            a, b = shown(real, floor), shown(hybrid[i], floor, frozenset(gold))
            same += set(a) == set(b)
            agree += bool(a) == bool(b)
    return (
        f"gold notes really removed for {total} questions, floor {floor:g}: the same answer "
        f"or abstention for {agree}, the same top-10 set for {same}"
    )


def main() -> None:
    global FLOORS
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA, help="the LoCoMo folder")
    ap.add_argument("--work", type=Path, default=None, help="where to build the vaults (kept)")
    ap.add_argument("--floors", default=",".join(f"{f:g}" for f in FLOORS))
    ap.add_argument("--removed", type=int, default=20, help="questions checked by real removal")
    ap.add_argument("--every", type=int, default=10, help="end-to-end check on every Nth question")
    args = ap.parse_args()
    FLOORS = tuple(float(f) for f in args.floors.split(","))

    from vaultmem.core.vault import Vault
    from vaultmem.search.query import recall

    with tempfile.TemporaryDirectory() as tmp:
        work = args.work or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        sessions, queries = build_vault(args.data, work)
        s_rows = [json.loads(line) for line in queries.read_text().splitlines() if line]
        facts, f_rows = fact_vault(args.data, work)
        order = list(dict.fromkeys(str(q["conv"]) for q in s_rows))
        first = set(order[:TUNED_CONVERSATIONS])
        for root in (sessions, facts):
            set_floor(root, 0.0)
            t0 = time.perf_counter()
            recall(Vault.open(root), "warm up", limit=1, mode="hybrid")
            print(f"{root.name}: indexed and embedded in {time.perf_counter() - t0:.0f} s")
        t0 = time.perf_counter()
        # calibration: the facts vault, never tuned on; made-up queries, and the first half's
        # questions for what the floor costs the dense side alone
        junk_a, junk_b = nonsense(seed=38), nonsense(seed=39)
        calib = [q for q in f_rows if q["conv"] in first]
        junk = listings(facts, junk_a, "semantic")
        floor, how = choose(junk)
        dense = listings(facts, calib, "semantic")
        print(f"\ncalibration (facts vault, conversations 0-4): {how}")
        for f in sorted({0.0, floor, *FLOORS}):
            ranked = [shown(x, f) for x in dense]
            print(
                f"  semantic only, floor {f:<5g} on its {len(calib)} questions: "
                + " / ".join(f"{v:.3f}" for v in list(figures(ranked, calib, ranked).values())[1:6])
                + "  (R@1, R@5, R@10, MRR, abstained)"
            )
        FLOORS = tuple(sorted({0.0, floor, *FLOORS}))
        paraphrased = [q for q in no_shared_word(args.data, s_rows) if q["conv"] not in first]
        sets = {
            "facts, conversations 5-9": (facts, [q for q in f_rows if q["conv"] not in first]),
            "sessions, conversations 5-9": (
                sessions,
                [q for q in s_rows if q["conv"] not in first],
            ),
            "sessions 5-9, no word shared with the evidence": (sessions, paraphrased),
            "made-up queries (sessions vault)": (sessions, junk_b),
        }
        results: dict[str, Any] = {"floor": floor, "calibration": how}
        lists: dict[str, list[Listing]] = {}
        for name, (root, rows) in sets.items():
            hybrid = listings(root, rows, "hybrid")
            keyword = listings(root, rows, "keyword", limit=10)
            lists[name] = hybrid
            results[name] = table(name, rows, hybrid, keyword, bm25_ranked(root, rows))
        print(f"\n{time.perf_counter() - t0:.0f} s for the recalls")
        # end to end: recall() itself with the chosen floor, on every Nth question of each set
        for root in (sessions, facts):
            set_floor(root, floor)
        for name, (root, rows) in sets.items():
            picked = list(range(0, len(rows), args.every))
            real = listings(root, [rows[i] for i in picked], "hybrid", limit=10)
            offline = [shown(lists[name][i], floor) for i in picked]
            same = sum([p for p, _k, _c in r] == o for r, o in zip(real, offline, strict=True))
            print(f"end to end at {floor:g}, {name}: the same top 10 for {same} of {len(picked)}")
        if args.removed:
            for name in ("sessions, conversations 5-9", "facts, conversations 5-9"):
                root, rows = sets[name]
                set_floor(root, 0.0)
                print(f"{name}: " + removed_check(root, rows, lists[name], args.removed, floor))
        (work / "recall_floor.json").write_text(json.dumps(results, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
