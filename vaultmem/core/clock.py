"""The one clock: every time vaultmem writes or compares goes through here.

Two string forms, both UTC:

- a *stamp* (`2026-11-29T15:20:01Z`, seconds): frontmatter properties (`created`, `updated`,
  `approved_at`, ...). Unquoted in YAML it is a timestamp, and Obsidian shows it as a
  "Date & time" property.
- an *entry time* (`2026-11-29T15:20:01.123Z`, milliseconds): log entries, where the order of
  entries written in the same second matters.

`now()` honours `VAULTMEM_NOW` (read by `config`, the only module that reads the environment)
so that tests and benchmarks can pin the clock for a whole process.
"""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, timedelta

from vaultmem.core.errors import UsageError

STAMP_RE = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d{1,6})?Z")
DURATION_RE = re.compile(r"(?:[0-9]{1,6}[smhdw]){1,5}")
_DURATION_PART = re.compile(r"([0-9]{1,6})([smhdw])")
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
NEVER = "never"
DATE_RE = re.compile(r"\d{4}-\d\d-\d\d")


def now() -> datetime:
    """The current time in UTC (pinned by VAULTMEM_NOW when set)."""
    from vaultmem.core.config import env_now

    pinned = env_now()
    return pinned if pinned is not None else datetime.now(UTC)


def stamp(moment: datetime | None = None) -> str:
    """`2026-11-29T15:20:01Z`: seconds, UTC."""
    m = (moment or now()).astimezone(UTC)
    return m.replace(microsecond=0).isoformat().replace("+00:00", "Z")


def stamp_ms(moment: datetime | None = None) -> str:
    """`2026-11-29T15:20:01.123Z`: milliseconds, UTC (log entries)."""
    m = (moment or now()).astimezone(UTC)
    return m.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def today() -> date:
    return now().date()


def parse_time(value: object) -> datetime | None:
    """A stamp, an entry time, a date or a datetime as an aware UTC datetime; None if not one."""
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    if isinstance(value, date):
        return datetime(value.year, value.month, value.day, tzinfo=UTC)
    if not isinstance(value, str):
        return None
    text = value.strip().strip("'\"")
    if not text:
        return None
    try:
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def parse_date(value: str, what: str = "--valid-until") -> str:
    """A user-given day (`YYYY-MM-DD`), or UsageError (exit 2)."""
    text = value.strip()
    if not DATE_RE.fullmatch(text):
        raise UsageError(f"{what} {value!r} is not a date", "use YYYY-MM-DD")
    try:
        return date.fromisoformat(text).isoformat()
    except ValueError:
        raise UsageError(f"{what} {value!r} is not a date", "use YYYY-MM-DD") from None


def is_past(valid_until: object, day: date | None = None) -> bool:
    """Has a `valid_until` day passed? Empty or unreadable values never expire."""
    if not valid_until:
        return False
    try:
        until = date.fromisoformat(str(valid_until).strip().strip("'\"")[:10])
    except ValueError:
        return False
    return until < (day or today())


def parse_duration(
    text: str, what: str = "--ttl", *, allow_never: bool = False
) -> timedelta | None:
    """`90s`, `30m`, `2h`, `7d`, `2w`, `1h30m` (full match); `never` (None) where allowed.

    UsageError (exit 2) for anything else, including a zero duration."""
    if allow_never and text == NEVER:
        return None
    if not DURATION_RE.fullmatch(text):
        hint = "a number and a unit: 90s, 30m, 2h, 7d, 2w, 1h30m" + (
            ", or never" if allow_never else ""
        )
        raise UsageError(f"{what} {text!r} is not a duration", hint)
    seconds = sum(int(n) * _UNIT_SECONDS[u] for n, u in _DURATION_PART.findall(text))
    if seconds <= 0:
        raise UsageError(f"{what} {text!r} is zero", "give a positive duration, e.g. 2h")
    return timedelta(seconds=seconds)
