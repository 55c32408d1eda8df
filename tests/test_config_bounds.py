"""Settings from git are bounded before tomllib and ranged after it (issue 35, item 5); the
lenient load sync, verify, trust and the hooks use goes on with the last settings this machine
accepted. The attacker's side through real git: tests/integration/test_hostile_settings.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests._layer3_helpers import fresh_vault
from vaultmem.core import config, tomlguard
from vaultmem.core.errors import ConfigError
from vaultmem.core.vault import Vault


@pytest.mark.parametrize(
    "text",
    [
        "a = " + "[" * 100_000 + "]" * 100_000,
        "a = " + "{b=" * 5_000 + "1" + "}" * 5_000,
        # a multi-line string ending in quotes, to make a scan believe the bomb is in a string
        'a = """x""""\nb = ' + "[" * 5_000 + "]" * 5_000 + '\nc = "q"\n',
        'a = """x\\"""\nb = ' + "[" * 5_000 + "]" * 5_000 + '\nc = """q"""\n',
    ],
)
def test_a_nesting_bomb_is_refused_before_tomllib(tmp_path: Path, text: str) -> None:
    with pytest.raises(ConfigError, match=r"nested|not valid TOML"):
        config.parse_config(text, tmp_path / "vaultmem.toml")


def test_brackets_inside_strings_and_comments_are_not_nesting(tmp_path: Path) -> None:
    text = 'model = "[[[[[[[[[[[[[[[[[[[[[["  # [[[[[[[[[[[[[[[[[[[[[[\n'
    assert tomlguard.nesting("[recall]\n" + text) == 1
    assert config.parse_config("[recall]\n" + text, tmp_path / "vaultmem.toml").recall.model


def test_a_file_over_the_size_budget_is_refused_unread(tmp_path: Path) -> None:
    root = fresh_vault(tmp_path)
    with open(root / "vaultmem.toml", "a", encoding="utf-8") as fh:
        fh.write("#" * (tomlguard.MAX_BYTES + 1))
    with pytest.raises(ConfigError, match="more than"):
        Vault.open(root)


@pytest.mark.parametrize(
    ("table", "line", "what"),
    [
        ("sync", 'interval = "0s"', "zero"),
        ("sync", 'interval = "2d"', "between 1s and 24h"),
        ("hooks", "timeout = 120", "between 1e-06 and 10"),
        ("hooks", "timeout = 0", "between 1e-06 and 10"),
        ("hooks", "lock_timeout = 30", "between 0 and 5"),
        ("hooks", "prompt_budget = 1000000", "between 0 and 20000"),
        ("hooks", "recall_hits = 500", "between 0 and 20"),
        ("log", "lock_timeout = 3600", "between 0.01 and 120"),
        ("llm", "timeout = 3600", "between 0.1 and 600"),
    ],
)
def test_every_timing_setting_has_a_safe_range(
    tmp_path: Path, table: str, line: str, what: str
) -> None:
    with pytest.raises(ConfigError, match=what):
        config.parse_config(f"[{table}]\n{line}\n", tmp_path / "vaultmem.toml")


def test_the_ends_of_the_ranges_are_accepted(tmp_path: Path) -> None:
    text = '[sync]\ninterval = "1s"\n[hooks]\ntimeout = 10\nlock_timeout = 5\n'
    parsed = config.parse_config(text, tmp_path / "vaultmem.toml")
    assert parsed.hooks.timeout == 10 and parsed.sync.interval == "1s"
    assert config.parse_config('[sync]\ninterval = "never"\n', tmp_path / "x.toml")


def test_lenient_goes_on_with_the_last_accepted_settings_and_says_so_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = fresh_vault(tmp_path)
    (root / ".vaultmem").mkdir()  # where this machine keeps the last parse it accepted
    path = root / "vaultmem.toml"
    good = path.read_text(encoding="utf-8")
    path.write_text(good + "\n[hooks]\ntimeout = 3.5\n", encoding="utf-8")
    assert Vault.open(root).config.hooks.timeout == 3.5  # accepted: kept as the last good
    path.write_text(good + "\n[hooks]\ntimeout = 120\n", encoding="utf-8")
    with pytest.raises(ConfigError):
        Vault.open(root)
    capsys.readouterr()
    tomlguard._WARNED.clear()
    first = Vault.open(root, lenient=True)
    second = Vault.open(root, lenient=True)
    assert first.config.hooks.timeout == second.config.hooks.timeout == 3.5
    err = capsys.readouterr().err
    assert err.count("going on with the last settings this machine accepted") == 1, err
    assert "timeout must be between 1e-06 and 10" in err
