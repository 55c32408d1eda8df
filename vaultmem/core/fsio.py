"""Low-level file I/O every writer shares: atomic replace, durable append, checked reads.

An atomic write goes to a dot-prefixed temp file in the same folder (Obsidian ignores dot files,
and `os.replace` is only atomic within one file system), is flushed and fsynced, then replaces
the target; the folder is fsynced so the rename itself survives a power cut.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import stat
import time
from pathlib import Path

from vaultmem.core.errors import DiskFullError, IntegrityError, NotWritableError, VaultmemError
from vaultmem.core.patterns import later

TEMP_PREFIX = ".vaultmem-tmp-"
TEMP_MAX_AGE = 60.0  # seconds: a live write's temp file lives for milliseconds
# exactly the names this module gives its temp files: a person's file never matches
_TEMP_NAME = later(re.escape(TEMP_PREFIX) + r".+\.[0-9a-f]{8}")
_swept: dict[str, float] = {}  # folder -> when this process last cleaned it (monotonic)
# open flag that refuses to follow a symlink in the last component (0 where there is none)
NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


def ensure_dir(folder: Path) -> None:
    """Create `folder` and any missing parents, fsyncing each parent after a creation so the new
    folder itself survives a power cut (not only the files later written in it)."""
    if folder.is_dir():
        return
    missing = []
    here = folder
    while not here.exists():
        missing.append(here)
        here = here.parent
    for made in reversed(missing):
        try:
            made.mkdir()
        except FileExistsError:
            continue
        fsync_dir(made.parent)


def fsync_dir(folder: Path) -> None:
    if os.name == "nt":  # directories cannot be opened for fsync on Windows
        return
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_error(path: Path, exc: OSError) -> VaultmemError:
    """Translate an OSError from writing `path` into a VaultmemError that says what to do."""
    if exc.errno == errno.ELOOP:
        from vaultmem.core.errors import PathOutsideVaultError

        return PathOutsideVaultError(
            f"{path} is a symlink; vaultmem never writes through one",
            "replace the link with the file itself",
        )
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return DiskFullError(
            f"cannot write {path}: the disk is full; nothing was written",
            "free some space and run the command again (it is safe to retry)",
        )
    if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        return NotWritableError(
            f"cannot write {path}: {exc.strerror}",
            "the vault (or this file) is read-only; check its permissions",
        )
    return VaultmemError(f"cannot write {path}: {exc.strerror}")


_renames = 0


def before_step() -> None:
    """The crash tests' hook: SIGKILL just before the Nth step (VAULTMEM_CRASH_AT=step:N),
    a step being a rename, a link or an append (the points where a file changes), or a
    group commit's fsync (`core/commit.py`)."""
    global _renames
    from vaultmem.core.environment import env_crash_at

    target = env_crash_at()
    if target is None:
        return
    _renames += 1
    if _renames == target:
        import signal

        os.kill(os.getpid(), signal.SIGKILL)


def _write_synced(fd: int, data: bytes) -> None:
    """Write all of `data` to `fd` (a short write is continued), fsync, close."""
    try:
        view = memoryview(data)
        while view:
            written = os.write(fd, view)
            view = view[written:]
        os.fsync(fd)
    finally:
        os.close(fd)


def fs_now_ns(folder: Path) -> int:
    """Now, by the clock that stamps files in `folder`: the mtime of a temp file made there.

    File times come from the file system's clock (a network server's, or the kernel's while a
    process runs with a skewed or faked clock), so a file's age is this minus its mtime, never
    `time.time()` minus it: a process clock ahead of the files' would make a file written a
    moment ago look settled (a changed folder trusted, a live write's temp file swept). The
    process clock only where the folder cannot be written (then nothing is saved either)."""
    probe = folder / f"{TEMP_PREFIX}clock.{os.urandom(4).hex()}"
    try:
        fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL | NOFOLLOW, 0o600)
    except OSError:
        return time.time_ns()
    try:
        return os.fstat(fd).st_mtime_ns
    finally:
        os.close(fd)
        with contextlib.suppress(OSError):
            probe.unlink()


def sweep_temp_files(
    folder: Path, *, older_than: float = TEMP_MAX_AGE, now_ns: int | None = None
) -> list[Path]:
    """Remove the temp files a killed write left in `folder` (never followed into subfolders):
    only names this module makes (`.vaultmem-tmp-NAME.<8 hex>`), only regular files, only
    those not modified for `older_than` seconds (a concurrent write's temp file is younger).
    File times are the file system's, so this compares them with its clock (`now_ns`, a file
    just written there, or `fs_now_ns`), never the process's or the pinned one. Returns what it
    removed; a file it cannot remove is left for the next time."""
    removed: list[Path] = []
    limit = ((fs_now_ns(folder) if now_ns is None else now_ns) - int(older_than * 1e9)) / 1e9
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return removed
    for item in entries:
        if not item.name.startswith(TEMP_PREFIX) or not _TEMP_NAME.fullmatch(item.name):
            continue
        try:
            info = item.stat(follow_symlinks=False)
            if not stat.S_ISREG(info.st_mode) or info.st_mtime > limit:
                continue
            Path(item.path).unlink()
        except OSError:
            continue
        removed.append(Path(item.path))
    return removed


def _sweep_once(folder: Path, written: Path) -> None:
    """Clean `folder` of stale temp files when this process writes there (again at most once a
    minute, for a long-lived server): the next command that owns a folder cleans what a killed
    one left, at one scan of the folder per command."""
    key, moment = str(folder), time.monotonic()
    if key in _swept and moment - _swept[key] < TEMP_MAX_AGE:
        return
    _swept[key] = moment
    try:  # the file just written there carries the file system's now
        now_ns = written.lstat().st_mtime_ns
    except OSError:
        return
    sweep_temp_files(folder, now_ns=now_ns)


def atomic_write(path: Path, data: str | bytes, *, mode: int | None = None) -> None:
    """Replace `path` with `data` so that readers see the old or the new file, never a mix."""
    raw = data.encode("utf-8") if isinstance(data, str) else data
    tmp = path.with_name(f"{TEMP_PREFIX}{path.name}.{os.urandom(4).hex()}")
    try:
        ensure_dir(path.parent)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode if mode is not None else 0o644)
        _write_synced(fd, raw)
        if mode is None and path.exists():
            # keep the permissions a person gave the file
            os.chmod(tmp, path.stat().st_mode & 0o7777)
        before_step()
        os.replace(tmp, path)
        fsync_dir(path.parent)
    except OSError as exc:
        with contextlib.suppress(OSError):  # never hide the real error behind the clean-up's
            tmp.unlink(missing_ok=True)
        raise write_error(path, exc) from exc
    _sweep_once(path.parent, path)


def replace_cache(path: Path, data: bytes) -> None:
    """Replace a cache file (rebuildable state) by rename, without fsync: readers see the old
    or the new file; after a power cut it may be empty or missing, and is then rebuilt."""
    tmp = path.with_name(f"{TEMP_PREFIX}{path.name}.{os.urandom(4).hex()}")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(tmp, "xb") as fh:
            fh.write(data)
        os.replace(tmp, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)
        raise write_error(path, exc) from exc


def append_line(path: Path, data: bytes) -> None:
    """Append `data` with one O_APPEND write, without fsync (records that may be lost in a
    power cut, never torn by a concurrent writer)."""
    try:
        try:
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        except FileNotFoundError:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, data)
        finally:
            os.close(fd)
    except OSError as exc:
        raise write_error(path, exc) from exc


def create_private(path: Path, data: bytes) -> bool:
    """Create a file only its owner can read (mode 0600), fsynced: the private keys, the device
    id and the memo secret in VAULTMEM_HOME, outside the vault. False (nothing written) when it
    already exists; any other failure raises OSError."""
    path.parent.mkdir(parents=True, exist_ok=True)
    # written whole under a temporary name, then linked into place: a reader racing the first
    # writer sees no file or the whole file, never an empty one (a link fails if one exists)
    tmp = path.with_name(f"{TEMP_PREFIX}{path.name}.{os.urandom(4).hex()}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        try:
            os.write(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        try:
            os.link(tmp, path)
        except FileExistsError:
            return False
        fsync_dir(path.parent)
        return True
    finally:
        with contextlib.suppress(OSError):
            tmp.unlink()


def create_exclusive(path: Path, data: str) -> bool:
    """Write a new file; return False (and write nothing) when it already exists."""
    if path.exists() or path.is_symlink():
        return False
    tmp = path.with_name(f"{TEMP_PREFIX}{path.name}.{os.urandom(4).hex()}")
    try:
        ensure_dir(path.parent)
        with open(tmp, "xb") as fh:
            fh.write(data.encode("utf-8"))
            fh.flush()
            os.fsync(fh.fileno())
        try:
            # link() fails if the target appeared meanwhile: never overwrite
            before_step()
            os.link(tmp, path)
        except FileExistsError:
            return False
        finally:
            tmp.unlink(missing_ok=True)
        fsync_dir(path.parent)
        _sweep_once(path.parent, path)
        return True
    except OSError as exc:
        with contextlib.suppress(OSError):  # never hide the real error behind the clean-up's
            tmp.unlink(missing_ok=True)
        raise write_error(path, exc) from exc


def append_durable(path: Path, data: bytes) -> None:
    """Append `data` with one write(), then flush and fsync. Callers hold the lock.

    Never through a symlink. A file this call creates gets its folder fsynced too, so the
    first line of a new journal survives a power cut like every later one. A write that fails
    part way (a full disk) is cut off again: the file ends where it ended, never torn.
    """
    flags = os.O_WRONLY | os.O_APPEND | NOFOLLOW
    try:
        try:
            fd = os.open(path, flags)
        except FileNotFoundError:
            ensure_dir(path.parent)
            fd = os.open(path, flags | os.O_CREAT, 0o644)
            _append_whole(fd, data)
            fsync_dir(path.parent)
            return
        _append_whole(fd, data)
    except OSError as exc:
        raise write_error(path, exc) from exc


def append_unsynced(path: Path, data: bytes, *, line: bool = False, create: bool = True) -> bool:
    """`append_durable` without the fsync, for a caller that makes the append durable later
    (a log's group commit, `core/commit.py`) and holds the lock. A file this call creates
    gets its folder fsynced; a write that fails part way is cut off again. `line`: `data` is
    one line, preceded by a newline when the file ends inside a line (a power cut tore its last
    line: the next line must not be glued to it). `create`: False to return False, writing
    nothing, when the file does not exist; True once written."""
    flags = (os.O_RDWR if line else os.O_WRONLY) | os.O_APPEND | NOFOLLOW
    try:
        try:
            fd = os.open(path, flags)
        except FileNotFoundError:
            if not create:
                return False
            ensure_dir(path.parent)
            fd = os.open(path, flags | os.O_CREAT, 0o644)
            _append_whole(fd, data, sync=False)
            fsync_dir(path.parent)
            return True
        _append_whole(fd, data, sync=False, line=line)
    except OSError as exc:
        raise write_error(path, exc) from exc
    return True


def _append_whole(fd: int, data: bytes, *, sync: bool = True, line: bool = False) -> None:
    try:
        size = os.fstat(fd).st_size
        if line and size and os.pread(fd, 1, size - 1) != b"\n":
            data = b"\n" + data
        try:
            before_step()  # an append is this file's one step, like a rename
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            if sync:
                os.fsync(fd)
        except OSError:
            with contextlib.suppress(OSError):
                os.ftruncate(fd, size)
                os.fsync(fd)
            raise
    finally:
        os.close(fd)


def read_text(path: Path, *, what: str = "file") -> str:
    """Read UTF-8 text; a file that is not UTF-8 is an IntegrityError naming the file."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise VaultmemError(f"cannot read {path}: {exc.strerror}", "check its permissions") from exc
    return decode_text(data, path, what)


def decode_text(data: bytes, path: Path, what: str) -> str:
    """UTF-8 text of a file's bytes; not UTF-8 is an IntegrityError naming the file."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise IntegrityError(
            f"{path}: {what} is not UTF-8 text (bad byte at offset {exc.start})",
            "re-save it as UTF-8 in your editor",
        ) from exc
