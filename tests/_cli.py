"""Helpers every test imports as `tests._cli`: the example vault, the CLI in-process through its
real error boundary, and `python -m vaultmem` as a real process."""

from __future__ import annotations

import io
import shutil
import subprocess
import sys
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass
from pathlib import Path

from tests._proc import vm

REPO = Path(__file__).resolve().parent.parent
EXAMPLE = REPO / "example-vault"


def copy_example(dest: Path) -> Path:
    shutil.copytree(EXAMPLE, dest, ignore=shutil.ignore_patterns(".vaultmem"))
    # keyword recall unless a test chooses a model (tests/_semantic.use_model): the dev extra
    # installs the semantic runtime, whose default model would make every recall hybrid
    with open(dest / "vaultmem.toml", "a", encoding="utf-8") as fh:
        fh.write('\n[recall]\nmode = "keyword"\n')
    return dest


def use_engine(vault: Path, name: str) -> Path:
    """`[recall] engine = NAME` in the vault's config (copy_example's [recall] table is last)."""
    cfg = vault / "vaultmem.toml"
    text = cfg.read_text(encoding="utf-8")
    if "\nengine = " in text:
        text = "\n".join(ln for ln in text.splitlines() if not ln.startswith("engine = ")) + "\n"
    cfg.write_text(text + f'engine = "{name}"\n', encoding="utf-8")
    return vault


@dataclass
class Result:
    exit_code: int
    stdout: str
    stderr: str


def run_cli(*args: str, stdin: str = "") -> Result:
    """Run the CLI in-process through its real error boundary (vaultmem.cli.app.run)."""
    from vaultmem.cli.app import run

    out, err = io.StringIO(), io.StringIO()
    old_stdin = sys.stdin
    sys.stdin = io.StringIO(stdin)
    code = 0
    try:
        with redirect_stdout(out), redirect_stderr(err):
            try:
                run(list(args))
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    finally:
        sys.stdin = old_stdin
    return Result(code, out.getvalue(), err.getvalue())


def run_proc(
    *args: str,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
    stdin: str | None = None,
    timeout: float = 60,
) -> subprocess.CompletedProcess[str]:
    """Run `python -m vaultmem ARGS` as a real process (`tests._proc.vm`, this environment
    plus `env`; no stdin given: end of file, never the terminal)."""
    return vm(*args, cwd=cwd, env=env, stdin=stdin or "", timeout=timeout)


def setup_codex_user(vault: Path, home: Path, project: Path, agent: str = "lyra") -> None:
    """`setup codex --scope user` for `agent` in `project`, with Codex's home at `home` (made
    here with `project`; the caller sets CODEX_HOME to it): what the runtime tests start from."""
    home.mkdir()
    project.mkdir()
    res = run_cli(
        "setup", "codex", "--agent", agent, "--vault", str(vault),
        "--project", str(project), "--scope", "user",
    )  # fmt: skip
    assert res.exit_code == 0, res.stderr
