"""The commands vaultmem tells a model to run, written so they work as given.

A hint in a pack or a hook's context (`ack it: vaultmem append ...`, `list them: vaultmem log
...`) is run by the model from the project folder, in the environment the runtime gives its
tool calls. A bare `vaultmem` fails there (exit 127) when this install's folder is not on
PATH, and a command without `--vault` fails (exit 3) when the vault lives elsewhere, as the
README recommends. So a hint names vaultmem the way PATH finds this install (else by absolute
path) and carries `--vault` / `--agent` unless the environment already gives them
(`vaultmem setup` writes VAULTMEM_VAULT and VAULTMEM_AGENT where the runtime passes them to
every tool call).
"""

from __future__ import annotations

import os
import shlex
from functools import lru_cache
from pathlib import Path

from vaultmem.core.config import ENV_AGENT, ENV_VAULT, env
from vaultmem.core.records import record


@record
class Invocation:
    exe: str  # `vaultmem`, or this install's absolute path
    where: str  # ` --vault V --agent A`, as far as the environment does not give them

    def command(self, rest: str) -> str:
        """`EXE REST WHERE`: one runnable command line."""
        return f"{self.exe} {rest}{self.where}"


def executable() -> list[str]:
    """This install's vaultmem: the console script next to this Python (a venv), or
    `python -m vaultmem` with this Python's absolute path."""
    from vaultmem.core.config import python

    here = Path(python())
    for name in ("vaultmem", "vaultmem.exe"):
        script = here.parent / name
        if script.is_file():
            return [str(script)]
    return [str(here), "-m", "vaultmem"]


def _on_path(name: str) -> str | None:
    """What PATH finds for `name` (shutil.which without importing shutil, which loads zlib
    and more on a hook's start-up)."""
    for folder in (env("PATH") or "").split(os.pathsep):
        candidate = os.path.join(folder or ".", name)  # noqa: PTH118
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):  # noqa: PTH113
            return candidate
    return None


@lru_cache(maxsize=1)
def _exe() -> str:
    argv = executable()
    found = _on_path("vaultmem")
    if found and len(argv) == 1 and Path(found).resolve() == Path(argv[0]).resolve():
        return "vaultmem"
    return shlex.join(argv)


def _same(a: str | None, b: Path) -> bool:
    if not a:
        return False
    try:
        return Path(a).expanduser().resolve() == b.resolve()
    except OSError:
        return False


def invocation(vault_root: Path, agent: str | None) -> Invocation:
    where = ""
    if not _same(env(ENV_VAULT), vault_root):
        where += f" --vault {shlex.quote(str(vault_root))}"
    if agent and env(ENV_AGENT) != agent:
        where += f" --agent {agent}"
    return Invocation(_exe(), where)
