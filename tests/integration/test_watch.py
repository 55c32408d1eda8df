"""`watch` with a real watchdog observer: create, modify, move, delete, bursts, clean exit."""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

import pytest

from vaultmem.core.vault import Vault
from vaultmem.search import engine, manifest
from vaultmem.search.query import recall
from vaultmem.search.watch import WatchEvent, relevant, watch


@pytest.fixture
def watching(vault: Path) -> Iterator[list[WatchEvent]]:
    events: list[WatchEvent] = []
    stop = threading.Event()
    ready = threading.Event()
    thread = threading.Thread(
        target=watch,
        args=(Vault.open(vault),),
        kwargs={"debounce": 0.1, "stop": stop, "on_refresh": events.append, "ready": ready},
        daemon=True,
    )
    thread.start()
    assert ready.wait(30)
    yield events
    stop.set()
    thread.join(10)
    assert not thread.is_alive()
    assert not (vault / ".vaultmem" / "index" / "heartbeat.json").exists()


def _wait(
    check: Callable[[], bool], timeout: float = 15.0, what: Callable[[], str] | None = None
) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.05)
    raise AssertionError(f"condition not reached in {timeout}s" + (f": {what()}" if what else ""))


def _manifest_files(vault: Path) -> set[str]:
    found = manifest.load_manifest(Vault.open(vault))  # the base and its delta, as read
    return set(found.files) if found is not None else set()


def test_relevant_ignores_state_editor_and_obsidian_files(tmp_path: Path) -> None:
    root = str(tmp_path)
    assert relevant(root, f"{root}/wiki/a.md")
    assert relevant(root, f"{root}/wiki")  # a folder moved or deleted
    assert relevant(root, f"{root}/v1.2", is_dir=True)
    for name in (".vaultmem/index/x.md", ".obsidian/app.json", "wiki/.a.md.swp", "a.md~"):
        assert not relevant(root, f"{root}/{name}")
    assert not relevant(root, f"{root}/picture.png")


def test_watch_picks_up_create_modify_move_delete(vault: Path, watching: list) -> None:
    note = vault / "wiki" / "Tapir.md"
    note.write_text("# Tapir\n\ntapir facts\n")
    _wait(lambda: "wiki/Tapir.md" in _manifest_files(vault))
    note.write_text("# Tapir\n\nokapi facts now\n")
    _wait(lambda: [h.path for h in _search(vault, "okapi")] == ["wiki/Tapir.md"])
    note.rename(vault / "wiki" / "Okapi.md")
    _wait(lambda: "wiki/Okapi.md" in _manifest_files(vault))
    assert "wiki/Tapir.md" not in _manifest_files(vault)
    (vault / "wiki").rename(vault / "pages")  # a folder move changes every path in it
    _wait(lambda: "pages/Okapi.md" in _manifest_files(vault))
    (vault / "pages" / "Okapi.md").unlink()
    _wait(lambda: "pages/Okapi.md" not in _manifest_files(vault))
    # while it runs, recall trusts the heartbeat instead of walking
    _wait(lambda: recall(Vault.open(vault), "stripe").index.checked_by == "watcher")
    _wait(lambda: any(e.events for e in watching))


def _search(vault: Path, query: str) -> list:
    with engine.Searcher(Vault.open(vault)) as s:
        from vaultmem.search.query import _search as search
        from vaultmem.search.query import parse_query

        return search(s, parse_query(query), limit=10, explain=False)


@pytest.mark.slow
def test_watch_survives_a_burst_of_1000_changes(vault: Path, watching: list) -> None:
    folder = vault / "burst"
    folder.mkdir()
    for i in range(1000):
        (folder / f"n{i:04d}.md").write_text(f"# Note {i}\n\nburst item {i}\n")
    for i in range(0, 1000, 2):
        (folder / f"n{i:04d}.md").unlink()
    for i in range(1, 200, 2):
        (folder / f"n{i:04d}.md").rename(folder / f"m{i:04d}.md")
    expected = {f"burst/{p.name}" for p in folder.iterdir()}
    assert len(expected) == 500

    def indexed() -> set[str]:
        return {f for f in _manifest_files(vault) if f.startswith("burst/")}

    _wait(
        lambda: indexed() == expected,
        60,
        lambda: f"{len(indexed() ^ expected)} paths differ; refreshes: {len(watching)}",
    )
    # (the manifest is written just before the watcher reports the refresh)
    _wait(lambda: any(e.events for e in watching))
    # fewer refreshes than events: the burst was debounced
    events = sum(e.events for e in watching)
    assert events > len(watching), f"{events} events, {len(watching)} refreshes"


# bounded waits for a loaded machine (2 cores, several suites at once): each returns as soon as
# its event happens, so they cost nothing when the machine is idle
READY_S = 120  # start-up and a first full index
CHANGE_S = 60  # a saved file seen and indexed
EXIT_S = 60  # observer stopped and joined, heartbeat removed


def _lines(stream: IO[str]) -> queue.Queue[str | None]:
    """stdout's lines as they come, read by a thread: every wait has a timeout (a bare
    readline() would block the test forever if the watcher never printed)."""
    lines: queue.Queue[str | None] = queue.Queue()

    def pump() -> None:
        for line in stream:
            lines.put(line)
        lines.put(None)  # the process closed stdout

    threading.Thread(target=pump, daemon=True).start()
    return lines


def _next_json(lines: queue.Queue[str | None], timeout: float, what: str) -> dict[str, Any]:
    try:
        line = lines.get(timeout=timeout)
    except queue.Empty:
        raise AssertionError(f"no {what} line within {timeout:g}s") from None
    assert line is not None, f"watch exited before printing its {what} line"
    return json.loads(line)  # type: ignore[no-any-return]


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_watch_command_exits_cleanly_on_ctrl_c_or_sigterm(vault: Path, sig: int) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("VAULTMEM_VAULT")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "vaultmem", "watch", "--vault", str(vault), "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert proc.stdout is not None
        lines = _lines(proc.stdout)
        # the readiness signal: the first line comes once the observer runs and the index is
        # built, after the SIGTERM handler is installed (SIGINT is Python's KeyboardInterrupt)
        first = _next_json(lines, READY_S, "ready")
        assert first["events"] == 0 and first["index"]["files"] > 10
        (vault / "wiki" / "Ibis.md").write_text("# Ibis\n\nibis\n")
        second = _next_json(lines, CHANGE_S, "refresh")
        assert second["events"] >= 1 and second["index"]["refreshed"] == 1
        proc.send_signal(sig)
        try:
            code = proc.wait(EXIT_S)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"watch still running {EXIT_S}s after {sig!r}") from None
        assert proc.stderr is not None
        assert code == 0, proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert not (vault / ".vaultmem" / "index" / "heartbeat.json").exists()


# --- Warm: one long-lived process, an in-process watcher -------------------------------------


def test_warm_recall_skips_the_walk_and_still_sees_every_change(vault: Path) -> None:
    from vaultmem.search.watch import Warm

    with Warm(Vault.open(vault)) as warm:
        first = warm.recall("stripe webhook")
        assert first.hits and first.index.checked_by == "walk"
        again = warm.recall("stripe webhook")
        assert again.index.checked_by == "watcher" and again.index.refreshed == 0
        # a new note, then an in-place edit (no rename: the folder's mtime stays), asked for
        # right after the write returns
        note = vault / "wiki" / "warm-new.md"
        note.write_text("# Warm\nThe zanzibarq note.\n", encoding="utf-8")
        assert [h.path for h in warm.recall("zanzibarq").hits] == ["wiki/warm-new.md"]
        with note.open("a", encoding="utf-8") as fh:
            fh.write("Now also quokkaq.\n")
        found = warm.recall("quokkaq")
        assert [h.path for h in found.hits] == ["wiki/warm-new.md"]
        assert found.index.refreshed == 1 and found.index.files == first.index.files + 1
        # a folder renamed: every note in it moves
        (vault / "wiki").rename(vault / "pages")
        moved = warm.recall("zanzibarq")
        assert [h.path for h in moved.hits] == ["pages/warm-new.md"]
        (vault / "pages" / "warm-new.md").unlink()
        assert warm.recall("zanzibarq").hits == ()
        assert warm.recall("zanzibarq").index.checked_by == "watcher"


def test_warm_recall_after_an_append_indexes_only_the_new_entry(vault: Path) -> None:
    from tests._layer3_helpers import make_keys
    from vaultmem.nexus.log import append
    from vaultmem.search.watch import Warm

    v = make_keys(vault)
    with Warm(v) as warm:
        warm.recall("stripe webhook")
        append(v, "ella", "Rotated the flamingoz credentials", channel="ops")
        found = warm.recall("flamingoz")
        assert [h.path for h in found.hits] == ["nexus/live-context.md"]
        assert found.index.refreshed == 1 and not found.index.rebuilt
