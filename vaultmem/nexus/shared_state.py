"""Layer 3 use cases beyond the raw log: decisions, checkpoints and the project-state file.

- Decisions go to `nexus/decisions.md` (same signed format as the live log, never pruned) and are
  announced with a `decision` entry on the live log. A decision is active until a later one
  names it in `supersedes`.
- A checkpoint is the agent's own working note, `agents/<agent>/checkpoint.md`, replaced
  atomically on every write; every version is kept in `.vaultmem/journal/checkpoints/`.
- `nexus/project-state.md` is edited one `## Section` at a time under a lock; every other section
  and whatever a person wrote elsewhere stays byte for byte.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vaultmem.core.errors import EntryNotFoundError, UsageError
from vaultmem.core.fsio import append_durable, atomic_write, create_exclusive, read_text
from vaultmem.core.locking import exclusive, lock_path
from vaultmem.core.vault import Vault
from vaultmem.nexus import log

TAG_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_/\-]{0,39}$")
MAX_SECTION = 80
_FENCE = re.compile(r"^\s{0,3}(```|~~~)")
_TOP_HEADING = re.compile(r"^#{1,2}(?:\s|$)")


# --- decisions ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Decision:
    entry: log.Entry
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


@dataclass(frozen=True)
class DecideResult:
    decision: log.Entry
    announcement: log.Entry  # the `decision` entry on the live log
    redactions: tuple[Any, ...] = ()
    warnings: tuple[str, ...] = ()


def list_decisions(vault: Vault, *, include_superseded: bool = False) -> list[Decision]:
    """Decisions oldest first; superseded ones only when asked (marked with who replaced them)."""
    entries = log.read_file(vault.decisions).entries
    replaced: dict[str, str] = {}
    for e in entries:
        sup = e.extra.get("supersedes")
        if isinstance(sup, str) and sup not in replaced:
            replaced[sup] = e.id
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
    from vaultmem.core.secrets import apply_policy

    agent = vault.require_agent(agent)
    why = log.normalize_body(why)
    if not why:
        raise UsageError("a decision needs its rationale", "pass --why 'because ...'")
    why, found = apply_policy(why, vault.config.secrets.policy, what="rationale")
    limit = vault.config.log.max_summary
    if len(log.fold_summary(text)) > limit:
        raise UsageError(
            f"the decision is {len(log.fold_summary(text))} characters long (at most {limit})",
            "state the decision in one short line and put the reasoning in --why",
        )
    for tag in tags:
        if not TAG_RE.match(tag):
            raise UsageError(f"invalid tag {tag!r}", "tags are words: letters, digits, _ - /")
    warnings: list[str] = []
    if supersedes is not None:
        log.validate_id(supersedes)
        existing = {d.entry.id: d for d in list_decisions(vault, include_superseded=True)}
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
        body.append(f"**Supersedes:** {supersedes}")
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
    note = f"Why: {why}" + (f"\n\nSupersedes {supersedes}." if supersedes else "")
    second = log.append(
        vault,
        agent,
        d.summary,
        channel=channel,
        type_="decision",
        body=f"{note}\n\nRecorded as {d.id} in [[decisions]].",
        extra={"decision": d.id},
    )
    return DecideResult(d, second.entry, (*found, *first.redactions), tuple(warnings))


# --- checkpoints ----------------------------------------------------------------------------------


@dataclass(frozen=True)
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
    return vault.state_dir / "journal" / "checkpoints" / f"{agent}.jsonl"


def render_checkpoint(cp: Checkpoint) -> str:
    # JSON strings are valid YAML scalars: no YAML library needed to write them safely
    head = [
        "---",
        f"agent: {cp.agent}",
        f"updated: {json.dumps(cp.updated)}",
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
    from vaultmem.core import notes

    agent = vault.require_agent(agent)
    path = vault.checkpoint(agent)
    rel = vault.rel(path)
    if not path.exists():
        return Checkpoint(agent, rel, False)
    note = notes.read(path)
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


def write_checkpoint(
    vault: Vault,
    agent: str,
    text: str,
    *,
    task: str | None = None,
    next_steps: tuple[str, ...] | list[str] = (),
) -> tuple[Checkpoint, tuple[Any, ...]]:
    """Replace the agent's checkpoint atomically; keep this version in the journal."""
    from vaultmem.core.secrets import apply_policy

    agent = vault.require_agent(agent)
    policy = vault.config.secrets.policy
    text, found = apply_policy(log.normalize_body(text), policy, what="checkpoint")
    if task is not None:
        task, found_t = apply_policy(log.fold_summary(task), policy, what="task")
        found = [*found, *found_t]
    steps = []
    for step in next_steps:
        clean, found_s = apply_policy(log.fold_summary(step), policy, what="next step")
        found = [*found, *found_s]
        if clean:
            steps.append(clean)
    if not text and not task and not steps:
        raise UsageError("the checkpoint is empty", "pass TEXT (or '-'), --task or --next")
    path = vault.checkpoint(agent)
    vault.path(vault.rel(path))
    cp = Checkpoint(agent, vault.rel(path), True, log.now_ms(), task, text, tuple(steps))
    journal = _checkpoint_journal(vault, agent)
    with exclusive(
        lock_path(vault.state_dir, f"checkpoint-{agent}"),
        vault.config.log.lock_timeout,
        what="checkpoint",
    ):
        journal.parent.mkdir(parents=True, exist_ok=True)
        if path.exists() and not journal.exists():
            # the first version vaultmem replaces (perhaps written by hand) is kept too
            old = read_text(path, what="checkpoint")
            record = {"time": None, "agent": agent, "raw": old}
            append_durable(journal, json.dumps(record, ensure_ascii=False).encode() + b"\n")
        content = render_checkpoint(cp)
        atomic_write(path, content)
        record = {"time": cp.updated, "agent": agent, **cp.to_dict(), "raw": content}
        append_durable(journal, json.dumps(record, ensure_ascii=False).encode() + b"\n")
    return cp, tuple(found)


def checkpoint_history(vault: Vault, agent: str) -> list[dict[str, Any]]:
    """Every version written through vaultmem, oldest first: time, task, text, next, raw."""
    agent = vault.require_agent(agent)
    try:
        data = _checkpoint_journal(vault, agent).read_bytes()
    except FileNotFoundError:
        return []
    out = []
    for raw in data.splitlines():
        try:
            item = json.loads(raw)
        except ValueError:
            continue
        if isinstance(item, dict):
            out.append(item)
    return out


# --- project state ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class StateChange:
    section: str
    created: bool
    path: str
    entry: log.Entry
    redactions: tuple[Any, ...] = ()
    warnings: tuple[str, ...] = ()


def read_state(vault: Vault) -> str:
    path = vault.project_state
    try:
        return read_text(path, what="project state")
    except FileNotFoundError:
        raise EntryNotFoundError(
            f"{vault.rel(path)} does not exist", "create it with: vaultmem state set Goal TEXT"
        ) from None


def state_sections(text: str) -> list[tuple[str, str]]:
    """(title, body) of each `## ` section, skipping headings inside code fences."""
    lines = text.splitlines()
    out: list[tuple[str, str]] = []
    spans = _section_spans(lines)
    for title, start, end in spans:
        out.append((title, "\n".join(lines[start + 1 : end]).strip()))
    return out


def _section_spans(lines: list[str]) -> list[tuple[str, int, int]]:
    """(title, heading line index, end index exclusive) for each `## ` section."""
    heads: list[tuple[int, str, int]] = []  # index, title, level
    fence = False
    in_front = bool(lines) and lines[0].strip() == "---"
    for i, line in enumerate(lines):
        if in_front:
            if i > 0 and line.strip() in ("---", "..."):
                in_front = False
            continue
        if _FENCE.match(line):
            fence = not fence
            continue
        if fence:
            continue
        m = re.match(r"^(#{1,2})\s+(.*?)\s*#*\s*$", line)
        if m:
            heads.append((i, m.group(2), len(m.group(1))))
    spans = []
    for n, (i, title, level) in enumerate(heads):
        if level != 2:
            continue
        end = next((j for j, _t, _lv in heads[n + 1 :]), len(lines))
        spans.append((title, i, end))
    return spans


def set_state_section(vault: Vault, agent: str, section: str, text: str) -> StateChange:
    """Replace the body of `## section` (created at the end if missing) and log who did it."""
    from vaultmem.core.secrets import apply_policy

    agent = vault.require_agent(agent)
    section = log.fold_summary(section).lstrip("#").strip()
    if not section or len(section) > MAX_SECTION:
        raise UsageError(
            f"invalid section name {section!r}", f"one line of at most {MAX_SECTION} characters"
        )
    body, found = apply_policy(log.normalize_body(text), vault.config.secrets.policy, what="state")
    warnings: list[str] = []
    lines_in = body.split("\n") if body else []
    fence = False
    for i, line in enumerate(lines_in):
        if _FENCE.match(line):
            fence = not fence
        elif not fence and _TOP_HEADING.match(line):
            # a `#`/`##` heading would cut the section in two: demote it
            lines_in[i] = "### " + line.lstrip("#").strip()
            warnings.append(f"demoted heading {line.strip()!r} to level 3")
    body = "\n".join(lines_in)
    path = vault.project_state
    vault.path(vault.rel(path))
    with exclusive(
        lock_path(vault.state_dir, "project-state"), vault.config.log.lock_timeout, what="state"
    ):
        if not path.exists():
            from vaultmem.app.scaffold import template

            create_exclusive(path, template("nexus/project-state.md"))
        old = read_text(path, what="project state")
        newline = "\r\n" if "\r\n" in old else "\n"
        lines = old.replace("\r\n", "\n").split("\n")
        spans = _section_spans(lines)
        match = next(((t, s, e) for t, s, e in spans if t.strip().lower() == section.lower()), None)
        new_part = ["", *(body.split("\n") if body else []), ""]
        if match is None:
            while lines and lines[-1] == "":
                lines.pop()
            lines += ["", f"## {section}", *new_part]
            created = True
        else:
            _t, start, end = match
            section = match[0].strip()
            lines = [*lines[: start + 1], *new_part, *lines[end:]]
            created = False
        new_text = "\n".join(lines)
        if not new_text.endswith("\n"):
            new_text += "\n"
        atomic_write(path, new_text.replace("\n", newline))
    verb = "added" if created else "updated"
    entry = log.append(
        vault,
        agent,
        f"project state: {verb} section '{section}'",
        channel="state",
        type_="state",
        body=body,
        extra={"section": section},
    ).entry
    return StateChange(section, created, vault.rel(path), entry, tuple(found), tuple(warnings))
