"""The one clock: every time vaultmem writes or compares goes through here.

Two string forms, both UTC:

- a *stamp* (`2026-11-29T15:20:01Z`, seconds): frontmatter properties (`created`, `updated`,
  `approved_at`, ...). Unquoted in YAML it is a timestamp, and Obsidian shows it as a
  "Date & time" property.
- an *entry time* (`2026-11-29T15:20:01.123Z`, milliseconds): log entries, where the order of
  entries written in the same second matters.

The one time grammar of the command line (and of the MCP tools that take times):

- a *point* (`--since`, `--until`): an entry id where the caller reads a log (`ella.12`), an
  ISO date or UTC time (`2026-11-30`, `2026-11-30T14:00`, `2026-11-30T14:00:05Z`, an offset
  such as `+02:00` is converted), or a duration meaning that long before now (`2h`, `7d`);
- a *span* (`--ttl`, `--older-than`, `--keep-days`): a duration (`90m`, `2h`, `7d`, `8w`,
  `1h30m`); a bare number of days where the option is counted in days (`--keep-days 30`).

`now()` honours `VAULTMEM_NOW` (read by `config`, the only module that reads the environment)
so that tests and benchmarks can pin the clock for a whole process.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Protocol

from vaultmem.core.errors import UsageError
from vaultmem.core.patterns import later

# datetime is imported where a date is made or read, not here: an append needs only its stamp
# (`stamp_ms`, from the system clock), and `datetime` costs ~1.5 ms to import
if TYPE_CHECKING:
    from datetime import date, datetime, timedelta

STAMP_RE = later(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d{1,6})?Z")
DURATION_RE = later(r"(?:[0-9]{1,6}[smhdw]){1,5}")
_DURATION_PART = later(r"([0-9]{1,6})([smhdw])")
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
NEVER = "never"
DATE_RE = later(r"\d{4}-\d\d-\d\d")
# a date, or a date and a time to the minute or finer, in UTC unless it says otherwise
_POINT_RE = later(
    r"(\d{4}-\d\d-\d\d)(?:[T ](\d\d:\d\d(?::\d\d(?:\.\d{1,6})?)?))?(Z|[+-]\d\d:\d\d)?"
)
DURATION_FORMS = "a duration: 90s, 90m, 2h, 7d, 8w, 1h30m"
POINT_FORMS = (
    "a date or UTC time (2026-11-30, 2026-11-30T14:00, Z optional) or a duration before now "
    "(90m, 2h, 7d, 8w)"
)


class _Pattern(Protocol):
    def fullmatch(self, string: str) -> object: ...


def now() -> datetime:
    """The current time in UTC (pinned by VAULTMEM_NOW when set)."""
    from datetime import UTC, datetime

    from vaultmem.core.environment import env_now

    pinned = env_now()
    return pinned if pinned is not None else datetime.now(UTC)


def stamp(moment: datetime | None = None) -> str:
    """`2026-11-29T15:20:01Z`: seconds, UTC."""
    from datetime import UTC

    m = (moment or now()).astimezone(UTC)
    return m.replace(microsecond=0).isoformat().replace("+00:00", "Z")


def stamp_ms(moment: datetime | None = None) -> str:
    """`2026-11-29T15:20:01.123Z`: milliseconds, UTC (log entries)."""
    if moment is None and not _pinned():
        ms = time.time_ns() // 1_000_000  # what datetime's isoformat gives, without datetime
        return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ms // 1000)) + f".{ms % 1000:03d}Z"
    from datetime import UTC

    m = (moment or now()).astimezone(UTC)
    return m.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _pinned() -> bool:
    from vaultmem.core.environment import ENV_NOW, env

    return env(ENV_NOW) is not None


def today() -> date:
    return now().date()


def parse_time(value: object) -> datetime | None:
    """A stamp, an entry time, a date or a datetime as an aware UTC datetime; None if not one."""
    from datetime import UTC, date, datetime

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
    from datetime import date

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
    from datetime import date

    try:
        until = date.fromisoformat(str(valid_until).strip().strip("'\"")[:10])
    except ValueError:
        return False
    return until < (day or today())


def parse_duration(
    text: str,
    what: str = "--ttl",
    *,
    allow_never: bool = False,
    bare_days: bool = False,
    allow_zero: bool = False,
) -> timedelta | None:
    """A span: `90s`, `30m`, `2h`, `7d`, `2w`, `1h30m` (full match); `never` (None) where
    allowed; a bare number of days (`30`) where the option counts days.

    UsageError (exit 2) naming `what` and the accepted forms for anything else, and for a zero
    duration unless `allow_zero`. No whitespace is trimmed: a full match, as every grammar."""
    seconds = duration_seconds(
        text, what, allow_never=allow_never, bare_days=bare_days, allow_zero=allow_zero
    )
    if seconds is None:
        return None
    from datetime import timedelta

    return timedelta(seconds=seconds)


def duration_seconds(
    text: str,
    what: str = "--ttl",
    *,
    allow_never: bool = False,
    bare_days: bool = False,
    allow_zero: bool = False,
) -> int | None:
    """`parse_duration`'s grammar and checks, as whole seconds (None for `never`): without
    datetime, for what only checks a duration (the config's)."""
    if allow_never and text == NEVER:
        return None
    if bare_days and text.isdigit() and len(text) <= 6:
        text += "d"
    if not DURATION_RE.fullmatch(text):
        hint = (
            DURATION_FORMS
            + (", or a number of days (30)" if bare_days else "")
            + (", or never" if allow_never else "")
        )
        raise UsageError(f"{what} {text!r} is not a duration", hint)
    seconds = sum(int(n) * _UNIT_SECONDS[u] for n, u in _DURATION_PART.findall(text))
    if seconds <= 0 and not allow_zero:
        raise UsageError(f"{what} {text!r} is zero", "give a positive duration, e.g. 2h")
    return seconds


def parse_point(text: str, what: str = "--since", *, ids: _Pattern | None = None) -> datetime | str:
    """A point in time a person named: an aware UTC datetime, or, when `ids` (the caller's
    entry-id grammar) matches, the id itself for the caller to look up.

    A date is its midnight (UTC); a duration is that long before now. UsageError (exit 2)
    naming `what` and the accepted forms for anything else (full match: `"ella.1\n"` is none)."""
    from datetime import UTC, datetime

    raw = text
    if ids is not None and ids.fullmatch(raw):
        return raw
    m = _POINT_RE.fullmatch(raw)
    if m:
        day, time, zone = m.groups()
        iso = f"{day}T{time or '00:00'}{'+00:00' if zone in (None, 'Z') else zone}"
        try:
            return datetime.fromisoformat(iso).astimezone(UTC)
        except ValueError:
            pass  # 2026-02-30: said below
    elif DURATION_RE.fullmatch(raw):
        span = parse_duration(raw, what, allow_zero=True)
        assert span is not None
        return now() - span
    forms = ("an entry id (ella.12), " if ids is not None else "") + POINT_FORMS
    kinds = "an entry id, a date, a time or a duration" if ids else "a date, a time or a duration"
    raise UsageError(f"{what} {text!r} is not {kinds}", f"use {forms}")


def point_day(text: str, what: str = "--since") -> str:
    """A point for what is dated by day (recall's documents): `YYYY-MM-DD`, UTC."""
    from datetime import datetime

    moment = parse_point(text, what)
    assert isinstance(moment, datetime)
    return moment.date().isoformat()
