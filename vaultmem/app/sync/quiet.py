"""`vaultmem sync` with nothing to do, told in two git calls: the hooks start a background sync
every few minutes, and most find nothing to move.

Nothing to do means: no sync is running here, none left work half-done (git's `index.lock`, a
merge or rebase in the working tree, a working-tree move, files marked with conflicts), this
clone's settings are the ones the last full sync checked (`worktree.config_current`),
`.gitattributes` and `.gitignore` hold vaultmem's lines, `git status` shows no change and HEAD
is its upstream's tracking ref, and the remote's branch (`git ls-remote`) is that same commit.
Then a full sync would commit nothing, fetch nothing new, merge nothing and push nothing; it
would only stamp `last.json`, which this does too. Any doubt (a git that fails, an upstream it
cannot name, a remote that moved) answers None and the full sync (`pipeline.sync`) runs, from
the start, with its own checks and messages.
"""

from __future__ import annotations

from vaultmem.app.sync import worktree
from vaultmem.app.sync.git import git
from vaultmem.core.errors import LockTimeoutError
from vaultmem.core.locking import exclusive, lock_path
from vaultmem.core.vault import Vault

# git's own marks of work in progress, under .git/
BUSY = ("index.lock", "MERGE_HEAD", "rebase-merge", "rebase-apply", "CHERRY_PICK_HEAD")


def _status(vault: Vault) -> tuple[str, str, str] | None:
    """(HEAD, branch, upstream) when the working tree is clean and HEAD is its tracking ref."""
    proc = git(vault.root, "status", "--porcelain=v2", "--branch", "-z", check=False)
    if proc.returncode != 0:
        return None
    head = branch = upstream = None
    for record in proc.stdout.split("\0"):
        if not record:
            continue
        if not record.startswith("# "):
            return None  # a changed, untracked or unmerged file: the full sync commits it
        key, _, value = record[2:].partition(" ")
        if key == "branch.oid":
            head = value
        elif key == "branch.head":
            branch = value
        elif key == "branch.upstream":
            upstream = value
        elif key == "branch.ab" and value != "+0 -0":
            return None  # commits to push or to take in
    if head is None or not branch or branch == "(detached)" or not upstream or upstream == "":
        return None
    return head, branch, upstream


def _remote_head(vault: Vault, name: str, branch: str) -> str | None:
    ref = f"refs/heads/{branch}"
    proc = git(vault.root, "ls-remote", "--heads", name, ref, check=False, timeout=300)
    if proc.returncode != 0:
        return None  # offline, or refused: the full sync says which
    for line in proc.stdout.splitlines():
        sha, _, found = line.partition("\t")
        if found == ref:
            return sha
    return None


def nothing_to_do(vault: Vault) -> bool:
    """True when a sync of `vault` has nothing to do (and `last.json` says so now); False
    when the full sync must run. Never raises for a state the full sync handles."""
    root = vault.root
    git_dir = root / ".git"
    if not git_dir.is_dir() or any((git_dir / name).exists() for name in BUSY):
        return False
    if (
        worktree.state(vault, "move.json").exists()
        or worktree.state(vault, "conflicts.json").exists()
    ):
        return False
    if not worktree.config_current(vault, root):
        return False
    if not (
        worktree.has_template_lines(root, "gitattributes")
        and worktree.has_template_lines(root, "gitignore")
    ):
        return False
    try:
        lock = exclusive(lock_path(vault, "sync"), 0.05, what="sync")
        lock.__enter__()
    except LockTimeoutError:
        return False  # another sync is running: the full sync says so
    try:
        found = _status(vault)
        if found is None:
            return False
        head, branch, upstream = found
        name = upstream.split("/", 1)[0]  # as the full sync names the remote
        if _remote_head(vault, name, branch) != head:
            return False
        worktree.stamp_last(vault, "nothing")
        return True
    finally:
        lock.__exit__(None, None, None)
