"""What arrives through git is a stranger's: checked before it is merged or checked out.

A remote (a teammate's compromised laptop, a CI job, a mistaken force-push) can write any tree.
Before `sync` merges a fetched commit, and before `clone` checks one out, the tree is read as
git objects (nothing touches the disk) and refused (exit 8, naming the commit and the path)
when it would:

- write under `.vaultmem/` (local state: the index Whoosh opens with `pickle`, the coordination
  index, cursors, the journal) or `.git/`;
- create a symbolic link (a read through it would leave the vault) or a submodule;
- change how the vault's files merge (`.gitattributes` lines for vaultmem's files), which would
  let a remote drop the other side's entries in the next merge.

Changes to the files that carry trust (`vaultmem.toml`, `agents/*/keys.md`, `people/*/keys.md`,
`.gitattributes`, `.gitignore`) are allowed through and reported, line by line, by every sync:
the pins on this machine decide what takes effect (`vaultmem trust`).
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath

from vaultmem.app.sync.git import diff_tree, git, git_bytes
from vaultmem.core.errors import RefusedError
from vaultmem.core.records import record

LINK, GITLINK = "120000", "160000"
LOCAL_DIRS = (".vaultmem", ".git")
TRUST_FILES = (".gitattributes", ".gitignore", "vaultmem.toml")


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


def _bad(change: Change) -> str | None:
    parts = PurePosixPath(change.path).parts
    if any(p.lower() in LOCAL_DIRS for p in parts):
        return f"writes {change.path}, which is this machine's local state (never from git)"
    if change.mode == LINK:
        return f"makes {change.path} a symbolic link (a read through it could leave the vault)"
    if change.mode == GITLINK:
        return f"makes {change.path} a submodule"
    return None


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
    for change in changes:
        why = _bad(change)
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
    return None


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
