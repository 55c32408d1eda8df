"""`vaultmem upgrade`: numbered migrations, run once each, keeping what people wrote."""

from __future__ import annotations

from pathlib import Path

from tests._cli import run_cli
from vaultmem.app.lifecycle.upgrade import MIGRATIONS, current_format, upgrade
from vaultmem.core.vault import Vault

OLD_FACT = """---
# a person's comment
name: Launch date
description: when we launch
type: project
id: m-0000aaaa
created: '2026-11-01T10:00:00Z'
updated: "2026-11-02T11:00:00.123Z"
author: person
my_key: keep me   # trailing
---

Launch in April.
"""


def _old_vault(vault: Path) -> Path:
    cfg = vault / "vaultmem.toml"
    cfg.write_text("".join(ln for ln in cfg.read_text().splitlines(True) if "format" not in ln))
    (vault / "memory" / "launch-date.md").write_text(OLD_FACT)
    return vault


def test_upgrade_runs_each_migration_once_and_keeps_human_lines(vault: Path) -> None:
    _old_vault(vault)
    v = Vault.open(vault)
    assert v.config.format == 0
    dry = upgrade(v, dry_run=True)
    assert [s.name for s in dry.steps] == [fn.__name__ for fn in MIGRATIONS]
    assert "memory/launch-date.md: created, updated" in dry.steps[1].changes
    assert (vault / "memory" / "launch-date.md").read_text() == OLD_FACT  # dry run: untouched
    report = upgrade(v)
    assert (report.from_format, report.to_format) == (0, current_format())
    text = (vault / "memory" / "launch-date.md").read_text()
    assert "created: 2026-11-01T10:00:00Z\n" in text
    assert "updated: 2026-11-02T11:00:00Z\n" in text
    assert "# a person's comment\n" in text and "my_key: keep me   # trailing\n" in text
    assert text.endswith("\nLaunch in April.\n")
    again = upgrade(Vault.open(vault))
    assert again.steps == () and again.from_format == current_format()


def test_upgrade_command_and_new_vaults_start_current(tmp_path: Path) -> None:
    res = run_cli("init", str(tmp_path / "v"), "--agent", "ella")
    assert res.exit_code == 0, res.stderr
    assert f"format = {current_format()}" in (tmp_path / "v" / "vaultmem.toml").read_text()
    res = run_cli("upgrade", "--vault", str(tmp_path / "v"))
    assert res.exit_code == 0 and "up to date" in res.stdout


def test_example_vault_is_in_the_current_format() -> None:
    example = Path(__file__).resolve().parent.parent / "example-vault"
    assert Vault.open(example).config.format == current_format()


def test_bad_format_value_is_a_config_error(vault: Path) -> None:
    cfg = vault / "vaultmem.toml"
    cfg.write_text(cfg.read_text().replace(f"format = {current_format()}", "format = -1"))
    res = run_cli("status", "--vault", str(vault))
    assert res.exit_code == 3 and "format must be a whole number" in res.stderr
