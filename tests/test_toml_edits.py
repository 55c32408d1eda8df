"""vaultmem.toml belongs to people: `init` (adding agents and reviewers) and `upgrade` (the
format number) edit it through tomlkit, keeping every comment and the layout."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from tests._cli import run_cli
from vaultmem.core.config import set_toml_key
from vaultmem.core.errors import ConfigError

COMMENTED = """\
# The vault of the checkout team.
agents = [
  "ella",  # backend [main]
  "lyra",  # frontend, see [[wiki/Team]]
]
reviewers = ["chiara"]  # Chiara reviews on Tuesdays

[log]
lock_timeout = 5  # seconds [max 60]
"""


def test_init_adds_an_agent_to_a_list_with_comments(vault: Path) -> None:
    toml = vault / "vaultmem.toml"
    toml.write_text(COMMENTED, encoding="utf-8")
    res = run_cli("init", str(vault), "--agent", "nova", "--reviewer", "marta")
    assert res.exit_code == 0, res.stderr
    text = toml.read_text(encoding="utf-8")
    for line in COMMENTED.splitlines():
        if line.startswith(("agents", "reviewers")):
            continue
        assert line in text, line  # every comment and line a person wrote is still there
    assert '"ella",  # backend [main]' in text and '"lyra",  # frontend' in text
    data = tomllib.loads(text)
    assert data["agents"] == ["ella", "lyra", "nova"]
    assert data["reviewers"] == ["chiara", "marta"]
    assert "# Chiara reviews on Tuesdays" in text


def test_a_new_key_goes_before_the_first_table_and_parses() -> None:
    out = set_toml_key(COMMENTED, "format", 3, Path("vaultmem.toml"))
    assert out.index("format = 3") < out.index("[log]")
    assert tomllib.loads(out)["format"] == 3 and "# seconds [max 60]" in out


def test_invalid_toml_is_a_config_error_naming_the_file() -> None:
    with pytest.raises(ConfigError, match=r"vaultmem\.toml is not valid TOML"):
        set_toml_key("agents = [\n", "format", 3, Path("vaultmem.toml"))
