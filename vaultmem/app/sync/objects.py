"""Merges made as git objects: the working tree is never touched (docs/FORMAT.md, "Sync loses
nothing"). `git merge-tree --write-tree` runs the same merge drivers `.gitattributes` names; a
file both sides changed in one place is written with both versions between markers, and the
merge is committed all the same, so nothing is dropped and nothing is half-done."""

from __future__ import annotations

from pathlib import Path

from vaultmem.app.sync.git import failure, git, identity_env, is_ancestor


def merge(root: Path, ours: str, theirs: str, mode: str, conflicts: list[str]) -> str:
    """The commit that joins `ours` and `theirs`, made as objects (the working tree is not
    touched); records conflicts (files written with both versions between markers)."""
    if is_ancestor(root, ours, theirs):
        return theirs  # a fast-forward
    if mode == "rebase":
        replayed = _replay(root, ours, theirs)
        if replayed is not None:
            return replayed
    tree, conflicted = _merge_tree(root, ours, theirs, conflicts)
    message = f"vaultmem sync: merge {theirs[:8]} into {ours[:8]}"
    if conflicted:
        message += "\n\nBoth versions kept between markers in: " + ", ".join(conflicted)
    return _commit_tree(root, tree, message, ours, theirs)


def _merge_tree(root: Path, ours: str, theirs: str, conflicts: list[str]) -> tuple[str, list[str]]:
    args = ["merge-tree", "--write-tree", "--name-only", "--no-messages"]
    proc = git(root, *args, ours, theirs, check=False, timeout=600)
    lines = proc.stdout.splitlines()
    if proc.returncode not in (0, 1) or not lines:
        raise failure(["merge-tree", theirs[:8]], proc)
    conflicted = sorted({ln.strip() for ln in lines[1:] if ln.strip()})
    for path in conflicted:
        if path not in conflicts:
            conflicts.append(path)
    return lines[0].strip(), conflicted


def _commit_tree(root: Path, tree: str, message: str, *parents: str) -> str:
    args = ["commit-tree", tree, "-m", message]
    for p in parents:
        args += ["-p", p]
    return git(root, *args, env=identity_env(root)).stdout.strip()


def _replay(root: Path, ours: str, theirs: str) -> str | None:
    """`[sync] pull = "rebase"`: this machine's commits replayed on top of the remote's, as
    objects; None (merge instead) when one does not replay cleanly or is a merge."""
    base = git(root, "merge-base", ours, theirs).stdout.strip()
    listed = git(root, "rev-list", "--reverse", "--parents", f"{base}..{ours}").stdout
    tip = theirs
    for line in listed.splitlines():
        shas = line.split()
        if len(shas) != 2:
            return None
        sha, parent = shas
        # a cherry-pick as a merge (git 2.39's merge-tree takes no base): a scratch commit
        # holding the tip's tree on top of the commit's parent makes that parent the base
        tip_tree = git(root, "rev-parse", f"{tip}^{{tree}}").stdout.strip()
        onto = _commit_tree(root, tip_tree, "vaultmem sync: replay base", parent)
        proc = git(root, "merge-tree", "--write-tree", "--no-messages", onto, sha,
                   check=False)  # fmt: skip
        if proc.returncode != 0:
            return None
        body = git(root, "log", "-1", "--format=%B", sha).stdout
        tip = _commit_tree(root, proc.stdout.split()[0], body.strip() or "vaultmem sync", tip)
    return tip
