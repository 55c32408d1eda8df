"""The commands vaultmem tells a model to run, written so they work as given.

A hint in a pack or a hook's context (`ack it: vaultmem append ...`, `list them: vaultmem log
...`) is run by the model from the project folder, in the shell the runtime gives its tool
calls, which need not have the hook's PATH: Codex's shell tool starts a login shell (`bash
-lc`), whose profile sets PATH afresh (issue 37). A bare `vaultmem` fails there (exit 127) even
when the hook found it on PATH, and a command without `--vault` fails (exit 3) when the vault
lives elsewhere, as the README recommends. So a hint always names this install by absolute
path, shell-quoted, and carries `--vault` / `--agent` unless the environment already gives
them (`vaultmem setup` writes VAULTMEM_VAULT and VAULTMEM_AGENT where the runtime passes them
to every tool call).
"""

from __future__ import annotations

import shlex
from functools import lru_cache
from pathlib import Path

from vaultmem.core.environment import ENV_AGENT, ENV_VAULT, env
from vaultmem.core.records import record


@record
class Invocation:
    exe: str  # this install's absolute path (or `PYTHON -m vaultmem`), shell-quoted
    where: str  # ` --vault V --agent A`, as far as the environment does not give them

    def command(self, rest: str) -> str:
        """`EXE REST WHERE`: one runnable command line."""
        return f"{self.exe} {rest}{self.where}"


def executable() -> list[str]:
    """This install's vaultmem: the console script next to this Python (a venv), or
    `python -P -m vaultmem` with this Python's absolute path: a model, a hook or a person runs
    it in the project, which may be the vault, and `-P` keeps that folder off `sys.path` (a
    `vaultmem/` package there would run instead; issue 35, `core/spawn`)."""
    from vaultmem.core.environment import python

    here = Path(python())
    for name in ("vaultmem", "vaultmem.exe"):
        script = here.parent / name
        if script.is_file():
            return [str(script)]
    return [str(here), "-P", "-m", "vaultmem"]


@lru_cache(maxsize=1)
def _exe() -> str:
    return shlex.join(executable())


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
