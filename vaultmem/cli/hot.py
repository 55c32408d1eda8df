"""The bodies of the per-turn commands (read, append, recall, inbox, wm, hook), free of typer.

The typer commands in cmd_core/cmd_log/cmd_recall parse the command line and call these; the
start-up fast path (cli/fast.py) calls them directly. Parameter names match the typer
commands' exactly (the fast path checks it).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from vaultmem.cli.io import emit, emit_json, open_vault, read_text_arg, warn


def read(
    *,
    budget: int | None,
    peek: bool,
    query: str | None,
    vault: Path | None,
    agent: str | None,
    as_json: bool,
) -> None:
    from vaultmem.app.pack import build as build_mod
    from vaultmem.app.pack.build import delivered, render_markdown

    v = open_vault(vault)
    pack = build_mod.read(v, agent or "", budget=budget, peek=peek, query=query)
    if as_json:
        emit_json(pack.to_dict())
    else:
        emit(render_markdown(pack))
    sys.stdout.flush()  # the pack is out: only now do its entries count as read
    from vaultmem.core.errors import VaultmemError

    try:
        delivered(v, pack)
    except VaultmemError as exc:  # a read-only vault still gets its pack
        warn(f"could not record what was read ({exc.message}); these entries will show again")


def record_shown(v: Any, agent: str, command: str, ids: list[str], paths: list[str]) -> None:
    """A receipt for output already written (never fails the command that wrote it)."""
    from vaultmem.app.pack.receipts import record
    from vaultmem.core.errors import VaultmemError

    sys.stdout.flush()
    try:
        record(v, agent, command, ids, paths)
    except VaultmemError as exc:
        warn(f"could not record what was shown ({exc.message})")


def warn_redactions(findings: Any) -> None:
    from vaultmem.core.secrets import notices

    for line in notices(list(findings)):
        warn(line)


def _body_arg(body: str | None) -> str:
    """`--body TEXT` as given; `--body -` (stdin, where `git diff` is piped) fenced when it
    reads as a diff or code (`core/fences.py`)."""
    if body is None:
        return ""
    if body != "-":
        return body
    from vaultmem.core.fences import fence_code

    return fence_code(read_text_arg(body))


def append(
    *,
    summary: str,
    channel: str,
    type_: str,
    body: str | None,
    acks: list[str] | None,
    to: list[str] | None,
    vault: Path | None,
    agent: str | None,
    as_json: bool,
) -> None:
    from vaultmem.nexus.log import append as do_append

    opened = open_vault(vault)
    result = do_append(
        opened,
        agent or "",
        summary,
        channel=channel,
        type_=type_,
        body=_body_arg(body),
        acks=acks or [],
        to=to or [],
    )
    warn_redactions(result.redactions)
    for w in result.warnings:
        warn(w)
    push_soon(opened, result)
    if type_ == "decision":
        warn("this is only a log entry; `vaultmem decide TEXT --why R` also records the decision")
    if as_json:
        emit_json(result.to_dict())
    elif result.duplicate_of:
        emit(f"duplicate {result.duplicate_of}")
        warn(
            f"{result.duplicate_of} is open with the same text: not raised again "
            f"(seen again {result.seen_again}×); close it with: vaultmem resolve "
            f"{result.duplicate_of}"
        )
    else:
        emit(result.entry.id)


def push_soon(vault: Any, result: Any) -> None:
    """An entry others wait for (addressed: a handoff, a question, `--to`; or a decision)
    leaves the machine soon after it is written, not at the next hook: a one-shot session may
    run none (issue 37). The detached background sync, as a hook starts it (its interval and
    lock respected, never waited for)."""
    entry = getattr(result, "entry", None)
    if result.duplicate_of or entry is None:
        return
    if entry.to or entry.type == "decision":
        from vaultmem.app.hooks.background import start_sync

        start_sync(vault)


def warn_freshness(fresh: Any) -> None:
    for message in fresh.warnings:
        warn(message)


def recall(
    *,
    query: str,
    limit: int,
    explain: bool,
    mode: str | None,
    vault: Path | None,
    agent: str | None,
    as_json: bool,
    **filters: Any,
) -> None:
    """`filters`: the command's filter options (kind, type_, under, since, strict, ...), as
    one RecallFilters: a new filter needs no change here. `--since` is read with the command
    line's one time grammar (`clock.point_day`): the search layer dates documents by day."""
    from functools import partial

    from vaultmem.core.clock import point_day
    from vaultmem.search.filters import RecallFilters
    from vaultmem.search.query import recall as do_recall

    result_vault = open_vault(vault)
    search = partial(
        do_recall,
        result_vault,
        query,
        limit=limit,
        filters=RecallFilters.of(
            **{**filters, "since": point_day(filters["since"], "--since")}
            if filters.get("since") is not None
            else filters
        ),
        agent=agent,
        explain=explain,
        mode=mode,
    )
    if sys.stderr.isatty():
        # a first semantic recall embeds the whole vault (never makes a model): show it
        from vaultmem.cli.output_recall import lazy_progress

        with lazy_progress() as update:
            result = search(progress=update)
    else:
        result = search()
    warn_freshness(result.index)
    if as_json:
        emit_json(result.to_dict())
    else:
        from vaultmem.cli.output_recall import render_recall

        render_recall(result)
    if agent and result.hits:
        ids = [h.id for h in result.hits if h.id]
        paths = [f"{h.path}:{h.line_start}-{h.line_end}" for h in result.hits if not h.id]
        record_shown(result_vault, agent, "recall", ids, paths)


def render_sync_nothing(as_json: bool) -> None:
    """What `sync` prints when there was nothing to do (cmd_sync renders the same report)."""
    if as_json:
        from vaultmem.app.sync.pipeline import SyncReport

        emit_json(SyncReport("nothing").to_dict())
    else:
        emit("nothing to do: in sync")


# --- coordination: the inbox and working memory ----------------------------------------------


def inbox(*, vault: Path | None, agent: str | None, as_json: bool) -> None:
    from vaultmem.app.pack.inbox import inbox as do_inbox

    v = open_vault(vault)
    view = do_inbox(v, agent or "")
    if view.note:
        warn(view.note)  # open items left out: they fail verification
    if as_json:
        emit_json(view.to_dict())
    elif not view.items:
        emit(f"nothing open for {view.agent}")
    else:
        emit("\n".join(view.lines))
        emit(
            f'\n{len(view.items)} open. Ack one: vaultmem append "<what you did>" --type ack '
            f"--ack ID --agent {view.agent}   close an alert: vaultmem resolve ID --why TEXT"
        )
    if view.items:
        record_shown(v, view.agent, "inbox", [i.id for i in view.items], [])


def _item_text(item: Any) -> str:
    label = f"{item.key} = " if item.key is not None else "turn: "
    where = f"[{item.thread}] " if item.thread else ""
    until = f"  (expires {item.expires})" if item.expires else ""
    return f"{where}{label}{' '.join(item.value.split())}{until}"


def wm_set(
    *,
    key: str,
    value: str,
    thread: str | None,
    ttl: str | None,
    vault: Path | None,
    agent: str | None,
    as_json: bool,
) -> None:
    from vaultmem.nexus.working import wm_set as do_set

    item, found = do_set(
        open_vault(vault), agent or "", key, read_text_arg(value), thread=thread, ttl=ttl
    )
    warn_redactions(found)
    if as_json:
        emit_json(item.to_dict())
    else:
        emit(f"set {key}" + (f" (expires {item.expires})" if item.expires else " (no expiry)"))


def wm_get(
    *, key: str, thread: str | None, vault: Path | None, agent: str | None, as_json: bool
) -> None:
    from vaultmem.nexus.working import wm_get as do_get

    item = do_get(open_vault(vault), agent or "", key, thread=thread)
    if as_json:
        emit_json(item.to_dict())
    else:
        emit(item.value)


def wm_list(*, thread: str | None, vault: Path | None, agent: str | None, as_json: bool) -> None:
    from vaultmem.nexus import working as working_mod

    held = working_mod.wm_list(open_vault(vault), agent or "", thread=thread)
    if as_json:
        emit_json(held.to_dict())
    elif not held.items:
        emit(f"{held.agent} holds nothing" + (f" in thread {thread}" if thread else ""))
    else:
        emit("\n".join(_item_text(i) for i in held.items))


def wm_del(
    *, key: str, thread: str | None, vault: Path | None, agent: str | None, as_json: bool
) -> None:
    from vaultmem.nexus.working import wm_del as do_del

    item = do_del(open_vault(vault), agent or "", key, thread=thread)
    if as_json:
        emit_json({"deleted": item.to_dict()})
    else:
        emit(f"deleted {key}")


def wm_push(
    *,
    value: str,
    thread: str | None,
    keep: int | None,
    ttl: str | None,
    vault: Path | None,
    agent: str | None,
    as_json: bool,
) -> None:
    from vaultmem.nexus.working import wm_push as do_push

    item, dropped, found = do_push(
        open_vault(vault), agent or "", read_text_arg(value), thread=thread, keep=keep, ttl=ttl
    )
    warn_redactions(found)
    if as_json:
        emit_json({**item.to_dict(), "dropped": dropped})
    else:
        where = f" to thread {thread}" if thread else ""
        emit(f"pushed{where}" + (f"; dropped {dropped} older" if dropped else ""))


def hook(
    *,
    event: str,
    plain: bool,
    vault: Path | None,
    agent: str | None,
    as_json: bool,
) -> None:
    """Run one lifecycle hook: print what it adds to the agent's context, always exit 0."""
    from vaultmem.app.hooks.quick import read_stdin
    from vaultmem.app.hooks.run import run_hook

    payload = read_stdin(sys.stdin)
    outcome = run_hook(str(event), payload, vault_path=vault, agent=agent)
    out = outcome.context if plain else outcome.stdout
    try:
        if out:
            sys.stdout.write(out if out.endswith("\n") else out + "\n")
            sys.stdout.flush()
        if outcome.stderr:
            sys.stderr.write(outcome.stderr)
    except OSError:
        return  # the runtime went away: nothing was delivered, so nothing counts as read
    if outcome.after is not None:
        from vaultmem.core.errors import VaultmemError

        try:
            outcome.after()
        except (VaultmemError, OSError) as exc:
            sys.stderr.write(f"vaultmem hook {event}: could not record what was shown ({exc})\n")
