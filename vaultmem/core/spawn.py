"""The one way vaultmem starts a process: nothing it starts resolves code from a vault.

A vault is a stranger's folder (a remote writes it through `sync`, an agent writes it directly),
and vaultmem's processes often start in it: git runs the merge drivers in the vault's root, and
a hook's detached children keep the hook's working folder, which is the project, often the
vault itself. `python -m vaultmem` there would put that folder first on `sys.path` and import
a `vaultmem/` package, a `sitecustomize.py` or any module the vault holds (issue 35). So every
vaultmem process started here is:

- this Python by its absolute path (`sys.executable`, or the one `core.environment.python()` names
  when vaultmem runs inside another program's interpreter), never `python3` found on PATH;
- in isolated mode (`-I`: neither the working folder nor the script's folder on `sys.path`,
  no `PYTHON*` variable, no user site-packages), given by `-c` the folders this process
  imports from that `-I` would drop (PYTHONPATH entries, the user site, an uninstalled
  checkout), as absolute paths, none inside the vault — an install in a venv (editable or
  not) needs none: its site-packages, `.pth` files included, are read in isolated mode too;
- started in the root folder (`WORKDIR`), outside every vault, unless its caller needs the
  folder it is in (a merge driver's file names are relative to the vault, where git runs it);
- given a PATH without relative entries (`.` or an empty entry would find programs in the
  working folder).

Programs that are not vaultmem (git, a person's `$EDITOR`) are found on that PATH by absolute
path. `tests/test_spawn.py` fails when a module other than this one and `app/sync/git.py` (git
itself, which must run in the vault) starts a process.
"""

# os.path, not pathlib: the hooks import this before vaultmem loads (see app/hooks/quick.py)
# ruff: noqa: PTH100, PTH113, PTH117, PTH118, PTH120

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence

WORKDIR = os.path.abspath(os.sep)  # where a child starts: no vault is `/`, nothing there runs

# run MODULE (argv[1]) as `-m` would, after `sys.path` gets the folders this process adds
_BOOT = (
    'import sys,runpy;{extra}runpy.run_module(sys.argv.pop(1),run_name="__main__",alter_sys=True)'
)


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def extra_paths(vault: str | None = None) -> list[str]:
    """The folders on this process's `sys.path` that isolated mode would drop: PYTHONPATH's
    entries, the user site-packages and the checkout vaultmem was imported from when only the
    script's folder found it. Absolute, in `sys.path`'s order, none inside `vault`."""
    wanted: set[str] = set()
    from vaultmem.core.environment import env

    for entry in (env("PYTHONPATH") or "").split(os.pathsep):
        if entry and os.path.isabs(entry):
            wanted.add(os.path.normpath(entry))
    site = sys.modules.get("site")
    if site is not None:
        wanted.add(os.path.normpath(site.getusersitepackages()))
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    home = os.path.dirname(here)  # the folder that holds the vaultmem package
    if not sys.flags.safe_path and sys.path and sys.path[0] == home and home not in sys.path[1:]:
        wanted.add(home)  # `python -m vaultmem` in an uninstalled checkout
    out: list[str] = []
    for entry in sys.path:
        if not entry or not os.path.isabs(entry):
            continue
        norm = os.path.normpath(entry)
        if norm in wanted and norm not in out and not (vault and _inside(norm, vault)):
            out.append(norm)
    return out


def interpreter() -> str:
    """The Python that runs vaultmem's own processes: `core.environment.python()` (this one,
    unless another program's interpreter loaded vaultmem and named vaultmem's own)."""
    from vaultmem.core.environment import python

    return python()


def python_argv(module: str, *args: str, vault: str | None = None) -> list[str]:
    """`python -m MODULE ARGS` as vaultmem starts it: this Python by absolute path, isolated,
    `sys.path` given the folders `extra_paths` names (JSON is a Python literal for strings)."""
    python = interpreter()
    # another program's Python (Hermes Agent's) names vaultmem's own: that one finds its own
    # vaultmem, and this process's folders are not its folders
    extra = extra_paths(vault) if python == sys.executable else []
    if extra:
        import json

        boot = _BOOT.format(extra=f"sys.path[:0]={json.dumps(extra)};")
    else:
        boot = _BOOT.format(extra="")
    return [os.path.abspath(python), "-I", "-c", boot, module, *args]


def shell_command(module: str, *args: str, vault: str | None = None) -> str:
    """`python_argv` as one shell command line (git's merge drivers are run by `sh -c`)."""
    import shlex

    return shlex.join(python_argv(module, *args, vault=vault))


def clean_path(value: str | None) -> str:
    """PATH with only absolute entries: `.` or an empty entry finds programs where one runs."""
    return os.pathsep.join(p for p in (value or "").split(os.pathsep) if p and os.path.isabs(p))


def child_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """This process's environment for a child, PATH cleaned (`clean_path`), `extra` on top."""
    out = dict(os.environ)  # passed on whole, unread (as subprocess does), but for PATH
    out["PATH"] = clean_path(out.get("PATH"))
    out.update(extra or {})
    return out


def which(name: str) -> str | None:
    """`name` on the cleaned PATH, an absolute path (shutil.which without importing shutil)."""
    if os.path.isabs(name):
        return name if os.path.isfile(name) and os.access(name, os.X_OK) else None
    if os.sep in name or "/" in name:
        return None  # relative to wherever this runs: never
    from vaultmem.core.environment import env

    for folder in clean_path(env("PATH")).split(os.pathsep):
        candidate = os.path.join(folder, name)
        if folder and os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    return None


def detached(
    argv: Sequence[str],
    *,
    stdin: int | None = None,
    stdout: int | None = None,
    stderr: int | None = None,
) -> bool:
    """Start `argv` (from `python_argv`) in a new session in `WORKDIR` with `stdin`, `stdout`
    and `stderr` (fds; None: /dev/null), and never wait for it; False when it could not
    start. `os.posix_spawn` where there is one: importing `subprocess` alone costs about
    half a Python start-up, on a hook the turn waits for (it has no working folder of its
    own: this process moves to `WORKDIR` for the spawn and back)."""
    argv = list(argv)
    if hasattr(os, "posix_spawn"):
        null = os.open(os.devnull, os.O_RDWR)
        try:
            here = os.open(".", os.O_RDONLY)
        except OSError:
            here = None
        try:
            actions = [
                (os.POSIX_SPAWN_DUP2, null if stdin is None else stdin, 0),
                (os.POSIX_SPAWN_DUP2, null if stdout is None else stdout, 1),
                (os.POSIX_SPAWN_DUP2, null if stderr is None else stderr, 2),
            ]
            if here is not None:  # no way back (an unreadable folder): start where we are
                os.chdir(WORKDIR)
            os.posix_spawn(argv[0], argv, child_env(), file_actions=actions, setsid=True)
        except OSError:
            return False
        finally:
            if here is not None:
                try:
                    os.fchdir(here)
                finally:
                    os.close(here)
            os.close(null)
        return True
    import subprocess

    try:
        subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL if stdin is None else stdin,
            stdout=subprocess.DEVNULL if stdout is None else stdout,
            stderr=subprocess.DEVNULL if stderr is None else stderr,
            cwd=WORKDIR,
            env=child_env(),
            start_new_session=True,  # outlives the hook and the runtime's timeout, no signals
            close_fds=True,
        )
    except OSError:
        return False
    return True


def ask_python(python: str, code: str, *, timeout: float = 60) -> str:
    """Run another program's Python (Hermes Agent's, to ask it its version) on `code`, isolated
    (`-I`: no working folder, no PYTHON* variables, no user site on its path) and in `/`, so
    nothing from a vault or a project is imported; its stdout. OSError when it cannot be
    asked (not there, or no answer within `timeout`)."""
    import subprocess

    try:
        done = subprocess.run(
            [python, "-I", "-c", code], capture_output=True, text=True, timeout=timeout,
            stdin=subprocess.DEVNULL, cwd="/", env=child_env(), check=False,
        )  # fmt: skip
    except subprocess.SubprocessError as exc:
        raise OSError(f"{python} did not answer: {exc}") from exc
    return done.stdout


def run_program(argv: Sequence[str], *, cwd: str) -> int:
    """Run a program that is not vaultmem (a person's `$EDITOR`) in `cwd` and wait for it; its
    exit code. The program is found on the cleaned PATH (OSError when it is not there)."""
    import subprocess

    found = which(argv[0])
    if found is None:
        raise FileNotFoundError(f"{argv[0]} is not on PATH (its relative entries are not searched)")
    return subprocess.run([found, *argv[1:]], cwd=cwd, env=child_env(), check=False).returncode
