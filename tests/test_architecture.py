"""The shape of the code: one package per layer, imports pointing down only.

    core  <  memory  <  nexus  <  bank  <  recall  <  app  <  cli, mcp (the faces)

`core` imports no layer. A layer imports only from layers below it (function-level imports
count too). The faces import the layers and `app`, never each other, except for the one entry
point each face offers (`vaultmem mcp` starts `vaultmem.mcp.server.serve`). Sub-package
`__init__.py` files stay empty so importing `vaultmem.nexus.log` costs nothing extra.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "vaultmem"
RANK = {"core": 0, "memory": 1, "nexus": 2, "bank": 3, "recall": 4, "app": 5, "cli": 6, "mcp": 6}
# (importing package, imported module): the face entry points other faces may start
ALLOWED = {("cli", "vaultmem.mcp.server")}


def _layer(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[0] == "vaultmem" and parts[1] in RANK else None


def _imports(path: Path, root: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = ".".join(path.relative_to(root.parent).with_suffix("").parts[:-1])
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1])
                base = f"{base}.{node.module}" if node.module else base
            found.append((node.lineno, base))
            # `from vaultmem import bank` names a package: count each imported name
            found += [(node.lineno, f"{base}.{a.name}") for a in node.names if base == "vaultmem"]
    return found


def violations(root: Path = PACKAGE) -> list[str]:
    out = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root.parent)
        mine = _layer(".".join(rel.with_suffix("").parts))
        if mine is None:
            continue
        for line, target in _imports(path, root):
            theirs = _layer(target)
            if theirs is None or theirs == mine or (mine, target) in ALLOWED:
                continue
            if RANK[theirs] >= RANK[mine]:
                out.append(f"{rel}:{line}: {mine} imports {target} ({theirs})")
    return out


def test_imports_point_down_only() -> None:
    assert violations() == []


def test_the_check_fails_on_an_upward_import(tmp_path: Path) -> None:
    fake = tmp_path / "vaultmem"
    for pkg in ("core", "app"):
        (fake / pkg).mkdir(parents=True)
        (fake / pkg / "__init__.py").write_text("")
    (fake / "core" / "bad.py").write_text("def f():\n    from vaultmem.app import pack\n")
    (fake / "app" / "fine.py").write_text("from vaultmem.core import bad\n")
    assert violations(fake) == ["vaultmem/core/bad.py:2: core imports vaultmem.app (app)"]


@pytest.mark.parametrize("init", sorted(PACKAGE.glob("*/__init__.py")), ids=lambda p: p.parent.name)
def test_subpackage_inits_are_empty(init: Path) -> None:
    assert init.read_text().strip() == ""


def test_no_module_is_too_long_without_saying_why() -> None:
    long = []
    for path in PACKAGE.rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        if text.count("\n") > 520 and "Why this module is long" not in text:
            long.append(f"{path.relative_to(PACKAGE)}: {text.count(chr(10))} lines")
    assert long == []
