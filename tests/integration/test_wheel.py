"""The package people install: the wheel built from this tree, installed into a clean virtual
environment (no editable install, no repository on sys.path), runs the commands a new user
runs first: `read` on a copy of example-vault/, then `init`, `append`, `recall` and
`setup --dry-run` on a vault of their own. The files `init` writes and the plugin files `setup` installs travel in the
wheel, not beside it."""

from __future__ import annotations

import os
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import pytest

from tests._cli import REPO, copy_example

# pip's download cache, read before the suite moves HOME: a clean venv, not a clean network
PIP_CACHE = os.environ.get("PIP_CACHE_DIR") or str(Path.home() / ".cache" / "pip")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "-w", str(out), str(REPO)],
        check=True,
        env={**os.environ, "PIP_CACHE_DIR": PIP_CACHE},
        cwd=out,
    )
    (found,) = out.glob("vaultmem-*.whl")
    return found


def test_the_wheel_carries_the_package_data_and_the_license(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    assert any(n.startswith("vaultmem/_templates/") for n in names)
    assert "vaultmem/py.typed" in names
    assert any(n.endswith(".dist-info/licenses/LICENSE") or n.endswith("/LICENSE") for n in names)
    meta = next(n for n in names if n.endswith(".dist-info/METADATA"))
    text = zipfile.ZipFile(wheel).read(meta).decode()
    assert "Requires-Python: >=3.11" in text
    assert "Programming Language :: Python :: 3.13" in text
    assert "Project-URL: Homepage" in text
    assert not any(n.startswith("tests/") for n in names)


def test_a_clean_venv_with_the_wheel_runs_the_first_commands(wheel: Path, tmp_path: Path) -> None:
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True, clear=True).create(env_dir)
    py = env_dir / "bin" / "python"
    subprocess.run(
        [str(py), "-m", "pip", "install", "--quiet", str(wheel)],
        check=True,
        env={**os.environ, "PIP_CACHE_DIR": PIP_CACHE, "PIP_DISABLE_PIP_VERSION_CHECK": "1"},
    )
    vault = copy_example(tmp_path / "vault")
    project = tmp_path / "project"
    project.mkdir()
    exe = env_dir / "bin" / "vaultmem"
    outside = tmp_path / "elsewhere"  # never the repository: nothing imported from the tree
    outside.mkdir()

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(exe), *args], capture_output=True, text=True, cwd=outside, env=dict(os.environ)
        )

    where = subprocess.run(
        [str(py), "-c", "import vaultmem, sys; print(vaultmem.__file__)"],
        capture_output=True, text=True, cwd=outside, check=True,
    )  # fmt: skip
    assert str(env_dir) in where.stdout and str(REPO) not in where.stdout
    read = run("read", "--vault", str(vault), "--agent", "ella")
    assert read.returncode == 0, read.stderr
    assert "# Session context for ella" in read.stdout
    mine = tmp_path / "notes"  # a vault of one's own: init makes ella's key on this machine
    made = run("init", str(mine), "--agent", "ella", "--reviewer", "chiara")
    assert made.returncode == 0, made.stderr
    add = run("append", "Wheel install works end to end", "--vault", str(mine), "--agent", "ella")
    assert add.returncode == 0, add.stderr
    found = run("recall", "wheel install", "--vault", str(mine), "--agent", "ella", "--json")
    assert found.returncode == 0, found.stderr
    assert "Wheel install works end to end" in found.stdout
    plan = run(
        "setup", "claude-code", "--vault", str(mine), "--agent", "ella",
        "--project", str(project), "--dry-run",
    )  # fmt: skip
    assert plan.returncode == 0, plan.stderr
    assert not (project / ".claude").exists()  # a dry run writes nothing
