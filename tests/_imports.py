"""Helpers every test imports as `tests._imports`: which modules a `vaultmem` command imported,
run as a process of its own, and the modules no per-turn command has a use for (with why)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

# banned on every per-turn command
EVERYWHERE = {
    "typer": "the CLI framework: the fast path (cli/fast.py) answers without building it",
    "click": "typer's base, the same",
    "rich": "people's tables and panels: agents get plain text and JSON",
    "whoosh": "recall's index: only `recall` and `read --query` search",
    "anthropic": "the model client: only retain --from, digest and profile call it",
    "mcp": "the MCP server's SDK",
    "watchdog": "`vaultmem watch` only",
    "numpy": "the semantic extra, for recall",
    "onnxruntime": "the semantic extra, for recall",
    "tomlkit": "editing vaultmem.toml (init, setup); reading it is tomllib",
    "urllib.request": "an HTTP client (whoosh.compat pulled it in): nothing per-turn talks HTTP",
    "http": "the same",
    "email": "the same (urllib.request's dependency)",
    "dbm": "nothing keeps a dbm file",
    "dataclasses": "value classes are core.records.record: dataclasses costs ~12 ms to import "
    "(with inspect) and ~1 ms a class",
    "inspect": "the same (dataclasses imported it)",
    "tomllib": "vaultmem.toml's parse is kept for its exact bytes (core/tomlcache.py): ~4 ms",
    "urllib.parse": "pathlib's as_uri quoting, never called: pathlib is imported without it "
    "(cli/main.py), ~2 ms with ipaddress",
    "ipaddress": "the same (urllib.parse imports it)",
}
# banned where nothing else needs them (a fact's secrets scan loads hmac, a hook's timeout signal)
OPENSSL = {"hashlib": "it loads OpenSSL (~2.5 ms): sha256 and blake2b come from core/hashes.py"}
NO_WAIT = {"signal": "only a lock that has to be waited for sets an alarm (core/locking.py)"}
BASE64 = {
    "base64": "keys and signatures go through binascii (core/hashes.py); base64 imports re "
    "and struct (a fact's secrets scan still loads it: the stdlib secrets module)"
}
YAML = {
    "yaml": "frontmatter vaultmem writes is read by notes.simple_mapping, without PyYAML",
    "frontmatter": "python-frontmatter: only for frontmatter outside that plain subset",
}
NOT_SEARCH = {"vaultmem.search": "recall's layer: no query was asked"}

WRAPPER = """
import json, sys
out = sys.argv[1]
sys.argv = ["vaultmem", *sys.argv[2:]]
from vaultmem.cli.main import main
try:
    main()
finally:
    with open(out, "w") as fh:
        json.dump(sorted(sys.modules), fh)
"""


def loaded(
    tmp_path: Path, args: list[str], stdin: str = "", env: dict[str, str] | None = None
) -> set[str]:
    """Every module `vaultmem ARGS` imported, run as a process of its own."""
    out = tmp_path / f"modules-{len(list(tmp_path.glob('modules-*')))}.json"
    proc = subprocess.run(
        [sys.executable, "-c", WRAPPER, str(out), *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **(env or {})},
    )
    assert proc.returncode == 0, proc.stderr
    return set(json.loads(out.read_text(encoding="utf-8")))


def offending(modules: set[str], banned: dict[str, str]) -> dict[str, str]:
    return {
        name: why
        for name, why in banned.items()
        if any(m == name or m.startswith(name + ".") for m in modules)
    }


def check(name: str, modules: set[str], banned: dict[str, str]) -> None:
    bad = offending(modules, banned)
    assert not bad, f"`vaultmem {name}` imported: " + "; ".join(
        f"{m} ({why})" for m, why in bad.items()
    )
