"""Checkpoints: each agent's working note, `agents/<agent>/checkpoint.md`.

Replaced atomically on every write, so a crash leaves the old or the new one; every version (and
the first one vaultmem replaced, perhaps written by hand) is kept in
`.vaultmem/journal/checkpoints/<agent>.jsonl`.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from vaultmem.core import clock
from vaultmem.core.errors import UsageError
from vaultmem.core.fsio import append_durable, atomic_write, read_text
from vaultmem.core.jsonl import jsonl_line, last_jsonl, read_jsonl
from vaultmem.core.locking import exclusive, lock_path
from vaultmem.core.records import record
from vaultmem.core.vault import Vault
from vaultmem.nexus.entry import fold_summary, normalize_body, strip_controls


@record
class Checkpoint:
    agent: str
    path: str
    exists: bool
    updated: str | None = None
    task: str | None = None
    text: str = ""
    next: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        data = dict(self.__dict__)
        data["next"] = list(self.next)
        return data


def _checkpoint_journal(vault: Vault, agent: str) -> Path:
    return vault.state("journal", "checkpoints", f"{agent}.jsonl")


def render_checkpoint(cp: Checkpoint) -> str:
    # JSON strings are valid YAML scalars: no YAML library needed to write them safely
    head = [
        "---",
        f"agent: {cp.agent}",
        f"updated: {cp.updated}",  # a stamp: plain, so Obsidian shows a date
        f"task: {json.dumps(cp.task or '', ensure_ascii=False)}",
        "tags:",
        "  - vaultmem/checkpoint",
        "---",
        "",
        f"# Checkpoint of {cp.agent}",
        "",
        "Replaced by `vaultmem checkpoint`; earlier versions: `vaultmem checkpoint --history`.",
        "",
        "## Task",
        "",
        cp.task or "(none given)",
        "",
        "## Where I stopped",
        "",
        cp.text or "(nothing written)",
        "",
        "## Next steps",
        "",
    ]
    head += [f"- [ ] {step}" for step in cp.next] or ["(none)"]
    return "\n".join(head) + "\n"


def _sections(body: str) -> dict[str, str]:
    out: dict[str, str] = {}
    current: str | None = None
    buf: list[str] = []
    for line in body.splitlines():
        if line.startswith("## "):
            if current is not None:
                out[current] = "\n".join(buf).strip()
            current, buf = line[3:].strip().lower(), []
        elif current is not None:
            buf.append(line)
    if current is not None:
        out[current] = "\n".join(buf).strip()
    return out


def show_checkpoint(vault: Vault, agent: str) -> Checkpoint:

    agent = vault.require_agent(agent)
    path = vault.checkpoint(agent)
    rel = vault.rel(path)
    if not path.exists():
        return Checkpoint(agent, rel, False)
    note = vault.read_note(path)
    parts = _sections(note.body)
    steps = tuple(
        re.sub(r"^- (\[[ xX]\] )?", "", ln).strip()
        for ln in parts.get("next steps", "").splitlines()
        if ln.startswith("- ")
    )
    task = note.meta.get("task") or parts.get("task")
    text = parts.get("where i stopped")
    if text is None:  # a checkpoint a person wrote by hand: show the whole body
        text = note.body.strip()
    return Checkpoint(
        agent,
        rel,
        True,
        str(note.meta.get("updated") or "") or None,
        str(task) if task and task != "(none given)" else None,
        "" if text == "(nothing written)" else text,
        steps,
    )


def checkpoint(
    vault: Vault,
    agent: str,
    text: str,
    *,
    task: str | None = None,
    next_steps: tuple[str, ...] | list[str] = (),
) -> tuple[Checkpoint, tuple[Any, ...]]:
    """Replace the agent's checkpoint atomically; keep this version in the journal."""
    from vaultmem.core.secrets import scrub

    agent = vault.require_agent(agent)
    fields = {"checkpoint": normalize_body(strip_controls(text))}
    if task is not None:
        fields["task"] = fold_summary(strip_controls(task))
    for n, step in enumerate(next_steps):
        fields[f"next step {n + 1}"] = fold_summary(strip_controls(step))
    # every field is scanned before anything is written (refuse stops them all)
    cleaned, found = scrub(vault.config.secrets.policy, fields, what="checkpoint")
    text = cleaned["checkpoint"]
    task = cleaned.get("task") if task is not None else None
    steps = [cleaned[f"next step {n + 1}"] for n in range(len(next_steps))]
    steps = [s for s in steps if s]
    if not text and not task and not steps:
        raise UsageError("the checkpoint is empty", "pass TEXT (or '-'), --task or --next")
    path = vault.checkpoint(agent)
    vault.path(vault.rel(path))
    cp = Checkpoint(agent, vault.rel(path), True, clock.stamp(), task, text, tuple(steps))
    journal = _checkpoint_journal(vault, agent)
    with exclusive(
        lock_path(vault, f"checkpoint-{agent}"),
        vault.config.log.lock_timeout,
        what="checkpoint",
    ):
        if path.exists():
            # the version about to be replaced is kept when the journal does not have it yet:
            # the first one (perhaps written by hand), or one a person edited since
            old = read_text(path, what="checkpoint")
            last = last_jsonl(journal)
            if last is None or last.get("raw") != old:
                kept = {"time": clock.stamp(), "agent": agent, "by": "person", "raw": old}
                append_durable(journal, jsonl_line(kept))
        content = render_checkpoint(cp)
        atomic_write(path, content)
        record = {"time": cp.updated, "agent": agent, **cp.to_dict(), "raw": content}
        append_durable(journal, jsonl_line(record))
    return cp, tuple(found)


def checkpoint_history(vault: Vault, agent: str) -> list[dict[str, Any]]:
    """Every version written through vaultmem, oldest first: time, task, text, next, raw."""
    agent = vault.require_agent(agent)
    return read_jsonl(_checkpoint_journal(vault, agent))
