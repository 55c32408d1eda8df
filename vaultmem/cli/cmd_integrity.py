"""Integrity commands: keys (create, list, approve), trust (show, accept), verify, repair."""

from __future__ import annotations

from typing import Annotated

import typer

from vaultmem.cli.base import (
    AgentOpt,
    JsonOpt,
    ReviewerOpt,
    VaultOpt,
    commands,
    emit,
    emit_json,
    example,
    open_vault,
    warn,
)

keys_app = typer.Typer(
    help="Signing keys: `keys create` (new key pair), `keys list`, `keys approve`.",
    no_args_is_help=True,
    epilog=example("vaultmem keys create --agent ella", "vaultmem keys list"),
)
commands.add_typer(keys_app, name="keys")


@keys_app.command(
    "create",
    epilog=example("vaultmem keys create --agent ella", "vaultmem keys create --reviewer chiara"),
)
def keys_create(
    reviewer: Annotated[
        str | None,
        typer.Option(
            "--reviewer",
            help="A key for this person instead (people/<name>/keys.md), to sign `resolve`.",
            show_default=False,
        ),
    ] = None,
    vault: VaultOpt = None,
    agent: AgentOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Make a new Ed25519 key pair for an agent: the private key in VAULTMEM_HOME (mode 0600),
    the public key in agents/<agent>/keys.md. Old keys stay listed so old entries verify."""
    from vaultmem.nexus.keyring import create_key

    v = open_vault(vault)
    if reviewer is not None:
        info = create_key(v, v.require_reviewer(reviewer), acting_agent=agent)
    else:
        info = create_key(v, v.require_agent(agent))
    if as_json:
        emit_json(info.to_dict())
    else:
        emit(f"{info.key_id} for {info.agent} ({info.approval})")
        emit(f"  public key:  {info.public_path} (in the vault)")
        emit(f"  private key: {info.private_path} (this machine only; never share it)")
    if not info.approved:
        warn(
            f"no earlier key of {info.agent} on this machine vouches for {info.key_id}: entries "
            "it signs fail `vaultmem verify` until a reviewer runs "
            f"`vaultmem keys approve {info.key_id} --reviewer NAME`"
        )


@keys_app.command(
    "approve", epilog=example("vaultmem keys approve k-52caaa9663e6e24e --reviewer chiara")
)
def keys_approve(
    key_id: Annotated[str, typer.Argument(help="The key id (k-…), as `keys list` shows it.")],
    reviewer: ReviewerOpt = None,
    vault: VaultOpt = None,
    agent: AgentOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """A person approves a key that no earlier key of its agent vouched for (a new machine, a
    copied vault) by signing it with their own key (make one: vaultmem keys create --reviewer
    NAME). Refused (exit 8) when an agent is acting, the name is not a reviewer, or the
    reviewer has no key on this machine. Re-run it for a key approved by text only (an old
    vault's `approved-by reviewer NAME TIME`): text approves nothing."""
    from vaultmem.nexus.keyring import approve_key

    key = approve_key(open_vault(vault), key_id, reviewer=reviewer, acting_agent=agent)
    if as_json:
        emit_json(key.to_dict())
    else:
        emit(f"{key.key_id} of {key.agent}: approved ({key.approval})")


@keys_app.command("list", epilog=example("vaultmem keys list", "vaultmem keys list --json"))
def keys_list(vault: VaultOpt = None, agent: AgentOpt = None, as_json: JsonOpt = False) -> None:
    """Every registered public key, and whether this machine holds its private half."""
    from vaultmem.nexus.keyring import public_keys
    from vaultmem.nexus.signing import private_key_path

    v = open_vault(vault)
    keys = [k for k in public_keys(v).values() if agent is None or k.agent == agent]
    rows = [
        {**k.to_dict(), "private_here": private_key_path(k.agent, k.key_id).is_file()} for k in keys
    ]
    if as_json:
        emit_json({"keys": rows})
        return
    if not rows:
        emit("no keys yet; create one with: vaultmem keys create --agent NAME")
    for r in rows:
        here = "private key here" if r["private_here"] else "no private key here"
        state = r["approval"] if r["approved"] else f"NOT APPROVED: {r['approval']}"
        emit(f"{r['agent']:<12} {r['key_id']}  created {r['created'] or '?'}  ({here}; {state})")


trust_app = typer.Typer(
    help="This machine's trust pins: `trust` shows pinned vs the files, `trust accept` pins "
    "the files' security settings and keys.",
    invoke_without_command=True,
)
commands.add_typer(trust_app, name="trust")


def _print_trust(report: object, *, accepted: bool) -> None:
    from vaultmem.nexus.trust import TrustReport

    assert isinstance(report, TrustReport)
    pinned, current = report.pinned["settings"], report.current["settings"]
    emit(f"pins: {report.pins_file}")
    for key in ("require_signatures", "secrets_policy", "reviewers", "agents"):
        was, now = pinned.get(key), current.get(key)
        mark = "  " if was == now else "≠ "
        emit(f"{mark}{key:<19} pinned {json_text(was):<24} file {json_text(now)}")
    for name, keys in sorted((report.pinned["keys"].get("reviewers") or {}).items()):
        emit(f"  reviewer {name}: {', '.join(sorted(keys))} pinned")
    if accepted:
        for change in report.changes:
            emit(f"accepted: {change.line()}")
        if not report.changes:
            emit("nothing to accept: the files match this machine's pins")
        return
    for change in report.changes:
        emit(f"pending: {change.line()}")
    if report.changes:
        warn(
            "these changes are not in effect on this machine; if you made them or trust who "
            "did, run: vaultmem trust accept"
        )
    else:
        emit("ok: the files match this machine's pins")


def json_text(value: object) -> str:
    import json

    return json.dumps(value)


@trust_app.callback(epilog=example("vaultmem trust", "vaultmem trust --json"))
def trust_cmd(
    ctx: typer.Context,
    vault: VaultOpt = None,
    agent: AgentOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Show the security settings and keys this machine pinned for the vault next to what the
    files say now, and every change not accepted yet (exit 5 when there is one)."""
    if ctx.invoked_subcommand:
        return
    from vaultmem.nexus.trust import report

    r = report(open_vault(vault, lenient=True), lenient=True)
    if as_json:
        emit_json(r.to_dict())
    else:
        _print_trust(r, accepted=False)
    if r.changes:
        raise typer.Exit(5)


@trust_app.command(
    "accept", epilog=example("vaultmem trust accept", "vaultmem trust accept --json")
)
def trust_accept(
    vault: VaultOpt = None,
    agent: AgentOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Pin what the files say now: the security settings of vaultmem.toml, the reviewers' keys
    and each agent's first key. Run it only for changes you made or trust (see: vaultmem
    trust). Refused (exit 8) when an agent is acting."""
    from vaultmem.nexus.trust import accept

    r = accept(open_vault(vault), acting_agent=agent)
    if as_json:
        emit_json(r.to_dict())
    else:
        _print_trust(r, accepted=True)


@commands.command(
    epilog=example("vaultmem verify", "vaultmem verify --json", "vaultmem verify --full")
)
def verify(
    full: Annotated[
        bool,
        typer.Option(
            "--full", help="Check every signature again (not only those not checked here yet)."
        ),
    ] = False,
    vault: VaultOpt = None,
    agent: AgentOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Check the logs (hashes, chains, signatures, gaps) and the memory notes.

    Exit 5 and a report naming every edited, forged, reordered or missing entry. Signatures
    this machine already checked are remembered; --full checks them all again.
    """
    from vaultmem.nexus.verify import verify as do_verify

    v = open_vault(vault, lenient=True)  # a broken vaultmem.toml: verified under the pins
    report = do_verify(v, full=full)
    from vaultmem.app.lifecycle.status import identity_problems, intent_problems, memory_problems

    other = [p for p in identity_problems(v) + memory_problems(v) + intent_problems(v)]
    if as_json:
        data = report.to_dict()
        data["notes"] = [p.to_dict() for p in other]
        data["ok"] = report.ok and not other
        emit_json(data)
    else:
        from vaultmem.cli.output_log import print_verify

        print_verify(report, other)
    if not report.ok or other:
        raise typer.Exit(5)


@commands.command(
    epilog=example(
        "vaultmem repair",
        "vaultmem repair --json",
        "vaultmem repair --state 3",
        "vaultmem repair --merge-forks",
    )
)
def repair(
    merge_forks: Annotated[
        bool,
        typer.Option(
            "--merge-forks",
            help="Also join chains that forked (one key wrote on two machines) with one signed "
            "merge entry each; run it on one machine, then sync.",
        ),
    ] = False,
    state: Annotated[
        int | None,
        typer.Option(
            "--state",
            help="Put nexus/project-state.md back to journaled version N (see: vaultmem state "
            "--history) instead of repairing the logs.",
            show_default=False,
        ),
    ] = None,
    vault: VaultOpt = None,
    agent: AgentOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Restore log entries an editor lost (from the journal, in time order), put back edited
    entries, set torn text aside, write a log a git merge left out of order in its canonical
    order, remove stale temp files; say what was done. Exit 5 if problems remain."""
    if state is not None:
        from vaultmem.nexus.state import restore_state

        restored = restore_state(open_vault(vault), state)
        if as_json:
            emit_json(restored.to_dict())
        else:
            emit(f"restored {restored.path} to version {restored.version} ({restored.time})")
        return
    from vaultmem.app.lifecycle.status import recover_half_done
    from vaultmem.nexus.repair import repair as do_repair

    v = open_vault(vault)
    finished = recover_half_done(v)
    report = do_repair(v, merge_forks=merge_forks)
    if as_json:
        emit_json({**report.to_dict(), "half_done": finished})
    else:
        for action in [*finished, *report.actions]:
            emit(action)
        if not report.actions and not finished:
            emit("nothing to repair")
        if report.after.problems:
            from vaultmem.cli.output_log import print_verify

            emit("still wrong (cannot be restored from this machine's journal):")
            print_verify(report.after, [])
    if report.after.problems:
        raise typer.Exit(5)
