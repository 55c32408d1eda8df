"""Settings: flag > VAULTMEM_* environment > vaultmem.toml > defaults. The schema of
vaultmem.toml (every section, its defaults and safe ranges) and the checked parse of its text.

The ground floor of the core is a line, each module knowing only those below it: the
environment (`environment.py`), the clock, these settings, this machine's secrets (`device.py`),
the seal (`seal.py`), the sealed parse cache (`tomlcache.py`), and this machine's pins, where the
vault's config as this machine enforces it is read (`pins.load_config`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from vaultmem.core.errors import ConfigError
from vaultmem.core.names import AGENT_NAME_RE
from vaultmem.core.records import Section, setting

CONFIG_NAME = "vaultmem.toml"

SUPPORTED_LANGUAGES = ("en", "it", "de", "fr", "es", "pt", "nl")


class LogSettings(Section):
    require_signatures: bool = True
    lock_timeout: float = setting(default=10.0, lo=0.01, hi=120)  # seconds (a timing: bounded)
    max_summary: int = setting(default=200, lo=20, hi=10_000)
    max_body: int = setting(default=20_000, lo=0, hi=10_000_000)


class SecretSettings(Section):
    policy: str = setting(default="redact", choices=("redact", "refuse"))


class ReadSettings(Section):
    budget: int = setting(default=0)  # tokens; 0 means no budget
    recent_own: int = setting(default=5, lo=0, hi=1000)
    max_new_entries: int = setting(default=50, lo=1, hi=100_000)


RECALL_MODES = ("auto", "keyword", "semantic", "hybrid")
# the full-text engine behind keyword recall: Whoosh (the default), or SQLite FTS5 (optional,
# standard library; see search/backends.py and docs/benchmarks.md)
RECALL_ENGINES = ("whoosh", "fts5")
DEFAULT_MODEL = "all-MiniLM-L6-v2"


class RecallSettings(Section):
    limit: int = setting(default=10, lo=1, hi=1000)
    max_file_bytes: int = setting(default=2_000_000, lo=1024, hi=1_000_000_000)
    # "auto": hybrid when the semantic extra is installed, keyword otherwise
    mode: str = setting(default="auto", choices=RECALL_MODES)
    # the embedding model (semantic extra): a name, a hub id or a local folder
    model: str = setting(default=DEFAULT_MODEL, nonempty=True)
    # the full-text engine; switching rebuilds the index once (the manifest records it)
    engine: str = setting(default="whoosh", choices=RECALL_ENGINES)
    # the cosine a hit that keyword search does not find must reach to be shown (hybrid,
    # semantic); calibrated for the default model (docs/benchmarks.md); 0: every one is shown
    min_similarity: float = setting(default=0.34, lo=0.0, hi=1.0)


class LLMSettings(Section):
    model: str = setting(default="claude-haiku-4-5", nonempty=True)
    max_tokens: int = setting(default=4096, lo=1, hi=1_000_000)
    max_transcript_chars: int = setting(default=400_000, lo=1, hi=100_000_000)
    chunk_chars: int = setting(default=60_000, lo=100, hi=10_000_000)
    timeout: float = setting(default=60.0, lo=0.1, hi=600)
    max_retries: int = setting(default=2, lo=0, hi=20)


class DigestSettings(Section):
    """`vaultmem digest` and `compact`, and the digests the read pack shows."""

    period: str = setting(default="week", choices=("week", "month"))  # the default --period
    # statements per digest section before "N more"
    max_items: int = setting(default=25, lo=1, hi=100_000)
    # characters of an entry's body sent to a model
    entry_chars: int = setting(default=400, lo=50, hi=100_000)
    pack_periods: int = setting(default=2, lo=0, hi=1000)  # digests the read pack shows (0: none)
    # characters of one digest in the read pack
    pack_chars: int = setting(default=1200, lo=100, hi=1_000_000)


class ProfileSettings(Section):
    """`vaultmem profile`: the compact profile built from approved memory."""

    max_lines: int = setting(default=40, lo=1, hi=10_000)  # lines of one profile
    per_group: int = setting(default=8, lo=1, hi=10_000)  # lines per group in the offline profile
    # characters of one profile in the read pack
    pack_chars: int = setting(default=3000, lo=100, hi=1_000_000)


class ImportanceSettings(Section):
    """The weights of an item's importance in the read pack (docs/cli.md, under `vaultmem read`: "Importance and decay").

    score = (type weight + evidence * ln(evidence) + used * ln(1 + uses))
            * (floor + (1 - floor) * 0.5 ** (age in days / half_life_days))
    """

    decision: float = setting(default=3.0, lo=0, hi=100)
    failure: float = setting(default=2.5, lo=0, hi=100)
    preference: float = setting(default=2.5, lo=0, hi=100)
    user: float = setting(default=2.0, lo=0, hi=100)
    feedback: float = setting(default=2.0, lo=0, hi=100)
    project: float = setting(default=1.5, lo=0, hi=100)
    reference: float = setting(default=1.0, lo=0, hi=100)
    fact: float = setting(default=1.0, lo=0, hi=100)
    handoff: float = setting(default=2.0, lo=0, hi=100)
    question: float = setting(default=1.5, lo=0, hi=100)
    alert: float = setting(default=2.0, lo=0, hi=100)
    fix: float = setting(default=1.5, lo=0, hi=100)
    answer: float = setting(default=1.0, lo=0, hi=100)
    state: float = setting(default=0.8, lo=0, hi=100)
    note: float = setting(default=0.5, lo=0, hi=100)
    resolve: float = setting(default=0.5, lo=0, hi=100)
    ack: float = setting(default=0.2, lo=0, hi=100)
    digest: float = setting(default=1.5, lo=0, hi=100)
    pending: float = setting(default=0.5, lo=0, hi=100)  # an unreviewed fact, whatever its type
    evidence: float = setting(default=0.5, lo=0, hi=100)  # per natural log of the evidence count
    used: float = setting(default=0.5, lo=0, hi=100)  # per natural log of 1 + times it was used
    half_life_days: float = setting(default=30.0, lo=0.01, hi=100_000)
    floor: float = setting(default=0.25, lo=0, hi=1)  # what is left of a very old item's weight


class ConsolidateSettings(Section):
    """`vaultmem consolidate`: which approved memories are proposed for merging."""

    duplicate: float = setting(default=0.8, lo=0, hi=1)  # word similarity of near-duplicates
    # of a pair whose numbers or negation differ
    contradict: float = setting(default=0.5, lo=0, hi=1)
    # cosine of near-duplicates (semantic extra)
    semantic: float = setting(default=0.92, lo=0, hi=1)


class BankSettings(Section):
    prune_after_days: int = setting(default=60, lo=0, hi=100_000)
    duplicate_threshold: float = setting(default=0.85, lo=0, hi=1)
    related_threshold: float = setting(default=0.5, lo=0, hi=1)
    # own pending facts shown by `vaultmem read`
    read_limit: int = setting(default=5, lo=0, hi=1000)


class SyncSettings(Section):
    pull: str = setting(default="merge", choices=("merge", "rebase"))  # how `vaultmem sync` pulls
    # the least time between two background syncs the hooks start (a duration; "never": none)
    interval: str = "15s"


class AlertSettings(Section):
    window: str = "7d"  # open alerts older than this leave the read pack (a duration)


class WorkingSettings(Section):
    ttl: str = "24h"  # default time to live of a working-memory item ("never": none)
    # recent turns a thread keeps when `wm push` has no --keep
    keep: int = setting(default=20, lo=1, hi=100_000)
    max_value: int = setting(default=2000, lo=1, hi=1_000_000)  # characters


class ReceiptSettings(Section):
    # a receipts file rotates past this
    max_bytes: int = setting(default=1_000_000, lo=1, hi=10_000_000_000)
    keep: int = setting(default=10, lo=1, hi=10_000)  # rotated receipts files kept per agent


HOOK_TIMEOUT_MAX = 10.0  # seconds: the longest a hook may hold an agent's turn


class HookSettings(Section):
    """`vaultmem hook EVENT` (the lifecycle hooks of Claude Code and similar runtimes)."""

    # tokens of the session-start pack (0: the [read] budget)
    session_budget: int = setting(default=2000, lo=0, hi=100_000)
    prompt_budget: int = setting(default=800, lo=0, hi=20_000)  # tokens a prompt hook may add
    recall_hits: int = setting(default=3, lo=0, hi=20)  # recall hits a prompt hook may add
    # BM25F score a hit must reach to be added to a turn
    recall_min_score: float = setting(default=12.0, lo=0, hi=1000)
    # seconds one hook call may take before it gives up (exit 0): a turn waits for it
    timeout: float = setting(default=5.0, lo=1e-6, hi=HOOK_TIMEOUT_MAX)  # 0 would be no bound
    lock_timeout: float = setting(default=2.0, lo=0, hi=5)  # seconds a hook waits for a lock
    retain: bool = True  # session-end runs `retain --queued` in the background when a key is set


class Config(Section):
    """The parsed `vaultmem.toml` of one vault."""

    agents: tuple[str, ...] = ()
    reviewers: tuple[str, ...] = ()
    language: str = "en"
    default_reviewer: str | None = None
    format: int = 0  # how many migrations the vault has seen (vaultmem upgrade)
    log: LogSettings = LogSettings()
    secrets: SecretSettings = SecretSettings()
    read: ReadSettings = ReadSettings()
    recall: RecallSettings = RecallSettings()
    llm: LLMSettings = LLMSettings()
    bank: BankSettings = BankSettings()
    sync: SyncSettings = SyncSettings()
    alerts: AlertSettings = AlertSettings()
    working: WorkingSettings = WorkingSettings()
    receipts: ReceiptSettings = ReceiptSettings()
    hooks: HookSettings = HookSettings()
    digest: DigestSettings = DigestSettings()
    profile: ProfileSettings = ProfileSettings()
    importance: ImportanceSettings = ImportanceSettings()
    consolidate: ConsolidateSettings = ConsolidateSettings()


def _section(cls: type[Any], raw: Any, name: str, path: Path) -> Any:
    if raw is None:
        return cls()
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: [{name}] must be a table", "see README, Configuration")
    known = set(cls.FIELDS)
    unknown = sorted(set(raw) - known)
    if unknown:
        raise ConfigError(
            f"{path}: unknown key(s) in [{name}]: {', '.join(unknown)}",
            f"known keys: {', '.join(sorted(known))}",
        )
    defaults = cls()
    for key, value in raw.items():
        expected = type(getattr(defaults, key))
        ok = isinstance(value, expected) or (expected is float and isinstance(value, int))
        if not ok or isinstance(value, bool) != (expected is bool):
            raise ConfigError(
                f"{path}: [{name}] {key} must be {expected.__name__}, got {value!r}",
                "fix the value in vaultmem.toml",
            )
        _check_range(cls.RULES[key], f"[{name}] {key}", value, path)
    return cls(**raw)


def _check_range(rules: Any, where: str, value: Any, path: Path) -> None:
    choices = rules.get("choices")
    if choices is not None and value not in choices:
        raise ConfigError(
            f"{path}: {where} must be one of {', '.join(map(repr, choices))}, got {value!r}",
            "fix the value in vaultmem.toml",
        )
    if rules.get("nonempty") and not str(value).strip():
        raise ConfigError(f"{path}: {where} must not be empty", "fix the value in vaultmem.toml")
    if isinstance(value, int | float) and not isinstance(value, bool):
        lo, hi = rules.get("lo"), rules.get("hi")
        if (lo is not None and value < lo) or (hi is not None and value > hi):
            span = f"at least {lo:g}" if hi is None else f"between {lo:g} and {hi:g}"
            raise ConfigError(
                f"{path}: {where} must be {span}, got {value!r}", "fix the value in vaultmem.toml"
            )


def _check_values(config: Config, path: Path) -> Config:
    """Values that have a grammar or a range, beyond their TOML type."""
    from vaultmem.core.clock import duration_seconds
    from vaultmem.core.errors import UsageError

    durations = (
        ("alerts", "window", config.alerts.window, False, None),
        ("working", "ttl", config.working.ttl, True, None),
        ("sync", "interval", config.sync.interval, True, SYNC_INTERVAL),
    )
    for table, key, value, never, span in durations:
        try:
            seconds = duration_seconds(value, f"[{table}] {key}", allow_never=never)
        except UsageError as exc:
            raise ConfigError(f"{path}: {exc.message}", exc.hint) from None
        if span is not None and seconds is not None and not span[0] <= seconds <= span[1]:
            raise ConfigError(
                f"{path}: [{table}] {key} must be between {span[0]}s and {span[1] // 3600}h "
                f'(or "never"), got {value!r}',
                "fix the value in vaultmem.toml",
            )
    return config


# the least and most time between two background syncs, in seconds
SYNC_INTERVAL = (1, 86_400)


def _names(raw: Any, key: str, path: Path) -> tuple[str, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list) or not all(isinstance(x, str) for x in raw):
        raise ConfigError(f"{path}: {key} must be a list of names", f'e.g. {key} = ["ella"]')
    bad = [x for x in raw if not AGENT_NAME_RE.fullmatch(x)]
    if bad:
        raise ConfigError(
            f"{path}: {key} holds names that are not valid: {', '.join(map(repr, bad))}",
            "names are lowercase letters, digits, '-' and '_' (at most 40, starting with a "
            "letter or digit)",
        )
    return tuple(dict.fromkeys(raw))


def parse_toml(text: str, path: Path) -> dict[str, Any]:
    import tomllib

    from vaultmem.core.tomlguard import bounded

    bounded(text, path)  # a remote's nesting bomb never reaches tomllib
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(
            f"{path}: not valid TOML: {exc}", "fix the file or run vaultmem init"
        ) from exc
    except RecursionError:  # what `tomlguard.bounded` would have refused, had it missed it
        raise ConfigError(f"{path}: nested too deep for TOML", "fix the file") from None


def parse_config(text: str, path: Path, raw: dict[str, Any] | None = None) -> Config:
    """Parse the text of a `vaultmem.toml`; raise ConfigError naming the file on any problem.
    `raw`: the text already parsed as TOML (`load_config`'s cache), checked all the same."""
    if raw is None:
        raw = parse_toml(text, path)
    unknown = sorted(set(raw) - set(Config.FIELDS))
    if unknown:
        raise ConfigError(
            f"{path}: unknown key(s): {', '.join(unknown)}",
            f"known: {', '.join(sorted(Config.FIELDS))}",
        )
    language = raw.get("language", "en")
    if language not in SUPPORTED_LANGUAGES:
        raise ConfigError(
            f"{path}: language {language!r} is not supported",
            f"use one of: {', '.join(SUPPORTED_LANGUAGES)}",
        )
    recall = _section(RecallSettings, raw.get("recall"), "recall", path)
    default_reviewer = raw.get("default_reviewer")
    if default_reviewer is not None and (
        not isinstance(default_reviewer, str) or not AGENT_NAME_RE.fullmatch(default_reviewer)
    ):
        raise ConfigError(
            f"{path}: default_reviewer must be a name", 'e.g. default_reviewer = "chiara"'
        )
    fmt = raw.get("format", 0)
    if not isinstance(fmt, int) or isinstance(fmt, bool) or fmt < 0:
        raise ConfigError(
            f"{path}: format must be a whole number >= 0, got {fmt!r}",
            "vaultmem upgrade sets it; remove the line to start from 0",
        )
    config = Config(
        agents=_names(raw.get("agents"), "agents", path),
        format=fmt,
        reviewers=_names(raw.get("reviewers"), "reviewers", path),
        language=language,
        default_reviewer=default_reviewer,
        log=_section(LogSettings, raw.get("log"), "log", path),
        secrets=_section(SecretSettings, raw.get("secrets"), "secrets", path),
        read=_section(ReadSettings, raw.get("read"), "read", path),
        recall=recall,
        llm=_section(LLMSettings, raw.get("llm"), "llm", path),
        bank=_section(BankSettings, raw.get("bank"), "bank", path),
        sync=_section(SyncSettings, raw.get("sync"), "sync", path),
        alerts=_section(AlertSettings, raw.get("alerts"), "alerts", path),
        working=_section(WorkingSettings, raw.get("working"), "working", path),
        receipts=_section(ReceiptSettings, raw.get("receipts"), "receipts", path),
        hooks=_section(HookSettings, raw.get("hooks"), "hooks", path),
        digest=_section(DigestSettings, raw.get("digest"), "digest", path),
        profile=_section(ProfileSettings, raw.get("profile"), "profile", path),
        importance=_section(ImportanceSettings, raw.get("importance"), "importance", path),
        consolidate=_section(ConsolidateSettings, raw.get("consolidate"), "consolidate", path),
    )
    return _check_values(config, path)


def set_toml_key(text: str, key: str, value: str | int | list[str], path: Path) -> str:
    """Set one top-level `key` in a vaultmem.toml text, keeping everything a person wrote:
    comments, layout, the order of keys and tables (tomlkit edits TOML and round-trips it).

    A list that is already there is edited in place: items missing from `value` are taken out,
    new ones appended, each existing item keeping its comment. A new key goes after the last
    top-level key, before the first table. The result must parse as a valid config."""
    import tomlkit
    from tomlkit.exceptions import TOMLKitError

    try:
        doc = tomlkit.parse(text)
    except TOMLKitError as exc:
        raise ConfigError(f"{path} is not valid TOML: {exc}", "fix the file") from None
    current = doc.get(key)
    if isinstance(value, list) and isinstance(current, list):
        for item in [x for x in current if x not in value]:
            current.remove(item)
        for item in value:
            if item not in current:
                current.append(item)
    else:
        doc[key] = value
    new = tomlkit.dumps(doc)
    parse_config(new, path)  # never write a config we cannot read back
    return new


def toml_list(names: list[str] | tuple[str, ...]) -> str:
    import json

    return "[" + ", ".join(json.dumps(n) for n in names) + "]"
