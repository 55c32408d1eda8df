"""Recall quality at the level of facts: LoCoMo's own observations, one note per fact.

    python bench/recall_facts.py [--data ../shared/data/locomo] [--work DIR]
        [--modes keyword,hybrid,semantic] [--by-category]

LoCoMo ships, per session and speaker, "observations": short facts, each citing the dialogue
turns it comes from (`D3:5`). This script writes each as a note of a vault (the data stays
where it is; the vault goes to a temporary folder or --work): the fact's text under a heading
that names its speaker and the session's date, frontmatter with the conversation, session and
the turns. A question's gold notes are the facts citing one of its evidence turns; questions
with none (their evidence has no observation) are left out. This is the fact-level set the
issue compares with taosmd 0.4.0 (MiniLM, "boost" fusion: R@1 .551, R@5 .785, R@10 .848, MRR
.649 there). Scored as `bench/recall_quality.py` scores sessions: R@k is any gold fact in the
top k; MRR@10. Printed per half (conversations 0-4 and 5-9; nothing here was ever tuned on
either) and overall, for plain stemmed BM25 over whole notes and each mode.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from recall_quality import (
    TUNED_CONVERSATIONS,
    apply_knobs,
    bm25_baseline,
    common_options,
    modes_of,
    print_header,
    print_row,
    print_timing,
    run,
)

CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}


def _turns(value: object) -> list[str]:
    items = value if isinstance(value, list) else [value]
    return [t for item in items for t in re.split(r"[;,\s]+", str(item)) if t]


def fact_vault(data: Path, work: Path) -> tuple[Path, list[dict[str, object]]]:
    """(the vault of facts, the questions with their gold fact notes and conversation)."""
    root = work / "facts-vault"
    conversations = json.loads((data / "locomo10.json").read_text(encoding="utf-8"))
    rows: list[dict[str, object]] = []
    (root / "facts").mkdir(parents=True, exist_ok=True)
    (root / "vaultmem.toml").write_text('language = "en"\n', encoding="utf-8")
    for conv in conversations:
        cid = str(conv["sample_id"])
        citing: dict[str, list[str]] = defaultdict(list)
        n = 0
        for key, per_speaker in conv["observation"].items():
            session = int(re.findall(r"\d+", key)[0])
            when = str(conv["conversation"].get(f"session_{session}_date_time", ""))
            for speaker, facts in per_speaker.items():
                for item in facts:
                    text, turns = str(item[0]), _turns(item[1])
                    n += 1
                    rel = f"facts/{cid}/fact-{n:04d}.md"
                    for t in turns:
                        citing[t].append(rel)
                    if (root / rel).is_file():  # a kept --work vault: not rewritten, not reindexed
                        continue
                    (root / rel).parent.mkdir(parents=True, exist_ok=True)
                    meta = (
                        f"---\nconversation: {cid}\nsession: {session}\n"
                        f"speaker: {json.dumps(speaker)}\nturns: {json.dumps(turns)}\n---\n"
                    )
                    (root / rel).write_text(
                        f"{meta}# {speaker}, {when}\n\n{text}\n", encoding="utf-8"
                    )
        for qa in conv["qa"]:
            if qa.get("category") == 5:
                continue
            gold = sorted({rel for e in _turns(qa.get("evidence", [])) for rel in citing[e]})
            if gold:
                rows.append(
                    {
                        "question": str(qa["question"]),
                        "evidence_sessions": gold,  # the name recall_quality's scorer reads
                        "conv": cid,
                        "category": qa.get("category"),
                    }
                )
    return root, rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    common_options(ap)
    ap.add_argument("--by-category", action="store_true", help="R@10 per question category")
    args = ap.parse_args()
    apply_knobs(args.set)

    from vaultmem.core.vault import Vault
    from vaultmem.search.query import recall

    modes = modes_of(args.modes)
    with tempfile.TemporaryDirectory() as tmp:
        work = args.work or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        root, rows = fact_vault(args.data, work)
        vault = Vault.open(root)
        order = list(dict.fromkeys(str(q["conv"]) for q in rows))
        first_half = set(order[:TUNED_CONVERSATIONS])
        notes = sum(1 for _ in (root / "facts").rglob("*.md"))
        print(f"LoCoMo facts: {notes} fact notes, {len(rows)} questions with a gold fact")
        print_header()

        def report(label: str, scores: list[tuple[float, ...]]) -> None:
            halves = {
                "convs 0-4": [
                    s for s, q in zip(scores, rows, strict=True) if q["conv"] in first_half
                ],
                "convs 5-9": [
                    s for s, q in zip(scores, rows, strict=True) if q["conv"] not in first_half
                ],
                "overall": scores,
            }
            if args.by_category:
                for cat, name in CATEGORIES.items():
                    halves[name] = [
                        s for s, q in zip(scores, rows, strict=True) if q["category"] == cat
                    ]
            for name, found in halves.items():
                print_row(label, name, found)

        report("BM25", bm25_baseline(root, rows))
        for mode in modes:
            started = time.perf_counter()
            first = recall(vault, "warm up", limit=1, mode=mode)
            build = time.perf_counter() - started
            scores, times = run(recall, vault, rows, mode)
            report(mode, scores)
            print_timing(mode, build, first, times)


if __name__ == "__main__":
    main()
