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
    from vaultmem.app.pack import commit_cursor, read_pack, render_markdown

    v = open_vault(vault)
    pack = read_pack(v, agent or "", budget=budget, peek=peek, query=query)
    if as_json:
        emit_json(pack.to_dict())
    else:
        emit(render_markdown(pack))
    sys.stdout.flush()  # the pack is out: only now do its entries count as read
    from vaultmem.core.errors import VaultmemError

    try:
        commit_cursor(v, pack)
    except VaultmemError as exc:  # a read-only vault still gets its pack
        warn(f"could not record what was read ({exc.message}); these entries will show again")


def warn_redactions(findings: Any) -> None:
    from vaultmem.core.secrets import notices

    for line in notices(list(findings)):
        warn(line)


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
    vault: Path | None,
    agent: str | None,
    as_json: bool,
) -> None:
    from vaultmem.recall.query import recall as do_recall

    result = do_recall(
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
    )
    warn_freshness(result.index)
    if as_json:
        emit_json(result.to_dict())
        return
    from vaultmem.cli.output_recall import render_recall

    render_recall(result)


def hook(
    *,
    event: str,
    plain: bool,
    vault: Path | None,
    agent: str | None,
    as_json: bool,
) -> None:
    """Run one lifecycle hook: print what it adds to the agent's context, always exit 0."""
    from vaultmem.app.hook_quick import read_stdin
    from vaultmem.app.hooks import run_hook

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
