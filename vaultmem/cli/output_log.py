"""Plain-text output of the log layer (no rich: `log` and `append` must start fast, and the
output is read by agents and scripts as much as by people)."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from vaultmem.nexus.decisions import Decision
    from vaultmem.nexus.entry import Entry
    from vaultmem.nexus.verify import VerifyReport


def _w(text: str) -> None:
    sys.stdout.write(text + "\n")


SHOWN_SUMMARY_CHARS = 2_000  # what `log` prints of one entry; `--json` prints it whole
SHOWN_BODY_CHARS = 20_000  # the default [log] max_body: a loosened vault's entries are cut


def entry_text(e: Entry) -> str:
    acks = f"  (acks {', '.join(e.acks)})" if e.acks else ""
    from vaultmem.app.pack.sections import cut

    whole = "`vaultmem log --json`"  # prints the entry whole
    summary = cut(e.summary, SHOWN_SUMMARY_CHARS, whole)
    head = f"{e.id}  {e.time}  {e.agent} · {e.channel} · {e.type}  {summary}{acks}"
    if not e.body:
        return head
    body = cut(e.body, SHOWN_BODY_CHARS, whole)
    return head + "\n" + "\n".join(f"    {ln}" if ln else "" for ln in body.split("\n"))


def print_entries(entries: Sequence[Entry], *, as_json: bool = False) -> None:
    for e in entries:
        if as_json:
            _w(json.dumps(e.to_dict(), ensure_ascii=False))
        else:
            _w(entry_text(e))
    sys.stdout.flush()


def print_decisions(decisions: Sequence[Decision]) -> None:
    if not decisions:
        _w("no decisions yet; record one with: vaultmem decide TEXT --why RATIONALE")
        return
    for d in decisions:
        e = d.entry
        mark = "" if d.active else f"  [superseded by {d.superseded_by}]"
        sup = f"  (supersedes {e.extra['supersedes']})" if e.extra.get("supersedes") else ""
        _w(f"{e.id}  {e.time[:10]}  {e.agent}  {e.summary}{sup}{mark}")
        why = str(e.extra.get("why", ""))
        if why:
            _w("    why: " + why.replace("\n", "\n         "))
        tags = e.extra.get("tags") or []
        if tags:
            _w("    tags: " + " ".join(f"#{t}" for t in tags))


def print_verify(report: VerifyReport, other: Sequence[Any]) -> None:
    files = ", ".join(f"{rel} ({n})" for rel, n in report.checked.items())
    _w(f"checked entries: {files}")
    for p in report.problems:
        where = f"{p.path}:{p.line}" if p.line else p.path
        _w(f"  {p.kind:<15} {where}  {p.message}")
    for p in other:
        where = f"{p.path}:{p.line}" if p.line else p.path
        _w(f"  {p.kind:<15} {where}  {p.message}")
    if report.ok and not other:
        _w("ok: every entry verifies (hashes, chains, signatures)")
    else:
        _w(f"{len(report.problems) + len(other)} problem(s) found")
