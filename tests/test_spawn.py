"""Nothing vaultmem starts resolves code from a vault (issue 35): every process goes through
`core/spawn` (or is git, in `app/sync/git.py`), and what `core/spawn` starts is this Python by
absolute path, isolated, outside the vault, with a PATH of absolute entries only.

The scan below fails when a new module starts a process some other way; the real children
below start in a folder laid out like a hostile vault (a `vaultmem/` package, `sitecustomize.py`,
a `json/` package, a `.pth`) and must import none of it."""

from __future__ import annotations

import ast
import functools
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path

import pytest

from vaultmem.core import spawn

PACKAGE = Path(__file__).resolve().parent.parent / "vaultmem"
# the modules allowed to start a process: the helper, and git (which must run in the vault)
SPAWNERS = {"core/spawn.py", "app/sync/git.py"}
# known, not yet through the helper: none (`setup hermes` asks Hermes's Python through it)
NOT_YET: set[str] = set()
# who may name sys.executable: the helper and `core.environment.python()`, which it asks; the
# commands other programs run (OpenClaw's plugin, `-I`); the door, which refuses files under
# this Python's folders when they are inside the vault
EXECUTABLE_READERS = {
    "core/spawn.py",
    "core/environment.py",
    "app/setup/openclaw.py",
    "app/sync/incoming.py",
}
PROCESS_MODULES = {"subprocess", "multiprocessing", "pty", "concurrent.futures"}
OS_STARTERS = ("system", "popen", "posix_spawn", "posix_spawnp", "fork", "forkpty", "startfile")


@functools.cache
def _sources() -> list[tuple[str, ast.Module]]:
    return [
        (path.relative_to(PACKAGE).as_posix(), ast.parse(path.read_text(encoding="utf-8")))
        for path in sorted(PACKAGE.rglob("*.py"))
    ]


def _starts_processes(tree: ast.Module) -> list[str]:
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [a.name for a in node.names if a.name.split(".")[0] in PROCESS_MODULES
                      or a.name in PROCESS_MODULES]  # fmt: skip
        elif isinstance(node, ast.ImportFrom) and node.module:
            if node.module in PROCESS_MODULES or node.module.split(".")[0] in PROCESS_MODULES:
                found.append(node.module)
            if node.module == "asyncio" and any("subprocess" in a.name for a in node.names):
                found.append("asyncio subprocess")
            if node.module == "os" and any(
                a.name in OS_STARTERS or a.name.startswith(("exec", "spawn")) for a in node.names
            ):
                found.append("from os import a starter")
        elif (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and (
                (node.value.id == "os" and (node.attr in OS_STARTERS
                                            or node.attr.startswith(("exec", "spawn"))))
                or (node.value.id == "asyncio" and "subprocess" in node.attr)
            )
        ):  # fmt: skip
            found.append(f"{node.value.id}.{node.attr}")
    return found


def test_only_the_spawn_helper_and_git_start_processes() -> None:
    offenders = {
        rel: hits
        for rel, tree in _sources()
        if rel not in SPAWNERS | NOT_YET and (hits := _starts_processes(tree))
    }
    assert offenders == {}, (
        "start processes through vaultmem.core.spawn (python_argv + detached, run_program): "
        f"{offenders}"
    )
    assert _starts_processes(ast.parse((PACKAGE / "core/spawn.py").read_text()))  # the scan works


def test_only_the_helper_names_this_python() -> None:
    readers = {
        rel
        for rel, tree in _sources()
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute) and node.attr == "executable"
        and isinstance(node.value, ast.Name) and node.value.id == "sys"
    }  # fmt: skip
    assert readers <= EXECUTABLE_READERS, readers - EXECUTABLE_READERS


def test_every_process_git_py_starts_is_git_by_absolute_path() -> None:
    tree = ast.parse((PACKAGE / "app/sync/git.py").read_text(encoding="utf-8"))
    calls = [
        node for node in ast.walk(tree)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
        and isinstance(node.func.value, ast.Name) and node.func.value.id == "subprocess"
        and node.func.attr in ("run", "Popen", "call", "check_call", "check_output")
    ]  # fmt: skip
    assert len(calls) == 3  # git, git_bytes, git_tracked
    for call in calls:
        argv = call.args[0]
        assert isinstance(argv, ast.List), ast.unparse(call)
        first = argv.elts[0]
        assert isinstance(first, ast.Call) and ast.unparse(first.func) == "git_bin", ast.unparse(
            call
        )
        env = next(k.value for k in call.keywords if k.arg == "env")
        assert "child_env" in ast.unparse(env) or ast.unparse(env) == "full", ast.unparse(call)
    assert "child_env(" in (PACKAGE / "app/sync/git.py").read_text()


def test_every_vaultmem_spawn_site_goes_through_python_argv() -> None:
    """The sites that start vaultmem itself: the merge driver git runs, the hook's detached
    child, the background sync, `retain --queued`."""
    sites = {
        "app/sync/worktree.py": "shell_command(",
        "app/hooks/background.py": "python_argv(",
        "app/hooks/ending.py": "python_argv(",
    }
    for rel, call in sites.items():
        text = (PACKAGE / rel).read_text(encoding="utf-8")
        assert call in text, rel
        assert '"-m", "vaultmem' not in text, rel  # no argv of its own


def test_python_argv_is_this_python_isolated_and_never_m() -> None:
    argv = spawn.python_argv("vaultmem", "sync", "--vault", "/v")
    assert argv[0] == os.path.abspath(sys.executable) and Path(argv[0]).is_absolute()
    from vaultmem.core import environment

    other = "/opt/vaultmem/bin/python"  # vaultmem loaded into another program's Python
    environment.use_python(other)
    try:
        assert spawn.python_argv("vaultmem", "sync")[:2] == [other, "-I"]
    finally:
        environment._PYTHON.clear()
    assert argv[1:3] == ["-I", "-c"] and "-m" not in argv
    assert argv[4:] == ["vaultmem", "sync", "--vault", "/v"]
    cmd = spawn.shell_command("vaultmem", "merge-file")
    assert shlex.split(cmd) == spawn.python_argv("vaultmem", "merge-file")


def test_paths_isolation_drops_come_back_absolute_and_never_from_the_vault(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    vault, extra = tmp_path / "vault", tmp_path / "lib"
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(extra), str(vault), "relative"]))
    monkeypatch.syspath_prepend(str(vault))
    monkeypatch.syspath_prepend(str(extra))
    monkeypatch.syspath_prepend("relative")
    found = spawn.extra_paths(str(vault))
    assert str(extra) in found and str(vault) not in found and "relative" not in found


def test_clean_path_keeps_absolute_entries_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert spawn.clean_path(
        os.pathsep.join(["", ".", "bin", "/usr/bin", "/bin"])
    ) == os.pathsep.join(["/usr/bin", "/bin"])
    tool = tmp_path / "git"
    tool.write_text("#!/bin/sh\n")
    tool.chmod(0o755)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PATH", os.pathsep.join([".", "", os.environ.get("PATH", "")]))
    assert spawn.which("git") != str(tool) and spawn.which("./git") is None
    assert spawn.child_env()["PATH"].split(os.pathsep)[0] not in (".", "")
    from vaultmem.app.sync.git import git_bin

    assert Path(git_bin()).is_absolute() and Path(git_bin()) != tool


def _hostile(folder: Path, marker: Path) -> None:
    """A folder laid out like a vault a remote wrote: each file writes the marker on import."""
    code = f"import pathlib; pathlib.Path({str(marker)!r}).write_text(__name__)\n"
    for rel in ("vaultmem/__init__.py", "vaultmem/__main__.py", "sitecustomize.py",
                "usercustomize.py", "json/__init__.py", "runpy.py", "timeit.py"):  # fmt: skip
        path = folder / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(code)
    (folder / "evil.pth").write_text(f"import pathlib; pathlib.Path({str(marker)!r}).touch()\n")


_REPORT = (
    "import os,sys,json; open({out!r},'w').write(json.dumps("
    "{{'cwd': os.getcwd(), 'path': sys.path, 'isolated': sys.flags.isolated}}))"
)


def test_a_child_started_in_a_hostile_vault_imports_nothing_from_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    vault, marker, out = tmp_path / "vault", tmp_path / "PWNED", tmp_path / "report.json"
    _hostile(vault, marker)
    monkeypatch.chdir(vault)  # where git starts a merge driver, and a hook its children
    monkeypatch.setenv("PYTHONSTARTUP", str(vault / "sitecustomize.py"))
    done = subprocess.run(
        spawn.python_argv("vaultmem", "--version", vault=str(vault)), capture_output=True, text=True
    )
    assert done.returncode == 0 and done.stdout.startswith("vaultmem "), done.stderr
    assert not marker.exists()
    # the interactive console runs what it reads: it reports where it runs and its sys.path
    argv = spawn.python_argv("code", vault=str(vault))
    done = subprocess.run(
        argv, input=_REPORT.format(out=str(out)) + "\n", capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    import json

    report = json.loads(out.read_text())
    assert report["isolated"] == 1
    assert not [p for p in report["path"] if p in ("", ".") or p.startswith(str(vault))]
    assert not marker.exists()


def test_a_detached_child_starts_outside_the_vault(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    vault, marker, out = tmp_path / "vault", tmp_path / "PWNED", tmp_path / "report.json"
    _hostile(vault, marker)
    monkeypatch.chdir(vault)
    (tmp_path / "stdin").write_text(_REPORT.format(out=str(out)) + "\nprint('done')\n")
    log = os.open(tmp_path / "stdout.log", os.O_WRONLY | os.O_CREAT, 0o600)
    stdin = os.open(tmp_path / "stdin", os.O_RDONLY)
    try:
        assert spawn.detached(spawn.python_argv("code", vault=str(vault)), stdin=stdin, stdout=log)
    finally:
        os.close(log)
        os.close(stdin)
    assert Path.cwd() == vault  # this process is back where it was
    deadline = time.monotonic() + 60
    while not out.exists() or not out.read_text().endswith("}"):
        assert time.monotonic() < deadline, "the detached child never ran"
        time.sleep(0.05)
    import json

    report = json.loads(out.read_text())
    assert report["cwd"] == spawn.WORKDIR and report["isolated"] == 1
    assert not marker.exists()
    deadline = time.monotonic() + 30
    while "done" not in (tmp_path / "stdout.log").read_text():  # stdout went where it was told
        assert time.monotonic() < deadline
        time.sleep(0.05)


def test_run_program_finds_the_editor_by_absolute_path_and_starts_it_where_told(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    vault, out = tmp_path / "vault", tmp_path / "where"
    vault.mkdir()
    planted = vault / "vi"
    planted.write_text(f"#!/bin/sh\ntouch {tmp_path / 'PWNED'}\n")
    planted.chmod(0o755)
    monkeypatch.chdir(vault)
    monkeypatch.setenv("PATH", os.pathsep.join([".", os.environ.get("PATH", "")]))
    with pytest.raises(FileNotFoundError):
        spawn.run_program(["./vi"], cwd=str(tmp_path))  # relative: never looked up here
    assert spawn.run_program(["sh", "-c", f"pwd > {out}"], cwd=str(tmp_path)) == 0
    assert out.read_text().strip() == str(tmp_path)
    assert not (tmp_path / "PWNED").exists()
