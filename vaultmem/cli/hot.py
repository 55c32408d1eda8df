"""The bodies of the per-turn commands (read, append, recall), free of typer.

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
    from vaultmem.app.pack import commit_cursor, read_pack

    v = open_vault(vault)
    pack = read_pack(v, agent or "", budget=budget, peek=peek, query=query)
    if as_json:
        emit_json(pack.to_dict())
    else:
        out = [f"# Session context for {pack.agent}", ""]
        for section in pack.sections:
            source = f" ({section.source})" if section.source else ""
            out += [f"## {section.title}{source}", "", section.text.strip() or "(empty)", ""]
        if pack.dropped:
            detail = ", ".join(
                f"{k} (~{pack.dropped_tokens.get(k, 0)} tokens)" for k in pack.dropped
            )
            out += [f"_Dropped to fit the budget of {pack.budget} tokens: {detail}_", ""]
        emit("\n".join(out))
    sys.stdout.flush()  # the pack is out: only now do its entries count as read
    from vaultmem.core.errors import VaultmemError

    try:
        commit_cursor(v, pack)
    except VaultmemError as exc:  # a read-only vault still gets its pack
        warn(f"could not record what was read ({exc.message}); these entries will show again")


def warn_redactions(redactions: Any) -> None:
    for f in redactions:
        warn(f"redacted a credential ({f.kind}, line {f.line}) before writing: {f.preview}")


def append(
    *,
    summary: str,
    channel: str,
    type_: str,
    body: str | None,
    acks: list[str] | None,
    vault: Path | None,
    agent: str | None,
    as_json: bool,
) -> None:
    from vaultmem.nexus.log import append as do_append

    result = do_append(
        open_vault(vault),
        agent or "",
        summary,
        channel=channel,
        type_=type_,
        body=read_text_arg(body) if body is not None else "",
        acks=acks or [],
    )
    warn_redactions(result.redactions)
    for w in result.warnings:
        warn(w)
    if type_ == "decision":
        warn("this is only a log entry; `vaultmem decide TEXT --why R` also records the decision")
    if as_json:
        emit_json(result.entry.to_dict())
    else:
        emit(result.entry.id)


def warn_freshness(fresh: Any) -> None:
    for message in fresh.warnings:
        warn(message)


def recall(
    *,
    query: str,
    limit: int,
    kind: str | None,
    type_: str | None,
    under: str | None,
    since: str | None,
    include_retracted: bool,
    explain: bool,
    mode: str | None,
    vault: Path | None,
    agent: str | None,
    as_json: bool,
) -> None:
    from functools import partial

    from vaultmem.recall.query import recall as do_recall

    search = partial(
        do_recall,
        open_vault(vault),
        query,
        limit=limit,
        kind=kind,
        type_=type_,
        agent=agent,
        under=under,
        since=since,
        include_retracted=include_retracted,
        explain=explain,
        mode=mode,
    )
    if sys.stderr.isatty():
        # a first semantic recall may make the model and embed the whole vault: show it
        from vaultmem.cli.output_recall import lazy_progress

        with lazy_progress() as update:
            result = search(progress=update)
    else:
        result = search()
    warn_freshness(result.index)
    if as_json:
        emit_json(result.to_dict())
        return
    from vaultmem.cli.output_recall import render_recall

    render_recall(result)
