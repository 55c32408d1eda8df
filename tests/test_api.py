"""The public API: every name in `vaultmem.__all__` resolves, lazily, to the use case."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import vaultmem


@pytest.mark.parametrize("name", [n for n in vaultmem.__all__ if n != "__version__"])
def test_every_public_name_resolves(name: str) -> None:
    assert callable(getattr(vaultmem, name))


def test_all_lists_exactly_the_api() -> None:
    assert sorted(vaultmem.__all__) == sorted(["__version__", *vaultmem._API])


def test_no_public_name_is_also_a_subpackage() -> None:
    # `import vaultmem.<pkg>.x` binds `vaultmem.<pkg>`: a use case of that name would be shadowed
    import vaultmem.search.query

    packages = {p.parent.name for p in Path(vaultmem.__file__).parent.glob("*/__init__.py")}
    assert packages & set(vaultmem._API) == set()
    assert callable(vaultmem.recall) and vaultmem.recall.__module__ == "vaultmem.search.query"


def test_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError):
        vaultmem.nothing_here  # noqa: B018


def test_importing_the_package_loads_no_layer() -> None:
    code = (
        "import sys, vaultmem\nprint(sorted(m for m in sys.modules if m.startswith('vaultmem.')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_the_readme_example_runs(vault: Path) -> None:
    from vaultmem.nexus.keyring import create_key

    v = vaultmem.Vault.open(vault)
    create_key(v, "ella")
    pack = vaultmem.read(v, "ella", peek=True)
    assert pack.agent == "ella"
    entry = vaultmem.append(v, "ella", "Webhook retries are idempotent", type_="fix").entry
    assert entry.id.startswith("ella.")
    assert vaultmem.recall(v, "webhook retries", agent="ella").hits
