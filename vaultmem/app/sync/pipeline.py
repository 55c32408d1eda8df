"""Many machines, one memory: the vault is a git repository, and `vaultmem sync` moves it.

What makes two clones merge without a person is the file formats (docs/FORMAT.md, "Several
machines") and `.gitattributes`: the logs and `keys.md` merge as a union of lines, `MEMORY.md`,
project state and checkpoints through vaultmem's own merge drivers (`vaultmem.app.sync.merge`).

One sync, in the order that loses nothing (docs/FORMAT.md, "Sync loses nothing"):

1. recover what a killed sync left (a half-done working-tree move, git's stale `index.lock`);
2. fetch, holding no vaultmem lock (writers go on);
3. under the sync barrier (writers wait, for the time of a `git add` and a commit): commit the
   working tree;
4. check what arrived (`incoming`: nothing under `.vaultmem/`, no links, no change to the merge
   rules), then merge it as git objects (`git merge-tree`), the working tree untouched;
5. under the barrier again: commit what was written during the merge, merge it in, and move
   the working tree to the result file by file (`worktree.move_tree`);
6. push; a push that lost a race fetches and merges again, with back-off;
7. refresh the search index and verify.

A merge that needs a person still completes: both versions are written into the file between
markers (nothing dropped), and every sync exits 5 naming the file until a person has edited it.
"""

from __future__ import annotations

import contextlib
import json
import random
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from vaultmem.app.sync import worktree
from vaultmem.app.sync.describe import log_entries_in
from vaultmem.app.sync.git import (
    REJECTED,
    OfflineError,
    count,
    failure,
    git,
    is_ancestor,
    rev,
    stage,
)
from vaultmem.app.sync.incoming import check_tree, trust_report
from vaultmem.app.sync.objects import merge
from vaultmem.app.sync.worktree import ensure_template_lines
from vaultmem.core.errors import LockTimeoutError, UnavailableError, VaultmemError
from vaultmem.core.locking import BARRIER, barrier, exclusive, lock_path
from vaultmem.core.records import field, record
from vaultmem.core.vault import Vault

__all__ = ["OfflineError", "SyncConflictError", "SyncReport", "status", "sync", "watch"]

PUSH_TRIES = 6
BARRIER_TIMEOUT = 30.0
CONFLICT_MARKERS = ("<<<<<<< ", ">>>>>>> ")


class SyncConflictError(VaultmemError):
    """A merge a person must finish: both versions are in the files, between markers."""

    exit_code = 5


@record
class SyncReport:
    outcome: str  # "synced", "nothing"
    committed: str | None = None  # the commit made of local changes
    message: str | None = None
    pulled: int = 0  # commits that arrived
    pushed: int = 0  # commits sent
    entries_in: int = 0  # log entries that arrived
    entries_out: int = 0  # log entries sent
    verify_ok: bool | None = None
    problems: tuple[str, ...] = ()
    index: dict[str, Any] = field(default_factory=dict)
    notes: tuple[str, ...] = ()  # what sync repaired or merged on the way
    trust: tuple[str, ...] = ()  # incoming changes to files that carry trust
    skipped: tuple[str, ...] = ()  # links and nested repositories, never synced
    conflicts: tuple[str, ...] = ()  # files holding both versions between markers

    def to_dict(self) -> dict[str, Any]:
        out = dict(self.__dict__)
        for key in ("problems", "notes", "trust", "skipped", "conflicts"):
            out[key] = list(out[key])
        return out


@record
class SyncStatus:
    branch: str
    upstream: str | None
    ahead: int
    behind: int
    changed_files: tuple[str, ...]
    unsynced_entries: int
    fetched: bool

    def to_dict(self) -> dict[str, Any]:
        out = dict(self.__dict__)
        out["changed_files"] = list(self.changed_files)
        return out


def repo_root(vault: Vault) -> Path:
    proc = git(vault.root, "rev-parse", "--show-toplevel", check=False)
    if proc.returncode != 0:
        raise UnavailableError(
            f"{vault.root} is not in a git repository",
            "make it one with: vaultmem init --git (or git init, then vaultmem sync)",
        )
    return Path(proc.stdout.strip())


def ensure_attributes(root: Path) -> bool:
    return ensure_template_lines(root, "gitattributes")


def ensure_drivers(root: Path, vault: Vault | None = None) -> None:
    """This clone's merge drivers and local excludes (per clone, never committed); with
    `vault`, checked with git only when they may have changed (`worktree.config_current`)."""
    worktree.ensure_local_config(root, vault)


def _upstream(root: Path, remote: str | None) -> tuple[str, str | None]:
    branch = git(root, "rev-parse", "--abbrev-ref", "HEAD").stdout.strip()
    if remote:
        return branch, f"{remote}/{branch}"
    proc = git(root, "rev-parse", "--abbrev-ref", "--symbolic-full-name", "@{u}", check=False)
    if proc.returncode == 0:
        return branch, proc.stdout.strip()
    remotes = git(root, "remote").stdout.split()
    return branch, (f"{remotes[0]}/{branch}" if remotes else None)


# --- sync -------------------------------------------------------------------------------------


@record(frozen=False)
class _Run:
    """What one sync did so far, for its report."""

    vault: Vault
    root: Path
    committed: worktree.Commit | None = None
    pulled: int = 0
    entries_in: int = 0
    notes: list[str] = field(default_factory=list)
    trust: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    conflicts: list[str] = field(default_factory=list)
    moved: bool = False

    def barrier(self) -> Any:
        return barrier(self.vault.state("locks", BARRIER), BARRIER_TIMEOUT)

    def commit(self, message: str | None) -> worktree.Commit | None:
        ensure_template_lines(self.root, "gitattributes")
        ensure_template_lines(self.root, "gitignore")
        made = worktree.commit_all(self.vault, self.root, message)
        if made is not None:
            self.committed = self.committed or made
            self.skipped += [s for s in made.skipped if s not in self.skipped]
        return made


def sync(
    vault: Vault,
    *,
    remote: str | None = None,
    message: str | None = None,
    pull: str | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> SyncReport:
    """Commit, pull, push, verify, refresh the index; loses no write made meanwhile. Raises
    OfflineError (exit 6, the work stays committed here), LockTimeoutError (exit 6, another
    sync or git is running), IncomingRefusedError (exit 8) or SyncConflictError (exit 5,
    after the sync went through, while a file holds both versions between markers)."""
    root = repo_root(vault)
    try:
        lock = exclusive(lock_path(vault, "sync"), 0.5, what="sync")
        lock.__enter__()
    except LockTimeoutError as exc:
        raise LockTimeoutError(
            "another vaultmem sync is running on this machine", "wait for it, then retry"
        ) from exc
    try:
        run = _Run(vault, root)
        report = _sync_locked(run, remote, message, pull or vault.config.sync.pull, progress)
        worktree.stamp_last(vault, report.outcome)
        return report
    finally:
        lock.__exit__(None, None, None)


def _recover(run: _Run) -> None:
    from vaultmem.app.sync.git import clear_stale_index_lock

    note = clear_stale_index_lock(run.root, worktree.state(run.vault, "git.pid"))
    if note:
        run.notes.append(note)
    with run.barrier():
        note = worktree.recover_move(run.vault, run.root)
    if note:
        run.notes.append(note)
    git_dir = Path(git(run.root, "rev-parse", "--absolute-git-dir").stdout.strip())
    if (git_dir / "MERGE_HEAD").exists() or (git_dir / "rebase-merge").exists():
        _unfinished_git_merge(run, git_dir)


def _unfinished_git_merge(run: _Run, git_dir: Path) -> None:
    """A merge git started in the working tree (a person's `git merge`, or a sync of an older
    vaultmem killed in one). Its files are kept as they are, never reset: unmerged files with
    markers wait for a person; otherwise the merge is concluded with what the files hold."""
    unmerged = git(run.root, "diff", "--name-only", "--diff-filter=U").stdout.split()
    marked = [p for p in unmerged if _has_markers(run.root / p)]
    if marked:
        raise SyncConflictError(
            f"a merge started with git is waiting for a person: {', '.join(marked)}",
            "both versions are in each file between <<<<<<< and >>>>>>> markers: edit them to "
            "what should stay, save, and run vaultmem sync (it finishes the merge)",
        )
    if (git_dir / "rebase-merge").exists() or (git_dir / "rebase-apply").exists():
        raise SyncConflictError(
            "a git rebase is in progress in this vault",
            "finish it (git rebase --continue) or stop it (git rebase --abort), then run "
            "vaultmem sync",
        )
    from vaultmem.app.sync.git import git_tracked, who

    with run.barrier():
        children = worktree.state(run.vault, "git.pid")
        worktree.stage_all(run.root, children)
        git_tracked(run.root, children, *who(run.root), "commit", "--quiet", "--no-verify",
                    "--no-edit")  # fmt: skip
    run.notes.append("finished a merge left in the working tree, with the files as they were")


def _has_markers(path: Path) -> bool:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
    return any(line.startswith(CONFLICT_MARKERS) for line in text.splitlines())


def _fetch(run: _Run, name: str) -> None:
    fetched = git(run.root, "fetch", "--quiet", "--no-tags", name, check=False, timeout=300)
    if fetched.returncode != 0:
        err = failure(["fetch", name], fetched)
        if isinstance(err, OfflineError):
            raise OfflineError(
                f"cannot reach {name}: {(fetched.stderr.strip().splitlines() or ['?'])[-1]}",
                "your changes are committed here; run vaultmem sync again when online",
            )
        raise err


def _sync_locked(
    run: _Run,
    remote: str | None,
    message: str | None,
    mode: str,
    progress: Callable[[int, int], None] | None,
) -> SyncReport:
    vault, root = run.vault, run.root
    ensure_drivers(root, vault if root == vault.root else None)
    _recover(run)
    branch, upstream = _upstream(root, remote)
    if upstream is None:
        with run.barrier():
            run.commit(message)
        raise UnavailableError(
            "this vault's repository has no remote to sync with",
            "add one with: git remote add origin URL",
        )
    name = upstream.split("/", 1)[0]
    live = vault.rel(vault.live_context)
    before = rev(root, "HEAD")
    pushed = entries_out = 0
    for attempt in range(PUSH_TRIES):
        try:
            _fetch(run, name)
            stage("fetch")
        except OfflineError:
            with run.barrier():
                run.commit(message)
            raise
        with run.barrier():
            run.commit(message)
        head = rev(root, "HEAD")
        theirs = rev(root, upstream)
        if head is not None and theirs is not None and not is_ancestor(root, theirs, head):
            _take(run, head, theirs, mode, message, live)
        head = rev(root, "HEAD")
        if head is None:
            return _report(run, before, 0, 0, progress)
        theirs = rev(root, upstream)
        ahead = count(root, f"{upstream}..HEAD") if theirs else count(root, "HEAD")
        if not ahead:
            break
        entries_out = (
            sum(log_entries_in(root, live, f"{upstream}...HEAD").values()) if theirs else 0
        )
        proc = git(root, "push", "--quiet", name, f"HEAD:{branch}", check=False, timeout=300)
        stage("push")
        if proc.returncode == 0:
            pushed = ahead
            git(root, "update-ref", f"refs/remotes/{upstream}", "HEAD", check=False)
            break
        if not REJECTED.search(proc.stderr):
            err = failure(["push", name], proc)
            if isinstance(err, OfflineError):
                raise OfflineError(
                    f"cannot reach {name}: {(proc.stderr.strip().splitlines() or ['?'])[-1]}",
                    "your changes are committed here; run vaultmem sync again when online",
                )
            raise err
        # another machine pushed between our fetch and our push: fetch, merge, try again
        time.sleep(min(0.2 * 2**attempt, 3.0) * (0.5 + random.random()))
    else:
        raise LockTimeoutError(
            f"the remote moved on during each of {PUSH_TRIES} pushes (other machines syncing)",
            "your changes are committed and merged here; run vaultmem sync again",
        )
    return _report(run, before, pushed, entries_out, progress)


def _take(run: _Run, head: str, theirs: str, mode: str, message: str | None, live: str) -> None:
    """Merge the remote's `theirs` into `head` and move the working tree there."""
    from vaultmem.core.templates import template

    root = run.root
    base = git(root, "merge-base", head, theirs, check=False).stdout.strip() or None
    changes = check_tree(root, theirs, base, template("gitattributes"))
    run.trust += [t for t in trust_report(changes) if t not in run.trust]
    run.pulled += count(root, f"{head}..{theirs}")
    run.entries_in += sum(log_entries_in(root, live, f"{head}...{theirs}").values())
    merged = merge(root, head, theirs, mode, run.conflicts)
    stage("merge")
    for _ in range(3):
        with run.barrier():
            later = run.commit(message)
            target = merged
            if later is not None:
                target = merge(root, later.sha, merged, "merge", run.conflicts)
            now = rev(root, "HEAD")
            assert now is not None
            try:
                run.notes += worktree.move_tree(run.vault, root, now, target)
                run.moved = True
            except worktree.MovePutOff as exc:
                run.notes.append(f"waited: {exc}")
            else:
                # a merge that arrived already holding markers (another machine's conflict)
                names = git(root, "diff", "--name-only", now, target).stdout.split("\n")
                run.conflicts += [
                    n for n in names if n and n not in run.conflicts and _has_markers(root / n)
                ]
                return
        time.sleep(0.2)
    run.notes.append("a file kept changing during the sync; its merge waits for the next sync")


def _report(
    run: _Run,
    before: str | None,
    pushed: int,
    entries_out: int,
    progress: Callable[[int, int], None] | None,
) -> SyncReport:
    vault, root = run.vault, run.root
    open_conflicts = _open_conflicts(run)
    changed = before != rev(root, "HEAD")
    if not (run.committed or changed or pushed):
        if open_conflicts:
            _raise_conflicts(open_conflicts, SyncReport("nothing"))
        return SyncReport("nothing", notes=tuple(run.notes))
    index, ok, problems = _after_pull(vault, progress)
    from vaultmem.nexus.trust import pending

    waiting = tuple(f"waiting for vaultmem trust accept: {line}" for line in pending(vault))
    report = SyncReport(
        "synced",
        committed=run.committed.sha if run.committed else None,
        message=run.committed.message if run.committed else None,
        pulled=run.pulled,
        pushed=pushed,
        entries_in=run.entries_in,
        entries_out=entries_out,
        verify_ok=ok,
        problems=problems,
        index=index,
        notes=tuple(run.notes),
        trust=tuple(run.trust) + waiting,
        skipped=tuple(run.skipped),
        conflicts=tuple(open_conflicts),
    )
    if open_conflicts:
        _raise_conflicts(open_conflicts, report)
    return report


def _open_conflicts(run: _Run) -> list[str]:
    """Files a merge wrote both versions into (this sync's, and earlier syncs' still marked)."""
    from vaultmem.core.fsio import atomic_write

    path = worktree.state(run.vault, "conflicts.json")
    try:
        earlier = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        earlier = []
    known = [p for p in dict.fromkeys([*earlier, *run.conflicts]) if isinstance(p, str)]
    still = [p for p in known if _has_markers(run.root / p)]
    if still or earlier:
        atomic_write(path, json.dumps(still))
    return still


def _raise_conflicts(files: list[str], report: SyncReport) -> None:
    err = SyncConflictError(
        f"merging needs a person: {', '.join(files)}",
        "both versions are in each file between <<<<<<< and >>>>>>> markers (nothing was "
        "dropped): edit them to what should stay, then run vaultmem sync",
    )
    err.report = report  # type: ignore[attr-defined]
    raise err


def _after_pull(
    vault: Vault, progress: Callable[[int, int], None] | None
) -> tuple[dict[str, Any], bool, tuple[str, ...]]:
    """What the files changed, the machine's derived state follows: the index (here, not in
    the next agent's recall) and the integrity check."""
    from vaultmem.bank.review_page import refresh_review_page
    from vaultmem.bank.store import bank_lock
    from vaultmem.nexus.verify import verify
    from vaultmem.search.refresh import refresh

    # generated pages follow the merged files: Review.md's list, made again from the bank
    with contextlib.suppress(VaultmemError, OSError), bank_lock(vault):
        refresh_review_page(vault)
    fresh = refresh(vault, wait=None, progress=progress)
    result = verify(vault)
    problems = tuple(f"{p.kind}: {p.message}" for p in result.problems[:20])
    return fresh.to_dict(), result.ok, problems


def status(vault: Vault, *, remote: str | None = None, fetch: bool = True) -> SyncStatus:
    """Ahead/behind, files changed here, log entries not on the remote yet."""
    root = repo_root(vault)
    branch, upstream = _upstream(root, remote)
    fetched = False
    if upstream and fetch:
        fetched = git(root, "fetch", "--quiet", upstream.split("/", 1)[0], check=False,
                      timeout=60).returncode == 0  # fmt: skip
    changed = tuple(
        line[3:].strip()
        for line in git(root, "status", "--porcelain").stdout.splitlines()
        if line.strip()
    )
    has_up = bool(upstream) and rev(root, upstream or "") is not None
    ahead = count(root, f"{upstream}..HEAD") if has_up else count(root, "HEAD")
    behind = count(root, f"HEAD..{upstream}") if has_up else 0
    live = vault.rel(vault.live_context)
    unsynced = sum(log_entries_in(root, live, f"{upstream}").values()) if has_up else 0
    return SyncStatus(branch, upstream, ahead, behind, changed, unsynced, fetched)


def watch(
    vault: Vault,
    *,
    interval: float,
    remote: str | None = None,
    rounds: int | None = None,
    report: Callable[[SyncReport | VaultmemError], None] | None = None,
) -> int:
    """`sync --watch`: a sync every `interval` seconds until interrupted (or `rounds` done);
    an offline remote or a busy repository is reported and retried, never fatal."""
    done = 0
    while rounds is None or done < rounds:
        started = time.monotonic()
        try:
            result: SyncReport | VaultmemError = sync(vault, remote=remote)
        except (OfflineError, LockTimeoutError, SyncConflictError) as exc:
            result = exc
        if report is not None:
            report(result)
        done += 1
        if rounds is not None and done >= rounds:
            break
        time.sleep(max(0.0, interval - (time.monotonic() - started)))
    return done
