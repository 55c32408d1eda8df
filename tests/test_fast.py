"""The start-up fast path must behave exactly like the typer path, and step aside otherwise."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests import _proc as proc
from tests._cli import copy_example
from vaultmem.cli import fast


def vm(
    args: list[str],
    *,
    home: Path,
    fast_path: bool,
    stdin: str | None = None,
    env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """`vaultmem ARGS` with none of this environment's VAULTMEM_ variables, on the start-up
    fast path or (`fast_path=False`) through typer."""
    slow = {} if fast_path else {"VAULTMEM_NO_FAST": "1"}
    return proc.vm(
        *args, home=home, drop=("VAULTMEM_",), env={**slow, **(env or {})}, stdin=stdin or ""
    )


@pytest.fixture
def two(tmp_path: Path) -> tuple[Path, Path, Path]:
    """Two identical vaults with keys for ella and lyra."""
    home = tmp_path / "home"
    a = copy_example(tmp_path / "a")
    assert (
        vm(
            ["keys", "create", "--vault", str(a), "--agent", "ella"], home=home, fast_path=False
        ).returncode
        == 0
    )
    assert (
        vm(
            ["keys", "create", "--vault", str(a), "--agent", "lyra"], home=home, fast_path=False
        ).returncode
        == 0
    )
    b = tmp_path / "b"
    shutil.copytree(a, b)
    return home, a, b


TIMINGS = re.compile(r'"(duration_ms|age_seconds)": [0-9.e+-]+')
TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z|\d{4}-\d\d-\d\d \d\d:\d\d")


def same(
    fast_res: subprocess.CompletedProcess[str],
    slow_res: subprocess.CompletedProcess[str],
    a: Path,
    b: Path,
) -> None:
    def norm(text: str, root: Path) -> str:
        text = text.replace(str(root.resolve()), "<vault>").replace(str(root), "<vault>")
        text = re.sub(r"in \d+ ms", "in N ms", TIME.sub("<time>", text))
        return TIMINGS.sub(r'"\1": 0', text)

    assert fast_res.returncode == slow_res.returncode, (fast_res.stderr, slow_res.stderr)
    assert norm(fast_res.stdout, a) == norm(slow_res.stdout, b)
    if fast_res.returncode == 0:
        assert norm(fast_res.stderr, a) == norm(slow_res.stderr, b)


CASES = [
    ["read", "--agent", "ella", "--peek"],
    ["read", "--agent", "ella", "--peek", "--json"],
    ["read", "--agent=lyra", "--peek", "--budget", "300"],
    ["read", "--peek", "--json", "--query", "stripe webhook", "--agent", "ella"],
    ["read", "--agent", "nobody", "--peek"],
    ["read", "--agent", "ella", "--peek", "--json", "--budget", "40"],
    ["append", "Webhook retries fixed", "--agent", "ella", "--channel", "backend", "--type", "fix"],
    [
        "append",
        "Using it",
        "--agent",
        "lyra",
        "--type",
        "ack",
        "--ack",
        "ella.1",
        "--ack",
        "ella.2",
        "--json",
    ],
    ["append", "--agent", "ella", "--", "-starts with a dash"],
    ["append", "key sk-ant-api03-" + "a" * 40, "--agent", "ella"],
    ["append", "bad type", "--agent", "ella", "--type", "gossip"],
    ["append", "no agent here"],
    ["recall", "stripe webhook", "--json"],
    ["recall", "capacity", "--kind", "memory", "-n", "3", "--json", "--agent", "ella"],
    ["recall", '"walk-in reserve"', "--explain"],
    ["recall", "deploy", "--limit", "0"],
    ["append", "For lyra", "--to", "lyra", "--type", "handoff", "--agent", "ella", "--json"],
    ["append", "bad recipient", "--to", "lyra\n", "--agent", "ella"],
    ["append", "Disk 91% full", "--type", "alert", "--agent", "ella"],
    ["inbox", "--agent", "lyra"],
    ["inbox", "--agent", "ella", "--json"],
    ["wm", "set", "task", "refunds", "--ttl", "2h", "--agent", "ella", "--json"],
    ["wm", "set", "task", "refunds", "--ttl", "2 hours", "--agent", "ella"],
    ["wm", "get", "nothing-here", "--agent", "ella"],
    ["wm", "list", "--agent", "ella", "--json"],
    ["wm", "del", "nothing-here", "--agent", "ella", "--json"],
    ["wm", "push", "a turn", "--thread", "t", "--keep", "3", "--agent", "ella"],
    ["wm", "--help"],
]


@pytest.mark.slow
@pytest.mark.parametrize("args", CASES, ids=[" ".join(c)[:40] for c in CASES])
def test_fast_path_matches_typer(two: tuple[Path, Path, Path], args: list[str]) -> None:
    home, a, b = two
    fast_res = vm([*args, "--vault", str(a)], home=home, fast_path=True)
    slow_res = vm([*args, "--vault", str(b)], home=home, fast_path=False)
    same(fast_res, slow_res, a, b)


@pytest.mark.slow
def test_fast_path_body_from_stdin_and_env_agent(two: tuple[Path, Path, Path]) -> None:
    home, a, b = two
    args = ["append", "With a body", "--body", "-", "--json"]
    fast_res = vm(
        [*args, "--vault", str(a)],
        home=home,
        fast_path=True,
        stdin="line 1\n## not a heading\n",
        env={"VAULTMEM_AGENT": "lyra"},
    )
    slow_res = vm(
        [*args, "--vault", str(b)],
        home=home,
        fast_path=False,
        stdin="line 1\n## not a heading\n",
        env={"VAULTMEM_AGENT": "lyra"},
    )
    same(fast_res, slow_res, a, b)
    assert json.loads(fast_res.stdout)["agent"] == "lyra"


@pytest.mark.slow
def test_fast_path_imports_no_typer(two: tuple[Path, Path, Path]) -> None:
    home, a, _b = two
    code = (
        "import sys\n"
        "from vaultmem.cli.main import main\n"
        f"sys.argv = ['vaultmem', 'read', '--vault', {str(a)!r}, '--agent', 'ella', '--peek']\n"
        "main()\n"
        "print('TYPER' if 'typer' in sys.modules else 'NO-TYPER', file=sys.stderr)\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("VAULTMEM_")}
    env["VAULTMEM_HOME"] = str(home)
    proc = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.strip().endswith("NO-TYPER")


SPEC = {
    "params": [
        {
            "name": "summary",
            "opts": [],
            "flag": False,
            "multiple": False,
            "type": "str",
            "envvar": None,
            "default": None,
            "required": True,
        },
        {
            "name": "n",
            "opts": ["--n", "-n"],
            "flag": False,
            "multiple": False,
            "type": "int",
            "envvar": None,
            "default": 3,
            "required": False,
        },
        {
            "name": "tags",
            "opts": ["--tag"],
            "flag": False,
            "multiple": True,
            "type": "str",
            "envvar": None,
            "default": None,
            "required": False,
        },
        {
            "name": "quiet",
            "opts": ["--quiet"],
            "flag": True,
            "multiple": False,
            "type": "str",
            "envvar": None,
            "default": False,
            "required": False,
        },
        {
            "name": "agent",
            "opts": ["--agent"],
            "flag": False,
            "multiple": False,
            "type": "str",
            "envvar": "VAULTMEM_AGENT",
            "default": None,
            "required": False,
        },
    ]
}


def test_parse_understands_the_common_forms(monkeypatch: pytest.MonkeyPatch) -> None:
    assert fast.parse(SPEC, ["hi", "--n", "5", "--tag", "a", "--tag=b", "--quiet"]) == {
        "summary": "hi",
        "n": 5,
        "tags": ["a", "b"],
        "quiet": True,
        "agent": None,
    }
    assert fast.parse(SPEC, ["--", "-dash"])["summary"] == "-dash"  # type: ignore[index]
    assert fast.parse(SPEC, ["-"])["summary"] == "-"  # type: ignore[index]
    monkeypatch.setenv("VAULTMEM_AGENT", "lyra")
    assert fast.parse(SPEC, ["x"])["agent"] == "lyra"  # type: ignore[index]
    assert fast.parse(SPEC, ["x", "--agent", "ella"])["agent"] == "ella"  # type: ignore[index]


@pytest.mark.parametrize(
    "args",
    [
        [],
        ["x", "--help"],
        ["x", "-h"],
        ["x", "--bogus"],
        ["x", "--n", "five"],
        ["x", "--n"],
        ["x", "y"],
        ["x", "-n5"],
        ["x", "--quiet=yes"],
        ["-x"],
    ],
)
def test_parse_steps_aside(args: list[str]) -> None:
    assert fast.parse(SPEC, args) is None


def test_no_fast_path_when_turned_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VAULTMEM_NO_FAST", "1")
    assert fast.try_fast(["read"]) is False


def test_first_call_after_install_takes_the_fast_path(tmp_path: Path) -> None:
    """No cache, a read-only home: the spec is part of the package, so nothing is written."""
    home = tmp_path / "home"
    home.mkdir()
    home.chmod(0o500)
    vault = copy_example(tmp_path / "v")
    code = (
        "import sys\n"
        "from vaultmem.cli.main import main\n"
        f"sys.argv = ['vaultmem', 'read', '--vault', {str(vault)!r}, '--agent', 'ella', '--peek']\n"
        "main()\n"
        "print('TYPER' if 'typer' in sys.modules else 'NO-TYPER', file=sys.stderr)\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("VAULTMEM_")}
    env["VAULTMEM_HOME"] = str(home / "vaultmem")
    proc = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.strip().endswith("NO-TYPER")
    # no cache: the files written are this machine's trust pin of a vault it never saw and
    # the secret that seals the local state the read wrote (a test run as root can write
    # the read-only home; for anyone else it stays empty)
    written = [p.relative_to(home).parts[:2] for p in home.rglob("*") if p.is_file()]
    assert [w for w in written if w != ("vaultmem", "memo.key")] in ([], [("vaultmem", "trust")])


def test_spec_covers_the_hot_commands() -> None:
    assert set(fast.build_spec()) == set(fast.HOT)


def test_committed_spec_is_what_the_typer_app_generates() -> None:
    """`vaultmem/cli/spec.py` is generated; regenerate it with `python -m vaultmem.cli.fast`."""
    assert fast.spec_path().read_text(encoding="utf-8") == fast.render_spec(fast.build_spec())


def _click_params(name: str, args: list[str]) -> dict[str, object] | None:
    """What the typer command itself parses from `args`, or None when it refuses them."""
    from typer.core import TyperCommand

    command, _info = fast._typer_command(name)
    assert isinstance(command, TyperCommand)
    try:
        ctx = command.make_context("vaultmem", list(args))
    except Exception:  # a usage error, --help, a bad value: typer refuses or exits
        return None
    return dict(ctx.params)


def _norm(value: object) -> object:
    import enum

    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, tuple | list):
        return [_norm(v) for v in value] or None
    return value


_WORDS = st.sampled_from(["x", "ella", "3", "-", "backend", "fix", "note", "-5", "a b", "ella.1"])


@st.composite
def _arglists(draw: st.DrawFn, name: str) -> list[str]:
    from vaultmem.cli.spec import SPEC

    params = SPEC[name]["params"]
    out: list[str] = []
    for _ in range(draw(st.integers(0, 6))):
        param = draw(st.sampled_from(params))
        if not param["opts"]:
            out.append(draw(_WORDS))
            continue
        opt = draw(st.sampled_from(param["opts"]))
        if param["flag"]:
            out.append(opt)
        elif param.get("choices") and draw(st.booleans()):
            out += [opt, draw(st.sampled_from(param["choices"]))]
        elif draw(st.booleans()):
            out.append(f"{opt}={draw(_WORDS)}")
        else:
            out += [opt, draw(_WORDS)]
    if draw(st.booleans()):
        out += ["--", draw(_WORDS)]
    return out


@pytest.mark.slow
@pytest.mark.parametrize("name", ["read", "append", "recall", "inbox", "wm set", "wm push"])
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_fast_parser_agrees_with_click(name: str, data: st.DataObject) -> None:
    """Whatever the fast parser accepts, the typer command parses to the same values."""
    args = data.draw(_arglists(name))
    from vaultmem.cli.spec import SPEC

    mine = fast.parse(SPEC[name], args)
    if mine is None:
        return  # the fast path steps aside; typer handles (and reports) the line
    theirs = _click_params(name, args)
    assert theirs is not None, f"fast path accepted what typer refuses: {args}"
    assert {k: _norm(v) for k, v in mine.items()} == {k: _norm(v) for k, v in theirs.items()}


def test_a_command_leaves_its_objects_to_the_permanent_generation(tmp_path: Path) -> None:
    """After a command (cli/startup.py `before_exit`) the interpreter's collection at exit has
    nothing to walk: what is alive was frozen. A brief per-turn command also ran without the
    cyclic collector; any other one kept it, at a higher threshold."""
    code = (
        "import gc, sys\n"
        "sys.argv = ['vaultmem', *sys.argv[1:]]\n"
        "from vaultmem.cli.main import main\n"
        "main()\n"
        "print(gc.get_freeze_count() > 0, gc.isenabled(), gc.get_threshold()[0], file=sys.stderr)\n"
    )
    vault = copy_example(tmp_path / "vault")
    for args, enabled in ((["read", "--peek"], "False"), (["status"], "True")):
        res = subprocess.run(
            [sys.executable, "-c", code, *args, "--vault", str(vault), "--agent", "ella"],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert res.returncode == 0, res.stderr
        frozen, on, threshold = res.stderr.strip().splitlines()[-1].split()
        assert frozen == "True" and on == enabled, res.stderr
        assert on == "False" or int(threshold) == 20_000
