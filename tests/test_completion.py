"""Shell completion: typer's --show-completion / --install-completion, answered by the lazy
root group the way click's protocol asks (`_VAULTMEM_COMPLETE`, COMP_WORDS, COMP_CWORD)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests._cli import run_proc

# typer's own switch for naming the shell instead of detecting it from the parent processes
EXPLICIT = {"_TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION": "1"}


def complete(words: str, instruction: str = "bash_complete") -> list[str]:
    parts = words.split(" ")
    proc = run_proc(
        env={
            "_VAULTMEM_COMPLETE": instruction,
            "COMP_WORDS": words,
            "COMP_CWORD": str(len(parts) - 1),
        }
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.split()


@pytest.mark.parametrize("instruction", ["bash_complete", "complete_bash"])
def test_completing_re_offers_the_commands_that_start_so(instruction: str) -> None:
    """click 8 says `bash_complete`, typer's script sends `complete_bash`: both are answered."""
    offered = complete("vaultmem re", instruction)
    assert offered[:2] == ["read", "recall"]
    assert set(offered) == {
        "read",
        "recall",
        "remember",
        "retract",
        "retain",
        "resolve",
        "receipts",
        "repair",
    }


def test_completion_leaves_plumbing_out_and_knows_options_and_choices() -> None:
    assert complete("vaultmem ho") == [] and complete("vaultmem merge") == []
    assert complete("vaultmem recall x --li") == ["--limit"]
    assert complete("vaultmem append x --type ha") == ["handoff"]
    assert "rotate" in complete("vaultmem log ro")


def test_the_bash_script_completes_in_a_real_bash(tmp_path: Path) -> None:
    bash = shutil.which("bash")
    if bash is None:
        pytest.skip("no bash on this machine")
    script = run_proc("--show-completion", "bash", env=EXPLICIT)
    assert script.returncode == 0, script.stderr
    assert "complete -o default -F _vaultmem_completion vaultmem" in script.stdout
    (tmp_path / "vaultmem.sh").write_text(script.stdout, encoding="utf-8")
    probe = (
        f"source {tmp_path / 'vaultmem.sh'}\n"
        "COMP_WORDS=(vaultmem re); COMP_CWORD=1\n"
        "_vaultmem_completion vaultmem\n"
        'printf "%s\\n" "${COMPREPLY[@]}"\n'
    )
    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}"  # the venv's vaultmem
    proc = subprocess.run(
        [bash, "--norc", "-c", probe], capture_output=True, text=True, env=env, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split()[:2] == ["read", "recall"]


def test_the_zsh_and_fish_scripts_are_printed() -> None:
    zsh = run_proc("--show-completion", "zsh", env=EXPLICIT)
    assert zsh.returncode == 0 and "compdef _vaultmem_completion vaultmem" in zsh.stdout
    fish = run_proc("--show-completion", "fish", env=EXPLICIT)
    assert fish.returncode == 0 and "complete --command vaultmem" in fish.stdout


def test_install_completion_writes_under_home_only(isolated_env: Path) -> None:
    proc = run_proc("--install-completion", "bash", env=EXPLICIT)
    assert proc.returncode == 0, proc.stderr
    installed = isolated_env / ".bash_completions" / "vaultmem.sh"
    assert "_VAULTMEM_COMPLETE=complete_bash" in installed.read_text(encoding="utf-8")
    assert "vaultmem.sh" in (isolated_env / ".bashrc").read_text(encoding="utf-8")
