"""The sync pipeline's checks, one at a time, on real git objects (issue 17's mutation run).

`check_tree` reads a tree a remote could have pushed (built here with git's plumbing, so any
mode and any path can be written, as an attacker's git can); `commit_all` and `move_tree` run
on a real vault in a real repository. The end-to-end versions (a bare remote, an attacker's
clone, `vaultmem sync`) are in test_sync_stranger.py and test_sync_lossless.py: these are the
fast ones that name the check that failed."""

from __future__ import annotations

import os
import random
import shutil
import subprocess
from collections import defaultdict
from pathlib import Path

import pytest

from tests._layer3_helpers import fresh_vault
from vaultmem.app.sync import worktree
from vaultmem.app.sync.incoming import IncomingRefusedError, check_tree
from vaultmem.core.templates import template
from vaultmem.core.vault import Vault

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")

IDENTITY = {
    "GIT_AUTHOR_NAME": "mallory",
    "GIT_AUTHOR_EMAIL": "mallory@example.com",
    "GIT_COMMITTER_NAME": "mallory",
    "GIT_COMMITTER_EMAIL": "mallory@example.com",
}
NOTE = ("100644", "# a note\n")


def git(root: Path, *args: str, data: str | None = None, env: dict[str, str] | None = None) -> str:
    proc = subprocess.run(
        ["git", *args],
        cwd=root,
        input=data,
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, **IDENTITY, **(env or {})},
    )
    return proc.stdout.strip()


def _tree(root: Path, files: dict[tuple[str, ...], tuple[str, str]]) -> str:
    """A tree object made with `git mktree`, which (like an attacker's own git) takes any
    name, `.git` included, and any mode."""
    entries, folders = [], defaultdict(dict)
    for parts, (mode, content) in files.items():
        if len(parts) > 1:
            folders[parts[0]][parts[1:]] = (mode, content)
        elif mode == "160000":
            entries.append(f"{mode} commit {content}\t{parts[0]}")
        else:
            oid = git(root, "hash-object", "-w", "--stdin", data=content)
            entries.append(f"{mode} blob {oid}\t{parts[0]}")
    for name, inner in folders.items():
        entries.append(f"040000 tree {_tree(root, inner)}\t{name}")
    return git(root, "mktree", data="\n".join(entries) + "\n")


def commit(root: Path, files: dict[str, tuple[str, str]], parent: str | None = None) -> str:
    """A commit whose tree holds exactly `files` (path -> (mode, content)), written as objects:
    nothing on disk. A gitlink's content is the commit id it points at."""
    tree = _tree(root, {tuple(path.split("/")): v for path, v in files.items()})
    return git(
        root, "commit-tree", tree, "-m", "from the remote", *(["-p", parent] if parent else [])
    )


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "--quiet")
    return root


@pytest.fixture
def base(repo: Path) -> str:
    """What both machines had: vaultmem's own merge rules and a note."""
    return commit(
        repo, {".gitattributes": ("100644", template("gitattributes")), "memory/a.md": NOTE}
    )


def refused(repo: Path, tip: str, base: str | None) -> str:
    with pytest.raises(IncomingRefusedError) as info:
        check_tree(repo, tip, base, template("gitattributes"))
    return str(info.value)


@pytest.mark.parametrize(
    "path",
    [
        ".vaultmem/index/_MAIN_1.toc",  # the index Whoosh unpickles
        ".vaultmem/coord/live.json",
        "memory/.git/config",  # a nested repository's config (hooks, fsmonitor)
        ".VaultMem/coord/live.json",  # the same folder on a case-insensitive disk (macOS)
        ".GIT/hooks/post-merge",
    ],
)
def test_a_tree_that_writes_local_state_is_refused_on_merge_and_on_clone(
    repo: Path, base: str, path: str
) -> None:
    files = {".gitattributes": ("100644", template("gitattributes")), "memory/a.md": NOTE}
    tip = commit(repo, {**files, path: ("100644", "{}")}, parent=base)
    assert "local state" in refused(repo, tip, base)
    assert "local state" in refused(repo, tip, None)


def test_a_tree_that_makes_a_symbolic_link_is_refused(repo: Path, base: str) -> None:
    files = {".gitattributes": ("100644", template("gitattributes")), "memory/a.md": NOTE}
    tip = commit(repo, {**files, "memory/b.md": ("120000", "../../../etc/hostname")}, base)
    assert "symbolic link" in refused(repo, tip, base)
    # replacing a plain note by a link is refused the same way
    tip = commit(repo, {**files, "memory/a.md": ("120000", "/etc/hostname")}, base)
    assert "symbolic link" in refused(repo, tip, base)
    assert "symbolic link" in refused(repo, tip, None)


def test_a_tree_that_makes_a_submodule_is_refused(repo: Path, base: str) -> None:
    files = {".gitattributes": ("100644", template("gitattributes")), "memory/a.md": NOTE}
    tip = commit(repo, {**files, "vendor/tools": ("160000", base)}, base)
    assert "submodule" in refused(repo, tip, base)
    assert "submodule" in refused(repo, tip, None)


@pytest.mark.parametrize(
    "rules",
    [
        "nexus/live-context.md merge=ours\n",  # drop the other side's entries
        "nexus/live-context.md -merge\n",
        "",  # the line is gone: git's default text merge conflicts on every append
    ],
)
def test_a_tree_that_changes_how_the_logs_merge_is_refused(
    repo: Path, base: str, rules: str
) -> None:
    ours = template("gitattributes").replace("nexus/live-context.md merge=union\n", "")
    tip = commit(repo, {".gitattributes": ("100644", ours + rules), "memory/a.md": NOTE}, base)
    assert "nexus/live-context.md merges" in refused(repo, tip, base)


def test_a_tree_with_plain_changes_and_a_person_s_own_attributes_is_let_through(
    repo: Path, base: str
) -> None:
    """The checks refuse what they must and nothing else: a new note, an edited note and a line
    a person added to .gitattributes for their own files arrive."""
    attrs = template("gitattributes") + "*.png binary\nnotes/*.txt merge=union\n"
    tip = commit(
        repo,
        {".gitattributes": ("100644", attrs), "memory/a.md": ("100644", "# edited\n"),
         "memory/b.md": NOTE, "scripts/run.sh": ("100755", "#!/bin/sh\n")},
        base,
    )  # fmt: skip
    paths = {c.path for c in check_tree(repo, tip, base, template("gitattributes"))}
    assert paths == {".gitattributes", "memory/a.md", "memory/b.md", "scripts/run.sh"}
    assert check_tree(repo, tip, None, template("gitattributes"))


# --- issue 35: no merge rule below the root, no code where a Python could import it ----------

ATTRS = {".gitattributes": ("100644", template("gitattributes")), "memory/a.md": NOTE}
SUBFOLDER_RULE = ("100644", "live-context.md merge=binary\n")


@pytest.mark.parametrize(
    "path",
    [
        "nexus/.gitattributes",  # the attack: live-context.md merge=binary drops a handoff
        "agents/ella/.gitattributes",
        "wiki/deep/down/.gitattributes",
        "NEXUS/.GitAttributes",  # the same file on a case-insensitive disk
        ".GITATTRIBUTES",
    ],
)
def test_a_merge_rule_below_the_root_is_refused(repo: Path, base: str, path: str) -> None:
    tip = commit(repo, {**ATTRS, path: SUBFOLDER_RULE}, base)
    for message in (refused(repo, tip, base), refused(repo, tip, None)):
        assert path in message and "merge rule below the vault's root" in message


@pytest.mark.parametrize(
    ("path", "says"),
    [
        (".gitmodules", "git configuration (.gitmodules)"),
        ("wiki/.gitmodules", "git configuration (.gitmodules)"),
        (".lfsconfig", "git configuration (.lfsconfig)"),
        ("nexus/.gitignore", "from ever syncing"),  # new log archives would never leave
        ("memory/people/.gitignore", "from ever syncing"),
        ("Agents/ella/.gitignore", "from ever syncing"),
    ],
)
def test_git_configuration_a_vault_never_carries_is_refused(
    repo: Path, base: str, path: str, says: str
) -> None:
    tip = commit(repo, {**ATTRS, path: ("100644", "*\n")}, base)
    message = refused(repo, tip, base)
    assert path in message and says in message


@pytest.mark.parametrize(
    "line",
    [
        "nexus/live-context.md binary",  # the binary macro is -merge: no word starting "merge="
        "nexus/live-context.md -text",
        "**/live-context.md merge=ours",
        "nexus/*.md eol=crlf",
        "*.md working-tree-encoding=UTF-16",  # rewrites every signed file's bytes on checkout
        "*.MD filter=lfs",
        "* -merge",
        "nexus/live-context.m? merge=binary",
        '"nexus/live-context.md" merge=binary',  # git reads quoted patterns
        "nexus/live-context.md\tmerge=binary",
        "[attr]fast merge=binary",
    ],
)
def test_a_root_attribute_line_that_can_touch_vaultmem_s_files_is_refused(
    repo: Path, base: str, line: str
) -> None:
    text = template("gitattributes") + line + "\n"
    tip = commit(repo, {".gitattributes": ("100644", text), "memory/a.md": NOTE}, base)
    for message in (refused(repo, tip, base), refused(repo, tip, None)):
        assert ".gitattributes" in message
        assert any(w in message for w in ("macro", "could change", "merges in")), message


def test_harmless_root_attribute_lines_and_a_removed_subfolder_rule_go_through(
    repo: Path, base: str
) -> None:
    lines = "*.png binary\nnotes/*.txt merge=union\n*.md diff=markdown linguist-documentation\n"
    with_rule = commit(repo, {**ATTRS, "wiki/.gitignore": ("100644", "*.tmp\n")}, base)
    assert check_tree(repo, with_rule, base, template("gitattributes"))  # wiki/ is a person's
    text = template("gitattributes") + lines
    tip = commit(repo, {".gitattributes": ("100644", text), "memory/a.md": NOTE}, base)
    assert check_tree(repo, tip, base, template("gitattributes"))
    # a subfolder rule this machine already had (an older vault) may be taken away
    old = commit(repo, {**ATTRS, "nexus/.gitattributes": SUBFOLDER_RULE}, None)
    assert check_tree(repo, commit(repo, ATTRS, old), old, template("gitattributes"))


@pytest.mark.parametrize(
    ("path", "mode"),
    [
        ("vaultmem/__init__.py", "100644"),  # python -m vaultmem in the vault runs it
        ("vaultmem/notes.md", "100644"),
        ("VaultMem/__main__.py", "100644"),
        ("vaultmem.py", "100644"),
        ("sitecustomize.py", "100644"),
        ("typer/__init__.py", "100644"),  # any package: the vault's root comes first
        ("json/__init__.pyc", "100644"),
        ("__pycache__/x.cpython-311.pyc", "100644"),
        ("evil.pth", "100644"),
        ("_speedups.cpython-311-x86_64-linux-gnu.so", "100644"),
        ("git", "100755"),  # a PATH with "." finds it first
    ],
)
def test_code_a_python_started_in_the_vault_could_import_is_refused(
    repo: Path, base: str, path: str, mode: str
) -> None:
    tip = commit(repo, {**ATTRS, path: (mode, "open('/tmp/PWNED', 'w')\n")}, base)
    for message in (refused(repo, tip, base), refused(repo, tip, None)):
        assert path in message
        assert any(w in message for w in ("import", "executable", "run as vaultmem")), message


def test_code_deeper_in_the_vault_goes_through(repo: Path, base: str) -> None:
    files = {
        **ATTRS,
        "scripts/tool.py": NOTE,
        "wiki/code/example.py": NOTE,
        "scripts/run.sh": ("100755", "#!/bin/sh\n"),
        "wiki/vaultmem.md": NOTE,
        "vaultmem.toml": ("100644", "[vault]\n"),  # vaultmem's own settings, not a module
        "vaultmem": ("100644", "a plain file\n"),
    }
    assert check_tree(repo, commit(repo, files, base), base, template("gitattributes"))


def test_a_folder_this_python_imports_from_inside_the_vault_is_refused(
    repo: Path, base: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A project that is the vault, with its venv inside: the remote cannot write there."""
    site = repo / ".venv/lib/python3.11/site-packages"
    site.mkdir(parents=True)
    monkeypatch.syspath_prepend(str(site))
    rel = ".venv/lib/python3.11/site-packages/zz.pth"
    tip = commit(repo, {**ATTRS, rel: ("100644", "import os\n")}, base)
    message = refused(repo, tip, base)
    assert rel in message and "imports from" in message
    upper = ".VENV/lib/python3.11/site-packages/zz.pth"  # the same folder on macOS
    assert upper in refused(repo, commit(repo, {**ATTRS, upper: ("100644", "x\n")}, base), base)
    assert IncomingRefusedError("x").exit_code == 8


# every name the door must judge, and where: git configuration, code, vaultmem's own files
_FUZZ_DIRS = ["", "", "nexus/", "agents/ella/", "memory/", "wiki/", "wiki/deep/", "vaultmem/",
              "typer/", "NEXUS/", "scripts/"]  # fmt: skip
_FUZZ_NAMES = [".gitattributes", ".GitAttributes", ".gitmodules", ".lfsconfig", ".gitignore",
               "__init__.py", "__init__.pyc", "sitecustomize.py", "evil.pth", "x.so", "note.md",
               "live-context.md", "run.sh", "tool.py", "git", "README"]  # fmt: skip
_FUZZ_ATTRS = ["merge=binary", "binary", "-text", "eol=crlf", "diff", "linguist-generated",
               "merge=union", "export-ignore", "filter=x"]  # fmt: skip
_FUZZ_PATTERNS = ["live-context.md", "*.md", "*", "*.png", "notes/*.txt", "**/x.md", "*.MD"]


def _dangerous(path: str, mode: str, content: str) -> bool:
    """What must never pass, said independently of the door's code."""
    parts = path.split("/")
    low = [p.lower() for p in parts]
    if ".gitattributes" in low and path != ".gitattributes":
        return True
    if any(p in (".gitmodules", ".lfsconfig") for p in low):
        return True
    if low[-1] == ".gitignore" and len(parts) > 1 and low[0] in ("nexus", "agents", "memory"):
        return True
    top_code = len(parts) == 1 and low[0].rsplit(".", 1)[-1] in ("py", "pyc", "pth", "so")
    package = len(parts) > 1 and low[1].startswith("__init__.")
    if top_code or package or low[0] == "vaultmem" or (len(parts) == 1 and mode == "100755"):
        return True
    if path == ".gitattributes":
        for line in content.splitlines()[len(template("gitattributes").splitlines()) :]:
            pattern, *attrs = line.split()
            risky = [a for a in attrs if a.split("=")[0].lstrip("-") not in
                     ("diff", "linguist-generated", "export-ignore")]  # fmt: skip
            if risky and pattern.lower() in ("live-context.md", "*.md", "*", "**/x.md", "*.md"):
                return True
    return False


def test_random_hostile_trees_never_get_past_the_door(repo: Path, base: str) -> None:
    """Random trees made of git configuration, code and vaultmem's files at every depth: the
    door refuses exactly the trees that hold something it must (exit 8 names that path), and
    lets every other one through."""
    rng = random.Random(35)
    outcomes = {"refused": 0, "through": 0}
    for case in range(120):
        files = dict(ATTRS)
        made = []
        for _ in range(rng.randint(1, 3)):
            path = rng.choice(_FUZZ_DIRS) + rng.choice(_FUZZ_NAMES)
            mode = rng.choice(["100644", "100644", "100755"])
            content = "# a line\n"
            if path == ".gitattributes":
                extra = f"{rng.choice(_FUZZ_PATTERNS)} {rng.choice(_FUZZ_ATTRS)}"
                content = template("gitattributes") + extra + "\n"
            if any(p.startswith(path + "/") or path.startswith(p + "/") for p in files):
                continue  # a name cannot be a file and a folder at once
            files[path] = (mode, content)
            made.append((path, mode, content))
        tip = commit(repo, files, base)
        bad = [p for p, m, c in made if _dangerous(p, m, c)]
        if bad:
            message = refused(repo, tip, base)
            assert any(p in message for p in bad), (case, made, message)
            outcomes["refused"] += 1
        else:
            assert check_tree(repo, tip, base, template("gitattributes")), (case, made)
            outcomes["through"] += 1
    assert min(outcomes.values()) >= 20, outcomes  # both sides of the door were tried


# --- the working tree: committed whole but local state, moved only over committed bytes ---------


@pytest.fixture
def vault_repo(tmp_path: Path) -> tuple[Vault, Path]:
    """A vault in a repository whose .gitignore stops ignoring local state: commit_all alone
    must keep local state, scratch files and links out."""
    root = fresh_vault(tmp_path)
    git(root, "init", "--quiet")
    worktree.ensure_local_config(root)  # info/exclude leaves local state out...
    # ...unless a .gitignore (a remote's) says otherwise: .gitignore outranks info/exclude
    (root / ".gitignore").write_text("!/.vaultmem/\n!.merge_file_*\n", encoding="utf-8")
    return Vault.open(root), root


def tree_paths(root: Path, rev: str = "HEAD") -> list[str]:
    return git(root, "ls-tree", "-r", "--name-only", rev).splitlines()


def test_commit_all_never_commits_local_state_or_scratch_files(
    vault_repo: tuple[Vault, Path],
) -> None:
    v, root = vault_repo
    queue = root / ".vaultmem/queue/ella"
    queue.mkdir(parents=True)
    (queue / "session.json").write_text('{"text": "a private transcript"}')
    (root / "memory" / ".merge_file_a1b2c3").write_text("git's scratch\n")
    made = worktree.commit_all(v, root, "first")
    assert made is not None
    paths = tree_paths(root)
    assert "vaultmem.toml" in paths and "memory/MEMORY.md" in paths  # the vault itself is committed
    assert [p for p in paths if ".vaultmem" in p.split("/") or ".merge_file_" in p] == []


def test_commit_all_leaves_out_links_and_nested_repositories(
    vault_repo: tuple[Vault, Path],
) -> None:
    v, root = vault_repo
    (root / "memory" / "secret.md").symlink_to("/etc/hostname")
    nested = root / "vendor"
    nested.mkdir()
    git(nested, "init", "--quiet")
    (nested / "x.txt").write_text("x\n")
    git(nested, "add", "x.txt")
    git(nested, "commit", "--quiet", "-m", "nested")
    made = worktree.commit_all(v, root, "first")
    assert made is not None
    assert set(made.skipped) == {"memory/secret.md", "vendor"}
    paths = tree_paths(root)
    assert "memory/secret.md" not in paths and not [p for p in paths if p.startswith("vendor")]


def _two_commits(v: Vault, root: Path) -> tuple[str, str, Path]:
    """`frm` (checked out) and `to` (the merge result), which changes MEMORY.md."""
    frm = worktree.commit_all(v, root, "ours")
    assert frm is not None
    index = root / "memory" / "MEMORY.md"
    committed = index.read_text(encoding="utf-8")
    index.write_text(committed + "- [[memory/merged|Merged]] — from the other machine\n")
    to = worktree.commit_all(v, root, "merged")
    assert to is not None
    git(root, "reset", "--quiet", "--hard", frm.sha)
    assert index.read_text(encoding="utf-8") == committed
    return frm.sha, to.sha, index


def test_move_tree_moves_a_file_that_holds_the_committed_bytes(
    vault_repo: tuple[Vault, Path],
) -> None:
    v, root = vault_repo
    frm, to, index = _two_commits(v, root)
    worktree.move_tree(v, root, frm, to)
    assert "from the other machine" in index.read_text(encoding="utf-8")
    assert git(root, "rev-parse", "HEAD") == to


def test_move_tree_puts_off_and_keeps_a_save_made_after_the_commit(
    vault_repo: tuple[Vault, Path],
) -> None:
    """A person's editor saved MEMORY.md after sync committed it (editors take no lock): the
    move to the merge must not overwrite it; it writes nothing and waits for the next sync,
    which commits the save first."""
    v, root = vault_repo
    frm, to, index = _two_commits(v, root)
    saved = index.read_text(encoding="utf-8") + "- [[memory/mine|Mine]] — a person's save\n"
    index.write_text(saved, encoding="utf-8")
    with pytest.raises(
        worktree.MovePutOff, match=r"memory/MEMORY\.md changed after it was committed"
    ):
        worktree.move_tree(v, root, frm, to)
    assert index.read_text(encoding="utf-8") == saved
    assert git(root, "rev-parse", "HEAD") == frm
