"""The shape of the code: one package per layer, imports pointing down only.

    core  <  memory  <  nexus  <  bank  <  search  <  app  <  cli, mcp (the faces)

`core` imports no layer. A layer imports only from layers below it (function-level imports
count too). The faces import the layers and `app`, never each other, except for the one entry
point each face offers (`vaultmem mcp` starts `vaultmem.mcp.server.serve`). Sub-package
`__init__.py` files stay empty so importing `vaultmem.nexus.log` costs nothing extra.

`app/` holds one sub-package per capability and no module of its own. They rank too:

    sync  <  lifecycle, condense  <  pack  <  hooks, privacy  <  setup

(`init --git` makes a repository; a hook builds a pack; setup installs hooks; the pack shows
condensed notes).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "vaultmem"
RANK = {"core": 0, "memory": 1, "nexus": 2, "bank": 3, "search": 4, "app": 5, "cli": 6, "mcp": 6}
APP_RANK = {
    "sync": 0, "lifecycle": 1, "condense": 1, "pack": 2, "hooks": 3, "privacy": 3, "setup": 4,
}  # fmt: skip
# (importing package, imported module): the face entry points other faces may start
ALLOWED = {("cli", "vaultmem.mcp.server")}


def _layer(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[0] == "vaultmem" and parts[1] in RANK else None


def _capability(module: str) -> str | None:
    parts = module.split(".")
    if len(parts) > 2 and parts[:2] == ["vaultmem", "app"] and parts[2] in APP_RANK:
        return parts[2]
    return None


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
        mod = ".".join(rel.with_suffix("").parts)
        for line, target in _imports(path, root):
            theirs = _layer(target)
            if theirs is None or (mine, target) in ALLOWED:
                continue
            if theirs == mine == "app":
                a, b = _capability(mod), _capability(target)
                if a and b and a != b and APP_RANK[b] >= APP_RANK[a]:
                    out.append(f"{rel}:{line}: app.{a} imports {target} (app.{b})")
                continue
            if theirs != mine and RANK[theirs] >= RANK[mine]:
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


def test_the_check_fails_on_an_upward_import_between_capabilities(tmp_path: Path) -> None:
    fake = tmp_path / "vaultmem"
    for pkg in ("app", "app/pack", "app/hooks"):
        (fake / pkg).mkdir(parents=True)
        (fake / pkg / "__init__.py").write_text("")
    (fake / "app" / "pack" / "bad.py").write_text("from vaultmem.app.hooks import run\n")
    (fake / "app" / "hooks" / "fine.py").write_text("from vaultmem.app.pack import bad\n")
    assert violations(fake) == [
        "vaultmem/app/pack/bad.py:1: app.pack imports vaultmem.app.hooks (app.hooks)"
    ]


def test_app_holds_capabilities_only() -> None:
    app = PACKAGE / "app"
    assert sorted(p.name for p in app.glob("*.py")) == ["__init__.py"]
    assert sorted(p.parent.name for p in app.glob("*/__init__.py")) == sorted(APP_RANK)


@pytest.mark.parametrize(
    "init",
    sorted(PACKAGE.glob("*/**/__init__.py")),
    ids=lambda p: str(p.parent.relative_to(PACKAGE)),
)
def test_subpackage_inits_are_empty(init: Path) -> None:
    assert init.read_text().strip() == ""


def test_no_module_is_too_long_without_saying_why() -> None:
    long = []
    for path in PACKAGE.rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        if text.startswith('"""Generated by'):  # data, generated and checked (cli/spec.py)
            continue
        if text.count("\n") > 520 and "Why this module is long" not in text:
            long.append(f"{path.relative_to(PACKAGE)}: {text.count(chr(10))} lines")
    assert long == []


def test_test_helpers_are_imported_one_way() -> None:
    """`from tests._cli import run_cli`, never `from conftest import ...` or `from _x import`."""
    tests = PACKAGE.parent / "tests"
    odd = []
    for path in sorted(tests.rglob("*.py")):
        for line, target in _imports(path, tests):
            first = target.split(".")[0]
            if (
                first == "conftest"
                or first.startswith("test_")
                or (first.startswith("_") and first != "__future__")
            ):
                odd.append(f"{path.relative_to(tests)}:{line}: {target}")
    assert odd == []


def _contributing_map() -> set[str]:
    text = (PACKAGE.parent / "CONTRIBUTING.md").read_text(encoding="utf-8")
    block = text.split("<!-- map:start -->", 1)[1].split("<!-- map:end -->", 1)[0]
    listed: set[str] = set()
    package = ""
    for line in block.splitlines():
        if line.startswith("### `"):
            package = line.split("`")[1].removeprefix("vaultmem/")
        elif line.startswith("- `"):
            listed.add(package + line.split("`")[1])
    return listed


def test_contributing_maps_every_module() -> None:
    tree = {
        str(p.relative_to(PACKAGE))
        for p in PACKAGE.rglob("*.py")
        if p.name != "__init__.py" or p.parent == PACKAGE
    }
    assert _contributing_map() == tree


def test_every_hook_event_has_exactly_one_handler() -> None:
    # adding an event is the enum value, its runtime names and one line in HANDLERS: an event
    # without a handler (once: silently run as session-end) fails here, not in a session
    from vaultmem.app.hooks.contract import RUNTIME_EVENTS, HookEvent
    from vaultmem.app.hooks.events import HANDLERS

    assert set(HANDLERS) == set(HookEvent)
    for runtime, events in RUNTIME_EVENTS.items():
        assert set(events) <= set(HookEvent), runtime


def test_the_agent_name_grammar_is_written_once() -> None:
    # core/names.py holds it; a copy elsewhere drifts (it was written out six times)
    grammar = "[a-z0-9][a-z0-9_-]"
    copies = [
        str(path.relative_to(PACKAGE))
        for path in PACKAGE.rglob("*.py")
        if path.name != "names.py" and grammar in path.read_text(encoding="utf-8")
    ]
    assert copies == []


def _module_of(path: Path, root: Path) -> str:
    parts = path.relative_to(root.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph(root: Path = PACKAGE) -> dict[str, set[str]]:
    """Module -> the vaultmem modules it imports (function-level imports count; `from
    vaultmem.nexus import log` names the module `vaultmem.nexus.log`)."""
    modules = {_module_of(p, root): p for p in sorted(root.rglob("*.py"))}
    graph: dict[str, set[str]] = {}
    for mod, path in modules.items():
        targets: set[str] = set()
        for _line, target in _imports(path, root):
            while target and target not in modules:
                target = target.rpartition(".")[0]
            if target and target != mod and target != root.name:
                targets.add(target)
        # `from vaultmem.nexus import log`: the module, not the (empty) package
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and not node.level:
                for alias in node.names:
                    name = f"{node.module}.{alias.name}"
                    if name in modules and name != mod:
                        targets.add(name)
        graph[mod] = {t for t in targets if not (modules[t].name == "__init__.py" and t != mod)}
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every import circle: the strongly connected components of more than one module
    (Tarjan's algorithm, iterative), each sorted, the list sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            advanced = False
            for child in children:
                if child not in graph:
                    continue
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                    advanced = True
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return sorted(found)


def test_no_import_circles() -> None:
    """The imports draw no circle anywhere: the ground floor is a line (configuration, then the
    machine's secrets, then the seal), and so is everything above it."""
    assert circles(import_graph()) == []


def test_the_circle_check_finds_a_circle_through_a_function_level_import(tmp_path: Path) -> None:
    fake = tmp_path / "vaultmem"
    (fake / "core").mkdir(parents=True)
    (fake / "__init__.py").write_text("")
    (fake / "core" / "__init__.py").write_text("")
    (fake / "core" / "a.py").write_text("from vaultmem.core import b\n")
    (fake / "core" / "b.py").write_text("def f():\n    from vaultmem.core.c import x\n")
    (fake / "core" / "c.py").write_text("from vaultmem.core.a import y\n")
    (fake / "core" / "d.py").write_text("from vaultmem.core import a\n")
    assert circles(import_graph(fake)) == [
        ["vaultmem.core.a", "vaultmem.core.b", "vaultmem.core.c"]
    ]
