"""What arrives through git is a stranger's: checked before it is merged or checked out.

A remote (a teammate's compromised laptop, a CI job, a mistaken force-push) can write any tree.
Before `sync` merges a fetched commit, and before `clone` checks one out, the tree is read as
git objects (nothing touches the disk) and refused (exit 8, naming the commit and the path)
when it would:

- write under `.vaultmem/` (local state: the index Whoosh opens with `pickle`, the coordination
  index, cursors, the journal) or `.git/`;
- create a symbolic link (a read through it would leave the vault) or a submodule;
- change how the vault's files merge or are written: a `.gitattributes` anywhere but the root
  (`nexus/.gitattributes` with `live-context.md merge=binary` drops the other side's entries),
  a root `.gitattributes` that changes a rule of vaultmem's, defines a macro, or gives a
  pattern that can match a `.md` file (every file vaultmem merges is one) anything but
  `diff`, `linguist-*`, `export-*`, `whitespace` or `delta`; any `.gitmodules` or
  `.lfsconfig`; a `.gitignore` inside vaultmem's folders (`nexus/`, `agents/`, `people/`,
  `memory/`), which would keep this machine's new files there from ever syncing;
- put code where a Python could import it (issue 35): a module, package, `.pth` or extension
  at the vault's top level (`vaultmem/`, `*.py`, `sitecustomize.py`, `__pycache__/`, any
  folder with an `__init__`), an executable there (a PATH with `.` would run it), or any file
  under a folder this machine's Python imports from when that folder is inside the vault (a
  `.venv/` in a project that is the vault). vaultmem never imports from the vault anyway
  (`core/spawn`): this is the second wall.

Changes to the files that carry trust (`vaultmem.toml`, `agents/*/keys.md`, `people/*/keys.md`,
`.gitattributes`, `.gitignore`) are allowed through and reported, line by line, by every sync:
the pins on this machine decide what takes effect (`vaultmem trust`).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path, PurePosixPath

from vaultmem.app.sync.git import diff_tree, git, git_bytes
from vaultmem.core.errors import RefusedError
from vaultmem.core.records import record

LINK, GITLINK, DELETED, EXECUTABLE = "120000", "160000", "000000", "100755"
LOCAL_DIRS = (".vaultmem", ".git")
TRUST_FILES = (".gitattributes", ".gitignore", "vaultmem.toml")
GIT_CONFIG = (".gitmodules", ".lfsconfig")  # git configuration a tree can carry, never a vault's
OWN_DIRS = ("nexus", "agents", "people", "memory")  # vaultmem's folders: no .gitignore inside
# what Python imports from a folder on sys.path: modules, bytecode, extensions, .pth (site dirs)
CODE_SUFFIXES = (".py", ".pyc", ".pyo", ".pyw", ".pyd", ".so", ".pth", ".pyz")
# attributes that change neither how a file merges nor the bytes git writes for it
HARMLESS_ATTRS = ("diff", "export-ignore", "export-subst", "whitespace", "delta")
GIT_BLANKS = re.compile(r"[ \t\r\n]+")  # what git splits an attributes line on


class IncomingRefusedError(RefusedError):
    """A fetched commit would write local state, a link or the merge rules (exit 8)."""


@record
class Change:
    mode: str  # the new mode ("000000" when deleted)
    blob: str  # the new blob id
    path: str


def _changes(root: Path, old: str | None, new: str) -> list[Change]:
    """Entries of `new`'s tree that differ from `old`'s (every entry when `old` is None)."""
    if old is None:
        raw = git_bytes(root, "ls-tree", "-r", "-z", "--full-tree", new)
        out = []
        for rec in raw.split(b"\0"):
            if not rec:
                continue
            head, _, path = rec.partition(b"\t")
            mode, _kind, blob = head.decode().split()
            out.append(Change(mode, blob, path.decode("utf-8", "surrogateescape")))
        return out
    return [Change(c.new_mode, c.new_blob, c.path) for c in diff_tree(root, old, new)]


def _bad(change: Change, code_dirs: tuple[str, ...] = ()) -> str | None:
    parts = PurePosixPath(change.path).parts
    if any(p.lower() in LOCAL_DIRS for p in parts):
        return f"writes {change.path}, which is this machine's local state (never from git)"
    if change.mode == LINK:
        return f"makes {change.path} a symbolic link (a read through it could leave the vault)"
    if change.mode == GITLINK:
        return f"makes {change.path} a submodule"
    if change.mode == DELETED:
        return None  # taking a rule or a module away runs nothing
    return _git_config(change.path, parts) or _code(change, parts, code_dirs)


def _git_config(path: str, parts: tuple[str, ...]) -> str | None:
    """A file of git's own configuration in a place the vault's never is."""
    lower = [p.lower() for p in parts]  # .GITATTRIBUTES is .gitattributes on macOS
    if ".gitattributes" in lower and path != ".gitattributes":
        return (
            f"adds {path}, a merge rule below the vault's root (it could drop the other "
            "side's entries in the next merge); only the root .gitattributes vaultmem writes "
            "says how files merge"
        )
    found = next((p for p in lower if p in GIT_CONFIG), None)
    if found is not None:
        return f"adds {path}, git configuration ({found}) that a vault never carries"
    if lower[-1] == ".gitignore" and len(lower) > 1 and lower[0] in OWN_DIRS:
        return (
            f"adds {path}, which could keep this machine's new files in {parts[0]}/ from "
            "ever syncing"
        )
    return None


def _code(change: Change, parts: tuple[str, ...], code_dirs: tuple[str, ...]) -> str | None:
    """Code a Python could import: at the vault's top level (the folder a Python started in
    the vault puts first on sys.path), or under a folder this machine's Python imports from."""
    lower = [p.lower() for p in parts]
    path = change.path
    for folder in code_dirs:  # .VENV/ is .venv/ on macOS
        if path.lower().startswith(folder.lower() + "/"):
            return f"writes {path}, inside {folder}/, a folder this machine's Python imports from"
    if lower[0] == "vaultmem" and len(parts) > 1:
        return f"writes {path}: a vaultmem package or module in the vault would run as vaultmem"
    if len(parts) == 1 and lower[0].endswith(CODE_SUFFIXES):
        return f"writes {path}, Python code at the vault's top level (a Python started there imports it)"
    if lower[0] == "__pycache__" or (len(parts) > 1 and lower[1].startswith("__init__.")):
        return f"writes {path}, a Python package at the vault's top level (a Python started there imports it)"
    if len(parts) == 1 and change.mode == EXECUTABLE:
        return f"makes {path} an executable at the vault's top level (a PATH with . runs it)"
    return None


def code_dirs(root: Path) -> tuple[str, ...]:
    """The folders inside the vault (`root`) this machine's Python imports from (a venv in a
    project that is the vault, an editable checkout there): relative, '/'-separated."""
    real = root.resolve()
    here = Path(__file__).resolve().parents[3]  # the folder that holds the vaultmem package
    exe = Path(sys.executable).parent
    found: list[str] = []
    for entry in (*sys.path, sys.prefix, sys.exec_prefix, str(exe), str(here)):
        if not entry or not Path(entry).is_absolute():
            continue
        full = Path(entry).resolve()
        if full != real and real in full.parents:
            rel = full.relative_to(real).as_posix()
            if rel not in found:
                found.append(rel)
    return tuple(found)


def _introduced_by(root: Path, tip: str, base: str | None, path: str) -> str:
    spec = [tip] if base is None else [f"{base}..{tip}"]
    found = git(root, "log", "-1", "--format=%h %s", *spec, "--", path, check=False).stdout
    return found.strip() or tip[:8]


def check_tree(root: Path, tip: str, base: str | None, template_rules: str) -> list[Change]:
    """Refuse `tip` (IncomingRefusedError) if its tree, against `base` (the merge base, or
    None for a clone), writes local state, a link or a submodule, or changes one of vaultmem's
    merge rules (`template_rules`: the .gitattributes vaultmem writes); else return the changed
    entries."""
    changes = _changes(root, base, tip)
    inside = code_dirs(root)
    for change in changes:
        why = _bad(change, inside)
        if why is None and change.path == ".gitattributes":
            why = _attributes_problem(root, change, base, template_rules)
        if why is not None:
            commit = _introduced_by(root, tip, base, change.path)
            raise IncomingRefusedError(
                f"refused the remote's commit {commit}: it {why}",
                "nothing was merged or written; ask whoever pushed it to undo that change, "
                "then run vaultmem sync again",
            )
    return changes


def _attributes_problem(root: Path, change: Change, base: str | None, template: str) -> str | None:
    ours = set(merge_rules(template))
    before = merge_rules(template)
    if base is not None:
        proc = git(root, "cat-file", "blob", f"{base}:.gitattributes", check=False)
        before = {k: v for k, v in merge_rules(proc.stdout).items() if k in ours}
    after = (
        {}
        if change.mode == "000000"
        else merge_rules(
            git_bytes(root, "cat-file", "blob", change.blob).decode("utf-8", "replace")
        )
    )
    for pattern, rule in before.items():
        new = after.get(pattern)
        if new != rule and (base is not None or new is not None):
            return (
                f"changes how {pattern} merges in .gitattributes ({new or 'no rule'} instead "
                f"of {rule}), which could drop the other side's entries"
            )
    if change.mode == DELETED:
        return None
    known = _lines(template)
    if base is not None:
        known |= _lines(git(root, "cat-file", "blob", f"{base}:.gitattributes", check=False).stdout)
    text = git_bytes(root, "cat-file", "blob", change.blob).decode("utf-8", "replace")
    for words in _attribute_lines(text):
        if words in known:
            continue  # vaultmem's own line, or one this machine already had
        if words[0].startswith("[attr]"):
            return (
                f"defines the attribute macro {words[0][6:]} in .gitattributes (a macro can "
                "change how vaultmem's files merge)"
            )
        risky = [a for a in words[1:] if not _harmless(a)]
        if risky and _may_match_md(words[0]):
            return (
                f"sets {' '.join(risky)} for {words[0]} in .gitattributes, which could change "
                "how vaultmem's files merge or the bytes written for them"
            )
    return None


def _attribute_lines(text: str) -> list[tuple[str, ...]]:
    """Each attributes line as git splits it, comments and blank lines left out."""
    out = []
    for line in text.removeprefix("\ufeff").splitlines():
        words = tuple(w for w in GIT_BLANKS.split(line) if w)
        if words and not words[0].startswith("#"):
            out.append(words)
    return out


def _lines(text: str) -> set[tuple[str, ...]]:
    return set(_attribute_lines(text))


def _harmless(attr: str) -> bool:
    name = attr.lstrip("-!").split("=", 1)[0]
    return name in HARMLESS_ATTRS or name.startswith("linguist-")


def _may_match_md(pattern: str) -> bool:
    """Could git's `pattern` match a file named `*.md` (every file vaultmem merges is one)?
    Conservative: a quoted or escaped pattern, or one ending in a wildcard, may."""
    if pattern.startswith('"') or "\\" in pattern:
        return True
    last = pattern.rstrip("/").rsplit("/", 1)[-1].lower()  # core.ignorecase: *.MD is *.md
    if not last or last[-1] in "*?]":
        return True
    cut = max(last.rfind(c) for c in "*?]")
    tail = last[cut + 1 :]
    return tail.endswith(".md") or (cut >= 0 and ".md".endswith(tail))


def merge_rules(text: str) -> dict[str, str]:
    """pattern -> its merge attribute, the last line naming it winning (as git applies them)."""
    rules: dict[str, str] = {}
    for line in text.splitlines():
        words = line.split()
        if not words or words[0].startswith("#"):
            continue
        for attr in words[1:]:
            if attr.lstrip("-!").startswith("merge"):
                rules[words[0]] = attr
    return rules


def trust_report(changes: list[Change]) -> tuple[str, ...]:
    """One line per incoming change to a file that carries trust, for the sync report."""
    lines = []
    for change in changes:
        p = PurePosixPath(change.path)
        if change.path in TRUST_FILES or (p.name == "keys.md" and len(p.parts) == 3
                                          and p.parts[0] in ("agents", "people")):  # fmt: skip
            what = "deleted" if change.mode == "000000" else "changed"
            lines.append(f"the remote {what} {change.path}")
    return tuple(lines)
