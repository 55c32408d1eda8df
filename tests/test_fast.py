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
from conftest import copy_example

from vaultmem.cli import fast


def vm(
    args: list[str],
    *,
    home: Path,
    fast_path: bool,
    stdin: str | None = None,
    env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if not k.startswith("VAULTMEM_")}
    full["VAULTMEM_HOME"] = str(home)
    if not fast_path:
        full["VAULTMEM_NO_FAST"] = "1"
    full.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "vaultmem", *args],
        env=full,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.fixture
def two(tmp_path: Path) -> tuple[Path, Path, Path]:
    """Two identical vaults with keys for ella and lyra, and a primed spec cache."""
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
    # a typer run of a hot command writes the cache
    assert (
        vm(
            ["read", "--vault", str(a), "--agent", "ella", "--peek"], home=home, fast_path=False
        ).returncode
        == 0
    )
    assert (home / "cache" / "cli-spec.json").is_file()
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


def test_stale_or_missing_cache_falls_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VAULTMEM_HOME", str(tmp_path))
    assert fast.try_fast(["read", "--agent", "ella"]) is False  # no cache yet
    target = tmp_path / "cache" / "cli-spec.json"
    target.parent.mkdir(parents=True)
    target.write_text(json.dumps({"key": "old", "commands": {"read": SPEC}}))
    assert fast.try_fast(["read", "--agent", "ella"]) is False  # stale key
    target.write_text("{not json")
    assert fast.try_fast(["read", "--agent", "ella"]) is False
    monkeypatch.setenv("VAULTMEM_NO_FAST", "1")
    assert fast.try_fast(["read"]) is False


def test_spec_covers_the_hot_commands() -> None:
    from vaultmem.cli.app import app

    spec = fast.build_spec(app)
    assert set(spec["commands"]) == {"read", "append", "recall"}
