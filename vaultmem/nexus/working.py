"""Working memory: what one agent holds right now, with a time to live.

`agents/<agent>/working.md` holds keys with values, for the agent itself or for one thread,
and each thread's window of recent turns (`push` keeps the last N). Items expire; expired items
are never returned and are dropped the next time the file is written. The file is replaced whole
(atomically, under `.vaultmem/locks/working-<agent>.lock`), so two processes setting keys at
once both land. People read it in Obsidian; each item line ends with a hidden comment holding
the item as JSON, which is what is read back (docs/FORMAT.md, "Working memory").

It is the agent's own scratch: recall does not index it and no other agent's pack shows it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from datetime import datetime
from enum import StrEnum
from pathlib import Path
from typing import Any, TypeVar

from vaultmem.core import clock
from vaultmem.core.errors import NotFoundError, RefusedError, UsageError
from vaultmem.core.fsio import atomic_write
from vaultmem.core.locking import exclusive, lock_path
from vaultmem.core.records import record
from vaultmem.core.vault import Vault
from vaultmem.nexus.entry import escape_inline

KEY_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:/-]{0,63}")  # wm keys and threads
_ITEM_RE = re.compile(r"<!-- vaultmem-wm (?P<json>\{.*\}) -->$")
SHOWN_CHARS = 200  # of a value, in the visible line (the comment holds it whole)
KEEP_MAX = 1000
T = TypeVar("T")


class ItemKind(StrEnum):
    KEY = "key"
    TURN = "turn"


@record
class Item:
    kind: str
    thread: str | None
    key: str | None  # None for turns
    value: str
    set: str  # stamp
    expires: str | None  # stamp, or None: no expiry

    def expired(self, now: datetime) -> bool:
        if self.expires is None:
            return False
        moment = clock.parse_time(self.expires)
        return moment is not None and moment <= now

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "thread": self.thread,
            "key": self.key,
            "value": self.value,
            "set": self.set,
            "expires": self.expires,
        }


@record
class Working:
    agent: str
    path: str
    items: tuple[Item, ...]  # unexpired, in file order

    def threads(self) -> list[str | None]:
        return list(dict.fromkeys(i.thread for i in self.items))

    def to_dict(self) -> dict[str, Any]:
        return {"agent": self.agent, "path": self.path, "items": [i.to_dict() for i in self.items]}


def validate_name(value: str, what: str, *, written: bool = False) -> str:
    """A key or thread name, in full; one about to be `written` must not hold a credential."""
    if not KEY_RE.fullmatch(value):
        raise UsageError(
            f"invalid {what} {value!r}",
            "letters, digits and _ . : / - (at most 64), starting with a letter or digit",
        )
    if not written:
        return value
    from vaultmem.core.secrets import scan

    if scan(value):
        raise RefusedError(
            f"refused: the {what} looks like a credential", "name it, don't paste it"
        )
    return value


# --- the file --------------------------------------------------------------------------------


def _item_json(item: Item) -> str:
    text = json.dumps(item.to_dict(), ensure_ascii=False, separators=(",", ":"))
    # `-->` would end the comment; line separators would split the line for some readers
    for char, esc in (("<", "\\u003c"), (">", "\\u003e"), ("\u2028", "\\u2028")):
        text = text.replace(char, esc)
    return text.replace("\u2029", "\\u2029").replace("\x85", "\\u0085")


def _item_line(item: Item) -> str:
    shown = " ".join(item.value.split())
    if len(shown) > SHOWN_CHARS:
        shown = shown[:SHOWN_CHARS] + "…"
    shown = escape_inline(shown)
    label = f"`{item.key}`: " if item.key is not None else ""
    until = f" · expires {item.expires}" if item.expires else ""
    return f"- {label}{shown}{until} <!-- vaultmem-wm {_item_json(item)} -->"


def render(agent: str, items: list[Item], updated: str) -> str:
    out = [
        "---",
        f"agent: {agent}",
        f"updated: {updated}",
        "tags:",
        "  - vaultmem/working",
        "---",
        "",
        f"# Working memory of {agent}",
        "",
        "Short-lived; vaultmem rewrites this file (`vaultmem wm`). Expired items are dropped.",
    ]
    if not items:
        out += ["", "(empty)"]
    for thread in dict.fromkeys(i.thread for i in items):
        mine = [i for i in items if i.thread == thread]
        out += ["", "## Agent" if thread is None else f"## Thread `{thread}`", ""]
        keys = [i for i in mine if i.kind == ItemKind.KEY]
        turns = [i for i in mine if i.kind == ItemKind.TURN]
        out += [_item_line(i) for i in keys]
        if turns:
            out += (["", "### Recent turns", ""] if keys else ["### Recent turns", ""]) + [
                _item_line(i) for i in turns
            ]
    return "\n".join(out) + "\n"


def _parse_item(raw: str) -> Item | None:
    try:
        data = json.loads(raw)
    except ValueError:
        return None
    if not isinstance(data, dict):
        return None
    kind, thread, key = data.get("kind"), data.get("thread"), data.get("key")
    value, set_, expires = data.get("value"), data.get("set"), data.get("expires")
    if not (isinstance(kind, str) and isinstance(value, str) and isinstance(set_, str)):
        return None
    ok = (
        kind in (ItemKind.KEY, ItemKind.TURN)
        and (thread is None or (isinstance(thread, str) and KEY_RE.fullmatch(thread)))
        and (
            (kind == ItemKind.KEY and isinstance(key, str) and KEY_RE.fullmatch(key))
            or (kind == ItemKind.TURN and key is None)
        )
        and (expires is None or isinstance(expires, str))
    )
    return Item(kind, thread, key, value, set_, expires) if ok else None


def parse(text: str) -> list[Item]:
    """Every item the file holds (expired ones too), in order. Lines split on \\n only."""
    out = []
    for line in text.split("\n"):
        m = _ITEM_RE.search(line.rstrip("\r"))
        if m:
            item = _parse_item(m["json"])
            if item is not None:
                out.append(item)
    return out


def _path(vault: Vault, agent: str) -> Path:
    return vault.working(agent)


def _load(vault: Vault, agent: str) -> list[Item]:
    try:
        return parse(vault.read_text(_path(vault, agent), what="working memory"))
    except FileNotFoundError:
        return []


def wm_list(vault: Vault, agent: str, *, thread: str | None = None) -> Working:
    """The agent's unexpired items (of one thread when given)."""
    agent = vault.require_agent(agent)
    if thread is not None:
        validate_name(thread, "thread")
    now = clock.now()
    items = tuple(
        i
        for i in _load(vault, agent)
        if not i.expired(now) and (thread is None or i.thread == thread)
    )
    return Working(agent, vault.rel(_path(vault, agent)), items)


def _expires(vault: Vault, ttl: str | None) -> str | None:
    text = ttl if ttl is not None else vault.config.working.ttl
    span = clock.parse_duration(text, "--ttl", allow_never=True)
    return None if span is None else clock.stamp(clock.now() + span)


def _value(vault: Vault, value: str) -> tuple[str, list[Any]]:
    from vaultmem.core.secrets import apply_policy

    value = value.replace("\r\n", "\n").replace("\x00", "").strip()
    if not value:
        raise UsageError("the value is empty", "pass the text to hold")
    value, found = apply_policy(value, vault.config.secrets.policy, what="working memory value")
    limit = vault.config.working.max_value
    if len(value) > limit:
        raise UsageError(
            f"the value is {len(value)} characters long (at most {limit})",
            "hold a pointer (a path, an id) instead, or raise [working] max_value",
        )
    return value, found


def _update(vault: Vault, agent: str, change: Callable[[list[Item]], T]) -> T:
    """Read, drop expired items, apply `change(items) -> result`, write back; under a lock."""
    path = _path(vault, agent)
    target = vault.path(vault.rel(path))
    with exclusive(
        lock_path(vault, f"working-{agent}"),
        vault.config.log.lock_timeout,
        what="working memory",
    ):
        now = clock.now()
        items = [i for i in _load(vault, agent) if not i.expired(now)]
        result = change(items)
        atomic_write(target, render(agent, items, clock.stamp(now)))
    return result


def wm_set(
    vault: Vault,
    agent: str,
    key: str,
    value: str,
    *,
    thread: str | None = None,
    ttl: str | None = None,
) -> tuple[Item, list[Any]]:
    """Hold `value` under `key` (replacing the key's value in place). Returns the item and the
    secrets redacted from the value."""
    agent = vault.require_agent(agent)
    validate_name(key, "key", written=True)
    if thread is not None:
        validate_name(thread, "thread", written=True)
    value, found = _value(vault, value)
    expires = _expires(vault, ttl)
    item = Item(ItemKind.KEY, thread, key, value, clock.stamp(), expires)

    def change(items: list[Item]) -> Item:
        for n, old in enumerate(items):
            if old.kind == ItemKind.KEY and old.thread == thread and old.key == key:
                items[n] = item
                return item
        items.append(item)
        return item

    return _update(vault, agent, change), found


def _missing(agent: str, key: str, thread: str | None) -> NotFoundError:
    where = f" in thread {thread}" if thread else ""
    return NotFoundError(
        f"{agent} holds no {key!r}{where} (never set, deleted or expired)",
        f"list what is held with: vaultmem wm list --agent {agent}",
    )


def wm_get(vault: Vault, agent: str, key: str, *, thread: str | None = None) -> Item:
    validate_name(key, "key")
    for item in wm_list(vault, agent, thread=thread).items:
        if item.kind == ItemKind.KEY and item.thread == thread and item.key == key:
            return item
    raise _missing(agent, key, thread)


def wm_del(vault: Vault, agent: str, key: str, *, thread: str | None = None) -> Item:
    agent = vault.require_agent(agent)
    validate_name(key, "key")
    if thread is not None:
        validate_name(thread, "thread")

    def change(items: list[Item]) -> Item | None:
        for n, old in enumerate(items):
            if old.kind == ItemKind.KEY and old.thread == thread and old.key == key:
                return items.pop(n)
        return None

    gone = _update(vault, agent, change)
    if gone is None:
        raise _missing(agent, key, thread)
    return gone


def wm_push(
    vault: Vault,
    agent: str,
    value: str,
    *,
    thread: str | None = None,
    keep: int | None = None,
    ttl: str | None = None,
) -> tuple[Item, int, list[Any]]:
    """Add a turn to the thread's recent turns and keep the last `keep`. Returns the item, how
    many older turns were dropped, and the secrets redacted."""
    agent = vault.require_agent(agent)
    if thread is not None:
        validate_name(thread, "thread", written=True)
    keep = vault.config.working.keep if keep is None else keep
    if not 1 <= keep <= KEEP_MAX:
        raise UsageError(f"--keep {keep} is out of range", f"keep 1 to {KEEP_MAX} turns")
    value, found = _value(vault, value)
    item = Item(ItemKind.TURN, thread, None, value, clock.stamp(), _expires(vault, ttl))

    def change(items: list[Item]) -> int:
        items.append(item)
        turns = [n for n, i in enumerate(items) if i.kind == ItemKind.TURN and i.thread == thread]
        extra = turns[: max(0, len(turns) - keep)]
        for n in reversed(extra):
            del items[n]
        return len(extra)

    dropped = _update(vault, agent, change)
    return item, dropped, found
