"""`vaultmem digest`: a digest note for each closed period of the live log (and its archives).

For each closed week or month that has entries, `digest` builds statements in sections
(summary, decided, handed over, open, fixes and failures, other activity), each citing the
entries it rests on, and writes `nexus/digests/<period>.md` (format: `nexus.digests`). With an
Anthropic key the statements come from the model (`app.digest_llm`); without one, or with
`offline`, from the deterministic builder below: grouped by type and channel, with the status
each handoff, question and alert had at the end of its period. A period whose digest was made
from exactly its current entries is left alone (`rebuild` makes it again).

Each period is written whole once all of its statements are in hand; a failed model request
stops the run (exit 7) and writes nothing for that period or the ones after it. The log itself
is only read.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from datetime import datetime, timedelta
from typing import Any

from vaultmem.app.condense.parts import SECTIONS, Statement
from vaultmem.core import clock
from vaultmem.core.errors import UsageError
from vaultmem.core.records import field, record
from vaultmem.core.vault import Vault
from vaultmem.nexus import digest_links, digests
from vaultmem.nexus.entry import Entry, read_file
from vaultmem.nexus.homes import entry_homes

MAX_TEXT = 600  # characters of one statement
SUMMARY_CHARS = 120  # of an entry's summary quoted in a statement


@record
class PeriodResult:
    period: str
    status: str  # "written", "unchanged", "new" / "changed" (dry run)
    entries: int
    path: str
    made_by: str = ""
    statements: int = 0
    requests: int = 0

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@record
class DigestRun:
    kind: str
    mode: str  # "offline" or the model
    periods: tuple[PeriodResult, ...]
    dry_run: bool = False
    requests: int = 0
    usage: dict[str, int] = field(default_factory=dict)
    skipped: tuple[str, ...] = ()  # statements from the model dropped (no valid citation, ...)
    redactions: tuple[Any, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "mode": self.mode,
            "dry_run": self.dry_run,
            "periods": [p.to_dict() for p in self.periods],
            "requests": self.requests,
            "usage": self.usage,
            "skipped": list(self.skipped),
        }


# --- the log, by period -------------------------------------------------------------------


def log_entries(vault: Vault) -> list[Entry]:
    """Every entry of the live log and its archives, in time order (ties by id)."""
    seen: dict[str, Entry] = {}
    for path in vault.chain_files("live"):
        for e in read_file(path).entries:
            seen.setdefault(e.id, e)
    return sorted(seen.values(), key=lambda e: (e.time, e.id))


def by_period(entries: Iterable[Entry], kind: str) -> dict[str, list[Entry]]:
    out: dict[str, list[Entry]] = defaultdict(list)
    for e in entries:
        out[digests.period_of(e.time, kind)].append(e)
    return dict(out)


def closed(period: str, now: datetime) -> bool:
    return digests.bounds(period)[2] <= now


# --- the offline builder --------------------------------------------------------------------


def quote(e: Entry) -> str:
    text = " ".join(e.summary.replace("[[", "[").replace("]]", "]").split())
    return text if len(text) <= SUMMARY_CHARS else text[: SUMMARY_CHARS - 1].rstrip() + "…"


def _cites(ids: Iterable[str]) -> str:
    return ", ".join(digests.cite(i) for i in ids)


def _plural(n: int, word: str) -> str:
    return f"{n:,} {word}" + ("" if n == 1 else "es" if word.endswith("x") else "s")


def _entries(n: int) -> str:
    return f"{n:,} entry" if n == 1 else f"{n:,} entries"


def _capped(
    section: str, items: list[Statement], pool: list[Entry], what: str, cap: int
) -> list[Statement]:
    """At most `cap` statements; the rest as one statement citing the first and the last."""
    if len(items) <= cap:
        return items
    rest = pool[cap:]
    ids = (rest[0].id, rest[-1].id) if len(rest) > 1 else (rest[0].id,)
    more = Statement(section, f"…and {_plural(len(rest), what)} more, from {' to '.join(ids)}", ids)
    return [*items[:cap], more]


def offline_statements(entries: list[Entry], *, cap: int) -> list[Statement]:
    """What a period holds, grouped by type and channel, deterministically (no model)."""
    if not entries:
        return []
    acks: dict[str, list[Entry]] = defaultdict(list)
    resolved: dict[str, Entry] = {}
    for e in entries:
        for a in e.acks:
            if not a.startswith(e.agent + "."):
                acks[a].append(e)
        target = e.extra.get("resolves") if e.type == "resolve" else None
        if isinstance(target, str):
            resolved.setdefault(target, e)
    by_type: dict[str, list[Entry]] = defaultdict(list)
    for e in entries:
        by_type[e.type].append(e)
    out: list[Statement] = []

    # summary: who wrote how much, and what it adds up to
    agents = Counter(e.agent for e in entries)
    who = ", ".join(f"{a} ({n:,})" for a, n in sorted(agents.items(), key=lambda t: (-t[1], t[0])))
    handoffs = by_type.get("handoff", [])
    acked = sum(1 for h in handoffs if acks.get(h.id) or h.id in resolved)
    questions = [
        q for q in by_type.get("question", []) if not acks.get(q.id) and q.id not in resolved
    ]
    alerts = [a for a in by_type.get("alert", []) if a.id not in resolved]
    parts = [
        _plural(len(by_type.get("decision", [])), "decision"),
        f"{_plural(len(handoffs), 'handoff')} ({acked:,} acked)",
        _plural(len(by_type.get("fix", [])), "fix"),
        f"{_plural(len(questions), 'question')} and {_plural(len(alerts), 'alert')} still open",
    ]
    span = (entries[0].id, entries[-1].id) if len(entries) > 1 else (entries[0].id,)
    out.append(
        Statement(
            "summary",
            f"{_entries(len(entries))} by {who}: " + ", ".join(parts) + ".",
            span,
        )
    )

    decided = [
        Statement(
            "decided",
            quote(e) + (f" (decision {e.extra['decision']})" if e.extra.get("decision") else ""),
            (e.id,),
        )
        for e in by_type.get("decision", [])
    ]
    out += _capped("decided", decided, by_type.get("decision", []), "decision", cap)

    handed = []
    for h in handoffs:
        to = ", ".join(h.to) if h.to else "anyone"
        ackers = acks.get(h.id, [])
        if ackers:
            status = "acked by " + ", ".join(dict.fromkeys(a.agent for a in ackers))
        elif h.id in resolved:
            status = f"resolved by {resolved[h.id].agent}"
        else:
            status = "not acked by the end of the period"
        extra = [a.id for a in ackers] + ([resolved[h.id].id] if h.id in resolved else [])
        handed.append(
            Statement("handed_over", f"{h.agent} → {to}: {quote(h)} — {status}", (h.id, *extra))
        )
    out += _capped("handed_over", handed, handoffs, "handoff", cap)

    # a handoff nobody acked says so under "Handed over"
    still = sorted(questions + alerts, key=lambda e: (e.time, e.id))
    opened = [
        Statement("open", f"{e.type.capitalize()} from {e.agent}: {quote(e)}", (e.id,))
        for e in still
    ]
    out += _capped("open", opened, still, "open item", cap)

    fixes_pool = sorted(
        by_type.get("fix", []) + [a for a in by_type.get("alert", []) if a.id in resolved],
        key=lambda e: (e.time, e.id),
    )
    fixes = []
    for e in fixes_pool:
        if e.type == "fix":
            fixes.append(Statement("fixes", f"{quote(e)} ({e.agent}, {e.channel})", (e.id,)))
        else:
            r = resolved[e.id]
            why = f": {quote(r)}" if r.summary else ""
            fixes.append(
                Statement("fixes", f"Alert “{quote(e)}” resolved by {r.agent}{why}", (e.id, r.id))
            )
    for r in by_type.get("resolve", []):
        target = r.extra.get("resolves")
        if isinstance(target, str) and target not in {e.id for e in entries}:
            fixes.append(Statement("fixes", f"{r.agent} resolved {target}: {quote(r)}", (r.id,)))
    out += _capped("fixes", fixes, fixes_pool, "fix", cap)

    main = {"decision", "handoff", "question", "alert", "fix", "ack", "resolve"}
    by_channel: dict[str, list[Entry]] = defaultdict(list)
    for e in entries:
        if e.type not in main:
            by_channel[e.channel].append(e)
    other = []
    for channel, group in sorted(by_channel.items(), key=lambda t: (-len(t[1]), t[0])):
        kinds = Counter(e.type for e in group)
        counted = ", ".join(
            _plural(n, k) for k, n in sorted(kinds.items(), key=lambda t: (-t[1], t[0]))
        )
        writers = ", ".join(sorted({e.agent for e in group}))
        latest = group[-2:] if len(group) > 1 else group
        examples = ", ".join(f"“{quote(e)}”" for e in reversed(latest))
        ids = tuple(dict.fromkeys([group[0].id, *(e.id for e in latest)]))
        other.append(
            Statement(
                "other",
                f"{channel}: {_entries(len(group))} ({counted}) by {writers}; latest: {examples}",
                ids,
            )
        )
    if len(other) > cap:
        rest = [
            e
            for _c, g in sorted(by_channel.items(), key=lambda t: (-len(t[1]), t[0]))[cap:]
            for e in g
        ]
        rest.sort(key=lambda e: (e.time, e.id))
        ids = (rest[0].id, rest[-1].id) if len(rest) > 1 else (rest[0].id,)
        other = [
            *other[:cap],
            Statement(
                "other", f"…and {len(rest):,} entries on {len(by_channel) - cap} more channels", ids
            ),
        ]
    out += other
    return out


# --- the note -------------------------------------------------------------------------------


def render_body(
    period: str, entries: list[Entry], statements: list[Statement], made_by: str
) -> str:
    """The digest as people read it: sections of statements, then the entries cited."""
    _kind, start, end = digests.bounds(period)
    how = "offline (grouped by type and channel)" if made_by == "offline" else f"by {made_by}"
    writers = ", ".join(sorted({e.agent for e in entries}))
    lines = [
        f"# Digest: {digests.title(period)}",
        "",
        f"{_entries(len(entries))} by {writers}, "
        f"{start.date().isoformat()} to {(end - timedelta(days=1)).date().isoformat()}. "
        "They stay in the live log until `vaultmem compact` moves them to the monthly "
        f"archives; the links at the end go to where they are now. Made {how}; every "
        "statement links the entries it rests on.",
    ]
    by_section: dict[str, list[Statement]] = defaultdict(list)
    for s in statements:
        by_section[s.section].append(s)
    cited: list[str] = []
    for key, heading in SECTIONS.items():
        items = by_section.get(key)
        if not items:
            continue
        lines += ["", f"## {heading}", ""]
        for s in items:
            lines.append(f"- {s.text} ({_cites(s.ids)})")
            cited += s.ids
    known = {e.id: e for e in entries}
    lines += ["", "## Entries cited", ""]
    for e in sorted((known[i] for i in set(cited)), key=lambda e: (e.time, e.id)):
        to = f" → {', '.join(e.to)}" if e.to else ""
        lines.append(
            f"- `{e.id}` {e.time[:16].replace('T', ' ')} · {e.agent} · {e.channel} · "
            f"{e.type}{to} · {quote(e)} ^{digests.block_id(e.id)}"
        )
    return "\n".join(lines) + "\n"


def clean_statements(
    vault: Vault, statements: list[Statement], allowed: set[str] | None = None
) -> tuple[list[Statement], list[Any]]:
    """Every statement escaped (`parts.plain`), through the secret scanner (redact, or refuse:
    exit 8), one line each; citations of ids outside `allowed` (the period's entries) dropped,
    and a statement left citing nothing dropped with them: checked before anything is written."""
    from vaultmem.app.condense.parts import plain
    from vaultmem.core.secrets import scrub

    if allowed is not None:
        statements = [
            Statement(s.section, s.text, tuple(i for i in s.ids if i in allowed))
            for s in statements
        ]
        statements = [s for s in statements if s.ids]
    texts = {f"statement {i}": plain(s.text) for i, s in enumerate(statements)}
    cleaned, found = scrub(vault.config.secrets.policy, texts, what="digest")
    out = []
    for i, s in enumerate(statements):
        text = cleaned[f"statement {i}"]
        if len(text) > MAX_TEXT:
            text = text[: MAX_TEXT - 1].rstrip() + "…"
        out.append(Statement(s.section, text, s.ids))
    return out, found


# --- the use case ----------------------------------------------------------------------------

Builder = Callable[[str, list[Entry]], list[Statement]]


def digest(
    vault: Vault,
    agent: str | None,
    *,
    kind: str | None = None,
    since: str | None = None,
    dry_run: bool = False,
    offline: bool = False,
    rebuild: bool = False,
    api_key: str | None = None,
    base_url: str | None = None,
    now: datetime | None = None,
) -> DigestRun:
    """Digest every closed period that has entries and no up-to-date digest."""
    kind = kind or vault.config.digest.period
    if kind not in digests.KINDS:
        raise UsageError(f"--period {kind!r} is not a period", "use week or month")
    moment = now or clock.now()
    start = None
    if since is not None:
        point = clock.parse_point(since, "--since")
        assert isinstance(point, datetime)
        start = point
    writer = None if dry_run else vault.require_agent(agent)
    if writer is not None:
        from vaultmem.nexus.log import check_can_append

        check_can_append(vault, writer)  # refuse (exit 8) before any model request
    use_model = bool(api_key) and not offline
    mode = vault.config.llm.model if use_model else "offline"
    todo: list[tuple[str, list[Entry], str]] = []
    results: list[PeriodResult] = []
    for period, entries in sorted(by_period(log_entries(vault), kind).items()):
        _k, _s, end = digests.bounds(period)
        if end > moment or (start is not None and end <= start):
            continue
        path = digests.digest_path(vault, period)
        rel = vault.rel(path)
        status = "new"
        if path.exists():
            note = digests.read_digest(vault, path)
            current = note.meta is not None and note.meta.source == digests.source_hash(entries)
            if current and not rebuild:
                results.append(
                    PeriodResult(
                        period,
                        "unchanged",
                        len(entries),
                        rel,
                        note.meta.made_by if note.meta else "",
                    )
                )
                continue
            status = "rebuild" if current else "changed"
        todo.append((period, entries, status))
    if dry_run:
        for period, entries, status in todo:
            requests = 0
            if use_model:
                from vaultmem.app.condense.digest_llm import plan_requests

                requests = plan_requests(vault, period, entries)
            results.append(
                PeriodResult(
                    period,
                    status,
                    len(entries),
                    vault.rel(digests.digest_path(vault, period)),
                    mode,
                    0,
                    requests,
                )
            )
        return DigestRun(kind, mode, tuple(sorted(results, key=lambda r: r.period)), dry_run=True)
    assert writer is not None
    sess = None
    skipped: list[str] = []
    redactions: list[Any] = []
    if use_model:
        from vaultmem.core import llm

        sess = llm.session(vault.config.llm, str(api_key), base_url)
    homes = entry_homes(vault)
    for period, entries, _status in todo:
        before = sess.requests if sess else 0
        if sess is not None:
            from vaultmem.app.condense.digest_llm import model_statements

            statements = model_statements(vault, sess, period, entries, skipped)
        else:
            statements = offline_statements(entries, cap=vault.config.digest.max_items)
        statements, found = clean_statements(vault, statements, {e.id for e in entries})
        redactions += found
        body = render_body(period, entries, statements, mode)
        meta = digests.new_meta(period, entries, made_by=mode, writer=writer)
        path = digests.write(vault, meta, body, homes)
        results.append(
            PeriodResult(
                period,
                "written",
                len(entries),
                vault.rel(path),
                mode,
                len(statements),
                (sess.requests - before) if sess else 0,
            )
        )
    digest_links.relink(vault)  # the digests left alone link to where their entries are now
    return DigestRun(
        kind,
        mode,
        tuple(sorted(results, key=lambda r: r.period)),
        requests=sess.requests if sess else 0,
        usage=dict(sess.usage) if sess else {},
        skipped=tuple(skipped),
        redactions=tuple(redactions),
    )
