"""`vaultmem.toml`'s parse kept in `.vaultmem/config.json` (core/tomlcache.py): used only for
the very bytes it was made from, only when this machine sealed it, never written through a link.
"""

from __future__ import annotations

import json
import os
from datetime import date
from pathlib import Path

import pytest

from tests._layer3_helpers import fresh_vault, make_keys
from vaultmem.core import seal, tomlcache
from vaultmem.core.config import CONFIG_NAME
from vaultmem.core.errors import ConfigError
from vaultmem.core.pins import load_config
from vaultmem.core.vault import Vault


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    root = fresh_vault(tmp_path)
    make_keys(root, "ella")  # .vaultmem/ exists
    return root


def _cache(root: Path) -> Path:
    return root / ".vaultmem" / tomlcache.CACHE_NAME


def _with_budget(root: Path, budget: int) -> None:
    text = (root / CONFIG_NAME).read_text(encoding="utf-8")
    assert "\nbudget = 0\n" in text
    (root / CONFIG_NAME).write_text(text.replace("\nbudget = 0\n", f"\nbudget = {budget}\n"))


def test_a_parse_is_kept_and_used_for_the_same_bytes(vault: Path) -> None:
    _with_budget(vault, 700)
    first = Vault.open(vault).config
    assert first.read.budget == 700
    kept = json.loads(_cache(vault).read_bytes())["data"]
    assert kept["raw"]["read"]["budget"] == 700
    # what is kept is what is used: a parse this machine sealed for these bytes wins
    data = (vault / CONFIG_NAME).read_bytes()
    raw = dict(kept["raw"], read={"budget": 900})  # every other setting as the file has it
    tomlcache.put(vault / CONFIG_NAME, data, raw)
    assert Vault.open(vault).config.read.budget == 900


def test_other_bytes_are_parsed_again(vault: Path) -> None:
    _with_budget(vault, 700)
    assert Vault.open(vault).config.read.budget == 700
    text = (vault / CONFIG_NAME).read_text(encoding="utf-8").replace("700", "800")
    (vault / CONFIG_NAME).write_text(text, encoding="utf-8")
    assert Vault.open(vault).config.read.budget == 800
    assert json.loads(_cache(vault).read_bytes())["data"]["raw"]["read"]["budget"] == 800


def test_a_kept_parse_is_checked_like_a_fresh_one(vault: Path) -> None:
    data = (vault / CONFIG_NAME).read_bytes()
    raw = dict(tomlcache.get(vault / CONFIG_NAME, data) or {"agents": []}, language="xx")
    tomlcache.put(vault / CONFIG_NAME, data, raw)
    with pytest.raises(ConfigError, match="language"):
        load_config(vault / CONFIG_NAME)


@pytest.mark.parametrize("how", ["plain", "foreign seal"])
def test_a_planted_entry_is_ignored(vault: Path, how: str) -> None:
    """git can write `.vaultmem/config.json`: an entry for the file's very bytes that this
    machine did not seal is never used (it would otherwise set any setting)."""
    _with_budget(vault, 700)
    Vault.open(vault)
    kept = json.loads(_cache(vault).read_bytes())["data"]
    planted = dict(kept, raw=dict(kept["raw"], read={"budget": 999}))
    if how == "plain":
        _cache(vault).write_text(json.dumps({"seal": "0" * 64, "data": planted}))
    else:
        sealed = seal.dumps(_cache(vault), planted, key=b"k" * 32)
        assert sealed is not None
        _cache(vault).write_bytes(sealed)
    assert Vault.open(vault).config.read.budget == 700


def test_never_written_through_a_link(vault: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    real = vault / ".vaultmem"
    real.rename(tmp_path / "state-moved")
    os.symlink(outside, real)
    _with_budget(vault, 700)
    assert load_config(vault / CONFIG_NAME).read.budget == 700
    assert list(outside.iterdir()) == []


def test_no_state_folder_no_cache(tmp_path: Path, vault: Path) -> None:
    """A vault not set up yet (no `.vaultmem/`): parsed, nothing made."""
    other = tmp_path / "other"
    other.mkdir()
    (other / CONFIG_NAME).write_bytes((vault / CONFIG_NAME).read_bytes())
    assert load_config(other / CONFIG_NAME, pinned=False).agents
    assert not (other / ".vaultmem").exists()


def test_a_value_json_cannot_hold_is_not_kept(vault: Path) -> None:
    data = b"agents = []\n"
    tomlcache.put(vault / CONFIG_NAME, data, {"when": date(2026, 1, 1)})
    assert tomlcache.get(vault / CONFIG_NAME, data) is None
