"""The help explains the CLI: grouped panels, plumbing out of the list, paragraphs that flow,
every bracket of the source help still there, metavars people can read."""

from __future__ import annotations

import importlib
import re
from typing import Any

import pytest
import typer.main

from tests._cli import run_cli
from vaultmem.cli import base, lazy
from vaultmem.cli.typer_internals import (
    TyperGroup,
    click,
    get_command_from_info,
    get_group_from_info,
)

BRACKET = re.compile(r"\[[^\[\]]+\]")


def _flat(text: str) -> str:
    return " ".join(text.split())


def _source_commands() -> dict[str, Any]:
    """path -> click command as typer builds it from the registrations, before cli/helptext."""
    for module in set(lazy.COMMANDS.values()):
        importlib.import_module(f"vaultmem.cli.{module}")
    out: dict[str, Any] = {}

    def add(path: str, cmd: Any) -> None:
        out[path] = cmd
        for name, sub in getattr(cmd, "commands", {}).items():
            add(f"{path} {name}", sub)

    settings: dict[str, Any] = {"pretty_exceptions_short": True, "rich_markup_mode": "rich"}
    for info in base.commands.registered_commands:
        add(lazy._name(info), get_command_from_info(info, **settings))
    for group in base.commands.registered_groups:
        add(str(group.name), get_group_from_info(group, suggest_commands=True, **settings))
    return out


def _source_texts(cmd: Any) -> list[str]:
    texts = [cmd.help or "", cmd.epilog or ""]
    texts += [getattr(p, "help", None) or "" for p in cmd.params]
    return texts


@pytest.fixture(scope="module")
def helps() -> dict[str, str]:
    """Every command's and subcommand's --help (and the root's), on a wide terminal."""
    mp = pytest.MonkeyPatch()
    mp.setenv("COLUMNS", "1000")
    try:
        out = {"": run_cli("--help").stdout}
        for path in _source_commands():
            res = run_cli(*path.split(), "--help")
            assert res.exit_code == 0, (path, res.stderr)
            out[path] = res.stdout
    finally:
        mp.undo()
    return out


def test_every_bracketed_text_of_the_source_help_is_shown(helps: dict[str, str]) -> None:
    """Rich markup would swallow `[env VAULTMEM_VAULT]` or `[working] ttl` as unknown tags."""
    sources = {path: _source_texts(cmd) for path, cmd in _source_commands().items()}
    epilog = base.app.info.epilog
    sources[""] = [base._root.__doc__ or "", epilog if isinstance(epilog, str) else ""]
    lost = []
    checked = 0
    for path, texts in sources.items():
        shown = _flat(helps[path])
        for text in texts:
            for bracket in BRACKET.findall(_flat(text)):
                checked += 1
                if bracket not in shown:
                    lost.append(f"{path or 'vaultmem'}: {bracket}")
    assert checked > 10  # the test looks at something
    assert not lost


def test_the_root_help_groups_every_command_in_one_panel(helps: dict[str, str]) -> None:
    placed = [name for names in lazy.PANELS.values() for name in names]
    assert len(placed) == len(set(placed))
    assert set(placed) | set(lazy.PLUMBING) == set(lazy.COMMANDS)
    assert not set(placed) & set(lazy.PLUMBING)
    root = helps[""]
    for panel, names in lazy.PANELS.items():
        assert f"╭─ {panel} " in root, panel
        block = root.split(f"╭─ {panel} ", 1)[1].split("╰", 1)[0]
        listed = [line.split()[1] for line in block.splitlines()[1:] if line.strip("│ ")]
        assert listed == list(names), panel
    assert "╭─ Commands " not in root


@pytest.mark.parametrize("name", lazy.PLUMBING)
def test_plumbing_is_out_of_the_list_but_runs_and_has_help(
    name: str, helps: dict[str, str]
) -> None:
    root = helps[""]
    assert not re.search(rf"│ {re.escape(name)}\s", root)
    assert f"vaultmem {name}" in _flat(root)  # the main help says where it is
    assert f"Usage: vaultmem {name}" in helps[name]
    built = lazy.build(name, base.app)
    assert built is not None and built.hidden


def test_docstring_paragraphs_flow(helps: dict[str, str]) -> None:
    """Line breaks of the docstring's source lines do not reach the rendering."""
    for path, phrase in [
        ("repair", "put back edited entries"),
        ("inbox", "have not acked and nobody resolved"),
        ("resolve", "with a signed `resolve` entry"),
        ("receipts", "that showed it entries or facts"),
        ("recall", "With --agent, hits come from shared notes"),
    ]:
        lines = [line for line in helps[path].splitlines() if phrase in line]
        assert lines, (path, phrase)
    root = helps[""]
    assert re.search(r"│ repair +Restore log entries .* Exit 5 if problems remain\. +│", root)


def test_metavars_are_readable(helps: dict[str, str]) -> None:
    for path, text in helps.items():
        assert not re.search(r"<(bool|str|int|float|path|list\[\w+\])>", text), path
        usage = next(line for line in text.splitlines() if "Usage:" in line)
        assert "{" not in usage, (path, usage)
    recall = helps["recall"]
    assert "Usage: vaultmem recall [OPTIONS] QUERY" in recall
    assert re.search(r"--limit +-n +N ", recall)
    assert re.search(r"--explain +Show what", recall)  # a flag: no metavar
    assert re.search(r"--vault +PATH ", recall)
    assert re.search(r"--since +WHEN ", recall)
    append = helps["append"]
    assert re.search(r"--ack +ID ", append) and re.search(r"--to +AGENT ", append)
    # a long choice list is said in the help, not folded mid-word in the type column
    assert re.search(r"--type +-t +TYPE +What the entry is\. One of: note, handoff, fix,", append)
    assert re.search(r"--period +week\|month ", helps["digest"])


def test_an_error_names_the_argument_as_the_help_does(cli: Any) -> None:
    res = cli("recall")
    assert res.exit_code == 2 and "Missing argument 'QUERY'" in res.stderr


def test_every_group_and_command_is_polished_once_built() -> None:
    root = typer.main.get_command(base.app)
    for path, cmd in lazy.walk(root):
        helper = cmd.get_help_option(click.Context(cmd))
        assert helper is not None and helper.metavar == "", path
        if isinstance(cmd, TyperGroup):
            continue
        assert all(p.metavar is not None for p in cmd.params), path


@pytest.mark.parametrize(
    "text",
    [
        "Vault folder [env VAULTMEM_VAULT; default: walk up to vaultmem.toml].",
        "or never [default: [working] ttl, 24h]",
        "Usage: vaultmem [OPTIONS] COMMAND",  # rich leaves capitals alone: an escape would show
        "a backslash \\[kept] and [#tag] and [/close] and [@call]",
        "ends with a backslash \\",
    ],
)
def test_escaped_help_renders_as_written(text: str) -> None:
    from rich.text import Text

    from vaultmem.cli.helptext import escape

    assert Text.from_markup(escape(text)).plain == text
