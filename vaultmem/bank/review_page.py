"""`Review.md`: the page people open in Obsidian to see what waits for review.

vaultmem rewrites only the list between its two markers; everything else on the page is the
person's. It is a page for people: recall leaves it out of agents' results (its list names
every agent's pending facts).
"""

from __future__ import annotations

from collections.abc import Sequence

from vaultmem.bank.model import BankFact
from vaultmem.bank.store import list_bank
from vaultmem.core import clock
from vaultmem.core.errors import VaultmemError
from vaultmem.core.fsio import atomic_write, read_text
from vaultmem.core.vault import REVIEW_PAGE, Vault

REVIEW_START = "<!-- vaultmem:pending:start (vaultmem rewrites this list) -->"


REVIEW_END = "<!-- vaultmem:pending:end -->"


def review_page_text(items: Sequence[BankFact] = ()) -> str:
    """The page `init` creates: a list vaultmem keeps current, and a Dataview query."""
    return (
        "---\ntags:\n  - vaultmem/review\n---\n\n"
        "# Review\n\n"
        "Facts agents proposed with `vaultmem retain`, waiting for a person. Review them with\n"
        "`vaultmem promote` in a terminal, or here: open a fact, set its `status` property to\n"
        "`approved` or `rejected` (add a `reason:`), then run\n"
        "`vaultmem promote apply --reviewer YOUR-NAME`.\n\n"
        "## Pending\n\n"
        f"{_review_block(items)}\n\n"
        "## With Dataview\n\n"
        "For people who use the Dataview plugin; the list above works without it.\n\n"
        "```dataview\n"
        "TABLE type, author, evidence, created\n"
        'FROM "agents"\n'
        'WHERE status = "pending" AND contains(file.folder, "/bank")\n'
        "SORT created DESC\n"
        "```\n"
    )


def _review_block(items: Sequence[BankFact]) -> str:
    lines = [REVIEW_START]
    if not items:
        lines.append("_Nothing is waiting for review._")
    for fact in items:
        target = fact.path.removesuffix(".md")
        extra = f" · evidence {fact.evidence}" if fact.evidence > 1 else ""
        lines.append(
            f"- [[{target}|{fact.name}]] — {fact.type} · {fact.author}{extra} · `{fact.id}`"
        )
    lines.append(REVIEW_END)
    return "\n".join(lines)


def refresh_review_page(vault: Vault) -> bool:
    """Rewrite the pending list in Review.md (only between its markers). Caller holds the bank lock.

    A vault without Review.md is left alone (init creates it); markers a person deleted are
    added again at the end of the page.
    """
    path = vault.path(REVIEW_PAGE)
    if not path.is_file():
        return False
    try:
        text = read_text(path, what="review page")
    except VaultmemError:
        return False
    items = [f for f in list_bank(vault) if not clock.is_past(f.valid_until, clock.today())]
    items.sort(key=lambda f: f.created, reverse=True)
    block = _review_block(items)
    start, end = text.find(REVIEW_START), text.find(REVIEW_END)
    if start != -1 and end > start:
        new = text[:start] + block + text[end + len(REVIEW_END) :]
    else:
        new = text.rstrip("\n") + "\n\n## Pending\n\n" + block + "\n"
    if new != text:
        try:
            atomic_write(path, new)
        except VaultmemError:
            return False  # the facts are written; a read-only page must not turn that into an error
    return True
