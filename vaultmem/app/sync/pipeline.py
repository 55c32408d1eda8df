"""Many machines, one memory: the vault is a git repository, and `vaultmem sync` moves it.

vaultmem uses the system `git` (the engine people already trust for replicated text; a Python
git library would add a dependency and still shell out for merges and credentials). What makes
two clones merge without a person is the file formats (docs/FORMAT.md, "Several machines") and
`.gitattributes`: the logs and `keys.md` merge as a union of lines, `MEMORY.md`, project state
and checkpoints through vaultmem's own merge drivers (`vaultmem.app.sync.merge`).

`sync` = commit what vaultmem and people changed (with a message that says what), pull (merge
or rebase, `[sync] pull`), push, then verify and bring the search index up to date, so the
next agent's recall does not pay for the pull. One sync at a time per machine (a lock).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vaultmem.core.errors import (
    LockTimeoutError,
    UnavailableError,
    UsageError,
    VaultmemError,
)
from vaultmem.core.locking import exclusive, lock_path
from vaultmem.core.vault import Vault

DRIVERS = {
    "vaultmem-index": "index",
    "vaultmem-state": "state",
    "vaultmem-checkpoint": "checkpoint",
    "vaultmem-snapshot": "snapshot",
}
_OFFLINE = re.compile(
    r"Could not resolve host|unable to access|Connection refused|Could not read from remote"
    r"|does not appear to be a git repository|Network is unreachable|timed out|No such device",
    re.IGNORECASE,
)
_HEADER = re.compile(r"^\+### \S+ · (?P<agent>[a-z0-9][a-z0-9_-]{0,39}) · ", re.MULTILINE)


class SyncConflictError(VaultmemError):
    """A merge a person must finish: both versions are in the files, between markers."""

    exit_code = 5


class OfflineError(VaultmemError):
    """The remote could not be reached; the work is committed here. Retrying later is safe."""

    exit_code = 6


@dataclass(frozen=True)
class SyncReport:
    outcome: str  # "synced", "nothing", "offline" (raised), "conflict" (raised)
    committed: str | None = None  # the commit made of local changes
    message: str | None = None
    pulled: int = 0  # commits that arrived
    pushed: int = 0  # commits sent
    entries_in: int = 0  # log entries that arrived
    entries_out: int = 0  # log entries sent
    verify_ok: bool | None = None
    problems: tuple[str, ...] = ()
    index: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        out = dict(self.__dict__)
        out["problems"] = list(self.problems)
        return out


@dataclass(frozen=True)
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


# --- git -------------------------------------------------------------------------------------


def _git_bin() -> str:
    found = shutil.which("git")
    if found is None:
        raise UnavailableError("git is not installed", "install git to sync a vault")
    return found


def git(
    root: Path, *args: str, check: bool = True, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """Run git in `root` with no prompts and messages in English (they are parsed)."""
    env = {
        **os.environ,
        "GIT_TERMINAL_PROMPT": "0",
        "LC_ALL": "C",
        "GIT_MERGE_AUTOEDIT": "no",
    }
    proc = subprocess.run(
        [_git_bin(), *args],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    if check and proc.returncode != 0:
        raise VaultmemError(
            f"git {' '.join(args[:2])} failed: {(proc.stderr or proc.stdout).strip()[:400]}",
            "run the same git command in the vault to see more",
        )
    return proc


def repo_root(vault: Vault) -> Path:
    proc = git(vault.root, "rev-parse", "--show-toplevel", check=False)
    if proc.returncode != 0:
        raise UnavailableError(
            f"{vault.root} is not in a git repository",
            "make it one with: vaultmem init --git (or git init, then vaultmem sync)",
        )
    return Path(proc.stdout.strip())


def ensure_attributes(root: Path) -> bool:
    """Add to `.gitattributes` the merge lines a vault made by an older vaultmem lacks, keeping
    every line a person wrote; True when the file changed."""
    from vaultmem.core.fsio import atomic_write
    from vaultmem.core.templates import template

    path = root / ".gitattributes"
    have = path.read_text(encoding="utf-8") if path.exists() else ""
    known = {ln.split()[0] for ln in have.splitlines() if ln.strip() and not ln.startswith("#")}
    missing = [
        ln
        for ln in template("gitattributes").splitlines()
        if ln.strip() and not ln.startswith("#") and ln.split()[0] not in known
    ]
    if not missing:
        return False
    sep = "" if not have or have.endswith("\n") else "\n"
    atomic_write(path, have + sep + "\n".join(missing) + "\n")
    return True


def ensure_drivers(root: Path) -> None:
    """Register vaultmem's merge drivers in this clone's git config (per clone, not committed;
    `.gitattributes` names them). Without them git falls back to its own text merge."""
    import shlex
    import sys

    runner = f"{shlex.quote(sys.executable)} -m vaultmem"
    for name, kind in DRIVERS.items():
        git(root, "config", f"merge.{name}.name", f"vaultmem {kind} merge")
        git(root, "config", f"merge.{name}.driver", f"{runner} merge-file {kind} %O %A %B %P")


def _upstream(root: Path, remote: str | None) -> tuple[str, str | None]:
    branch = git(root, "rev-parse", "--abbrev-ref", "HEAD").stdout.strip()
    if remote:
        return branch, f"{remote}/{branch}"
    proc = git(root, "rev-parse", "--abbrev-ref", "--symbolic-full-name", "@{u}", check=False)
    if proc.returncode == 0:
        return branch, proc.stdout.strip()
    remotes = git(root, "remote").stdout.split()
    return branch, (f"{remotes[0]}/{branch}" if remotes else None)


def _count(root: Path, spec: str) -> int:
    proc = git(root, "rev-list", "--count", spec, check=False)
    return int(proc.stdout.strip() or 0) if proc.returncode == 0 else 0


def _log_entries_in(root: Path, diff_range: str, rel: str) -> Counter[str]:
    """Entry headers added to the live log in a diff, by agent."""
    proc = git(root, "diff", "--unified=0", diff_range, "--", rel, check=False)
    return Counter(m["agent"] for m in _HEADER.finditer(proc.stdout))


# --- commit -----------------------------------------------------------------------------------


def _describe_changes(root: Path, vault: Vault) -> str | None:
    """A commit message that says what changed, for people reading the history."""
    status = git(root, "status", "--porcelain", "--untracked-files=all").stdout
    paths = [line[3:].strip().strip('"') for line in status.splitlines() if line.strip()]
    if not paths:
        return None
    live = vault.rel(vault.live_context)
    by_agent = _log_entries_in(root, "HEAD", live) if live in paths else Counter()
    kinds: Counter[str] = Counter()
    for p in paths:
        if p.startswith("memory/") or "/memory/" in p:
            kinds["fact"] += 1
        elif "/bank/" in p:
            kinds["bank note"] += 1
        elif p.endswith("checkpoint.md"):
            kinds["checkpoint"] += 1
        elif p.endswith("project-state.md"):
            kinds["project state"] += 1
        elif p.startswith("nexus/"):
            kinds["log file"] += 1 if p != live else 0
        elif p.endswith("keys.md"):
            kinds["key"] += 1
        else:
            kinds["note"] += 1
    parts = []
    if by_agent:
        total = sum(by_agent.values())
        who = ", ".join(f"{a} {n}" for a, n in sorted(by_agent.items()))
        parts.append(f"{total} log entr{'y' if total == 1 else 'ies'} ({who})")
    parts += [f"{n} {k}{'s' if n > 1 else ''}" for k, n in sorted(kinds.items()) if n]
    return "vaultmem sync: " + (", ".join(parts) or f"{len(paths)} files")


def commit_local(
    vault: Vault, root: Path, message: str | None = None
) -> tuple[str | None, str | None]:
    """Commit everything changed (vaultmem's files and people's edits); (sha, message)."""
    text = _describe_changes(root, vault)
    if text is None:
        return None, None
    git(root, "add", "-A")
    final = message or text
    git(root, *_who(root), "commit", "--quiet", "--no-verify", "-m", final)
    return git(root, "rev-parse", "HEAD").stdout.strip(), final


def _who(root: Path) -> list[str]:
    """A machine where nobody set a git identity (a CI runner, a container) still commits and
    merges, as "vaultmem"."""
    if git(root, "config", "user.email", check=False).returncode == 0:
        return []
    return ["-c", "user.name=vaultmem", "-c", "user.email=vaultmem@localhost"]


# --- sync -------------------------------------------------------------------------------------


def sync(
    vault: Vault,
    *,
    remote: str | None = None,
    message: str | None = None,
    pull: str | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> SyncReport:
    """Commit, pull, push, verify, refresh the index. Raises OfflineError (exit 6, the work
    stays committed here) or SyncConflictError (exit 5, which files, what to do)."""
    root = repo_root(vault)
    try:
        lock = exclusive(lock_path(vault, "sync"), 0.5, what="sync")
        lock.__enter__()
    except LockTimeoutError as exc:
        raise LockTimeoutError(
            "another vaultmem sync is running on this machine", "wait for it, then retry"
        ) from exc
    try:
        return _sync_locked(vault, root, remote, message, pull or vault.config.sync.pull, progress)
    finally:
        lock.__exit__(None, None, None)


def _sync_locked(
    vault: Vault,
    root: Path,
    remote: str | None,
    message: str | None,
    mode: str,
    progress: Callable[[int, int], None] | None,
) -> SyncReport:
    ensure_drivers(root)
    _unfinished_merge(root)
    ensure_attributes(root)
    committed, text = commit_local(vault, root, message)
    branch, upstream = _upstream(root, remote)
    if upstream is None:
        raise UnavailableError(
            "this vault's repository has no remote to sync with",
            "add one with: git remote add origin URL",
        )
    name = upstream.split("/", 1)[0]
    live = vault.rel(vault.live_context)
    fetched = git(root, "fetch", "--quiet", name, check=False, timeout=300)
    if fetched.returncode != 0:
        if _OFFLINE.search(fetched.stderr):
            raise OfflineError(
                f"cannot reach {name}: {fetched.stderr.strip().splitlines()[-1]}",
                "your changes are committed here; run vaultmem sync again when online",
            )
        raise VaultmemError(f"git fetch failed: {fetched.stderr.strip()[:400]}")
    remote_exists = git(root, "rev-parse", "--verify", "--quiet", upstream, check=False)
    before = git(root, "rev-parse", "HEAD").stdout.strip()
    behind = _count(root, f"HEAD..{upstream}") if remote_exists.returncode == 0 else 0
    entries_in = 0
    if behind:
        entries_in = sum(_log_entries_in(root, f"HEAD...{upstream}", live).values())
        args = ["rebase", upstream] if mode == "rebase" else ["merge", "--no-edit", upstream]
        merged = git(root, *_who(root), *args, check=False, timeout=600)
        if merged.returncode != 0:
            conflicts = git(root, "diff", "--name-only", "--diff-filter=U").stdout.split()
            if not conflicts:
                raise VaultmemError(
                    f"git {args[0]} failed: {(merged.stderr or merged.stdout).strip()[:400]}",
                    "run the same git command in the vault to see more",
                )
            raise SyncConflictError(
                f"merging {upstream} needs a person: {', '.join(conflicts) or merged.stderr.strip()[:200]}",
                "both versions are in each file between <<<<<<< and >>>>>>> markers: edit them, "
                "then `git add` the files and `git commit` (or `git merge --abort`), and run "
                "vaultmem sync again",
            )
    ahead = (
        _count(root, f"{upstream}..HEAD") if remote_exists.returncode == 0 else _count(root, "HEAD")
    )
    entries_out = (
        sum(_log_entries_in(root, f"{upstream}...HEAD", live).values())
        if remote_exists.returncode == 0
        else 0
    )
    if ahead:
        pushed = git(root, "push", "--quiet", name, f"HEAD:{branch}", check=False, timeout=300)
        if pushed.returncode != 0:
            if _OFFLINE.search(pushed.stderr):
                raise OfflineError(
                    f"cannot reach {name}: {pushed.stderr.strip().splitlines()[-1]}",
                    "your changes are committed here; run vaultmem sync again when online",
                )
            raise VaultmemError(
                f"git push failed: {pushed.stderr.strip()[:400]}",
                "another machine pushed meanwhile: run vaultmem sync again",
            )
    if not (committed or behind or ahead):
        return SyncReport("nothing")
    changed = before != git(root, "rev-parse", "HEAD").stdout.strip()
    report = _after_pull(vault, progress) if changed or committed else ({}, True, ())
    index, ok, problems = report
    return SyncReport(
        "synced",
        committed=committed,
        message=text,
        pulled=behind,
        pushed=ahead,
        entries_in=entries_in,
        entries_out=entries_out,
        verify_ok=ok,
        problems=problems,
        index=index,
    )


def _unfinished_merge(root: Path) -> None:
    if (root / ".git" / "MERGE_HEAD").exists() or (root / ".git" / "rebase-merge").exists():
        conflicts = git(root, "diff", "--name-only", "--diff-filter=U").stdout.split()
        raise SyncConflictError(
            "an earlier merge is not finished" + (f": {', '.join(conflicts)}" if conflicts else ""),
            "resolve the files, `git add` them and `git commit`, then run vaultmem sync again",
        )


def _after_pull(
    vault: Vault, progress: Callable[[int, int], None] | None
) -> tuple[dict[str, Any], bool, tuple[str, ...]]:
    """What the files changed, the machine's derived state follows: the index (here, not in
    the next agent's recall) and the integrity check."""
    from vaultmem.nexus.verify import verify
    from vaultmem.search.refresh import refresh

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
    has_up = bool(upstream) and git(root, "rev-parse", "--verify", "--quiet", upstream or "",
                                    check=False).returncode == 0  # fmt: skip
    ahead = _count(root, f"{upstream}..HEAD") if has_up else _count(root, "HEAD")
    behind = _count(root, f"HEAD..{upstream}") if has_up else 0
    live = vault.rel(vault.live_context)
    base = f"{upstream}" if has_up else None
    unsynced = sum(_log_entries_in(root, base, live).values()) if base else 0
    return SyncStatus(branch, upstream, ahead, behind, changed, unsynced, fetched)


# --- new repositories and new machines ----------------------------------------------------------


def init_git(vault: Vault) -> str:
    """Make the vault a git repository (if it is not in one), with the merge drivers and a
    first commit; returns what was done."""
    proc = git(vault.root, "rev-parse", "--show-toplevel", check=False)
    if proc.returncode == 0:
        ensure_drivers(Path(proc.stdout.strip()))
        return "already a git repository; merge drivers registered"
    git(vault.root, "init", "--quiet")
    ensure_drivers(vault.root)
    commit_local(vault, vault.root, "vaultmem: a new vault")
    return "git repository created with a first commit"


def clone(url: str, dest: Path) -> Vault:
    """`git clone` a vault, register the merge drivers; the caller makes this machine's keys."""
    if dest.exists() and any(dest.iterdir()):
        raise UsageError(f"{dest} is not empty", "clone into a new folder")
    proc = git(dest.parent if dest.parent.exists() else Path.cwd(), "clone", "--quiet", url,
               str(dest), check=False, timeout=600)  # fmt: skip
    if proc.returncode != 0:
        if _OFFLINE.search(proc.stderr):
            raise OfflineError(f"cannot reach {url}", "check the address and the network")
        raise VaultmemError(f"git clone failed: {proc.stderr.strip()[:400]}")
    ensure_drivers(dest)
    return Vault.open(dest)
