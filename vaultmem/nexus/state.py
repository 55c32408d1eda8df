"""The project-state file, `nexus/project-state.md`, edited one `## Section` at a time.

Each change happens under a lock and is logged as a `state` entry naming who changed which
section; every other section and whatever a person wrote elsewhere stays byte for byte.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from vaultmem.core import clock, intents
from vaultmem.core.errors import EntryNotFoundError, IntegrityError, UsageError, VaultmemError
from vaultmem.core.fsio import append_durable, atomic_write, create_exclusive, read_text
from vaultmem.core.jsonl import jsonl_line, read_jsonl
from vaultmem.core.locking import exclusive, lock_path
from vaultmem.core.names import AGENT_NAME_RE
from vaultmem.core.patterns import later
from vaultmem.core.records import record
from vaultmem.core.vault import Vault
from vaultmem.nexus import log
from vaultmem.nexus.entry import Entry, fold_summary, normalize_body, strip_controls

MAX_SECTION = 80
_FENCE = later(r"[ ]{0,3}(`{3,}|~{3,})")
_TOP_HEADING = later(r"#{1,2}(?:\s|$)")
_HEADING = later(r"(#{1,2})[ \t]+(.*?)[ \t]*#*[ \t]*")
_MARK_OPEN = later(r"<{7}(?:[ \t].*)?")
_MARK_CLOSE = later(r">{7}(?:[ \t].*)?")
_MARK_MID = later(r"(?:={7}|\|{7}(?:[ \t].*)?)[ \t]*")
# the last line of a section an agent set: who set it and when (Obsidian hides the comment), so
# that two machines that set one section at once merge by a rule both compute the same way
_STAMP = later(
    rf"<!-- vaultmem: set by (?P<agent>{AGENT_NAME_RE.pattern}) at "
    r"(?P<time>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d{1,6})?Z) -->"
)


def stamp_line(agent: str, time: str) -> str:
    return f"<!-- vaultmem: set by {agent} at {time} -->"


def section_stamp(lines: list[str]) -> tuple[str, str] | None:
    """(time, agent) of the stamp that ends a section's lines (blank lines aside), or None
    when a person wrote the section (or took the stamp out)."""
    for line in reversed(lines):
        if line.strip():
            m = _STAMP.fullmatch(line.strip())
            return (m["time"], m["agent"]) if m else None
    return None


def without_stamps(text: str) -> str:
    """`text` with the stamp lines taken out: what people and models are shown."""
    return "\n".join(ln for ln in text.split("\n") if not _STAMP.fullmatch(ln.strip()))


@record
class StateChange:
    section: str
    created: bool
    path: str
    entry: Entry
    redactions: tuple[Any, ...] = ()
    warnings: tuple[str, ...] = ()


def read_state(vault: Vault) -> str:
    """The file as people read it: the merge stamps taken out."""
    path = vault.project_state
    try:
        return without_stamps(vault.read_text(path, what="project state"))
    except FileNotFoundError:
        raise EntryNotFoundError(
            f"{vault.rel(path)} does not exist", "create it with: vaultmem state set Goal TEXT"
        ) from None


def state_sections(text: str) -> list[tuple[str, str]]:
    """(title, body) of each `## ` section, skipping headings inside code fences."""
    lines = text.splitlines()
    out: list[tuple[str, str]] = []
    for title, start, end in section_spans(lines):
        out.append((title, without_stamps("\n".join(lines[start + 1 : end])).strip()))
    return out


def _fenced(lines: list[str]) -> set[int]:
    """Indexes of lines inside code fences that are closed.

    A fence that is opened and never closed does not count: a heading after it is still a
    heading. So nobody's text (an agent's unclosed ``` for one) can make the sections after it
    look like code, and a section never silently runs to the end of the file.
    """
    inside: set[int] = set()
    i = 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if m is None:
            i += 1
            continue
        mark = m.group(1)
        close = next(
            (
                j
                for j in range(i + 1, len(lines))
                if (c := _FENCE.match(lines[j]))
                and c.group(1)[0] == mark[0]
                and len(c.group(1)) >= len(mark)
                and not lines[j].strip().strip(mark[0])
            ),
            None,
        )
        if close is None:
            i += 1  # an unclosed fence is plain text
            continue
        inside.update(range(i, close + 1))
        i = close + 1
    return inside


def section_spans(lines: list[str]) -> list[tuple[str, int, int]]:
    """(title, heading line index, end index exclusive) for each `## ` section."""
    heads: list[tuple[int, str, int]] = []  # index, title, level
    start = 0
    if lines and lines[0].strip() == "---":  # frontmatter
        start = next((i + 1 for i in range(1, len(lines)) if lines[i].strip() in ("---", "...")), 0)
    fenced = _fenced(lines)
    for i in range(start, len(lines)):
        if i in fenced:
            continue
        m = _HEADING.fullmatch(lines[i])
        if m:
            heads.append((i, m.group(2), len(m.group(1))))
    spans = []
    for n, (i, title, level) in enumerate(heads):
        if level != 2:
            continue
        end = next((j for j, _t, _lv in heads[n + 1 :]), len(lines))
        spans.append((title, i, end))
    return spans


# --- conflict markers left by git -------------------------------------------------------------


def conflict_markers(text: str) -> list[int]:
    """1-based line numbers of the git conflict markers in `text` (outside closed code fences).

    `<<<<<<<` and `>>>>>>>` lines (alone or followed by a space and a label) always count; a
    `=======` or `|||||||` line counts only between the two (alone it is a setext heading
    underline in markdown, which a person may write).
    """
    lines = text.replace("\r\n", "\n").split("\n")
    fenced = _fenced(lines)
    found: list[int] = []
    middle: list[int] = []
    opened = False
    for i, line in enumerate(lines):
        if i in fenced:
            continue
        if _MARK_OPEN.fullmatch(line):
            found += middle if opened else []
            found.append(i + 1)
            opened, middle = True, []
        elif _MARK_CLOSE.fullmatch(line):
            found += middle
            found.append(i + 1)
            opened, middle = False, []
        elif opened and _MARK_MID.fullmatch(line):
            middle.append(i + 1)
    if opened:
        found += middle  # a block that never closes: its middle lines are markers too
    return sorted(found)


CONFLICT_HINT = (
    "a git conflict marker: a merge left two versions here; keep the right text and delete "
    "the <<<<<<< ======= >>>>>>> lines"
)


@record
class ConflictMarker:
    path: str  # vault-relative
    line: int  # 1-based

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def _owned_files(vault: Vault) -> list[Path]:
    """The files vaultmem writes that a git merge can leave markers in (the logs apart)."""
    # plain joins, read through Vault.read_text: a link out of the vault is skipped, not read
    root = vault.root
    paths = [root / "nexus/project-state.md", root / "memory/MEMORY.md", root / "memory/PROFILE.md"]
    for agent in vault.known_agents():
        paths += [root / "agents" / agent / name for name in ("MEMORY.md", "checkpoint.md")]
        paths.append(root / "agents" / agent / "PROFILE.md")
    digests = root / "nexus/digests"
    if digests.is_dir():
        paths += sorted(digests.glob("*.md"))
    return paths


def find_conflict_markers(vault: Vault) -> list[ConflictMarker]:
    """Every conflict marker git left in a file vaultmem owns: the project state, the
    `MEMORY.md` files, the checkpoints, digests and profiles, and the logs (live file,
    archives, decisions). In a
    log only lines outside entries count: an entry's body is the agent's text, hashed and
    signed, and may quote a conflict."""
    from vaultmem.nexus import entry as entry_mod

    found: list[ConflictMarker] = []
    for path in _owned_files(vault):
        try:
            text = vault.read_text(path, what="file")
        except (FileNotFoundError, VaultmemError):  # unreadable: status reports it
            continue
        found += [ConflictMarker(vault.rel(path), n) for n in conflict_markers(text)]
    for name in entry_mod.LOGS:
        for path in vault.chain_files(name):
            try:
                data = path.read_bytes()
            except FileNotFoundError:
                continue
            if not _may_hold_markers(data):
                continue  # the common case, at the cost of one fast scan of the bytes
            inside: set[int] = set()
            for e in entry_mod.parse_bytes(data).entries:
                inside.update(range(e.line_start, e.line_end + 1))
            lines = data.decode("utf-8", "replace")
            found += [
                ConflictMarker(vault.rel(path), n)
                for n in conflict_markers(lines)
                if n not in inside
            ]
    return found


def _may_hold_markers(data: bytes) -> bool:
    """Whether a line starts with `<<<<<<<` or `>>>>>>>` (bytes.find: 100,000 log entries in
    a few milliseconds, where a multiline regex takes half a second)."""
    return any(data.startswith(m) or b"\n" + m in data for m in (b"<" * 7, b">" * 7))


def conflict_blocks(lines: list[str]) -> list[tuple[int, int]]:
    """The 0-based (first, last) line of each block a merge left (`<<<<<<<` to `>>>>>>>`,
    outside code fences); a block that never closes runs to the end."""
    fenced = _fenced(lines)
    blocks: list[tuple[int, int]] = []
    opened: int | None = None
    for i, line in enumerate(lines):
        if i in fenced:
            continue
        if _MARK_OPEN.fullmatch(line) and opened is None:
            opened = i
        elif _MARK_CLOSE.fullmatch(line) and opened is not None:
            blocks.append((opened, i))
            opened = None
    if opened is not None:
        blocks.append((opened, len(lines) - 1))
    return blocks


def _refuse_markers(text: str, what: str, hint: str) -> None:
    marks = conflict_markers(text)
    if marks:
        where = ", ".join(str(n) for n in marks[:6]) + (" …" if len(marks) > 6 else "")
        raise IntegrityError(f"{what} holds git conflict markers (lines {where})", hint)


def _agent_body(text: str) -> tuple[str, list[str]]:
    """An agent's section text made safe to splice in: fences balanced, `#`/`##` headings
    demoted to `###` (they would cut the section in two). Returns the text and what changed."""
    lines = normalize_body(strip_controls(text)).split("\n") if text.strip() else []
    warnings: list[str] = []
    fenced = _fenced(lines)
    open_fence = None
    for i, line in enumerate(lines):
        m = _FENCE.match(line)
        if m and i not in fenced and open_fence is None:
            open_fence = m.group(1)
        if i not in fenced and open_fence is None and _TOP_HEADING.match(line):
            lines[i] = "### " + line.lstrip("#").strip()
            warnings.append(f"demoted heading {line.strip()!r} to level 3")
    if open_fence is not None:
        # an unclosed fence in the agent's text: close it, so it stays the agent's own
        lines.append(open_fence[0] * len(open_fence))
        warnings.append("closed a code fence the text left open")
    return "\n".join(lines), warnings


def _journal(vault: Vault) -> Path:
    return vault.state("journal", "state.jsonl")


def state_history(vault: Vault) -> list[dict[str, Any]]:
    """Every earlier version of the project-state file, oldest first (journaled before each
    replace): time, agent, section, raw."""
    return read_jsonl(_journal(vault))


def set_state(vault: Vault, agent: str, section: str, text: str) -> StateChange:
    """Replace the body of `## section` (created at the end if missing) and log who did it.

    Everything is checked before the file is touched: the section name and text (secrets; a
    secret in the name is refused), the agent's key (the log entry must be writable). The file
    as it was is journaled first, so `vaultmem repair --state N` can put it back.
    """
    from vaultmem.core.secrets import scrub

    agent = vault.require_agent(agent)
    section = fold_summary(strip_controls(section)).lstrip("#").strip()
    if not section or len(section) > MAX_SECTION:
        raise UsageError(
            f"invalid section name {section!r}", f"one line of at most {MAX_SECTION} characters"
        )
    limit = vault.config.log.max_body  # a section holds what one log entry's body may
    if len(text) > limit:
        raise UsageError(
            f"the state text is {len(text)} characters long (at most {limit})",
            "keep a section short and link to a note for the detail",
        )
    body, warnings = _agent_body(text)
    if conflict_markers(body):
        raise UsageError(
            "the state text holds git conflict markers (<<<<<<< ======= >>>>>>> lines)",
            "settle the conflict first and pass only the text to keep (or put it in a code fence)",
        )
    cleaned, found = scrub(
        vault.config.secrets.policy,
        {"state text": body},
        identifiers={"section name": section},
        what="state",
    )
    body = cleaned["state text"]
    log.check_can_append(vault, agent)
    path = vault.project_state
    with exclusive(lock_path(vault, "project-state"), vault.config.log.lock_timeout, what="state"):
        recover(vault)
        if not path.exists():
            from vaultmem.core.templates import template

            create_exclusive(path, template("nexus/project-state.md"))
        old = read_text(path, what="project state")
        newline = "\r\n" if "\r\n" in old else "\n"
        lines = old.replace("\r\n", "\n").split("\n")
        spans = section_spans(lines)
        same = [(t, s, e) for t, s, e in spans if t.strip().lower() == section.lower()]
        blocks = conflict_blocks(lines)
        # a merge that kept both versions of a section waits for a person: that section is
        # refused, every other one is written (the block stays as it is, byte for byte)
        if any(a <= s <= b for _t, s, _e in same for a, b in blocks):
            _refuse_markers(
                old,
                vault.rel(path),
                f"a git merge left both versions of section '{section}' there: edit the file to "
                "keep the right text, delete the <<<<<<< ======= >>>>>>> lines, then run "
                "vaultmem state set again",
            )
        match = same[0] if same else None
        if match is not None:
            inside = [a for a, _b in blocks if match[1] < a < match[2]]
            if inside:  # a kept conflict right after this section: it ends before the block
                match = (match[0], match[1], min(inside))
        if len(same) > 1:
            warnings.append(
                f"section '{section}' appears {len(same)} times (a kept conflict?); updated the "
                "first, the others are as they were: merge them by hand"
            )
        now = clock.stamp()
        new_part = ["", *(body.split("\n") if body else []), stamp_line(agent, now), ""]
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
        record = {"time": now, "agent": agent, "section": section, "raw": old}
        append_durable(_journal(vault), jsonl_line(record))
        verb = "added" if created else "updated"
        step = {"agent": agent, "section": section, "verb": verb, "body": body}
        with intents.intent(vault, "state", {**step, "time": record["time"]}):
            atomic_write(path, new_text.replace("\n", newline))
            entry = _log_change(vault, step)
    return StateChange(section, created, vault.rel(path), entry, tuple(found), tuple(warnings))


@record
class StateRestore:
    version: int
    path: str
    section: str | None
    time: str | None

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def _log_change(vault: Vault, step: dict[str, Any]) -> Any:
    return log.append(
        vault,
        step["agent"],
        f"project state: {step['verb']} section '{step['section']}'",
        channel="state",
        type_="state",
        body=step["body"],
        extra={"section": step["section"]},
    ).entry


def recover(vault: Vault) -> list[str]:
    """Log the state changes a killed process wrote without their `state` entry (it was cut
    between the two): the section is in the file, so its entry is owed. Caller holds the lock."""
    from vaultmem.nexus.reading import iter_reverse

    done = []
    for record_path, data in intents.pending(vault, "state"):
        logged = False
        for n, e in enumerate(iter_reverse(vault.live_context)):
            if n > 500 or e.time < str(data.get("time")):
                break
            if e.agent == data.get("agent") and e.extra.get("section") == data.get("section"):
                logged = e.type == "state"
                break
        if not logged and _section_is(vault, str(data.get("section")), str(data.get("body"))):
            _log_change(vault, data)
            done.append(f"logged the state change cut short: section '{data.get('section')}'")
        intents.done(record_path)
    return done


def _section_is(vault: Vault, section: str, body: str) -> bool:
    try:
        text = read_text(vault.project_state, what="project state")
    except FileNotFoundError:
        return False
    return any(t.strip() == section and b.strip() == body.strip() for t, b in state_sections(text))


def restore_state(vault: Vault, version: int) -> StateRestore:
    """Put `nexus/project-state.md` back as it was before journaled change `version` (1 is the
    oldest; see `vaultmem state --history`). The file it replaces is journaled too."""
    path = vault.project_state
    with exclusive(lock_path(vault, "project-state"), vault.config.log.lock_timeout, what="state"):
        versions = state_history(vault)
        if not 1 <= version <= len(versions):
            raise EntryNotFoundError(
                f"no project-state version {version} (the journal holds {len(versions)})",
                "list them with: vaultmem state --history",
            )
        chosen = versions[version - 1]
        raw = chosen.get("raw")
        if not isinstance(raw, str):
            raise EntryNotFoundError(f"version {version} holds no text", "pick another version")
        try:
            current = read_text(path, what="project state")
        except FileNotFoundError:
            current = ""
        record = {"time": clock.stamp(), "agent": None, "section": None, "raw": current}
        append_durable(_journal(vault), jsonl_line(record))
        atomic_write(path, raw)
    return StateRestore(version, vault.rel(path), chosen.get("section"), chosen.get("time"))
