"""verify's memos (`nexus/verify_files.py`): what was found in a log file's unchanged bytes is
taken from a sealed record instead of parsing them again, a log whose files, journal and keys
did not change repeats its last report, and neither can hide a change.

A record's effect is shown by planting a problem in it (sealed with this machine's secret,
as verify itself would): a run that takes the record reports the planted problem."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests._layer3_helpers import fresh_vault, make_keys
from vaultmem.core import clock, seal
from vaultmem.core.vault import Vault
from vaultmem.nexus import log, verify
from vaultmem.nexus.rotate import rotate
from vaultmem.nexus.verify_files import FileMemo

PLANTED = {"path": "x", "kind": "duplicate", "message": "planted", "id": None, "line": None}


@pytest.fixture
def v(tmp_path: Path) -> Vault:
    """A log with one month archived (from the suite clock's year) and entries live."""
    vault = make_keys(fresh_vault(tmp_path), "ella", "lyra")
    year = clock.now().year - 1
    for i in range(6):
        log.append(
            vault, ("ella", "lyra")[i % 2], f"old {i}", time=f"{year}-03-0{i + 1}T10:00:00.000Z"
        )
    for i in range(4):
        log.append(vault, ("ella", "lyra")[i % 2], f"new {i}")
    assert rotate(vault, keep_days=30).moved == 6
    return vault


def _archive(v: Vault) -> Path:
    (archive,) = v.live_archives()
    return archive


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


def _plant(record_path: Path, change: Any) -> None:
    rec = seal.read(record_path)
    assert isinstance(rec, dict)
    change(rec)
    sealed = seal.dumps(record_path, rec)
    assert sealed is not None
    record_path.write_bytes(sealed)


def _messages(v: Vault, *, full: bool = False) -> list[str]:
    return [p.message for p in verify.verify(v, full=full).problems]


def test_an_unchanged_archive_is_taken_from_its_record(v: Vault) -> None:
    assert verify.verify(v).ok
    record = FileMemo(v, "live", _archive(v), use=True).path
    assert record.is_file()
    _plant(record, lambda rec: rec["scan"]["problems"].append(PLANTED))
    (v.state("verified") / "live-report.json").unlink()  # the whole-log report: not this test
    assert "planted" in _messages(v)  # the archive was not parsed: its record was used
    assert "planted" not in _messages(v, full=True)  # --full parses everything


def test_an_unchanged_log_repeats_its_report_and_any_change_ends_that(v: Vault) -> None:
    assert verify.verify(v).ok
    report = v.state("verified") / "live-report.json"
    _plant(report, lambda rec: rec["problems"].append(PLANTED))
    assert "planted" in _messages(v)
    log.append(v, "ella", "one more")  # the live file and the journal change
    assert "planted" not in _messages(v)


def test_an_edited_archive_is_parsed_again(v: Vault) -> None:
    assert verify.verify(v).ok
    _edit(_archive(v), "old 2", "old 2 (rewritten)")
    kinds = {p.kind for p in verify.verify(v).problems}
    assert "edited" in kinds


def test_appends_after_the_record_are_checked_and_the_prefix_is_not(v: Vault) -> None:
    """The live file's record covers its bytes up to its last whole entry; what is appended
    after is parsed and checked, an edit before that ends the record."""
    assert verify.verify(v).ok
    record = FileMemo(v, "live", v.live_context, use=True).path
    _plant(record, lambda rec: rec["scan"]["problems"].append(PLANTED))
    appended = log.append(v, "lyra", "appended after the record").entry
    _edit(v.live_context, "appended after the record", "rewritten after the record")
    problems = verify.verify(v).problems
    assert "planted" in [p.message for p in problems]  # the prefix came from the record
    assert any(p.kind == "edited" and p.id == appended.id for p in problems)
    _edit(v.live_context, "new 1", "new 1 (rewritten)")  # inside the recorded bytes
    problems = verify.verify(v).problems
    assert "planted" not in [p.message for p in problems]
    assert {p.id for p in problems if p.kind == "edited"} >= {appended.id}


def test_a_record_this_machine_did_not_seal_is_ignored(v: Vault) -> None:
    """A remote (or an agent without VAULTMEM_HOME's secret) writing a record that says an
    edited archive is fine gets nothing: the seal does not match, the archive is parsed."""
    assert verify.verify(v).ok
    record = FileMemo(v, "live", _archive(v), use=True).path
    raw = json.loads(record.read_bytes())
    _edit(_archive(v), "old 4", "old 4 (rewritten)")
    data = _archive(v).read_bytes()
    from vaultmem.nexus.verify_files import digest

    raw["data"]["size"] = len(data)
    raw["data"]["digest"] = digest(data)  # the right digest, but no right seal
    record.write_text(json.dumps(raw), encoding="utf-8")
    (v.state("verified") / "live-report.json").unlink()
    assert "edited" in {p.kind for p in verify.verify(v).problems}
