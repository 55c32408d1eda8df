"""Every command is documented, and every command the docs show runs as written.

- Every command and subcommand of the typer app has help with an example, a section of its own
  in docs/cli.md, and each of its options in that section (the common `--vault`, `--agent`,
  `--json` are documented once, at the top).
- The README's first screen has the two commands that work on a fresh machine, and `.ci/run`
  runs its test command.
- Every shell and Python block in the README and docs/ runs, in order, in a session of its own
  file: a temp folder holding a copy of example-vault/, with HOME and VAULTMEM_HOME in the temp
  folder and the suite's clock. Each command must exit 0, or the code its comment starts with
  (`# exit 8 ...`). Placeholders (`<fact-id>`, `<bank-id>`, ...) are filled with the newest
  value of that shape an earlier command of the same file printed. A block that cannot run
  here (a network, a real runtime, a terminal, minutes of work) is preceded by
  `<!-- not-run: reason -->`; the test counts those and runs every other block.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
import typer.main

from tests._cli import REPO, copy_example, run_cli
from vaultmem.cli.app import app
from vaultmem.cli.typer_internals import click

README = (REPO / "README.md").read_text(encoding="utf-8")
CLI_DOC = REPO / "docs" / "cli.md"
# the files whose blocks must run (a file that does not exist is skipped)
DOC_FILES = [
    "README.md",
    "docs/cli.md",
    "docs/runtimes.md",
    "docs/benchmarks.md",
    "docs/threat-model.md",
    "docs/FORMAT.md",
]
SHELL = {"bash", "sh", "shell"}
PYTHON = {"python", "py"}

# placeholder -> the shape of the value that fills it (the newest one printed so far)
PLACEHOLDERS = {
    "<fact-id>": r"\bm-[0-9a-f]{8}\b",
    "<bank-id>": r"\bb-[0-9a-f]{8}\b",
    "<key-id>": r"\bk-[0-9a-f]{16}\b",
    "<plan-id>": r"\bp-[0-9a-f]{16}\b",
    "<entry-id>": r"\b[a-z][a-z0-9_-]*\.([a-z0-9]{4}\.)?[0-9]+\b",
    "<decision-id>": r"\b[a-z][a-z0-9_-]*\.([a-z0-9]{4}\.)?d[0-9]+\b",
}
# ids that look real in a shell block but were made up: they must be placeholders
MADE_UP_ID = re.compile(r"\b(?:[mb]-[0-9a-f]{8}|[kp]-[0-9a-f]{16})\b")
FENCE = re.compile(r"^(`{3,})([\w+-]*)\s*$")
NOT_RUN = re.compile(r"^<!--\s*not-run:\s*(.*?)\s*-->$")


@dataclass(frozen=True)
class Block:
    file: str
    line: int  # 1-based line of the opening fence
    lang: str
    text: str
    not_run: str | None  # the reason, when marked


def doc_blocks(name: str) -> list[Block]:
    path = REPO / name
    if not path.exists():
        return []
    lines = path.read_text(encoding="utf-8").splitlines()
    out: list[Block] = []
    previous = ""
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            if lines[i].strip():
                previous = lines[i].strip()
            i += 1
            continue
        fence, lang, start = m.group(1), m.group(2).lower(), i
        i += 1
        body: list[str] = []
        while i < len(lines) and lines[i].strip() != fence:
            body.append(lines[i])
            i += 1
        marked = NOT_RUN.match(previous)
        out.append(
            Block(name, start + 1, lang, "\n".join(body), marked.group(1) if marked else None)
        )
        previous = ""
        i += 1
    return out


def split_comment(line: str) -> tuple[str, str]:
    """(command, comment) of one shell line: the comment starts at a `#` outside quotes that
    follows whitespace."""
    quote = ""
    for i, ch in enumerate(line):
        if quote:
            if ch == quote:
                quote = ""
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and (i == 0 or line[i - 1].isspace()):
            return line[:i].rstrip(), line[i + 1 :].strip()
    return line.rstrip(), ""


@dataclass(frozen=True)
class Command:
    line: int
    text: str
    expect: int


def shell_commands(block: Block) -> list[Command]:
    """The block's commands: continuation lines joined, comments and blank lines left out."""
    out: list[Command] = []
    pending: list[str] = []
    first = 0
    for offset, raw in enumerate(block.text.splitlines()):
        code, comment = split_comment(raw)
        if not pending:
            first = block.line + 1 + offset
        if not code.strip() and not pending:
            continue
        if code.endswith("\\"):
            pending.append(code[:-1].rstrip())
            continue
        pending.append(code)
        m = re.match(r"exit (\d+)\b", comment)
        out.append(
            Command(first, " ".join(p.strip() for p in pending), int(m.group(1)) if m else 0)
        )
        pending = []
    return out


def command_paths() -> list[tuple[str, click.Command]]:
    from vaultmem.cli.lazy import walk

    return walk(typer.main.get_command(app))


def documented_options(cmd: click.Command) -> list[str]:
    """The options a command's section must name: all but the common ones and --help."""
    names = []
    for param in cmd.params:
        if param.param_type_name != "option" or "--help" in param.opts:
            continue
        if getattr(param, "rich_help_panel", None) == "Common options":
            continue
        names.append(max(param.opts, key=len))
    return names


def cli_sections() -> dict[str, str]:
    """docs/cli.md's command sections: heading `` `vaultmem PATH` `` -> its text, up to the next
    heading of any level."""
    text = CLI_DOC.read_text(encoding="utf-8")
    parts = re.split(r"^(#{2,4}) `vaultmem ([a-z][a-z -]*?)`\s*$", text, flags=re.M)
    sections: dict[str, str] = {}
    for i in range(1, len(parts) - 2, 3):
        body = parts[i + 2]
        body = re.split(r"^#{1,4} ", body, maxsplit=1, flags=re.M)[0]
        sections[parts[i + 1].strip()] = body
    return sections


@pytest.mark.slow
def test_every_command_has_help() -> None:
    for path, _cmd in command_paths():
        res = run_cli(*path.split(), "--help")
        assert res.exit_code == 0, path
        assert "Usage" in res.stdout and "Example" in res.stdout, path


def test_every_command_and_option_is_in_the_cli_reference() -> None:
    sections = cli_sections()
    missing = [path for path, _cmd in command_paths() if path not in sections]
    assert not missing, f"docs/cli.md has no `vaultmem PATH` section for: {missing}"
    unnamed = {
        path: [
            opt for opt in documented_options(cmd) if not re.search(rf"`{opt}\b", sections[path])
        ]
        for path, cmd in command_paths()
    }
    unnamed = {path: opts for path, opts in unnamed.items() if opts}
    assert not unnamed, f"options missing from their docs/cli.md section: {unnamed}"


def test_the_cli_reference_names_no_command_that_does_not_exist() -> None:
    paths = {path for path, _cmd in command_paths()}
    assert set(cli_sections()) <= paths


def test_readme_links_the_reference_docs() -> None:
    for name in ("docs/cli.md", "docs/FORMAT.md", "docs/runtimes.md", "docs/benchmarks.md"):
        assert f"]({name}" in README, name
        assert (REPO / name).exists(), name


def first_screen() -> str:
    return "\n".join(README.splitlines()[:25])


def test_readme_first_screen_has_the_two_commands() -> None:
    screen = first_screen()
    # the main job, on example-vault, from a fresh checkout: install and load ella's pack
    assert "pip install -e . && vaultmem read --vault example-vault --agent ella" in screen
    # the tests
    assert 'pip install -e ".[dev]" && pytest' in screen
    # exactly those two commands; from there to an agent that remembers, in the text below them
    assert sum(1 for line in screen.splitlines() if line.startswith("```bash")) == 2
    assert "vaultmem init" in screen and "vaultmem setup claude-code" in screen


def test_ci_runs_the_readme_test_command() -> None:
    """CI installs as the README does and runs its test command twice: the quick loop (plain
    `pytest`) with the suite's clock a year on, and everything (`--all`)."""
    ci = (REPO / ".ci" / "run").read_text()
    assert 'pip install --quiet -e ".[dev]"' in ci
    assert "\npython -m pytest -q -n 2 --clock-shift 400d\n" in ci
    assert "\npython -m pytest -q --all -n 0\n" in ci


def test_shell_blocks_use_placeholders_not_made_up_ids() -> None:
    """An id in a shell block that some earlier command did not print would exit 4 when copied:
    write `<fact-id>` and the like instead."""
    found = [
        f"{b.file}:{b.line}: {m.group(0)}"
        for name in DOC_FILES
        for b in doc_blocks(name)
        if b.lang in SHELL
        for m in MADE_UP_ID.finditer(b.text)
    ]
    assert not found


def test_not_run_blocks_say_why() -> None:
    for name in DOC_FILES:
        for b in doc_blocks(name):
            assert b.not_run is None or len(b.not_run) > 8, f"{b.file}:{b.line}: say why"


def session(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """A folder to run one doc file's blocks in: a copy of example-vault/, vaultmem on PATH."""
    root = tmp_path / "session"
    root.mkdir()
    copy_example(root / "example-vault")
    bindir = tmp_path / "bin"
    bindir.mkdir()
    script = Path(sys.executable).parent / "vaultmem"
    shim = bindir / "vaultmem"
    if script.exists():
        shim.symlink_to(script)
    else:
        shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m vaultmem "$@"\n')
        shim.chmod(0o755)
    env = dict(os.environ)
    env["PATH"] = f"{bindir}{os.pathsep}{Path(sys.executable).parent}{os.pathsep}{env['PATH']}"
    env.update(
        GIT_AUTHOR_NAME="docs",
        GIT_AUTHOR_EMAIL="docs@example.invalid",
        GIT_COMMITTER_NAME="docs",
        GIT_COMMITTER_EMAIL="docs@example.invalid",
        PYTHONPATH=str(REPO),
    )
    return root, env


def shell_script(commands: list[Command], root: Path, outdir: Path) -> str:
    """One bash script for a whole doc file, as a reader types it into one terminal: `cd` and
    `export` carry on to the next block. Each command's output and exit code go to files."""
    lines = [
        f'__d="{outdir}"',
        '__last() { grep -ohE "$1" "$__d/printed" 2>/dev/null | tail -n 1; }',
        f'cd "{root}"',
    ]
    for n, cmd in enumerate(commands):
        text = cmd.text
        for name, shape in PLACEHOLDERS.items():
            text = text.replace(name, f"$(__last '{shape}')")
        lines.append(
            f'{{ {text}\n}} >"$__d/{n}.out" 2>"$__d/{n}.err" </dev/null; echo $? >"$__d/{n}.rc"; '
            f'cat "$__d/{n}.out" >>"$__d/printed"'
        )
    return "\n".join(lines) + "\n"


def file_commands(name: str) -> tuple[list[Command], int, int, list[str]]:
    """Every command of a doc file's runnable blocks, in order (a Python block is one command),
    the number of blocks run and marked not-run, and unknown placeholders."""
    commands: list[Command] = []
    ran = skipped = 0
    problems: list[str] = []
    for block in doc_blocks(name):
        if block.lang not in SHELL | PYTHON:
            continue
        if block.not_run is not None:
            skipped += 1
            continue
        ran += 1
        if block.lang in PYTHON:
            commands.append(
                Command(
                    block.line,
                    f"'{sys.executable}' - <<'__VAULTMEM_DOC__'\n{block.text}\n__VAULTMEM_DOC__",
                    0,
                )
            )
            continue
        for cmd in shell_commands(block):
            problems += [
                f"{name}:{cmd.line}: unknown placeholder {p}"
                for p in re.findall(r"<[a-z][a-z-]*>", cmd.text)
                if p not in PLACEHOLDERS
            ]
            commands.append(cmd)
    return commands, ran, skipped, problems


def run_doc(name: str, tmp_path: Path) -> tuple[int, int, list[str]]:
    """Run every block of one doc file in order: (blocks run, blocks marked not-run, failures)."""
    root, env = session(tmp_path)
    outdir = tmp_path / "out"
    outdir.mkdir()
    commands, ran, skipped, failures = file_commands(name)
    script = shell_script(commands, root, outdir)
    subprocess.run(["bash", "-c", script], env=env, timeout=1800, check=False)
    for n, cmd in enumerate(commands):
        rc_file = outdir / f"{n}.rc"
        if not rc_file.exists():
            failures.append(f"{name}:{cmd.line}: did not run (an earlier command left the shell)")
            break
        rc = int(rc_file.read_text().strip() or "-1")
        if rc != cmd.expect:
            err = (outdir / f"{n}.err").read_text(errors="replace")[-1500:]
            failures.append(
                f"{name}:{cmd.line}: exit {rc}, documented {cmd.expect}: {cmd.text}\n{err}"
            )
    return ran, skipped, failures


@pytest.mark.slow
@pytest.mark.parametrize("name", [n for n in DOC_FILES if (REPO / n).exists()])
def test_every_block_runs_as_documented(name: str, tmp_path: Path) -> None:
    ran, skipped, failures = run_doc(name, tmp_path)
    print(f"{name}: {ran} blocks run, {skipped} marked not-run")
    assert not failures, "\n\n".join(failures)


@pytest.mark.slow
def test_the_block_runner_catches_a_failing_command(tmp_path: Path) -> None:
    """The runner itself: an unmarked command that fails is a failure, a documented exit code
    is not, a placeholder takes the newest printed value, and a marked block is counted."""
    doc = tmp_path / "doc.md"
    doc.write_text(
        "```bash\n"
        'vaultmem remember "Standups are at 9." --name "Standups" --type project '
        "--vault example-vault\n"
        "vaultmem retract <fact-id> --why 'moved' --vault example-vault\n"
        "vaultmem forget m-00000000 --vault example-vault   # exit 4: no such fact\n"
        "vaultmem log --since nobody.9 --vault example-vault\n"
        "```\n\n"
        "<!-- not-run: needs a network to install -->\n"
        "```bash\npip install vaultmem\n```\n",
        encoding="utf-8",
    )
    name = os.path.relpath(doc, REPO)
    ran, skipped, failures = run_doc(name, tmp_path)
    assert (ran, skipped) == (1, 1)
    assert len(failures) == 1 and "log --since nobody.9" in failures[0], failures


def test_the_first_screen_main_job_runs(tmp_path: Path) -> None:
    """The part of the first screen's main command after the install, on a copy of the example
    vault (the install itself is what .ci/run does)."""
    command = re.search(r"&& (vaultmem read --vault example-vault --agent ella)", first_screen())
    assert command
    copy_example(tmp_path / "example-vault")
    res = subprocess.run(
        [sys.executable, "-m", "vaultmem", *command.group(1).split()[1:]],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert res.returncode == 0, res.stderr
    assert "ella" in res.stdout


def heading_anchors(path: Path) -> set[str]:
    """GitHub's anchors for a markdown file's headings (outside code blocks)."""
    anchors: set[str] = set()
    fenced = False
    for line in path.read_text(encoding="utf-8").splitlines():
        if FENCE.match(line):
            fenced = not fenced
            continue
        m = re.match(r"^#{1,6} (.+?)\s*$", line)
        if m and not fenced:
            slug = re.sub(r"[^\w\- ]", "", m.group(1).lower()).replace(" ", "-")
            anchors.add(slug)
    return anchors


def test_every_link_between_the_docs_resolves() -> None:
    """Links from the README and docs/ to a file of the repository, and to a heading in it."""
    broken = []
    for name in DOC_FILES:
        path = REPO / name
        if not path.exists():
            continue
        text = re.sub(r"```.*?```", "", path.read_text(encoding="utf-8"), flags=re.S)
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"[a-z]+:", target):
                continue
            file_part, _, anchor = target.partition("#")
            dest = (path.parent / file_part).resolve() if file_part else path
            if not dest.exists():
                broken.append(f"{name}: {target} (no such file)")
            elif anchor and dest.suffix == ".md" and anchor not in heading_anchors(dest):
                broken.append(f"{name}: {target} (no such heading)")
    assert not broken
