"""A synthetic vault for speed benchmarks: N notes of 150-400 words with realistic frontmatter.

    python bench/synth_vault.py OUT_DIR --notes 10000 [--seed 7]

Notes are spread over wiki/, projects/, daily/, memory/ and agents/<a>/memory/, with titles,
tags, dates, a type and status on facts, two to four headings each, and words drawn from a
Zipf-like distribution over a made-up vocabulary (so term statistics look like prose).
Deterministic for a given seed.
"""

from __future__ import annotations

import argparse
import itertools
import random
from datetime import date, timedelta
from pathlib import Path

SYLLABLES = [
    "ka", "lo", "mi", "ra", "te", "vo", "su", "ne", "pi", "da", "ro", "ve", "li", "ma", "to",
    "ba", "ce", "fi", "gu", "ho", "ja", "ki", "lu", "mo", "nu", "pa", "qui", "se", "ti", "zu",
]  # fmt: skip
COMMON = [
    "the",
    "of",
    "and",
    "to",
    "in",
    "a",
    "is",
    "that",
    "for",
    "it",
    "as",
    "with",
    "was",
    "on",
    "be",
    "by",
    "this",
    "are",
    "or",
    "from",
    "at",
    "which",
    "but",
    "not",
    "have",
    "has",
    "an",
    "they",
    "you",
    "we",
    "can",
    "will",
    "all",
    "one",
    "their",
    "there",
    "been",
    "more",
    "if",
    "when",
    "about",
    "what",
]
AGENTS = ("ella", "lyra", "orin")
TYPES = ("user", "feedback", "project", "reference", "decision", "fact")


def vocabulary(rng: random.Random, size: int = 6000) -> list[str]:
    words: set[str] = set()
    while len(words) < size:
        words.add("".join(rng.choice(SYLLABLES) for _ in range(rng.randint(2, 4))))
    return sorted(words)


def sentence(rng: random.Random, vocab: list[str], weights: list[float]) -> str:
    n = rng.randint(6, 16)
    words = []
    for _ in range(n):
        if rng.random() < 0.35:
            words.append(rng.choice(COMMON))
        else:
            words.append(rng.choices(vocab, cum_weights=weights, k=1)[0])
    return " ".join(words).capitalize() + "."


def note_text(rng: random.Random, vocab: list[str], weights: list[float], n: int, rel: str) -> str:
    title = " ".join(rng.choices(vocab, cum_weights=weights, k=rng.randint(2, 4))).title()
    day = date(2024, 1, 1) + timedelta(days=rng.randint(0, 900))
    tags = sorted(set(rng.choices(vocab[:200], k=rng.randint(1, 4))))
    meta = [f"title: {title}", f"date: {day.isoformat()}", f"tags: [{', '.join(tags)}]"]
    if "/memory/" in f"/{rel}":
        meta += [
            f"name: {title}",
            f"description: {sentence(rng, vocab, weights)}",
            f"type: {rng.choice(TYPES)}",
            f"id: m-{n:08x}",
            f"status: {'retracted' if rng.random() < 0.05 else 'active'}",
        ]
    target = rng.randint(150, 400) - 20  # frontmatter and headings make up the rest
    body: list[str] = []
    words = 0
    headings = rng.randint(2, 4)
    per = target // headings
    for h in range(headings):
        body.append(f"\n## {' '.join(rng.choices(vocab, cum_weights=weights, k=2)).title()}\n")
        para: list[str] = []
        section_words = 0
        while section_words < per:
            s = sentence(rng, vocab, weights)
            para.append(s)
            section_words += len(s.split())
            if len(para) >= 3:
                body.append(" ".join(para))
                body.append("")
                para = []
        if para:
            body.append(" ".join(para))
        words += section_words
        if h == 0 and rng.random() < 0.3:
            body.append(f"\nSee [[{' '.join(rng.choices(vocab, k=2)).title()}]].")
    return "---\n" + "\n".join(meta) + "\n---\n# " + title + "\n" + "\n".join(body) + "\n"


def generate(out: Path, notes: int, seed: int = 7) -> Path:
    rng = random.Random(seed)
    vocab = vocabulary(rng)
    weights = list(itertools.accumulate(1.0 / (rank + 10) for rank in range(len(vocab))))
    out.mkdir(parents=True, exist_ok=True)
    (out / "vaultmem.toml").write_text(
        f"agents = [{', '.join(repr(a).replace(chr(39), chr(34)) for a in AGENTS)}]\n"
        'language = "en"\n'
        # these benches measure the keyword index: with the semantic extra installed, "auto"
        # would embed every note first
        '\n[recall]\nmode = "keyword"\n',
        encoding="utf-8",
    )
    for n in range(notes):
        r = rng.random()
        if r < 0.45:
            rel = f"wiki/{n % 40:02d}/note-{n:05d}.md"
        elif r < 0.7:
            rel = f"projects/p{n % 25:02d}/note-{n:05d}.md"
        elif r < 0.85:
            rel = f"daily/note-{n:05d}.md"
        elif r < 0.93:
            rel = f"memory/fact-{n:05d}.md"
        else:
            rel = f"agents/{rng.choice(AGENTS)}/memory/fact-{n:05d}.md"
        path = out / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(note_text(rng, vocab, weights, n, rel), encoding="utf-8")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--notes", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args()
    generate(args.out, args.notes, args.seed)
    print(f"{args.notes} notes -> {args.out}")


if __name__ == "__main__":
    main()
