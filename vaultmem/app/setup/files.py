"""The file edits behind `vaultmem setup`: planned as (before, after) texts, shown as a diff,
applied atomically, and exactly reversible.

Three kinds of edit, each keeping every byte of the person's file it does not own:

- JSON (`.claude/settings.json`, `.mcp.json`, `.cursor/mcp.json`): one hook handler per event,
  one MCP server, spliced into the text with `core.jsonedit`. Ours are recognised by their
  command (`vaultmem hook EVENT`, `vaultmem mcp`), so a re-run updates them in place and
  `--remove` takes out exactly them, plus any container (`hooks`, an event list,
  `mcpServers`, the file itself) that only held them.
- A marked block at the end of a text file (`CLAUDE.md`, `AGENTS.md`, `config.toml`): a
  re-run replaces what is between the markers; `--remove` takes the block and the blank line
  it added.
- A whole file vaultmem owns (the Cursor rule, the plugin's files), recognised by a marker.
"""

from __future__ import annotations

import difflib
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from vaultmem.app.setup import folders, jsonedit
from vaultmem.core.errors import IntegrityError, RefusedError
from vaultmem.core.fsio import atomic_write, read_text
from vaultmem.core.records import record

HOOK_RE = re.compile(r"(?:^|[\s/\\\"'])vaultmem(?:\.exe)?[\"']?\s+hook\s+(?P<event>[a-z][a-z-]*)")
NO_NEWLINE = " · nl"  # in a start marker: the file had no final newline before the block


@record
class FileChange:
    path: Path
    before: str | None  # None: the file does not exist
    after: str | None  # None: the file goes away

    @property
    def changed(self) -> bool:
        return self.before != self.after

    @property
    def verb(self) -> str:
        if not self.changed:
            return "unchanged"
        if self.before is None:
            return "create"
        return "delete" if self.after is None else "update"

    def diff(self) -> str:
        a = (self.before or "").splitlines(keepends=True)
        b = (self.after or "").splitlines(keepends=True)
        name = str(self.path)
        lines = difflib.unified_diff(
            a,
            b,
            fromfile=name if self.before is not None else "/dev/null",
            tofile=name if self.after is not None else "/dev/null",
        )
        return "".join(
            ln if ln.endswith("\n") else ln + "\n\\ No newline at end of file\n" for ln in lines
        )

    def to_dict(self) -> dict[str, Any]:
        return {"path": str(self.path), "action": self.verb}


def current(path: Path) -> str | None:
    try:
        return read_text(path, what="file")
    except FileNotFoundError:
        return None


def apply_change(change: FileChange) -> None:
    """Write (atomically) or delete one file; remove folders this left empty and that only
    vaultmem would have made (`.claude`, `.cursor/rules`, ...)."""
    if not change.changed:
        return
    if change.after is not None:
        made = [str(f) for f in folders.ancestors(change.path) if not f.exists()]
        atomic_write(change.path, change.after)
        if made:
            folders.record(made, add=True)
        return
    change.path.unlink(missing_ok=True)
    ours = folders.recorded()
    for folder in folders.ancestors(change.path):
        if str(folder) not in ours:
            break  # a folder the person had (an empty `.cursor/` included) stays
        try:
            folder.rmdir()  # only when empty
        except OSError:
            break
        folders.record([str(folder)], add=False)


# --- JSON ------------------------------------------------------------------------------------------


def _doc(text: str | None, path: Path) -> tuple[str, jsonedit.Node]:
    source = text if text is not None and text.strip() else "{}\n"
    try:
        node = jsonedit.parse(source)
    except ValueError as exc:
        raise IntegrityError(
            f"{path} is not valid JSON ({exc}); vaultmem setup changed nothing",
            "fix the file (or move it aside) and run setup again",
        ) from None
    if node.kind != "object":
        raise IntegrityError(
            f"{path} does not hold a JSON object", "vaultmem setup changed nothing"
        )
    duplicate = jsonedit.duplicate_key(source)
    if duplicate is not None:
        # JSON parsers keep one of two same-named members (Python's and Node's the last):
        # an edit to the other would install nothing and still exit 0
        raise IntegrityError(
            f"{path} has the key {duplicate!r} twice in one object; vaultmem setup changed nothing",
            "merge the two into one (runtimes read only one of them), then run setup again",
        )
    return source, node


def _object(
    text: str, parent: jsonedit.Node, key: str, kind: str, path: Path
) -> jsonedit.Node | None:
    member = parent.member(key)
    if member is None:
        return None
    if member.value.kind != kind:
        raise IntegrityError(
            f"{path}: `{key}` is not a JSON {kind}", "fix the file; vaultmem setup changed nothing"
        )
    return member.value


def merge_hooks(text: str | None, path: Path, handlers: dict[str, dict[str, Any]]) -> str:
    """Add or update one `command` handler per event (Claude Code's settings.json shape:
    `{"hooks": {EVENT: [{"hooks": [HANDLER]}]}}`)."""
    source, _root = _doc(text, path)
    for event, handler in handlers.items():
        root = jsonedit.parse(source)
        hooks = _object(source, root, "hooks", "object", path)
        if hooks is None:
            source = jsonedit.insert_member(source, root, "hooks", {event: [{"hooks": [handler]}]})
            continue
        groups = _object(source, hooks, event, "array", path)
        if groups is None:
            source = jsonedit.insert_member(source, hooks, event, [{"hooks": [handler]}])
            continue
        found = _find_handler(source, groups, event, _handlers_vault(handlers))
        if found is None:
            source = jsonedit.append_item(source, groups, {"hooks": [handler]})
        elif jsonedit.value_of(source, found) != handler:
            source = jsonedit.replace_value(source, found, handler)
    return source


def _handlers(text: str, groups: jsonedit.Node) -> list[tuple[int, int, jsonedit.Node]]:
    out = []
    for gi, group in enumerate(groups.items):
        inner = group.member("hooks") if group.kind == "object" else None
        if inner is None or inner.value.kind != "array":
            continue
        for hi, handler in enumerate(inner.value.items):
            if handler.kind == "object":
                out.append((gi, hi, handler))
    return out


def _ours(
    text: str, handler: jsonedit.Node, event: str | None = None, vault: str | None = None
) -> bool:
    """Is `handler` one setup wrote: `vaultmem hook EVENT`, and with `vault` given, for that
    vault (a person's own handler for another vault, `vaultmem hook stop --vault /other`, is
    theirs: never replaced, never removed)."""
    command = handler.member("command")
    if command is None or command.value.kind != "string":
        return False
    line = str(jsonedit.value_of(text, command.value))
    m = HOOK_RE.search(line)
    if m is None or (event is not None and m.group("event") != event):
        return False
    theirs = vault_of(line)
    return vault is None or theirs is None or theirs == vault


def vault_of(command: str) -> str | None:
    """The value of `--vault` in a hook command line, if it has one."""
    import shlex

    try:
        words = shlex.split(command)
    except ValueError:
        return None
    for i, word in enumerate(words):
        if word == "--vault" and i + 1 < len(words):
            return words[i + 1]
        if word.startswith("--vault="):
            return word.removeprefix("--vault=")
    return None


def _handlers_vault(handlers: dict[str, dict[str, Any]]) -> str | None:
    """The vault setup's own handlers name (each names the same one)."""
    for handler in handlers.values():
        command = handler.get("command")
        vault = vault_of(command) if isinstance(command, str) else None
        if vault:
            return vault
    return None


def _find_handler(
    text: str, groups: jsonedit.Node, event: str, vault: str | None = None
) -> jsonedit.Node | None:
    wanted = _event_name(event)
    for _gi, _hi, handler in _handlers(text, groups):
        if _ours(text, handler, wanted, vault):
            return handler
    return None


def _event_name(runtime_event: str) -> str | None:
    """Our event for a runtime's event name (every runtime of `RUNTIME_EVENTS`)."""
    from vaultmem.app.hooks.contract import RUNTIME_EVENTS

    for row in RUNTIME_EVENTS.values():
        for event, name in row.items():
            if name == runtime_event:
                return event.value
    return None


def remove_hooks(text: str | None, path: Path, vault: str | None = None) -> str | None:
    """Take out every vaultmem hook handler, and the groups, event lists and `hooks` object
    left empty by that. None when the file would hold nothing else (`{}`)."""
    if text is None:
        return None
    source, root = _doc(text, path)
    while True:
        root = jsonedit.parse(source)
        hooks = _object(source, root, "hooks", "object", path)
        if hooks is None:
            break
        edit = _one_removal(source, root, hooks, vault)
        if edit is None:
            break
        source = edit
    return _empty_to_none(source)


def _one_removal(
    source: str, root: jsonedit.Node, hooks: jsonedit.Node, vault: str | None = None
) -> str | None:
    for ei, event in enumerate(hooks.members):
        groups = event.value
        if groups.kind != "array":
            continue
        for gi, hi, handler in _handlers(source, groups):
            if not _ours(source, handler, vault=vault):
                continue
            group = groups.items[gi]
            inner = group.member("hooks")
            assert inner is not None
            if len(inner.value.items) > 1:
                return jsonedit.remove_child(source, inner.value, hi)
            if len(groups.items) > 1:
                return jsonedit.remove_child(source, groups, gi)
            if len(hooks.members) > 1:
                return jsonedit.remove_child(source, hooks, ei)
            return jsonedit.remove_child(source, root, root.members.index(root.member("hooks")))  # type: ignore[arg-type]
    return None


def merge_server(
    text: str | None, path: Path, name: str, server: dict[str, Any], container: str = "mcpServers"
) -> str:
    """Add or update `{"mcpServers": {name: server}}`; refuse to replace someone else's server
    that happens to have the same name."""
    source, root = _doc(text, path)
    servers = _object(source, root, container, "object", path)
    if servers is None:
        return jsonedit.insert_member(source, root, container, {name: server})
    member = servers.member(name)
    if member is None:
        return jsonedit.insert_member(source, servers, name, server)
    existing = jsonedit.value_of(source, member.value)
    if not is_our_server(existing):
        raise RefusedError(
            f"{path} already has an MCP server named {name!r} that is not vaultmem's",
            "rename or remove that entry, then run setup again; vaultmem changed nothing",
        )
    if existing != server:
        return jsonedit.replace_value(source, member.value, server)
    return source


def is_our_server(entry: Any) -> bool:
    """A `vaultmem mcp` server entry (`{"command": ".../vaultmem", "args": ["mcp", ...]}`)."""
    if not isinstance(entry, dict):
        return False
    words = [str(entry.get("command", "")), *map(str, entry.get("args") or [])]
    return any("vaultmem" in w for w in words) and "mcp" in words


def remove_server(
    text: str | None, path: Path, name: str, container: str = "mcpServers"
) -> str | None:
    if text is None:
        return None
    source, root = _doc(text, path)
    servers = _object(source, root, container, "object", path)
    member = servers.member(name) if servers is not None else None
    if (
        servers is None
        or member is None
        or not is_our_server(jsonedit.value_of(source, member.value))
    ):
        return text
    if len(servers.members) > 1:
        source = jsonedit.remove_child(source, servers, servers.members.index(member))
    else:
        source = jsonedit.remove_child(source, root, root.members.index(root.member(container)))  # type: ignore[arg-type]
    return _empty_to_none(source)


def _empty_to_none(source: str) -> str | None:
    return None if source.strip() in ("{}", "") else source


# --- marked blocks --------------------------------------------------------------------------------


@record
class Markers:
    start: str  # the start line without the newline token, e.g. "<!-- vaultmem:start ... -->"
    end: str
    close: str = ""  # what ends the start line after the token (" -->" for HTML comments)

    def start_line(self, no_newline: bool) -> str:
        base = self.start[: len(self.start) - len(self.close)] if self.close else self.start
        return base + (NO_NEWLINE if no_newline else "") + self.close

    def find(self, text: str) -> tuple[int, int, bool] | None:
        """(start offset, end offset after the end line, had no final newline) or None."""
        base = self.start[: len(self.start) - len(self.close)] if self.close else self.start
        pattern = re.compile(
            rf"^{re.escape(base)}(?P<nl>{re.escape(NO_NEWLINE)})?{re.escape(self.close)}[ \t]*$",
            re.M,
        )
        m = pattern.search(text)
        if not m:
            return None
        end = re.compile(rf"^{re.escape(self.end)}[ \t]*(?:\n|\Z)", re.M).search(text, m.end())
        if not end:
            raise IntegrityError(
                f"the vaultmem block has a start marker but no end marker ({self.end!r})",
                "put the end marker back or delete the block by hand; setup changed nothing",
            )
        return m.start(), end.end(), bool(m.group("nl"))


def upsert_block(text: str | None, markers: Markers, body: str) -> str:
    """Put `body` between the markers, replacing an existing block, else at the end."""
    content = body if body.endswith("\n") else body + "\n"
    found = markers.find(text or "")
    if found is not None and text is not None:
        start, end, nl = found
        block = markers.start_line(nl) + "\n" + content + markers.end + "\n"
        return text[:start] + block + text[end:]
    if not text:
        return markers.start_line(False) + "\n" + content + markers.end + "\n"
    no_newline = not text.endswith("\n")
    sep = "\n\n" if no_newline else "\n"
    return text + sep + markers.start_line(no_newline) + "\n" + content + markers.end + "\n"


def remove_block(text: str | None, markers: Markers) -> str | None:
    """Take the block out with the separator it added. None when nothing else was there."""
    if text is None:
        return None
    found = markers.find(text)
    if found is None:
        return text
    start, end, nl = found
    before, after = text[:start], text[end:]
    if not after:
        if nl and before.endswith("\n\n"):
            before = before[:-2]
        elif before.endswith("\n\n") or before == "\n":
            before = before[:-1]
    elif before.endswith("\n\n"):
        before = before[:-1]
    out = before + after
    return out if out else None


def owned_file(text: str | None, marker: str, path: Path, new: str | None) -> str | None:
    """A whole file vaultmem owns: refuse to touch one with the same name but not ours."""
    if text is not None and marker not in text:
        raise RefusedError(
            f"{path} exists and was not written by vaultmem",
            "move it aside (or delete it), then run setup again; vaultmem changed nothing",
        )
    return new


def plan(path: Path, edit: Callable[[str | None], str | None]) -> FileChange:
    """One file's edit, planned before anything is written: a file the person made read-only
    (no owner write bit, whoever runs setup) is refused, never replaced, and a symlinked file
    (dotfiles) is edited where it points, so the link stays a link (issue 22)."""
    linked = path.is_symlink()
    if linked:
        target = Path(os.path.realpath(path))
        if not target.is_file():
            raise RefusedError(
                f"{path} is a link to {target}, which is not a file; vaultmem setup changed nothing",
                "point the link at a file (or remove it), then run setup again",
            )
        path = target
    before = current(path)
    change = FileChange(path, before, edit(before))
    if linked and change.after is None:
        # never delete the file a link points at: leave it empty, the link in place
        change = FileChange(path, before, "{}\n" if path.suffix == ".json" else "")
    if change.changed and before is not None and not path.stat().st_mode & 0o200:
        raise RefusedError(
            f"{path} is read-only; vaultmem setup changed nothing",
            f"make it writable (chmod u+w {path}) if setup may edit it, then run setup again",
        )
    return change


def hooks_change(
    path: Path,
    handlers: dict[str, dict[str, Any]],
    remove: bool,
    *,
    env: dict[str, str] | None = None,
) -> FileChange:
    """The hook handlers, and with `env` the settings' `env` entries (Claude Code passes
    them to every hook and tool call), in one edit of the file."""

    def edit(text: str | None) -> str | None:
        if remove:
            out = remove_hooks(text, path, _handlers_vault(handlers))
            return remove_env(out, path, env) if env else out
        merged = merge_hooks(text, path, handlers)
        return merge_env(merged, path, env) if env else merged

    return plan(path, edit)


def merge_env(text: str | None, path: Path, values: dict[str, str]) -> str:
    """Set `{"env": {NAME: VALUE}}` entries, keeping every other one."""
    source, _root = _doc(text, path)
    for name, value in values.items():
        root = jsonedit.parse(source)
        env = _object(source, root, "env", "object", path)
        if env is None:
            source = jsonedit.insert_member(source, root, "env", {name: value})
            continue
        member = env.member(name)
        if member is None:
            source = jsonedit.insert_member(source, env, name, value)
        elif jsonedit.value_of(source, member.value) != value:
            source = jsonedit.replace_value(source, member.value, value)
    return source


def remove_env(text: str | None, path: Path, values: dict[str, str]) -> str | None:
    """Take out the `env` entries setup wrote (only where they still hold its value), and
    `env` itself when nothing else is left in it."""
    if text is None:
        return None
    source, _root = _doc(text, path)
    for name, value in values.items():
        root = jsonedit.parse(source)
        env = _object(source, root, "env", "object", path)
        member = env.member(name) if env is not None else None
        if env is None or member is None or jsonedit.value_of(source, member.value) != value:
            continue
        if len(env.members) > 1:
            source = jsonedit.remove_child(source, env, env.members.index(member))
        else:
            source = jsonedit.remove_child(source, root, root.members.index(root.member("env")))  # type: ignore[arg-type]
    return _empty_to_none(source)


def server_change(path: Path, name: str, server: dict[str, Any], remove: bool) -> FileChange:
    return plan(
        path,
        lambda t: remove_server(t, path, name) if remove else merge_server(t, path, name, server),
    )


def block_change(path: Path, markers: Markers, body: str, remove: bool) -> FileChange:
    return plan(
        path, lambda t: remove_block(t, markers) if remove else upsert_block(t, markers, body)
    )
