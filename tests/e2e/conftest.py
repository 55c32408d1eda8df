"""The end-to-end suite: the real Claude Code and Codex CLIs against a fake model API.

Every test here is marked `e2e` and `slow`; see `_runtimes.py` for how the CLIs are found."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests._fake_model_api import FakeModelAPI


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    here = Path(__file__).resolve().parent
    for item in items:
        if here in Path(str(item.fspath)).resolve().parents:
            item.add_marker(pytest.mark.e2e)
            item.add_marker(pytest.mark.slow)


@pytest.fixture
def api() -> Iterator[FakeModelAPI]:
    with FakeModelAPI() as server:
        yield server
