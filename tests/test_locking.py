"""The sync barrier every vaultmem write lock takes (shared), and `sync` takes alone.

flock locks belong to an open file, not to a process, so two handles in one test conflict the
way two processes do."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests._layer3_helpers import fresh_vault, make_keys, set_toml
from vaultmem.core.errors import LockTimeoutError
from vaultmem.core.locking import barrier, exclusive, lock_path
from vaultmem.core.vault import Vault
from vaultmem.nexus import log

SHORT = 0.3  # seconds: long enough for a free lock, short enough to fail fast


@pytest.fixture
def v(tmp_path: Path) -> Vault:
    root = fresh_vault(tmp_path)
    set_toml(root, "log", "lock_timeout", str(SHORT))
    return make_keys(root, "ella")


def test_no_write_lock_is_taken_while_sync_holds_the_barrier(v: Vault) -> None:
    with barrier(lock_path(v, "sync-barrier"), SHORT):
        with (
            pytest.raises(LockTimeoutError, match="sync lock"),
            exclusive(lock_path(v, "live"), SHORT, what="log"),
        ):
            pass
        with pytest.raises(LockTimeoutError):  # an append waits, and never half-writes
            log.append(v, "ella", "during the sync")
    with exclusive(lock_path(v, "live"), SHORT, what="log"):
        pass  # free again once the sync is done
    assert "during the sync" not in (v.root / "nexus/live-context.md").read_text()
    log.append(v, "ella", "after the sync")


def test_sync_waits_for_a_write_in_progress(v: Vault) -> None:
    with (
        exclusive(lock_path(v, "live"), SHORT, what="log"),
        pytest.raises(LockTimeoutError, match="sync barrier"),
        barrier(lock_path(v, "sync-barrier"), SHORT),
    ):
        pass


def test_writers_share_the_barrier(v: Vault) -> None:
    """Two writes under different locks run at once; only sync excludes them."""
    with (
        exclusive(lock_path(v, "live"), SHORT, what="log"),
        exclusive(lock_path(v, "state"), SHORT, what="state"),
    ):
        pass


def test_the_sync_lock_itself_is_outside_the_barrier(v: Vault) -> None:
    """`sync` holds sync.lock, then takes the barrier: sync.lock must not wait for it."""
    with (
        barrier(lock_path(v, "sync-barrier"), SHORT),
        exclusive(lock_path(v, "sync"), SHORT, what="sync"),
    ):
        pass
