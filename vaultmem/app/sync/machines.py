"""New repositories and new machines: `init --git` and `clone`, checked like any sync."""

from __future__ import annotations

from pathlib import Path

from vaultmem.app.sync import worktree
from vaultmem.app.sync.git import OfflineError, failure, git, rev
from vaultmem.app.sync.incoming import check_tree
from vaultmem.app.sync.pipeline import ensure_drivers
from vaultmem.app.sync.worktree import ensure_template_lines
from vaultmem.core.errors import UsageError
from vaultmem.core.vault import Vault


def init_git(vault: Vault) -> str:
    """Make the vault a git repository (if it is not in one), with the merge drivers and a
    first commit; returns what was done."""
    proc = git(vault.root, "rev-parse", "--show-toplevel", check=False)
    if proc.returncode == 0:
        ensure_drivers(Path(proc.stdout.strip()))
        return "already a git repository; merge drivers registered"
    git(vault.root, "init", "--quiet")
    ensure_drivers(vault.root)
    ensure_template_lines(vault.root, "gitattributes")
    ensure_template_lines(vault.root, "gitignore")
    worktree.commit_all(vault, vault.root, "vaultmem: a new vault")
    return "git repository created with a first commit"


def clone(url: str, dest: Path) -> Vault:
    """`git clone` a vault with nothing checked out, check its tree like any incoming commit
    (refused, and the folder removed, when it tracks local state or links), then check it out
    with this clone's local settings; the caller makes this machine's keys."""
    import shutil

    from vaultmem.app.sync.incoming import IncomingRefusedError
    from vaultmem.core.templates import template

    if dest.exists() and any(dest.iterdir()):
        raise UsageError(f"{dest} is not empty", "clone into a new folder")
    made = not dest.exists()
    dest = dest.absolute()
    # git runs where the person typed the command: a relative remote (`../shared.git`) and a
    # relative folder mean what they mean in their shell, not relative to the folder's parent
    proc = git(Path.cwd(), "clone", "--quiet", "--no-checkout", "-c", "core.symlinks=false", url,
               str(dest), check=False, timeout=600)  # fmt: skip
    if proc.returncode != 0:
        err = failure(["clone", url], proc)
        if isinstance(err, OfflineError):
            raise OfflineError(f"cannot reach {url}", "check the address and the network")
        raise err
    head = rev(dest, "HEAD")
    try:
        if head is not None:
            check_tree(dest, head, None, template("gitattributes"))
    except IncomingRefusedError:
        if made:
            shutil.rmtree(dest, ignore_errors=True)
        else:
            for child in dest.iterdir():
                shutil.rmtree(child) if child.is_dir() else child.unlink()
        raise
    ensure_drivers(dest)
    if head is not None:
        git(dest, "checkout", "--quiet", "--force", "HEAD", "--", ".")
    return Vault.open(dest)


def join_steps(vault: Vault, waiting: list[tuple[str, str]]) -> list[str]:
    """What a person must still do for a machine that just joined: for each key no earlier
    key vouched for (`waiting`: agent, key id), the one approval, run where a reviewer's key
    is; nothing when every key is approved. Each step says on which machine it runs."""
    if not waiting:
        return []
    from vaultmem.nexus.keyring import agent_keys

    reviewers = list(vault.config.reviewers)
    keyed = [r for r in reviewers if any(k.approved for k in agent_keys(vault, r))]
    who = keyed[0] if keyed else (vault.config.default_reviewer or (reviewers or ["NAME"])[0])
    approve = " && ".join(f"vaultmem keys approve {kid} --reviewer {who}" for _a, kid in waiting)
    steps = []
    if not keyed:
        steps.append(
            f"no reviewer has a signing key yet: on {who}'s own machine, run "
            f"`vaultmem keys create --reviewer {who} && vaultmem sync`"
        )
    agents = ", ".join(sorted({a for a, _k in waiting}))
    steps.append(
        f"on the machine that holds {who}'s signing key (not this one), approve {agents}'s new "
        f"key: `vaultmem sync; {approve} && vaultmem sync` (the first sync brings the key "
        "and reports it waiting)"
    )
    steps.append("then here: `vaultmem sync` (until then this machine's entries fail verify)")
    return steps
