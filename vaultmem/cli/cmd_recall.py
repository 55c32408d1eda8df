"""Layer 4 commands: recall, index, watch.

Nothing from the core is imported at the top: every command module is imported on every call,
and whoosh must stay out of `append` and `read`.
"""

from __future__ import annotations

from typing import Annotated

import typer

from vaultmem.cli.base import AgentOpt, JsonOpt, VaultOpt, commands, emit, emit_json, example
from vaultmem.cli.hot import warn_freshness
from vaultmem.cli.io import warn
from vaultmem.search import manifest, refresh
from vaultmem.search.documents import Kind


@commands.command(
    epilog=example(
        'vaultmem recall "stripe webhooks"',
        'vaultmem recall "capacity" --kind memory --limit 3 --json',
        'vaultmem recall "\\"walk-in reserve\\" kind:note" --explain',
        'vaultmem recall "who handles payments" --mode hybrid --explain',
    ),
)
def recall(
    query: Annotated[
        str,
        typer.Argument(
            help='Words (any may match), "quoted phrases" (rank first; must match with --strict '
            'or as phrase:"...") and field:value filters (kind, type, agent, tag, id, status, '
            "under, since, title, heading, body)."
        ),
    ],
    limit: Annotated[int, typer.Option("--limit", "-n", help="Most hits to return.")] = 10,
    kind: Annotated[
        Kind | None,
        typer.Option(
            help="Only documents of this kind.",
            show_default=False,
        ),
    ] = None,
    type_: Annotated[
        str | None,
        typer.Option(
            "--type", "-t", help="Frontmatter type (facts, bank notes).", show_default=False
        ),
    ] = None,
    under: Annotated[
        str | None,
        typer.Option(help="Only files under this vault folder (or this file).", show_default=False),
    ] = None,
    since: Annotated[
        str | None,
        typer.Option(
            help="Only documents dated on or after this day (frontmatter date, else mtime): "
            "a date (2026-11-30), a UTC time (its day) or a duration before now (7d).",
            show_default=False,
        ),
    ] = None,
    include_retracted: Annotated[
        bool,
        typer.Option(
            "--include-retracted",
            help="Also retracted/superseded facts and rejected/expired bank notes.",
        ),
    ] = False,
    strict: Annotated[
        bool,
        typer.Option(
            "--strict",
            help='Quoted phrases must match (by default they rank first; phrase:"..." is '
            "always strict).",
        ),
    ] = False,
    explain: Annotated[
        bool,
        typer.Option(
            "--explain", help="Show what contributed to each score (and keyword/semantic ranks)."
        ),
    ] = False,
    mode: Annotated[
        str | None,
        typer.Option(
            help="keyword, semantic or hybrid (default: [recall] mode; auto = hybrid when the "
            "semantic extra is installed).",
            show_default=False,
        ),
    ] = None,
    vault: VaultOpt = None,
    agent: AgentOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Ranked places in the vault about QUERY, with path, lines and a snippet.

    The index is brought up to date first (only changed files are reindexed). With --agent,
    hits come from shared notes and that agent's own folder; `agent:NAME` in the query keeps
    only documents written by NAME.
    """
    from vaultmem.cli import hot

    hot.recall(
        query=query,
        limit=limit,
        kind=kind,
        type_=type_,
        under=under,
        since=since,
        include_retracted=include_retracted,
        strict=strict,
        explain=explain,
        mode=mode,
        vault=vault,
        agent=agent,
        as_json=as_json,
    )


@commands.command(
    "index",
    epilog=example(
        "vaultmem index",
        "vaultmem index --rebuild",
        "vaultmem index --semantic",
        "vaultmem index --json",
    ),
)
def index_cmd(
    rebuild: Annotated[
        bool, typer.Option("--rebuild", help="Rebuild from scratch (with a progress bar).")
    ] = False,
    semantic: Annotated[
        bool,
        typer.Option(
            "--semantic",
            help="Also bring the embeddings up to date, and say where the model came from "
            "(exit 7 without the semantic extra).",
        ),
    ] = False,
    vault: VaultOpt = None,
    agent: AgentOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Bring the search index up to date with the files (recall does this by itself).

    Waits for another refresh to finish (exit 6 after the lock timeout). Lists the files it
    could not read cleanly; `vaultmem status` lists them too.
    """
    from vaultmem.cli.base import open_vault
    from vaultmem.search.query import load_model, resolve_mode

    v = open_vault(vault)
    mode = resolve_mode(v, "hybrid" if semantic else None)
    if as_json:
        model, mode, notes = load_model(v, mode, fallback=not semantic, network=semantic)
        fresh = refresh.refresh(v, wait=None, rebuild=rebuild, trust_watcher=False, model=model)
    else:
        from vaultmem.cli.output_recall import progress_bar

        with progress_bar("Fetching model") as update:  # a hub model only: nothing otherwise
            model, mode, notes = load_model(
                v, mode, progress=update, fallback=not semantic, network=semantic
            )
        # one bar: the files being indexed, then the documents being embedded
        with progress_bar("Indexing", "files, then documents") as update:
            fresh = refresh.refresh(
                v,
                wait=None,
                rebuild=rebuild,
                trust_watcher=False,
                progress=update if rebuild else None,
                model=model,
                embed_progress=update,
            )
    for note in notes:
        warn(note)
    warn_freshness(fresh)
    problems = manifest.index_problems(v)
    semantic_info = (
        {"model": model.name, "source": model.source, "dims": model.dims}
        if model is not None
        else None
    )
    if as_json:
        emit_json(
            {
                "index": fresh.to_dict(),
                "semantic": semantic_info,
                "problems": [p.to_dict() for p in problems],
            }
        )
        return
    verb = "Rebuilt" if fresh.rebuilt else "Refreshed"
    emit(
        f"{verb} index: {fresh.files} files, {fresh.refreshed} (re)indexed, "
        f"{fresh.removed} removed, in {fresh.duration_ms / 1000:.2f}s"
    )
    if model is not None:
        emit(
            f"Embeddings: {fresh.embedded} document(s) embedded now; model {model.name} "
            f"({model.dims} dimensions), {model.source}"
        )
    for p in problems:
        emit(f"  ! {p.path}: {p.kind}: {p.message}")


@commands.command(epilog=example("vaultmem watch", "vaultmem watch --json --debounce 1"))
def watch(
    debounce: Annotated[
        float, typer.Option(help="Seconds of quiet before a burst of changes is indexed.")
    ] = 0.3,
    vault: VaultOpt = None,
    agent: AgentOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Keep the index current as files change, until Ctrl-C or SIGTERM (both exit 0).

    One line per refresh on stdout (a JSON object per line with --json). While it runs,
    `recall` trusts it instead of walking the vault.
    """
    import json
    import sys

    from vaultmem.cli.base import open_vault
    from vaultmem.search.watch import WatchEvent
    from vaultmem.search.watch import watch as do_watch

    v = open_vault(vault)

    def report(event: WatchEvent) -> None:
        f = event.freshness
        warn_freshness(f)
        if as_json:
            line = json.dumps({"events": event.events, "index": f.to_dict()}, ensure_ascii=False)
        elif not event.events:
            line = f"watching {v.root} ({f.files} files indexed); Ctrl-C to stop"
        else:
            line = (
                f"{event.events} change(s): {f.refreshed} (re)indexed, {f.removed} removed "
                f"in {f.duration_ms:.0f} ms"
            )
        sys.stdout.write(line + "\n")
        sys.stdout.flush()

    import signal
    import threading

    stop = threading.Event()
    # SIGTERM (a service manager, `kill`) stops it as cleanly as Ctrl-C does
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    try:
        do_watch(v, debounce=debounce, on_refresh=report, stop=stop)
    except KeyboardInterrupt:
        if not as_json:
            sys.stderr.write("stopped\n")
