"""The CLI contract: exit codes, --json shapes, stdout for data and stderr for diagnostics."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import typer.main

from tests._cli import run_cli, run_proc
from tests._readonly import read_only
from vaultmem.core.errors import (
    EXIT_INTEGRITY,
    EXIT_NOT_FOUND,
    EXIT_USAGE,
    EXIT_VAULT,
)


def snapshot(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in root.rglob("*")
        if p.is_file() and ".vaultmem" not in p.parts
    }


def test_read_text_and_json(vault: Path) -> None:
    res = run_cli("read", "--vault", str(vault), "--agent", "ella")
    assert res.exit_code == 0, res.stderr
    assert res.stdout.startswith("# Session context for ella")
    assert "Ella is the backend engineer" in res.stdout
    assert "[[memory/project-orbit|Project Orbit]]" in res.stdout
    res = run_cli("read", "--vault", str(vault), "--agent", "ella", "--json")
    data = json.loads(res.stdout)
    assert data["agent"] == "ella"
    assert data["sections"]["identity"]["data"]["role"] == "backend engineer"
    assert any("project-orbit" in line for line in data["sections"]["memory"]["data"]["entries"])
    assert any(
        "test-suite-rules" in line for line in data["sections"]["agent_memory"]["data"]["entries"]
    )


def test_env_vars_select_vault_and_agent(vault: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VAULTMEM_VAULT", str(vault))
    monkeypatch.setenv("VAULTMEM_AGENT", "lyra")
    res = run_cli("read", "--json")
    assert res.exit_code == 0 and json.loads(res.stdout)["agent"] == "lyra"


def test_vault_found_from_cwd(vault: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(vault / "wiki")
    assert run_cli("status", "--json").exit_code == 0


def test_unknown_agent_exit_4_lists_known(vault: Path) -> None:
    res = run_cli("read", "--vault", str(vault), "--agent", "bob")
    assert res.exit_code == EXIT_NOT_FOUND
    assert res.stdout == ""
    assert "unknown agent 'bob'" in res.stderr and "ella, lyra" in res.stderr


def test_json_error_shape(vault: Path) -> None:
    res = run_cli("read", "--vault", str(vault), "--agent", "bob", "--json")
    assert res.exit_code == EXIT_NOT_FOUND
    err = json.loads(res.stdout)["error"]
    assert err["type"] == "UnknownAgentError" and "bob" in err["message"]


def test_unknown_vault_exit_3(tmp_path: Path) -> None:
    res = run_cli("status", "--vault", str(tmp_path / "nowhere"))
    assert res.exit_code == EXIT_VAULT
    assert "no vault at" in res.stderr and "vaultmem init" in res.stderr


def test_no_vault_anywhere_exit_3(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    res = run_cli("read", "--agent", "ella")
    assert res.exit_code == EXIT_VAULT and "no vault found" in res.stderr


def test_broken_config_exit_3(vault: Path) -> None:
    (vault / "vaultmem.toml").write_text("agents = [\n")
    res = run_cli("status", "--vault", str(vault))
    assert res.exit_code == EXIT_VAULT and "vaultmem.toml" in res.stderr


def test_invalid_agent_name_exit_2(tmp_path: Path) -> None:
    res = run_cli("init", str(tmp_path / "v"), "--agent", "Bad Name")
    assert res.exit_code == EXIT_USAGE and "invalid agent name 'Bad Name'" in res.stderr
    assert not (tmp_path / "v").exists() or not any((tmp_path / "v").iterdir())


def test_usage_error_exit_2_and_json(vault: Path) -> None:
    res = run_cli("remember", "text", "--vault", str(vault))
    assert res.exit_code == EXIT_USAGE
    res = run_cli("remember", "text", "--vault", str(vault), "--json")
    assert res.exit_code == EXIT_USAGE and json.loads(res.stdout)["error"]["type"] == "UsageError"


@pytest.mark.parametrize("name", ["../../etc/passwd", "a/b", "x\x00y", "n" * 300])
def test_bad_fact_name_changes_nothing(vault: Path, name: str) -> None:
    before = snapshot(vault)
    res = run_cli("remember", "t", "--name", name, "--type", "fact", "--vault", str(vault))
    assert res.exit_code == EXIT_USAGE
    assert "fact name" in res.stderr and res.stdout == ""
    assert snapshot(vault) == before


def test_remember_memories_retract_forget_roundtrip(vault: Path) -> None:
    v = ["--vault", str(vault)]
    res = run_cli(
        "remember",
        "-",
        "--name",
        "From stdin",
        "--type",
        "fact",
        *v,
        "--json",
        stdin="Piped fact.\n",
    )
    assert res.exit_code == 0, res.stderr
    fact = json.loads(res.stdout)
    assert fact["text"] == "Piped fact." and fact["path"] == "memory/from-stdin.md"
    listed = json.loads(run_cli("memories", *v, "--json", "--type", "fact").stdout)["facts"]
    assert fact["id"] in {f["id"] for f in listed}
    assert run_cli("memories", *v).exit_code == 0
    res = run_cli("retract", fact["id"], "--why", "no longer true", *v, "--json")
    assert res.exit_code == 0 and json.loads(res.stdout)["status"] == "retracted"
    active = json.loads(run_cli("memories", *v, "--json").stdout)["facts"]
    assert fact["id"] not in {f["id"] for f in active}
    res = run_cli("forget", fact["id"], *v)
    assert res.exit_code == 0 and "forgot" in res.stdout
    res = run_cli("forget", fact["id"], *v)
    assert res.exit_code == EXIT_NOT_FOUND and "no fact" in res.stderr


def test_broken_yaml_fact_exit_5_names_file(vault: Path) -> None:
    path = vault / "memory/project-orbit.md"
    path.write_text("---\nname: [oops\n---\nx\n")
    before = snapshot(vault)
    res = run_cli("retract", "project-orbit", "--why", "x", "--vault", str(vault))
    assert res.exit_code == EXIT_INTEGRITY
    assert "memory/project-orbit.md" in res.stderr and "broken YAML" in res.stderr
    assert snapshot(vault) == before
    status = json.loads(run_cli("status", "--vault", str(vault), "--json").stdout)
    assert {"path": "memory/project-orbit.md", "kind": "broken-frontmatter"}.items() <= status[
        "problems"
    ][0].items()


def test_mangled_memory_index_exit_5(vault: Path) -> None:
    (vault / "memory/MEMORY.md").write_bytes(b"# Memory\n- [[memory/x|X]] \xc3\x28 broken\n")
    before = snapshot(vault)
    res = run_cli("remember", "t", "--name", "T", "--type", "fact", "--vault", str(vault))
    assert res.exit_code == EXIT_INTEGRITY and "MEMORY.md" in res.stderr and "UTF-8" in res.stderr
    assert snapshot(vault) == before


def test_identity_not_utf8_exit_5(vault: Path) -> None:
    (vault / "agents/ella/IDENTITY.md").write_bytes(b"---\nname: ella\n---\nEll\xe0\n")
    res = run_cli("read", "--vault", str(vault), "--agent", "ella")
    assert res.exit_code == EXIT_INTEGRITY
    assert "agents/ella/IDENTITY.md" in res.stderr and "UTF-8" in res.stderr


def test_read_only_vault_exit_3(vault: Path) -> None:
    before = snapshot(vault)
    with read_only(vault):
        res = run_cli("remember", "t", "--name", "T", "--type", "fact", "--vault", str(vault))
    assert res.exit_code == EXIT_VAULT, res.stderr
    assert "read-only" in res.stderr
    assert snapshot(vault) == before


def test_debug_shows_traceback(vault: Path) -> None:
    res = run_cli("--debug", "read", "--vault", str(vault), "--agent", "bob")
    assert res.exit_code == EXIT_NOT_FOUND and "Traceback" in res.stderr
    res = run_cli("read", "--vault", str(vault), "--agent", "bob")
    assert "Traceback" not in res.stderr


def test_init_twice_reports_nothing_missing(tmp_path: Path) -> None:
    target = str(tmp_path / "v")
    assert run_cli("init", target, "--agent", "ella").exit_code == 0
    res = run_cli("init", target, "--agent", "ella", "--json")
    data = json.loads(res.stdout)
    assert data["existed"] and data["agents_added"] == []


def test_status_human_output(vault: Path) -> None:
    res = run_cli("status", "--vault", str(vault))
    assert res.exit_code == 0 and "ella" in res.stdout and "No problems found" in res.stdout


def _leaves() -> list[tuple[str, object]]:
    """Every command that runs something (groups' subcommands, not the groups)."""
    from typer.core import TyperGroup

    from vaultmem.cli.app import app
    from vaultmem.cli.lazy import walk

    root = typer.main.get_command(app)
    return [(path, cmd) for path, cmd in walk(root) if not isinstance(cmd, TyperGroup)]


def test_every_command_accepts_common_options() -> None:
    """--vault, --agent and --json after the name, on every command and subcommand."""
    missing = []
    for path, cmd in _leaves():
        opts = {o for p in getattr(cmd, "params", []) for o in getattr(p, "opts", [])}
        missing += [f"{path}: {o}" for o in ("--vault", "--agent", "--json") if o not in opts]
    assert not missing


def test_every_command_help_ends_with_example() -> None:
    lacking = [path for path, cmd in _leaves() if "vaultmem" not in (cmd.epilog or "")]  # type: ignore[attr-defined]
    assert not lacking


def test_the_lazy_table_names_every_registered_command() -> None:
    """cli/lazy.py's COMMANDS table and the commands the modules register agree."""
    import importlib

    from vaultmem.cli.base import commands
    from vaultmem.cli.lazy import COMMANDS, _name

    for module in set(COMMANDS.values()):
        importlib.import_module(f"vaultmem.cli.{module}")
    registered = {_name(i) for i in commands.registered_commands}
    registered |= {str(g.name) for g in commands.registered_groups}
    assert registered == set(COMMANDS)


def test_a_typo_gets_a_suggestion(cli: object) -> None:
    res = cli("reed")  # type: ignore[operator]
    assert res.exit_code == 2 and "Did you mean 'read'" in res.stderr


def test_python_m_vaultmem_runs(vault: Path) -> None:
    proc = run_proc("read", "--vault", str(vault), "--agent", "ella", "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["agent"] == "ella"


def test_read_imports_nothing_heavy(vault: Path) -> None:
    code = (
        "import sys\n"
        "from vaultmem.cli.app import run\n"
        "try:\n"
        f"    run(['read', '--vault', {str(vault)!r}, '--agent', 'ella'])\n"
        "except SystemExit as e:\n"
        "    assert not e.code, e.code\n"
        "heavy = ('whoosh', 'anthropic', 'mcp', 'watchdog', 'rich.markdown', 'portalocker')\n"
        "print('LOADED:' + ','.join(sorted(m for m in sys.modules if m.split('.')[0] in heavy[:4] or m in heavy)))\n"
    )
    import subprocess

    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=dict(os.environ)
    )
    assert proc.returncode == 0, proc.stderr
    loaded = proc.stdout.rsplit("LOADED:", 1)[1].strip()
    assert loaded == ""


def test_typer_is_a_release_whose_internals_vaultmem_knows() -> None:
    from vaultmem.cli import typer_internals as ti

    low, high = ti.SUPPORTED
    assert low <= ti.version() < high, "pyproject.toml's typer pin and SUPPORTED disagree"
    assert ti.get_command_from_info and ti.get_group_from_info and ti.TyperGroup


def test_a_typer_without_an_internal_fails_loudly_on_import() -> None:
    code = (
        "import typer.main\n"
        "del typer.main.get_group_from_info\n"
        "import vaultmem.cli.typer_internals\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1
    assert "IncompatibleTyper: vaultmem needs typer 0.29.x" in proc.stderr
    assert "missing typer.main.get_group_from_info" in proc.stderr


def test_a_value_that_starts_with_a_dash_gets_the_double_dash_hint(vault: Path) -> None:
    from tests._layer3_helpers import make_keys

    make_keys(vault, "ella")
    res = run_cli("append", "-x summary", "--agent", "ella", "--vault", str(vault))
    assert res.exit_code == 2 and "No such option: -x" in res.stderr
    assert (
        "hint: if '-x' starts a value, not an option, put the value last, after `--`" in res.stderr
    )
    ok = run_cli("append", "--agent", "ella", "--vault", str(vault), "--json", "--", "-x summary")
    assert ok.exit_code == 0, ok.stderr
    assert json.loads(ok.stdout)["summary"] == "-x summary"


def test_choice_errors_are_in_our_words(vault: Path) -> None:
    res = run_cli("append", "ok", "--type", "hand", "--agent", "ella", "--vault", str(vault))
    assert res.exit_code == 2 and "'hand' is not one of 'note'" in res.stderr
    assert "Value error" not in res.stderr


@pytest.mark.parametrize("flag", ["-V", "--version"])
def test_the_version(flag: str) -> None:
    res = run_cli(flag)
    assert res.exit_code == 0 and res.stdout.startswith("vaultmem ")


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["log", "--tail", "x"], "'x' is not a whole number"),
        (["recall", "x", "--limit", "1.5"], "'1.5' is not a whole number"),
        (["watch", "--debounce", "soon"], "'soon' is not a number"),
    ],
)
def test_conversion_errors_are_in_our_words(vault: Path, args: list[str], said: str) -> None:
    """typer converts values through pydantic, whose wording ("Input should be a valid
    integer, unable to parse string as an integer") is not vaultmem's."""
    res = run_cli(*args, "--vault", str(vault))
    assert res.exit_code == 2 and said in res.stderr, res.stderr
    assert "Input should be" not in res.stderr and "Value error" not in res.stderr
    as_json = run_cli(*args, "--vault", str(vault), "--json")
    assert as_json.exit_code == 2 and said in json.loads(as_json.stdout)["error"]["message"]


def test_a_mistyped_option_gets_the_help_not_the_double_dash_hint(vault: Path) -> None:
    res = run_cli("promote", "list", "--limit", "3", "--vault", str(vault))
    assert res.exit_code == 2 and "No such option: --limit" in res.stderr
    assert "hint: `vaultmem promote list --help` lists its options" in res.stderr
    assert "after `--`" not in res.stderr
