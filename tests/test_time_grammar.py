"""One time grammar for every --since, --until, --older-than, --ttl and --keep-days
(`core/clock.py`: `parse_point`, `parse_duration`): each option with each form, and a bad value."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tests._cli import run_cli, run_proc
from tests._layer3_helpers import fresh_vault, make_keys
from vaultmem.core import clock
from vaultmem.core.errors import UsageError
from vaultmem.nexus.entry import ID_RE

# minutes before now of each entry, ella.1 .. ella.4
AGES = {"twenty days": 20 * 24 * 60, "three days": 3 * 24 * 60, "ninety": 90, "ten": 10}


def minute(moment: datetime, zone: str = "") -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M") + zone


def day(moment: datetime) -> str:
    return moment.astimezone(UTC).date().isoformat()


@pytest.fixture
def timeline(tmp_path: Path) -> tuple[Path, datetime]:
    from vaultmem.nexus import log

    root = fresh_vault(tmp_path)
    v = make_keys(root, "ella", "lyra")
    now = clock.now()
    for summary, minutes in AGES.items():
        log.append(v, "ella", summary, time=clock.stamp_ms(now - timedelta(minutes=minutes)))
    return root, now


def ok(vault: Path, *args: str) -> dict:  # type: ignore[type-arg]
    res = run_cli(*args, "--vault", str(vault), "--json")
    assert res.exit_code == 0, (args, res.stderr)
    return json.loads(res.stdout)  # type: ignore[no-any-return]


def refused(vault: Path, option: str, *args: str) -> str:
    res = run_cli(*args, "--vault", str(vault))
    assert res.exit_code == 2, (args, res.stdout, res.stderr)
    assert f"Error: {option} " in res.stderr, res.stderr
    return res.stderr


# --- the parsers --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2026-11-30", datetime(2026, 11, 30, tzinfo=UTC)),
        ("2026-11-30T14:00", datetime(2026, 11, 30, 14, tzinfo=UTC)),
        ("2026-11-30T14:00Z", datetime(2026, 11, 30, 14, tzinfo=UTC)),
        ("2026-11-30T14:00:05.250Z", datetime(2026, 11, 30, 14, 0, 5, 250000, tzinfo=UTC)),
        ("2026-11-30 14:00", datetime(2026, 11, 30, 14, tzinfo=UTC)),
        ("2026-11-30T16:00+02:00", datetime(2026, 11, 30, 14, tzinfo=UTC)),
    ],
)
def test_a_point_is_a_date_or_a_utc_time(text: str, expected: datetime) -> None:
    assert clock.parse_point(text) == expected


@pytest.mark.parametrize(("text", "span"), [("90m", 90 * 60), ("2h", 7200), ("7d", 7 * 86400)])
def test_a_duration_as_a_point_is_that_long_before_now(text: str, span: int) -> None:
    before = clock.now()
    point = clock.parse_point(text)
    assert isinstance(point, datetime)
    assert abs((before - timedelta(seconds=span) - point).total_seconds()) < 5


def test_an_entry_id_is_a_point_only_where_the_caller_reads_entries() -> None:
    assert clock.parse_point("ella.12", ids=ID_RE) == "ella.12"
    assert clock.parse_point("ella.d1", ids=ID_RE) == "ella.d1"
    with pytest.raises(UsageError, match="is not a date, a time or a duration"):
        clock.parse_point("ella.12", "--since")


@pytest.mark.parametrize("bad", ["yesterday", "", "2026-02-30", "2026-11-30T25:00", "7 days"])
def test_a_bad_point_names_the_option_and_the_forms(bad: str) -> None:
    with pytest.raises(UsageError) as info:
        clock.parse_point(bad, "--until", ids=ID_RE)
    assert info.value.message.startswith(f"--until {bad!r} is not an entry id")
    assert "2026-11-30T14:00" in str(info.value.hint) and "7d" in str(info.value.hint)


@pytest.mark.parametrize(
    ("text", "days"), [("30", 30), ("30d", 30), ("8w", 56), ("36h", 1.5), ("1d12h", 1.5)]
)
def test_a_span_counted_in_days_takes_a_bare_number(text: str, days: float) -> None:
    span = clock.parse_duration(text, "--keep-days", bare_days=True)
    assert span == timedelta(days=days)


@pytest.mark.parametrize("bad", ["30", "soon", "2 months", "-5d", ""])
def test_a_bad_span_names_the_option_and_the_forms(bad: str) -> None:
    with pytest.raises(UsageError) as info:
        clock.parse_duration(bad, "--ttl")  # --ttl counts no days: a bare number is refused
    assert info.value.message == f"--ttl {bad!r} is not a duration"
    assert "90m, 2h, 7d, 8w" in str(info.value.hint)


# --- log --since / --until ----------------------------------------------------------------------


def summaries(vault: Path, *args: str) -> list[str]:
    return [e["summary"] for e in ok(vault, "log", *args)["entries"]]


def test_log_since_takes_every_form(timeline: tuple[Path, datetime]) -> None:
    vault, now = timeline
    recent = ["ninety", "ten"]
    assert summaries(vault, "--since", "ella.2") == recent
    assert summaries(vault, "--since", day(now - timedelta(days=2))) == recent
    assert summaries(vault, "--since", minute(now - timedelta(hours=2))) == recent
    assert summaries(vault, "--since", minute(now - timedelta(hours=2), "Z")) == recent
    assert summaries(vault, "--since", "2h") == recent
    assert summaries(vault, "--since", "1h") == ["ten"]
    assert summaries(vault, "--since", "4d") == ["three days", *recent]
    refused(vault, "--since", "log", "--since", "yesterday")


def test_log_until_takes_every_form(timeline: tuple[Path, datetime]) -> None:
    vault, now = timeline
    older = ["twenty days", "three days", "ninety"]
    assert summaries(vault, "--until", "ella.3") == older
    assert summaries(vault, "--until", minute(now - timedelta(hours=1))) == older
    assert summaries(vault, "--until", minute(now - timedelta(hours=1), "Z")) == older
    assert summaries(vault, "--until", "1h") == older
    assert summaries(vault, "--until", day(now - timedelta(days=2))) == older[:2]
    assert summaries(vault, "--since", "ella.1", "--until", "ella.3") == older[1:]
    assert summaries(vault, "--since", "4d", "--until", "1h") == older[1:]
    refused(vault, "--until", "log", "--until", "soon")
    res = run_cli("log", "--until", "ella.9", "--vault", str(vault))
    assert res.exit_code == 4 and "no entry 'ella.9'" in res.stderr


# --- receipts --since / --until ----------------------------------------------------------------


def test_receipts_since_and_until_take_every_form(
    timeline: tuple[Path, datetime], monkeypatch: pytest.MonkeyPatch
) -> None:
    from vaultmem.app.pack.receipts import record
    from vaultmem.core.vault import Vault

    vault, now = timeline
    v = Vault.open(vault)
    for n, minutes in enumerate(AGES.values(), 1):  # a receipt at each entry's time
        monkeypatch.setenv("VAULTMEM_NOW", clock.stamp_ms(now - timedelta(minutes=minutes)))
        record(v, "lyra", "read", [f"ella.{n}"])
    monkeypatch.delenv("VAULTMEM_NOW")
    monkeypatch.setenv("VAULTMEM_NOW", clock.stamp_ms(now))

    def shown(*args: str) -> list[str]:
        return ok(vault, "receipts", "--agent", "lyra", *args)["ids"]  # type: ignore[no-any-return]

    assert shown() == ["ella.1", "ella.2", "ella.3", "ella.4"]
    for since in ("ella.3", minute(now - timedelta(hours=2)), "2h"):
        assert shown("--since", since) == ["ella.3", "ella.4"], since
    assert shown("--since", day(now - timedelta(days=4))) == ["ella.2", "ella.3", "ella.4"]
    for until in ("ella.2", day(now - timedelta(days=1)), minute(now - timedelta(days=1)), "1d"):
        assert shown("--until", until) == ["ella.1", "ella.2"], until
    refused(vault, "--since", "receipts", "--agent", "lyra", "--since", "soon")
    refused(vault, "--until", "receipts", "--agent", "lyra", "--until", "3 days")


# --- recall --since (the typer command and the fast path) ----------------------------------------


def test_recall_since_takes_a_date_a_time_or_a_duration(timeline: tuple[Path, datetime]) -> None:
    vault, now = timeline

    def ids(*args: str) -> set[str]:
        hits = ok(vault, "recall", "days ninety ten twenty", "--kind", "log", *args)["hits"]
        return {h["id"] for h in hits}

    assert ids() == {"ella.1", "ella.2", "ella.3", "ella.4"}
    two_days = now - timedelta(days=2)
    for since in (day(two_days), minute(two_days), minute(two_days, "Z"), "2d"):
        assert ids("--since", since) == {"ella.3", "ella.4"}, since
    refused(vault, "--since", "recall", "x", "--since", "ella.1")  # documents have no entry id
    refused(vault, "--since", "recall", "x", "--since", "soon")
    fast = run_proc("recall", "ninety", "--since", "2d", "--vault", str(vault), "--json")
    assert fast.returncode == 0, fast.stderr
    assert {h["id"] for h in json.loads(fast.stdout)["hits"]} == {"ella.3"}
    bad = run_proc("recall", "ninety", "--since", "soon", "--vault", str(vault))
    assert bad.returncode == 2 and "Error: --since 'soon' is not a date" in bad.stderr


# --- digest --since --------------------------------------------------------------------------------


def test_digest_since_takes_a_date_a_time_or_a_duration(timeline: tuple[Path, datetime]) -> None:
    vault, now = timeline

    def periods(since: str) -> list[str]:
        plan = ok(vault, "digest", "--dry-run", "--period", "week", "--since", since)
        return [p["period"] for p in plan["periods"]]

    month = now - timedelta(days=30)
    everything = periods(day(month))
    assert everything and periods(minute(month)) == everything == periods("30d")
    assert len(periods("1d")) < len(everything)
    refused(vault, "--since", "digest", "--dry-run", "--since", "last week")


# --- wm --ttl (the typer command and the fast path) ------------------------------------------


@pytest.mark.parametrize(
    ("ttl", "seconds"),
    [("90m", 5400), ("2h", 7200), ("7d", 604800), ("8w", 8 * 604800), ("1h30m", 5400)],
)
def test_wm_ttl_is_a_duration(timeline: tuple[Path, datetime], ttl: str, seconds: int) -> None:
    vault, _now = timeline
    before = clock.now()
    item = ok(vault, "wm", "set", "k", "v", "--ttl", ttl, "--agent", "ella")
    expires = datetime.fromisoformat(item["expires"].replace("Z", "+00:00"))
    assert abs((expires - before - timedelta(seconds=seconds)).total_seconds()) < 5


def test_wm_ttl_never_and_bad_values(timeline: tuple[Path, datetime]) -> None:
    vault, _now = timeline
    assert ok(vault, "wm", "set", "k", "v", "--ttl", "never", "--agent", "ella")["expires"] is None
    for bad in ("30", "soon", "2026-12-01"):
        msg = refused(vault, "--ttl", "wm", "set", "k", "v", "--ttl", bad, "--agent", "ella")
        assert "90m, 2h, 7d, 8w" in msg and "or never" in msg
    fast = run_proc("wm", "push", "turn", "--ttl", "2h", "--agent", "ella", "--vault", str(vault))
    assert fast.returncode == 0, fast.stderr
    bad = run_proc("wm", "push", "x", "--ttl", "2 h", "--agent", "ella", "--vault", str(vault))
    assert bad.returncode == 2 and "Error: --ttl '2 h' is not a duration" in bad.stderr


# --- compact --older-than, bank prune --older-than, log rotate --keep-days ------------------------


def test_compact_older_than_is_a_duration_or_days(timeline: tuple[Path, datetime]) -> None:
    vault, now = timeline
    for older in ("30d", "30", "720h", "4w2d"):
        cut = ok(vault, "compact", "--older-than", older, "--dry-run")["cutoff"]
        moment = datetime.fromisoformat(cut.replace("Z", "+00:00"))
        assert abs((now - timedelta(days=30) - moment).total_seconds()) < 60, older
    refused(vault, "--older-than", "compact", "--older-than", "a month")


def test_bank_prune_older_than_is_a_duration_or_days(timeline: tuple[Path, datetime]) -> None:
    vault, _now = timeline
    for older in ("60d", "8w", "60", "1440h"):
        assert ok(vault, "bank", "prune", "--older-than", older, "--dry-run")["expired"] == []
    msg = refused(vault, "--older-than", "bank", "prune", "--older-than", "2 months")
    assert "or a number of days (30)" in msg


@pytest.mark.parametrize(
    ("keep", "moved"), [("30", 0), ("4w", 0), ("21d", 0), ("2", 2), ("2d", 2), ("36h", 2)]
)
def test_log_rotate_keep_days_is_days_or_a_duration(
    timeline: tuple[Path, datetime], keep: str, moved: int
) -> None:
    vault, _now = timeline
    assert ok(vault, "log", "rotate", "--keep-days", keep)["moved"] == moved
    assert run_cli("verify", "--vault", str(vault)).exit_code == 0


def test_log_rotate_keep_days_refuses_a_bad_value(timeline: tuple[Path, datetime]) -> None:
    vault, _now = timeline
    msg = refused(vault, "--keep-days", "log", "rotate", "--keep-days", "a month")
    assert re.search(r"hint: a duration: 90s, 90m, 2h, 7d, 8w, 1h30m, or a number of days", msg)
    res = run_cli("log", "rotate", "--keep-days", "30", "--vault", str(vault))
    assert res.exit_code == 0 and "nothing older than 30 days" in res.stdout


@pytest.mark.real_clock
def test_an_entry_stamp_from_the_system_clock_is_the_datetime_one() -> None:
    """Unpinned, `stamp_ms()` formats the system clock without datetime: the same form,
    the same instant as datetime's to the millisecond."""
    before = datetime.now(UTC).replace(microsecond=0)
    made = clock.stamp_ms()
    after = datetime.now(UTC)
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", made)
    assert before <= datetime.fromisoformat(made.replace("Z", "+00:00")) <= after
    assert clock.stamp_ms(after) == after.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def test_a_config_duration_is_checked_without_a_timedelta() -> None:
    assert clock.duration_seconds("1h30m") == 5400
    assert clock.duration_seconds("never", allow_never=True) is None
    assert clock.parse_duration("1h30m") == timedelta(seconds=5400)
    with pytest.raises(UsageError, match="is zero"):
        clock.duration_seconds("0s")
