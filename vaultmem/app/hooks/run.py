"""`vaultmem hook EVENT`: run one event to an `Outcome`, never raising (see `app.hooks.contract`)."""

from __future__ import annotations

import json
from pathlib import Path

from vaultmem.app.hooks.contract import (
    HookEvent,
    HookTimeout,
    Outcome,
    open_hook_vault,
    parse_input,
    time_bound,
    write_log,
)
from vaultmem.core.errors import VaultmemError
from vaultmem.core.vault import Vault


def describe(exc: BaseException) -> tuple[str, str]:
    """(one line for people, the record for the log)."""
    if isinstance(exc, VaultmemError):
        return exc.message, f"{exc.kind} (exit {exc.exit_code}): {exc}"
    if isinstance(exc, HookTimeout):
        return str(exc), "HookTimeout: the hook ran out of time ([hooks] timeout)"
    import traceback

    trace = "".join(traceback.format_exception(exc))
    return f"unexpected {type(exc).__name__}: {exc}", trace


# --- the entry point ------------------------------------------------------------------------------


def run_hook(
    event: str,
    stdin_text: str,
    *,
    vault_path: Path | None,
    agent: str | None,
    default_timeout: float = 5.0,
) -> Outcome:
    """Run one hook event to an Outcome. Never raises (except KeyboardInterrupt)."""
    payload = parse_input(stdin_text)
    vault: Vault | None = None
    try:
        if event not in {e.value for e in HookEvent}:
            raise VaultmemError(
                f"unknown hook event {event!r}",
                f"use one of: {', '.join(e.value for e in HookEvent)}",
            )
        name = HookEvent(event)
        with time_bound(default_timeout):
            vault = open_hook_vault(vault_path, payload)
            bound = vault.config.hooks.timeout
        with time_bound(bound):
            from vaultmem.app.hooks import events as hook_events

            outcome = hook_events.dispatch(name, vault, agent, payload)
        if payload.problem:
            write_log(vault, event, payload, agent, f"note: {payload.problem}; went on without it")
        return outcome
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # a hook never breaks the session: every failure is logged
        if isinstance(exc, SystemExit):
            exc = RuntimeError(f"exit {exc.code}")
        short, record = describe(exc)
        where = write_log(vault, event, payload, agent, record)
        line = f"vaultmem hook {event}: {short} (details in {where})"
        stdout = ""
        if event == HookEvent.SESSION_START:
            stdout = json.dumps({"systemMessage": f"vaultmem memory not loaded: {short}"})
        return Outcome(stdout=stdout, stderr=line + "\n")
