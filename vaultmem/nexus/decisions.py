"""Decisions: `nexus/decisions.md`, in the same signed format as the live log, never pruned.

Each decision is announced with a `decision` entry on the live log. A decision stays active until
a later one names it in `supersedes`.
"""

from __future__ import annotations

from typing import Any

from vaultmem.core.errors import EntryNotFoundError, UsageError
from vaultmem.core.records import record
from vaultmem.core.tags import clean_tags
from vaultmem.core.vault import Vault
from vaultmem.nexus import log
from vaultmem.nexus.entry import (
    Entry,
    block_id,
    fold_summary,
    normalize_body,
    read_file,
    strip_controls,
    validate_id,
)


@record
class Decision:
    entry: Entry
    superseded_by: str | None = None

    @property
    def active(self) -> bool:
        return self.superseded_by is None

    def to_dict(self) -> dict[str, Any]:
        data = self.entry.to_dict()
        data.update(active=self.active, superseded_by=self.superseded_by)
        data.setdefault("why", "")
        data.setdefault("supersedes", None)
        data.setdefault("tags", [])
        return data


@record
class DecideResult:
    decision: Entry
    announcement: Entry  # the `decision` entry on the live log
    redactions: tuple[Any, ...] = ()
    warnings: tuple[str, ...] = ()


def decisions(vault: Vault, *, include_superseded: bool = False) -> list[Decision]:
    """Decisions oldest first; superseded ones only when asked (marked with who replaced them)."""
    from vaultmem.nexus.shown import Counts

    entries = read_file(vault.decisions).entries
    replaced: dict[str, str] = {}
    counts = Counts(vault)  # a forged or unsigned decision supersedes nothing
    for e in entries:
        sup = e.extra.get("supersedes")
        if isinstance(sup, str) and sup not in replaced and counts(e):
            replaced[sup] = e.id
    counts.save()
    out = [Decision(e, replaced.get(e.id)) for e in entries]
    return out if include_superseded else [d for d in out if d.active]


def decide(
    vault: Vault,
    agent: str,
    text: str,
    *,
    why: str,
    supersedes: str | None = None,
    tags: tuple[str, ...] | list[str] = (),
    channel: str = "decisions",
) -> DecideResult:
    from vaultmem.core.secrets import scrub

    agent = vault.require_agent(agent)
    why = normalize_body(strip_controls(why))
    if not why:
        raise UsageError("a decision needs its rationale", "pass --why 'because ...'")
    tags = clean_tags(tags)
    # the decision and its rationale are scanned together, before anything is written
    cleaned, found = scrub(
        vault.config.secrets.policy,
        {"decision": fold_summary(strip_controls(text)), "rationale": why},
        identifiers={f"tag {n}": t for n, t in enumerate(tags, 1)},
        what="decision",
    )
    text, why = cleaned["decision"], cleaned["rationale"]
    limit = vault.config.log.max_summary
    if len(fold_summary(text)) > limit:
        raise UsageError(
            f"the decision is {len(fold_summary(text))} characters long (at most {limit})",
            "state the decision in one short line and put the reasoning in --why",
        )
    warnings: list[str] = []
    if supersedes is not None:
        validate_id(supersedes)
        existing = {d.entry.id: d for d in decisions(vault, include_superseded=True)}
        if supersedes not in existing:
            raise EntryNotFoundError(
                f"no decision {supersedes!r} in {vault.rel(vault.decisions)}",
                "list them with: vaultmem decisions --all",
            )
        if not existing[supersedes].active:
            warnings.append(
                f"{supersedes} was already superseded by {existing[supersedes].superseded_by}"
            )
    body = [f"**Why:** {why}"]
    if supersedes:
        body.append(f"**Supersedes:** [[#^{block_id(supersedes)}|{supersedes}]]")
    if tags:
        body.append("**Tags:** " + " ".join(f"#{t}" for t in tags))
    extra: dict[str, Any] = {"why": why, "tags": list(tags)}
    if supersedes:
        extra["supersedes"] = supersedes
    first = log.append(
        vault,
        agent,
        text,
        channel=channel,
        type_="decision",
        body="\n\n".join(body),
        log="decisions",
        extra=extra,
    )
    d = first.entry
    note = f"Why: {why}" + (
        f"\n\nSupersedes [[decisions#^{block_id(supersedes)}|{supersedes}]]." if supersedes else ""
    )
    second = log.append(
        vault,
        agent,
        d.summary,
        channel=channel,
        type_="decision",
        body=f"{note}\n\nRecorded as [[decisions#^{block_id(d.id)}|{d.id}]] in the decision log.",
        extra={"decision": d.id},
    )
    return DecideResult(d, second.entry, (*found, *first.redactions), tuple(warnings))
