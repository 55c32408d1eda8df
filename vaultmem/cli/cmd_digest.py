"""Memory that stays small: digest, compact, profile, consolidate."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

import typer

from vaultmem.cli.base import (
    AgentOpt,
    DryRunOpt,
    JsonOpt,
    VaultOpt,
    commands,
    emit,
    emit_json,
    example,
    open_vault,
    warn,
)
from vaultmem.cli.hot import warn_redactions


class Period(StrEnum):
    WEEK = "week"
    MONTH = "month"


OfflineOpt = Annotated[
    bool,
    typer.Option(
        "--offline",
        help="Build it without the model (deterministic), even when ANTHROPIC_API_KEY is set.",
    ),
]


def _key() -> tuple[str | None, str | None]:
    from vaultmem.core.environment import ENV_ANTHROPIC_BASE_URL, ENV_ANTHROPIC_KEY, env

    return env(ENV_ANTHROPIC_KEY), env(ENV_ANTHROPIC_BASE_URL)


def _entries(n: int) -> str:
    return f"{n:,} entry" if n == 1 else f"{n:,} entries"


def _usage_line(requests: int, usage: dict[str, int]) -> str:
    if not requests:
        return ""
    read = usage.get("cache_read_input_tokens", 0)
    total = read + usage.get("input_tokens", 0) + usage.get("cache_creation_input_tokens", 0)
    share = f"{read / total:.0%}" if total else "0%"
    return (
        f"{requests} request(s), {total:,} input tokens ({share} from the prompt cache), "
        f"{usage.get('output_tokens', 0):,} output tokens"
    )


@commands.command(
    epilog=example(
        "vaultmem digest --agent ella",
        "vaultmem digest --period month --since 2026-01-01 --dry-run",
        "vaultmem digest --offline --agent ella --json",
    ),
)
def digest(
    period: Annotated[
        Period | None,
        typer.Option(
            "--period", help="week or month [default: [digest] period].", show_default=False
        ),
    ] = None,
    since: Annotated[
        str | None,
        typer.Option(
            "--since",
            help="Only periods ending after this date or UTC time (2026-11-01, "
            "2026-11-01T09:00) or duration before now (8w).",
            show_default=False,
        ),
    ] = None,
    dry_run: DryRunOpt = False,
    offline: OfflineOpt = False,
    rebuild: Annotated[
        bool, typer.Option("--rebuild", help="Make digests again even where nothing changed.")
    ] = False,
    vault: VaultOpt = None,
    agent: AgentOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Write a digest note for each closed period of the live log: nexus/digests/PERIOD.md.

    What was decided, handed over, left open and fixed, each statement linking the entries it
    rests on. Claude writes it when ANTHROPIC_API_KEY is set (exit 7 if a request fails:
    nothing is written for that period); otherwise, or with --offline, it is grouped by type
    and channel, deterministically. Signed by --agent; a period is digested again only when
    its entries changed. The log is never changed.
    """
    from vaultmem.app.condense.digest import digest as do_digest

    api_key, base_url = _key()
    run = do_digest(
        open_vault(vault),
        agent,
        kind=period.value if period else None,
        since=since,
        dry_run=dry_run,
        offline=offline,
        rebuild=rebuild,
        api_key=api_key,
        base_url=base_url,
    )
    warn_redactions(run.redactions)
    for why in run.skipped:
        warn(f"dropped a statement from the model ({why})")
    if as_json:
        emit_json(run.to_dict())
        return
    if not run.periods:
        emit("no closed period with entries")
    for p in run.periods:
        if p.status == "written":
            emit(f"wrote {p.path} ({_entries(p.entries)}, {p.statements} statements, {p.made_by})")
        elif p.status == "unchanged":
            emit(f"unchanged {p.path} ({_entries(p.entries)})")
        else:
            more = f", {p.requests} request(s)" if p.requests else ""
            emit(f"would write {p.path} ({p.status}, {_entries(p.entries)}, {p.made_by}{more})")
    line = _usage_line(run.requests, run.usage)
    if line:
        emit(line)


@commands.command(
    epilog=example(
        "vaultmem compact --older-than 30d --dry-run", "vaultmem compact --older-than 30d"
    ),
)
def compact(
    older_than: Annotated[
        str,
        typer.Option(
            "--older-than",
            help="Move entries older than this: a duration (30d, 8w, 36h) or a number of days.",
        ),
    ],
    dry_run: DryRunOpt = False,
    vault: VaultOpt = None,
    agent: AgentOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Move old entries out of the live log into the monthly archives, once digested.

    Only when every entry to move lies in a period whose digest was made from its current
    entries; otherwise nothing moves and it exits 8 naming the periods (run vaultmem digest).
    Nothing is deleted; verify still passes; read shows the digests instead.
    """
    from vaultmem.app.condense.compact import compact as do_compact

    result = do_compact(open_vault(vault), older_than, dry_run=dry_run)
    if as_json:
        emit_json(result.to_dict())
        return
    if not result.moved:
        emit(f"nothing older than {result.cutoff} in the live log")
        return
    verb = "would move" if dry_run else "moved"
    where = ", ".join(f"{path} ({n:,})" for path, n in result.files.items())
    emit(f"{verb} {result.moved:,} entries older than {result.cutoff} to {where}")
    emit(f"covered by {len(result.digests)} digest(s); {result.kept:,} entries stay live")


@commands.command(
    epilog=example(
        "vaultmem profile", "vaultmem profile --agent ella --rebuild", "vaultmem profile --show"
    ),
)
def profile(
    rebuild: Annotated[
        bool, typer.Option("--rebuild", help="Build it again even when nothing changed.")
    ] = False,
    offline: OfflineOpt = False,
    show: Annotated[
        bool, typer.Option("--show", help="Print the profile(s) as they are; build nothing.")
    ] = False,
    vault: VaultOpt = None,
    agent: AgentOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Build memory/PROFILE.md (and agents/AGENT/PROFILE.md with --agent) from approved memory.

    Only approved, active memories and active decisions are read, never pending or rejected
    facts; every line links the memory it comes from. Claude writes it when ANTHROPIC_API_KEY
    is set (exit 7 if the request fails: nothing is written); otherwise, or with --offline, it
    lists the highest-value memories by type. read shows it near the top, marked stale when
    the memories changed since.
    """
    from vaultmem.app.condense.profile import build, profile_path

    v = open_vault(vault)
    scopes: list[str | None] = [None] if not agent else [None, v.require_agent(agent)]
    if show:
        found = {}
        for scope in scopes:
            path = profile_path(v, scope)
            if path.exists():
                found[v.rel(path)] = path.read_text(encoding="utf-8")
        if not found:
            from vaultmem.core.errors import NotFoundError

            raise NotFoundError("no profile yet", "build one with: vaultmem profile")
        if as_json:
            emit_json({"profiles": found})
        else:
            emit("\n".join(found.values()).rstrip("\n"))
        return
    api_key, base_url = _key()
    results = [
        build(v, scope, rebuild=rebuild, offline=offline, api_key=api_key, base_url=base_url)
        for scope in scopes
    ]
    if as_json:
        emit_json({"profiles": [r.to_dict() for r in results]})
        return
    for r in results:
        if r.status == "written":
            lines = f"{len(r.lines)} line" + ("" if len(r.lines) == 1 else "s")
            emit(f"wrote {r.path} ({lines} from {r.sources} sources, {r.made_by})")
        elif r.status == "unchanged":
            emit(f"unchanged {r.path} (its {r.sources} sources did not change)")
        else:
            emit(f"no approved memory for {r.path}: nothing to build")
        line = _usage_line(r.requests, r.usage or {})
        if line:
            emit(line)


@commands.command(
    epilog=example("vaultmem consolidate --dry-run", "vaultmem consolidate --agent ella"),
)
def consolidate(
    dry_run: DryRunOpt = False,
    vault: VaultOpt = None,
    agent: AgentOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Propose merges of near-duplicate and contradicting memories, for review (promote).

    Clusters of shared memories (and --agent's own) that say the same thing, or contradict
    each other, become pending proposals in --agent's bank; approving one replaces the whole
    cluster with one memory. Memory is never changed by this command.
    """
    from vaultmem.app.condense.consolidate import consolidate as do_consolidate

    run = do_consolidate(open_vault(vault), agent, dry_run=dry_run)
    if as_json:
        emit_json(run.to_dict())
        return
    if not run.clusters:
        emit("no near-duplicate or contradicting memories found")
    for c in run.clusters:
        ids = ", ".join(c.ids)
        what = f"{c.kind} {ids} ({c.scope}, similarity {c.score:.2f}): keep “{c.members[0].name}”"
        if c.status == "written":
            emit(f"proposed {c.proposal}: {what}")
        elif c.status == "already proposed":
            emit(f"already proposed: {what}")
        else:
            emit(f"would propose: {what}")
    if any(c.status == "written" for c in run.clusters):
        emit("review them with: vaultmem promote --reviewer NAME")
