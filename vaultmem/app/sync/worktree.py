"""The working tree under sync: committed whole, and moved to a merge result file by file.

git's own `merge` rewrites the working tree from a snapshot taken when it starts (and, when it
refuses, resets it with `read-tree --reset`), so every write made meanwhile is lost. sync never
lets git touch the working tree. It merges commits as objects (`git merge-tree`), then, holding
the sync barrier (no vaultmem write runs), commits what was written meanwhile, merges that too,
and moves each changed file to its merged version itself:

- a file is replaced only when it still holds exactly the committed bytes (what a person saved
  after the commit is never overwritten: the move is put off to the next sync);
- the new contents are written to temp files (fsynced) and recorded in an intent file
  (`.vaultmem/sync/move.json`) before the first rename, so a sync killed half-way is finished,
  or safely abandoned, by the next one;
- a write that lands on the old file in the instant between the check and the rename (a person's
  editor holds no lock) is merged into the new file, as git would merge it.
"""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path, PurePosixPath

from vaultmem.app.sync.git import blob_id, diff_tree, git, git_bytes, git_tracked, stage, who
from vaultmem.core import seal
from vaultmem.core.fsio import TEMP_PREFIX, atomic_write, ensure_dir, fsync_dir
from vaultmem.core.records import record
from vaultmem.core.vault import Vault

# never committed: local state, vaultmem's temp files, git's merge-driver scratch files
LOCAL_NAMES = (".vaultmem", ".git")
SCRATCH_PREFIXES = (TEMP_PREFIX, ".merge_file_")
# the merge drivers `.gitattributes` names, by the kind `vaultmem merge-file` takes
DRIVERS = {
    "vaultmem-index": "index",
    "vaultmem-state": "state",
    "vaultmem-checkpoint": "checkpoint",
    "vaultmem-snapshot": "snapshot",
    "vaultmem-generated": "generated",
}
INFO_EXCLUDE = ("/.vaultmem/", f"{TEMP_PREFIX}*", ".merge_file_*")


@record
class Commit:
    sha: str
    message: str
    skipped: tuple[str, ...]  # links and nested repositories, never synced


def state(vault: Vault, name: str) -> Path:
    return vault.state("sync", name)


def stamp_last(vault: Vault, outcome: str) -> None:
    """`.vaultmem/sync/last.json`: when the last sync ended, and how."""
    from vaultmem.core import clock

    atomic_write(state(vault, "last.json"),
                 json.dumps({"time": clock.stamp(), "outcome": outcome}))  # fmt: skip


def _runner(root: Path) -> str:
    """`python -m vaultmem` as git runs it for a merge: in the vault's root (the file names
    git gives the driver are relative to it), so isolated (`core/spawn`): never the vault's
    own `vaultmem/` package or `sitecustomize.py` (issue 35)."""
    from vaultmem.core.spawn import shell_command

    return shell_command("vaultmem", vault=str(root))


def _config_files(root: Path) -> dict[str, list[int]] | None:
    """What `.git/config` and `.git/info/exclude` are on disk (size, times, inode), or None
    when the repository's git dir is elsewhere (a worktree, a submodule): then no stamp."""
    found: dict[str, list[int]] = {}
    for rel in ("config", "info/exclude"):
        try:
            st = (root / ".git" / rel).stat()
        except (FileNotFoundError, NotADirectoryError):
            return None
        found[rel] = [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino]
    return found


def config_current(vault: Vault, root: Path) -> bool:
    """True when this clone's settings were checked by `ensure_local_config` and neither file
    changed since (the stamp in `.vaultmem/sync/config.json`): no git call needed."""
    files = _config_files(root)
    if files is None:
        return False
    try:
        known = json.loads(state(vault, "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return bool(known == {"runner": _runner(root), "files": files})


def ensure_local_config(root: Path, vault: Vault | None = None) -> None:
    """This clone's own settings, which no remote can change (they are not in the tree): the
    merge drivers, `.vaultmem/` excluded, links checked out as plain files. With `vault`, a
    stamp of the two files once they hold the settings: the next sync reads no git config
    when they did not change (re-registering the drivers cost ~70 ms of git calls)."""
    if vault is not None and config_current(vault, root):
        return
    config = git(root, "config", "--local", "--list").stdout
    runner = _runner(root)
    for name, kind in DRIVERS.items():
        driver = f"{runner} merge-file {kind} %O %A %B %P"
        if f"merge.{name}.driver={driver}" not in config:
            git(root, "config", f"merge.{name}.name", f"vaultmem {kind} merge")
            git(root, "config", f"merge.{name}.driver", driver)
    if "core.symlinks=false" not in config:
        git(root, "config", "core.symlinks", "false")
    # the commit under the sync barrier deflates every changed file (a live log of megabytes):
    # zlib level 1 halves that wait for writers; packs (gc) compress as they always did
    if "core.loosecompression=" not in config.lower():
        git(root, "config", "core.looseCompression", "1")
    info = Path(git(root, "rev-parse", "--git-path", "info/exclude").stdout.strip())
    info = info if info.is_absolute() else root / info
    have = info.read_text(encoding="utf-8") if info.exists() else ""
    missing = [p for p in INFO_EXCLUDE if p not in have.splitlines()]
    if missing:
        ensure_dir(info.parent)
        sep = "" if not have or have.endswith("\n") else "\n"
        atomic_write(info, have + sep + "# vaultmem: local state\n" + "\n".join(missing) + "\n")
    files = _config_files(root) if vault is not None else None
    if vault is not None and files is not None:
        with contextlib.suppress(OSError):  # no stamp: the next sync checks with git again
            stamp = state(vault, "config.json")
            ensure_dir(stamp.parent)
            atomic_write(stamp, json.dumps({"runner": runner, "files": files}))


def _template_lines(root: Path, name: str) -> tuple[Path, str, list[str]]:
    """(`.gitattributes` / `.gitignore`, its text, the template's lines it lacks by pattern)."""
    from vaultmem.core.templates import template

    path = root / f".{name}"
    have = path.read_text(encoding="utf-8") if path.exists() else ""
    known = {ln.split()[0] for ln in have.splitlines() if ln.strip() and not ln.startswith("#")}
    return (
        path,
        have,
        [
            ln
            for ln in template(name).splitlines()
            if ln.strip() and not ln.startswith("#") and ln.split()[0] not in known
        ],
    )


def has_template_lines(root: Path, name: str) -> bool:
    return not _template_lines(root, name)[2]


def ensure_template_lines(root: Path, name: str) -> bool:
    """Add to `.gitattributes` / `.gitignore` the lines of vaultmem's template that a vault
    made by an older vaultmem lacks (by pattern), keeping every line a person wrote."""
    path, have, missing = _template_lines(root, name)
    if not missing:
        return False
    sep = "" if not have or have.endswith("\n") else "\n"
    atomic_write(path, have + sep + "\n".join(missing) + "\n")
    return True


def stage_all(root: Path, children: Path) -> None:
    """`git add -A` of the whole tree (what `.gitignore` and `.git/info/exclude` leave out
    stays out; commit_all unstages local state even when a `.gitignore` stops ignoring it)."""
    git_tracked(root, children, "add", "-A", "--", ":/")


def commit_all(vault: Vault, root: Path, message: str | None = None) -> Commit | None:
    """Commit everything changed (vaultmem's files and people's edits) but local state; None
    when nothing changed. Symbolic links and nested repositories stay out (a remote refuses
    them) and are named in `skipped`."""
    from vaultmem.app.sync.describe import describe

    children = state(vault, "git.pid")
    stage_all(root, children)
    stage("add")
    staged = git_bytes(root, "diff", "--cached", "--raw", "-z", "--no-renames")
    skipped, local = [], []
    parts = staged.split(b"\0")
    for meta, path in zip(parts[::2], parts[1::2], strict=False):
        new_mode = meta.decode().split()[1] if meta.startswith(b":") else ""
        rel = path.decode("utf-8", "surrogateescape")
        names = PurePosixPath(rel).parts
        if any(n in LOCAL_NAMES for n in names) or names[-1].startswith(SCRATCH_PREFIXES):
            local.append(rel)  # a .gitignore that stopped ignoring them (from a remote?)
        elif new_mode in ("120000", "160000"):
            skipped.append(rel)
    for batch in (local, skipped):
        if batch:
            # --force: the index may hold a local file's older bytes (git.pid is rewritten for
            # this very git call); only the index changes, never a file
            git_tracked(root, children, "rm", "--cached", "--force", "--quiet", "-r", "--", *batch)
    if git(root, "diff", "--cached", "--quiet", check=False).returncode == 0:
        return None
    text = message or describe(vault, root)
    git_tracked(root, children, *who(root), "commit", "--quiet", "--no-verify", "-m", text)
    stage("commit")
    sha = git(root, "rev-parse", "HEAD").stdout.strip()
    return Commit(sha, text, tuple(skipped))


# --- moving the working tree ---------------------------------------------------------------------


@record
class Move:
    path: str
    old: str | None  # blob id committed (None: the file did not exist)
    new: str | None  # blob id merged (None: the merge deletes it)
    mode: str
    tmp: str | None = None


class MovePutOff(Exception):
    """A file changed after it was committed (a person's editor): the move waits a sync."""


def _tree_changes(root: Path, frm: str, to: str) -> list[Move]:
    def blob(oid: str) -> str | None:
        return None if oid.strip("0") == "" else oid

    return [
        Move(c.path, blob(c.old_blob), blob(c.new_blob), c.new_mode)
        for c in diff_tree(root, frm, to)
    ]


def _on_disk(root: Path, rel: str) -> Path:
    parts = PurePosixPath(rel).parts
    if not parts or any(p in ("..", "") for p in parts) or PurePosixPath(rel).is_absolute():
        raise MovePutOff(f"{rel}: not a plain path")
    target = root.joinpath(*parts)
    # never through a link: the parent folders must be real folders inside the repository
    real_root = root.resolve()
    parent = target.parent.resolve()
    if parent != real_root and real_root not in parent.parents:
        raise MovePutOff(f"{rel}: its folder leads outside the repository")
    return target


def _current(path: Path) -> str | None:
    try:
        if path.is_symlink():
            return "link"
        return blob_id(path.read_bytes())
    except FileNotFoundError:
        return None
    except IsADirectoryError:
        return "folder"


def _blobs(root: Path, ids: list[str]) -> dict[str, bytes]:
    """Contents of blobs, one `git cat-file --batch` for all."""
    if not ids:
        return {}
    out = git_bytes(root, "cat-file", "--batch", stdin=("\n".join(ids) + "\n").encode())
    found: dict[str, bytes] = {}
    pos = 0
    for oid in ids:
        end = out.index(b"\n", pos)
        header = out[pos:end].split()
        size = int(header[2])
        found[oid] = out[end + 1 : end + 1 + size]
        pos = end + 1 + size + 1
    return found


def move_tree(vault: Vault, root: Path, frm: str, to: str) -> list[str]:
    """Move the working tree (which holds commit `frm` exactly, under the barrier) and HEAD to
    commit `to`. Raises MovePutOff, with nothing written, when a file differs from `frm`.
    Returns notes for the report (late writes merged)."""
    moves = _tree_changes(root, frm, to)
    for mv in moves:
        if _current(_on_disk(root, mv.path)) != mv.old:
            raise MovePutOff(f"{mv.path} changed after it was committed")
    contents = _blobs(root, sorted({mv.new for mv in moves if mv.new}))
    prepared = []
    for mv in moves:
        tmp = None
        if mv.new is not None:
            target = _on_disk(root, mv.path)
            ensure_dir(target.parent)
            tmp_path = target.with_name(f"{TEMP_PREFIX}{target.name}.{os.urandom(4).hex()}")
            fd = os.open(tmp_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            try:
                os.write(fd, contents[mv.new])
                os.fsync(fd)
            finally:
                os.close(fd)
            if mv.mode == "100755":
                os.chmod(tmp_path, 0o755)
            tmp = os.path.relpath(tmp_path, root)
        prepared.append(Move(mv.path, mv.old, mv.new, mv.mode, tmp))
    intent = state(vault, "move.json")
    # sealed (core/seal.py): recovery acts only on a plan this machine wrote
    plan = {"from": frm, "to": to, "files": [m.__dict__ for m in prepared]}
    atomic_write(intent, seal.dumps(intent, plan) or json.dumps(plan).encode())
    notes = _apply(vault, root, prepared, contents)
    git_tracked(root, state(vault, "git.pid"), "reset", "--quiet", "--mixed", to)
    intent.unlink(missing_ok=True)
    return notes


def _apply(vault: Vault, root: Path, moves: list[Move], contents: dict[str, bytes]) -> list[str]:
    from vaultmem.core.fsio import before_step

    notes = []
    for mv in moves:
        target = _on_disk(root, mv.path)
        old = None
        with contextlib.suppress(FileNotFoundError):
            old = target.read_bytes()
        fd = None
        with contextlib.suppress(OSError):
            fd = os.open(target, os.O_RDONLY)
        try:
            before_step()
            if mv.tmp is not None:
                os.replace(root / mv.tmp, target)
            else:
                target.unlink(missing_ok=True)
                _prune_empty(root, target.parent)
            fsync_dir(target.parent)
            late = _read_fd(fd) if fd is not None else None
            stage("checkout")  # the crash tests: killed with some files moved, some not
        finally:
            if fd is not None:
                os.close(fd)
        if late is not None and old is not None and late != old and mv.new is not None:
            merged = merge_late(root, mv.path, old, late, contents[mv.new])
            atomic_write(target, merged)
            notes.append(f"{mv.path}: an edit saved during the sync was merged in")
    return notes


def _read_fd(fd: int) -> bytes:
    os.lseek(fd, 0, os.SEEK_SET)
    chunks = []
    while chunk := os.read(fd, 1 << 20):
        chunks.append(chunk)
    return b"".join(chunks)


def _prune_empty(root: Path, folder: Path) -> None:
    real_root = root.resolve()
    while folder.resolve() != real_root:
        try:
            folder.rmdir()
        except OSError:
            return
        folder = folder.parent


def merge_late(root: Path, rel: str, base: bytes, ours: bytes, theirs: bytes) -> bytes:
    """A three-way merge of one file by the rule `.gitattributes` gives it (vaultmem's drivers,
    union, or git's line merge with markers)."""
    import tempfile

    from vaultmem.app.sync.merge import MERGERS

    attr = git(root, "check-attr", "merge", "--", rel).stdout.rsplit(": ", 1)[-1].strip()
    if attr in DRIVERS:
        merged, _conflict = MERGERS[DRIVERS[attr]](
            *(b.decode("utf-8", "replace") for b in (base, ours, theirs))
        )
        return merged.encode("utf-8")
    with tempfile.TemporaryDirectory(prefix="vaultmem-merge-") as tmp:
        files = []
        for name, data in (("ours", ours), ("base", base), ("theirs", theirs)):
            p = Path(tmp) / name
            p.write_bytes(data)
            files.append(str(p))
        flags = ["--union"] if attr == "union" else []
        proc = git(root, "merge-file", "-p", *flags, *files, check=False)
        return proc.stdout.encode("utf-8")


def recover_move(vault: Vault, root: Path) -> str | None:
    """Finish a move a killed sync left half-done, or leave it to the next merge when a file
    was written since; returns what was done."""
    intent = state(vault, "move.json")
    if not intent.exists():
        return None
    plan = seal.read(intent)
    if not isinstance(plan, dict):
        intent.unlink(missing_ok=True)
        return "dropped a sync intent that is unreadable or was not written on this machine"
    moves = [Move(**f) for f in plan.get("files", [])]
    head = git(root, "rev-parse", "HEAD").stdout.strip()
    if head == plan.get("to"):  # killed after the last step: only the clean-up is left
        for mv in moves:
            if mv.tmp:
                (root / mv.tmp).unlink(missing_ok=True)
        intent.unlink(missing_ok=True)
        return None
    whole = head == plan.get("from")
    for mv in moves:
        target = _on_disk(root, mv.path)
        now = _current(target)
        tmp = root / mv.tmp if mv.tmp else None
        if now == mv.new:
            pass
        elif now == mv.old and (mv.new is None or (tmp is not None and tmp.exists())):
            if tmp is not None:
                os.replace(tmp, target)
            else:
                target.unlink(missing_ok=True)
        else:
            whole = False  # written since the kill: the next commit and merge take care of it
        if tmp is not None:
            tmp.unlink(missing_ok=True)
    if whole:
        git_tracked(root, state(vault, "git.pid"), "reset", "--quiet", "--mixed", plan["to"])
    intent.unlink(missing_ok=True)
    return (
        "finished the working-tree move a killed sync left half-done"
        if whole
        else "a killed sync's move was overtaken by later writes; merged again"
    )
