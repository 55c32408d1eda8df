"""Several machines: sync (and sync --status), clone, and the merge drivers git calls."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from vaultmem.cli.base import (
    AgentOpt,
    JsonOpt,
    VaultOpt,
    commands,
    emit,
    emit_json,
    example,
    open_vault,
    warn,
)


@commands.command(
    epilog=example(
        "vaultmem sync",
        "vaultmem sync --status",
        'vaultmem sync --message "end of day" --remote origin',
        "vaultmem sync --watch --interval 30",
    )
)
def sync(
    status: Annotated[
        bool, typer.Option("--status", help="Show ahead/behind and what is not synced yet.")
    ] = False,
    watch: Annotated[
        bool,
        typer.Option("--watch", help="Sync again and again (a machine with no agent runtime)."),
    ] = False,
    interval: Annotated[
        float | None,
        typer.Option(
            "--interval",
            help="Seconds between syncs with --watch [default: the [sync] interval].",
            min=1,
            show_default=False,
        ),
    ] = None,
    remote: Annotated[
        str | None,
        typer.Option(
            "--remote", help="The git remote [default: the upstream].", show_default=False
        ),
    ] = None,
    message: Annotated[
        str | None,
        typer.Option(
            "--message", "-m", help="Commit message for local changes.", show_default=False
        ),
    ] = None,
    vault: VaultOpt = None,
    agent: AgentOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Commit local changes, pull, push, then verify and refresh the index (git).

    No write made while it runs is lost: agents' writes wait a moment, a file a person saves
    meanwhile is merged or left for the next sync. Exit 0 when synced or when there was
    nothing to do; 6 when the remote cannot be reached, another sync or git is running, or
    the remote kept moving (the work stays committed here; retry); 5 when a file holds both
    machines' versions between markers (named; edit it, then sync) or `verify` finds problems
    after the sync; 8 when the remote's commits would write local state (`.vaultmem/`), a
    symbolic link or change the merge rules (nothing is merged); 7 when the vault is not a
    git repository or has no remote.
    """
    from vaultmem.app.sync import pipeline as sync_mod

    v = open_vault(vault, lenient=True)  # a broken vaultmem.toml never stops the sync of a fix
    if status:
        st = sync_mod.status(v, remote=remote)
        if as_json:
            emit_json(st.to_dict())
            return
        emit(f"branch {st.branch} -> {st.upstream or '(no remote)'}"
             + ("" if st.fetched else " (not fetched: offline?)"))  # fmt: skip
        emit(f"  {st.ahead} commit(s) to push, {st.behind} to pull")
        emit(f"  {len(st.changed_files)} file(s) changed here, not committed")
        emit(
            f"  {st.unsynced_entries} log entr{'y' if st.unsynced_entries == 1 else 'ies'} not on the remote yet"
        )
        return
    if watch:
        from vaultmem.core.errors import VaultmemError

        def said(result: sync_mod.SyncReport | VaultmemError) -> None:
            if isinstance(result, VaultmemError):
                warn(str(result))
            else:
                _render(result, as_json)

        every = interval if interval is not None else _interval(v)
        try:
            sync_mod.watch(v, interval=every, remote=remote, report=said)
        except KeyboardInterrupt:
            return
        return

    from vaultmem.cli.output_recall import progress_bar

    # the index catching up with what the merge brought in: a bar on a terminal, else nothing
    try:
        with progress_bar("Indexing") as progress:
            report = sync_mod.sync(
                v, remote=remote, message=message, progress=None if as_json else progress
            )
    except sync_mod.SyncConflictError as exc:
        partial = getattr(exc, "report", None)
        if partial is not None and partial.outcome != "nothing":
            _render(partial, as_json)
        raise
    _render(report, as_json)
    if report.verify_ok is False:
        warn("synced, but verify found problems after the merge: run vaultmem verify")
        raise typer.Exit(5)


def _interval(v: object) -> float:
    from vaultmem.core.clock import parse_duration

    raw = getattr(getattr(getattr(v, "config", None), "sync", None), "interval", "15s")
    if not isinstance(raw, str):
        return float(raw)
    parsed = parse_duration(raw, "[sync] interval")
    return parsed.total_seconds() if parsed is not None else 15.0


def _render(report: object, as_json: bool) -> None:
    from vaultmem.app.sync.pipeline import SyncReport

    assert isinstance(report, SyncReport)
    if as_json:
        emit_json(report.to_dict())
        return
    if report.outcome == "nothing":
        emit("nothing to do: in sync")
    else:
        if report.committed:
            emit(f"committed {report.committed[:8]}: {report.message}")
        emit(
            f"pulled {report.pulled} commit(s) ({report.entries_in} log entries), "
            f"pushed {report.pushed} ({report.entries_out} log entries)"
        )
        if report.index:
            emit(f"index: {report.index.get('refreshed', 0)} file(s) reindexed")
    for note in report.notes:
        emit(f"  {note}")
    for line in report.trust:
        warn(
            line
            if line.startswith("waiting")
            else f"{line}: see what it changes with vaultmem trust"
        )
    for path in report.skipped:
        warn(f"not synced: {path} is a symbolic link or a nested repository")
    for problem in report.problems:
        warn(problem)


@commands.command(
    epilog=example("vaultmem clone git@example.com:team/orbit-vault.git orbit --agent ella")
)
def clone(
    url: Annotated[str, typer.Argument(help="The vault's git repository.")],
    path: Annotated[Path, typer.Argument(help="A new folder for this machine's copy.")],
    agents: Annotated[
        list[str] | None,
        typer.Option("--agent", help="An agent that will write from this machine (repeatable)."),
    ] = None,
    vault: VaultOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Clone a vault to a new machine: git clone, merge drivers, and this machine's keys for
    the agents that will write from it (a reviewer approves each: vaultmem keys approve)."""
    from vaultmem.app.sync.machines import clone as do_clone
    from vaultmem.app.sync.machines import join_steps
    from vaultmem.nexus.keyring import create_key

    v = do_clone(url, path)
    made = [create_key(v, v.require_agent(a)) for a in agents or []]
    steps = join_steps(v, [(k.agent, k.key_id) for k in made if not k.approved])
    if as_json:
        emit_json({"path": str(v.root), "keys": [k.to_dict() for k in made], "next": steps})
        return
    emit(f"cloned into {v.root}")
    for key in made:
        state = "approved" if key.approved else "waiting for a reviewer's approval"
        emit(f"  key {key.key_id} for {key.agent} ({state})")
    if steps:
        emit("one step is left, for a person:" if len(steps) == 2 else "left, for a person:")
        for step in steps:
            emit(f"  - {step}")
    else:
        emit("ready: agents on this machine can write and sync")


@commands.command(
    "merge-file",
    epilog=example("vaultmem merge-file index %O %A %B %P  (git calls it; see .gitattributes)"),
)
def merge_file(
    kind: Annotated[str, typer.Argument(help="index, state, checkpoint, snapshot or generated.")],
    base: Annotated[Path, typer.Argument(help="The common ancestor (git's %O).")],
    ours: Annotated[Path, typer.Argument(help="This side, overwritten with the result (%A).")],
    theirs: Annotated[Path, typer.Argument(help="The other side (%B).")],
    name: Annotated[str | None, typer.Argument(help="The file's path (%P).")] = None,
    vault: VaultOpt = None,
    agent: AgentOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """The merge driver git runs for MEMORY.md, project state and checkpoints (plumbing).

    Exit 0 when merged, 1 when a person must resolve markers left in the file.
    """
    from vaultmem.app.sync.merge import MERGERS
    from vaultmem.core.errors import UsageError
    from vaultmem.core.fsio import atomic_write

    merger = MERGERS.get(kind)
    if merger is None:
        raise UsageError(f"unknown merge kind {kind!r}", f"use one of: {', '.join(MERGERS)}")
    texts = [p.read_text(encoding="utf-8") for p in (base, ours, theirs)]
    merged, conflict = merger(*texts)
    atomic_write(ours, merged)
    if conflict:
        warn(f"{name or ours}: both machines changed the same part; markers left for a person")
        raise typer.Exit(1)
