"""A year of log (50,000 signed entries by 5 agents): digested week by week, compacted, and the
read pack stays within its budget while the digests cover the year. Slow: ~20 s here."""

from __future__ import annotations

import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tests._layer3_helpers import fresh_vault, make_keys
from tests._synth_log import write_log
from vaultmem.app.condense.compact import compact
from vaultmem.app.condense.digest import by_period, digest, log_entries
from vaultmem.app.pack.build import read
from vaultmem.core.vault import Vault
from vaultmem.nexus import digests
from vaultmem.nexus.verify import verify

AGENTS = ("ella", "lyra", "nova", "orion", "vega")
NOW = datetime(2027, 1, 5, 12, tzinfo=UTC)


@pytest.mark.slow
def test_a_year_of_log_compacts_and_the_pack_stays_within_budget(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("VAULTMEM_NOW", "2027-01-05T12:00:00Z")
    root = fresh_vault(tmp_path)
    for agent in AGENTS[2:]:
        subprocess.run(
            [sys.executable, "-m", "vaultmem", "init", str(root), "--agent", agent],
            check=True,
            capture_output=True,
        )
    make_keys(root)
    written = write_log(root, 50_000, agents=AGENTS)
    v = Vault.open(root)

    run = digest(v, "ella", offline=True, now=NOW)
    weeks = by_period(written, "week")
    closed = {p for p in weeks if digests.bounds(p)[2] <= NOW}
    assert {p.period for p in run.periods} == closed and len(closed) == 53
    # the digests cover the year: every entry of a closed week is in a digest made from it
    for period in closed:
        note = digests.read_digest(v, digests.digest_path(v, period))
        assert note.meta is not None and note.meta.source == digests.source_hash(weeks[period])
        assert note.meta.entries == len(weeks[period])
        cited = set(note.cited)
        assert cited and cited <= {e.id for e in weeks[period]}

    moved = compact(v, "30d", now=NOW)
    assert moved.moved > 45_000 and len(moved.files) == 12
    assert len(log_entries(v)) == 50_000  # nothing lost
    report = verify(v)
    assert report.ok, report.problems[:5]

    for budget in (1500, 3000, 6000):
        pack = read(v, "ella", budget=budget, peek=True)
        assert pack.tokens <= budget
    roomy = read(v, "ella", budget=6000, peek=True)
    shown = roomy.sections_by_key()["digests"]
    assert shown.data["periods"] == ["2026-W52", "2026-W51"]
    # a second run has nothing left to do: the periods did not change
    again = digest(v, "ella", offline=True, now=NOW + timedelta(hours=1))
    assert {p.status for p in again.periods} == {"unchanged"}
