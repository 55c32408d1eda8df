"""The system `git`, run the way sync needs it: no prompts, English messages, typed failures.

Every git runs in the vault's root (it must), by absolute path and with a PATH of absolute
entries only (`core.spawn.child_env`); the processes git starts there for vaultmem (the merge
drivers) are isolated Pythons (`core/spawn`). vaultmem uses the system `git` (the engine people already trust for replicated text; a Python
git library would add a dependency and still shell out for merges and credentials). Every
expected git outcome has an exit code of its own: unreachable remote or a busy repository is 6
(retry), a repository that is missing is 7; only what nobody expected is 1.
"""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import time
from pathlib import Path

from vaultmem.core.errors import LockTimeoutError, UnavailableError, VaultmemError
from vaultmem.core.fsio import fs_now_ns
from vaultmem.core.records import record
from vaultmem.core.spawn import child_env

OFFLINE = re.compile(
    r"Could not resolve host|unable to access|Connection refused|Could not read from remote"
    r"|does not appear to be a git repository|Network is unreachable|timed out|No such device"
    r"|Connection reset|Authentication failed|Permission denied \(publickey",
    re.IGNORECASE,
)
# another git process holds a lock (ours killed, or a person's running command)
BUSY = re.compile(r"index\.lock|\.lock': File exists|Unable to create .*\.lock", re.IGNORECASE)
REJECTED = re.compile(r"\[rejected\]|fetch first|non-fast-forward|failed to push some refs")
STALE_LOCK_SECONDS = 30.0


class OfflineError(VaultmemError):
    """The remote could not be reached; the work is committed here. Retrying later is safe."""

    exit_code = 6


def git_bin() -> str:
    """git by absolute path, on PATH's absolute entries only: a `.` in PATH would find a `git`
    a remote committed to the vault, where sync runs (issue 35; `core/spawn`)."""
    import shutil  # bz2 and lzma at import: only here

    from vaultmem.core.spawn import clean_path

    found = shutil.which("git", path=clean_path(os.environ.get("PATH")))
    if found is None:
        raise UnavailableError("git is not installed", "install git to sync a vault")
    return found


def git(
    root: Path,
    *args: str,
    check: bool = True,
    timeout: float = 120,
    stdin: str | bytes | None = None,
    env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run git in `root` with no prompts and messages in English (they are parsed)."""
    full = child_env({"GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C", "GIT_MERGE_AUTOEDIT": "no"})
    full.update(env or {})
    try:
        proc = subprocess.run(
            [git_bin(), *args],
            cwd=root,
            env=full,
            capture_output=True,
            text=True,
            timeout=timeout,
            input=stdin.decode() if isinstance(stdin, bytes) else stdin,
        )
    except subprocess.TimeoutExpired as exc:
        raise OfflineError(
            f"git {' '.join(args[:2])} took longer than {timeout:g}s",
            "nothing was lost; run vaultmem sync again",
        ) from exc
    if check and proc.returncode != 0:
        raise failure(args, proc)
    return proc


def failure(args: tuple[str, ...] | list[str], proc: subprocess.CompletedProcess[str]) -> Exception:
    """The error a failed git command means, with the exit code of what happened."""
    text = (proc.stderr or proc.stdout).strip()
    what = f"git {' '.join(args[:2])}"
    if BUSY.search(text):
        return LockTimeoutError(
            f"{what}: another git process is working in this repository ({text[:200]})",
            "nothing was lost; run vaultmem sync again in a moment",
        )
    if OFFLINE.search(text):
        last = text.splitlines()[-1] if text else "no answer"
        return OfflineError(
            f"{what}: cannot reach the remote: {last}",
            "your changes are committed here; run vaultmem sync again when online",
        )
    return VaultmemError(f"{what} failed: {text[:400]}", "run the same git command to see more")


def git_bytes(root: Path, *args: str, stdin: bytes | None = None, timeout: float = 120) -> bytes:
    """git's stdout as bytes (file contents, -z listings)."""
    proc = subprocess.run(
        [git_bin(), *args],
        cwd=root,
        env=child_env({"GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C"}),
        capture_output=True,
        input=stdin,
        timeout=timeout,
    )
    if proc.returncode != 0:
        text = proc.stderr.decode("utf-8", "replace")
        raise failure(list(args), subprocess.CompletedProcess(args, proc.returncode, "", text))
    return proc.stdout


@record
class TreeChange:
    """One entry `git diff-tree --raw` reports: modes and blob ids ("0"*40 when absent)."""

    old_mode: str
    new_mode: str
    old_blob: str
    new_blob: str
    path: str


def diff_tree(root: Path, old: str, new: str) -> list[TreeChange]:
    """Every entry that differs between two trees (no renames, recursive), parsed from -z."""
    raw = git_bytes(root, "diff-tree", "-r", "-z", "--no-commit-id", "--raw", "--no-renames",
                    old, new)  # fmt: skip
    parts = raw.split(b"\0")
    out = []
    i = 0
    while i + 1 < len(parts):
        meta = parts[i].decode()
        if not meta.startswith(":"):
            i += 1
            continue
        old_mode, new_mode, old_blob, new_blob, _status = meta[1:].split()
        path = parts[i + 1].decode("utf-8", "surrogateescape")
        out.append(TreeChange(old_mode, new_mode, old_blob, new_blob, path))
        i += 2
    return out


def rev(root: Path, spec: str) -> str | None:
    proc = git(root, "rev-parse", "--verify", "--quiet", spec + "^{commit}", check=False)
    return (proc.stdout.strip() or None) if proc.returncode == 0 else None


def is_ancestor(root: Path, a: str, b: str) -> bool:
    return git(root, "merge-base", "--is-ancestor", a, b, check=False).returncode == 0


def count(root: Path, spec: str) -> int:
    proc = git(root, "rev-list", "--count", spec, check=False)
    return int(proc.stdout.strip() or 0) if proc.returncode == 0 else 0


def who(root: Path) -> list[str]:
    """A machine where nobody set a git identity (a CI runner, a container) still commits and
    merges, as "vaultmem"."""
    if git(root, "config", "user.email", check=False).returncode == 0:
        return []
    return ["-c", "user.name=vaultmem", "-c", "user.email=vaultmem@localhost"]


def identity_env(root: Path) -> dict[str, str]:
    """The same identity for plumbing (`commit-tree` takes no -c user.*)."""
    if git(root, "config", "user.email", check=False).returncode == 0:
        return {}
    return {
        "GIT_AUTHOR_NAME": "vaultmem",
        "GIT_AUTHOR_EMAIL": "vaultmem@localhost",
        "GIT_COMMITTER_NAME": "vaultmem",
        "GIT_COMMITTER_EMAIL": "vaultmem@localhost",
    }


def blob_id(data: bytes) -> str:
    """The id git gives these bytes as a blob (SHA-1 repositories)."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()


def git_dir(root: Path) -> Path:
    return Path(git(root, "rev-parse", "--absolute-git-dir").stdout.strip())


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def clear_stale_index_lock(root: Path, children: Path, *, wait: float = 10.0) -> str | None:
    """A `.git/index.lock` left by a killed git blocks every later command. Sync records the
    pid of each git it runs that writes the index (`children`): when that git is gone, the
    lock is ours and stale, and goes at once. Any other lock (a person's git) is waited for,
    then removed once older than STALE_LOCK_SECONDS. Returns what was done, for the report."""
    lock = git_dir(root) / "index.lock"
    deadline = time.monotonic() + wait
    while True:
        try:  # by the files' clock: a process clock ahead of it would call a live lock stale
            age = (fs_now_ns(lock.parent) - lock.stat().st_mtime_ns) / 1e9
        except FileNotFoundError:
            children.unlink(missing_ok=True)
            return None
        pid = _recorded_pid(children)
        if pid is not None and not _alive(pid):
            lock.unlink(missing_ok=True)
            children.unlink(missing_ok=True)
            return f"removed .git/index.lock left by a killed sync's git (pid {pid})"
        if age >= STALE_LOCK_SECONDS and pid is None:
            lock.unlink(missing_ok=True)
            return f"removed a stale .git/index.lock ({age:.0f}s old, left by a killed git)"
        if time.monotonic() >= deadline:
            raise LockTimeoutError(
                "another git process is working in this repository (.git/index.lock)",
                "nothing was lost; run vaultmem sync again in a moment",
            )
        time.sleep(0.1)


def _recorded_pid(children: Path) -> int | None:
    try:
        text = children.read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        return None
    return int(text) if text.isdigit() else None


def git_tracked(
    root: Path, children: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run a git that writes the index, its pid recorded in `children` while it runs, so a
    sync killed meanwhile leaves a lock the next sync can prove stale."""
    full = child_env({"GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C", **(env or {})})
    proc = subprocess.Popen(
        [git_bin(), *args],
        cwd=root,
        env=full,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    children.parent.mkdir(parents=True, exist_ok=True)
    children.write_text(str(proc.pid), encoding="ascii")
    try:
        out, err = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    children.unlink(missing_ok=True)
    done = subprocess.CompletedProcess(list(args), proc.returncode, out, err)
    if proc.returncode != 0:
        raise failure(args, done)
    return done


def stage(name: str) -> None:
    """The crash tests' hook: SIGKILL at a named sync stage (VAULTMEM_CRASH_AT=sync:STAGE)."""
    from vaultmem.core.environment import env_crash_stage

    if env_crash_stage() == name:
        import signal

        os.kill(os.getpid(), signal.SIGKILL)
