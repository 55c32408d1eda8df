"""What each start-up measure (vaultmem/cli/startup.py) guarantees, in a fresh interpreter:
the saving is real (the module it avoids is not loaded) and nothing is lost by it (the
function it stands in for works, and the real module is there for whoever imports it)."""

from __future__ import annotations

import subprocess
import sys

from tests._cli import REPO


def _fresh(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=REPO
    )


def test_pathlib_loads_without_urllib_parse_and_loses_nothing() -> None:
    res = _fresh(
        "import sys\n"
        "from vaultmem.cli import startup\n"
        "startup.lean_pathlib()\n"
        "import pathlib\n"
        "print('urllib.parse' in sys.modules, 'ipaddress' in sys.modules)\n"
        "print(pathlib.PurePosixPath('/a b/ç').as_uri())\n"
        "import urllib.parse\n"
        "print(urllib.parse.urlsplit('https://x.test/p?q=1').query, urllib.parse.__file__ != None)\n"
    )
    assert res.returncode == 0, res.stderr
    assert res.stdout.splitlines() == ["False False", "file:///a%20b/%C3%A7", "q=1 True"]


def test_lean_pathlib_does_nothing_once_pathlib_is_loaded() -> None:
    res = _fresh(
        "import sys, pathlib\n"
        "from vaultmem.cli import startup\n"
        "before = sys.modules.get('urllib.parse')\n"
        "startup.lean_pathlib()\n"
        "print(sys.modules.get('urllib.parse') is before)\n"
    )
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "True"


def test_the_collector_is_off_only_for_the_brief_per_turn_commands() -> None:
    res = _fresh(
        "import gc\n"
        "from vaultmem.cli import startup\n"
        "for argv in (['read'], ['hook', 'prompt'], ['hook', 'stop'], ['recall', 'x']):\n"
        "    gc.enable(); gc.set_threshold(700, 10, 10)\n"
        "    startup.collector(argv)\n"
        "    print(' '.join(argv), gc.isenabled(), gc.get_threshold()[0])\n"
    )
    assert res.returncode == 0, res.stderr
    assert res.stdout.splitlines() == [
        "read False 700",
        "hook prompt False 700",
        "hook stop True 20000",
        "recall x True 20000",
    ]
