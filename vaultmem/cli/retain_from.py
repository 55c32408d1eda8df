"""What the `retain` command prints: one line a result, the credentials it redacted, and whole
sessions (`retain --from TRANSCRIPT`, `retain --queued`; the use cases are in
`vaultmem.bank.retention`)."""

from __future__ import annotations

from typing import Any

from vaultmem.cli.hot import warn_redactions
from vaultmem.cli.io import emit, emit_json, warn


def retain_line(res: Any) -> str:
    if res.outcome == "duplicate":
        extra = f"evidence {res.evidence}" + (
            ", dry run" if res.dry_run else ", nothing new written"
        )
        if res.target_status not in (None, "pending", "active"):
            extra = f"{res.target_status}; {extra}"
        return f"duplicate {res.target} ({extra})"
    where = res.path or "(dry run)"
    if res.outcome == "may_supersede":
        return f"may supersede {res.target} (wrote {res.id} {where})"
    return f"inserted {res.id} {where}"


def warn_redactions_of(results: Any) -> None:
    """Results carry `findings`, transcripts `redactions`: one notice per credential."""
    found = []
    for r in results:
        found += list(getattr(r, "findings", None) or getattr(r, "redactions", None) or ())
    warn_redactions(found)


def show_plan(v: Any, transcript: Any, label: str, as_json: bool) -> None:
    """--dry-run with a transcript: what would be sent, chunk by chunk; no request."""
    from vaultmem.bank.retention import plan

    chunks = plan(v, transcript)
    warn_redactions_of([transcript])
    if as_json:
        emit_json(
            {
                "source": label,
                "transcript": transcript.to_dict(),
                "chunks": [c.to_dict() for c in chunks],
                "dry_run": True,
            }
        )
        return
    dropped = ", ".join(f"{n:,} {k}" for k, n in transcript.dropped.items()) or "nothing"
    total = sum(len(c.text) for c in chunks)
    emit(
        f"{label}: {transcript.format.value}, {len(transcript.turns)} {transcript.unit}s, "
        f"{len(chunks)} request(s), {total:,} characters to send; left out: {dropped}"
    )
    for i, chunk in enumerate(chunks, 1):
        emit(
            f"\n--- request {i} of {len(chunks)}: {transcript.unit}s {chunk.first}-{chunk.last} ---"
        )
        emit(chunk.text)
    warn("dry run: nothing was sent and nothing was written")


def retain_from(
    v: Any, agent: str, path: str, source: str | None, tags: list[str], dry_run: bool, as_json: bool
) -> None:
    import sys

    from vaultmem.bank.retention import load_transcript, retain_transcript
    from vaultmem.core.environment import ENV_ANTHROPIC_BASE_URL, ENV_ANTHROPIC_KEY, env

    transcript, label = load_transcript(path, sys.stdin.read() if path == "-" else None)
    label = source or label
    if dry_run:
        show_plan(v, transcript, label, as_json)
        return
    if sum(len(u) for u in transcript.units) > v.config.llm.max_transcript_chars:
        warn(
            f"the session is longer than [llm] max_transcript_chars "
            f"({v.config.llm.max_transcript_chars:,}): it is sent in several requests"
        )
    done = retain_transcript(
        v,
        agent,
        transcript,
        label,
        tags=tags,
        api_key=env(ENV_ANTHROPIC_KEY),
        base_url=env(ENV_ANTHROPIC_BASE_URL),
    )
    report_retention(done, as_json)


def report_retention(done: Any, as_json: bool) -> None:
    warn_redactions_of([done.transcript, *done.results])
    for why in done.extraction.skipped:
        warn(f"skipped a malformed proposal ({why})")
    if as_json:
        emit_json(done.to_dict())
        return
    if not done.results:
        emit(f"{done.label}: nothing worth retaining was found")
    for res in done.results:
        emit(f"{retain_line(res)}  [{res.type}] {res.text}")


def retain_queued(v: Any, agent: str | None, dry_run: bool, as_json: bool) -> int:
    from vaultmem.bank.retention import queued, retain_queued
    from vaultmem.core.environment import ENV_ANTHROPIC_BASE_URL, ENV_ANTHROPIC_KEY, env

    if dry_run:
        items = queued(v, agent)
        if as_json:
            emit_json({"queued": [q.to_dict(v) for q in items], "dry_run": True})
        elif not items:
            emit("no queued sessions")
        for item in [] if as_json else items:
            show_plan(v, item.transcript, item.label, False)
        return 0
    run = retain_queued(
        v, agent, api_key=env(ENV_ANTHROPIC_KEY), base_url=env(ENV_ANTHROPIC_BASE_URL)
    )
    if run.busy:
        warn("another `vaultmem retain --queued` is running; nothing done")
        return 6
    failed = [o for o in run.outcomes if o.error]
    if as_json:
        emit_json({"sessions": [o.to_dict(v) for o in run.outcomes]})
    else:
        if not run.outcomes:
            emit("no queued sessions")
        for o in run.outcomes:
            if o.retention is not None:
                report_retention(o.retention, False)
            else:
                emit(f"{o.item.label}: kept in the queue ({o.error})")
    return failed[0].exit_code if failed else 0
