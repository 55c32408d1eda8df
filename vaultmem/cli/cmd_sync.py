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
    )
)
def sync(
    status: Annotated[
        bool, typer.Option("--status", help="Show ahead/behind and what is not synced yet.")
    ] = False,
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

    Exit 0 when synced or when there was nothing to do, 6 when the remote cannot be reached
    (the work stays committed here; retry later), 5 when a merge needs a person (the files are
    listed, both versions kept) or when `verify` finds problems after a sync that went through
    (it names them; a forked chain says `repair --merge-forks`), 7 when the vault is not a git
    repository or has no remote.
    """
    from vaultmem.app.sync import pipeline as sync_mod

    v = open_vault(vault)
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

    from vaultmem.cli.output_recall import progress_bar

    # the index catching up with what the merge brought in: a bar on a terminal, else nothing
    with progress_bar("Indexing") as progress:
        report = sync_mod.sync(
            v, remote=remote, message=message, progress=None if as_json else progress
        )
    if as_json:
        emit_json(report.to_dict())
    elif report.outcome == "nothing":
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
    for problem in report.problems:
        warn(problem)
    if report.verify_ok is False:
        warn("synced, but verify found problems after the merge: run vaultmem verify")
        raise typer.Exit(5)


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
    from vaultmem.app.sync.pipeline import clone as do_clone
    from vaultmem.nexus.signing import create_key

    v = do_clone(url, path)
    made = [create_key(v, v.require_agent(a)) for a in agents or []]
    if as_json:
        emit_json({"path": str(v.root), "keys": [k.to_dict() for k in made]})
        return
    emit(f"cloned into {v.root}")
    for key in made:
        state = "approved" if key.approved else "waiting for a reviewer"
        emit(f"  key {key.key_id} for {key.agent} ({state})")
        if not key.approved:
            warn(f"a reviewer approves it with: vaultmem keys approve {key.key_id} --reviewer NAME")


@commands.command(
    "merge-file",
    epilog=example("vaultmem merge-file index %O %A %B %P  (git calls it; see .gitattributes)"),
)
def merge_file(
    kind: Annotated[str, typer.Argument(help="index, state, checkpoint or snapshot.")],
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
