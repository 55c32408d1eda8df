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


def test_m005_gives_old_entries_block_ids_and_facts_aliases_without_resigning(
    tmp_path: Path,
) -> None:
    import re

    from tests._layer3_helpers import fresh_vault, make_keys
    from vaultmem.core import notes
    from vaultmem.nexus import decisions, entry, log, verify

    root = fresh_vault(tmp_path)
    v = make_keys(root)
    log.append(v, "ella", "No body")
    log.append(v, "lyra", "With a body", body="- a list\n- of two")
    decisions.decide(v, "ella", "Cents", why="No floats")
    for path in (v.live_context, v.decisions):  # as vaultmem wrote them before block ids
        path.write_text(re.sub(r"\n\^[A-Za-z0-9-]+\n(<!-- vaultmem )", r"\n\1", path.read_text()))
    live = v.live_context.read_text()
    cut = live.index("\n### ", live.index("· No body"))
    v.live_context.write_text(live[:cut] + "\nA person's note between entries.\n" + live[cut:])
    old_live, old_decisions = v.live_context.read_text(), v.decisions.read_text()
    hashes = [e.hash for e in entry.parse_entries(old_live)]
    (root / "memory" / "launch-date.md").write_text(OLD_FACT)
    own = OLD_FACT.replace("author: person\n", "author: person\naliases: [Go-live]\n")
    (root / "memory" / "go-live.md").write_text(own)
    cfg = root / "vaultmem.toml"
    cfg.write_text(re.sub(r"(?m)^format = \d+$", "format = 4", cfg.read_text()))

    dry = upgrade(Vault.open(root), dry_run=True)
    assert [s.name for s in dry.steps] == ["m005_obsidian_links"]
    assert v.live_context.read_text() == old_live  # a dry run writes nothing
    report = upgrade(Vault.open(root))
    changes = report.steps[0].changes
    assert "nexus/live-context.md: block ids for 3 entries" in changes
    assert "nexus/decisions.md: block ids for 1 entry" in changes
    assert (
        "memory/launch-date.md: aliases" in changes and "memory/go-live.md: aliases" not in changes
    )
    new_live = v.live_context.read_text()
    assert "· No body\n^ella-1\n<!-- vaultmem " in new_live
    assert "- of two\n\n^lyra-1\n<!-- vaultmem " in new_live
    assert "\nA person's note between entries.\n" in new_live
    assert "^ella-d1\n<!-- vaultmem " in v.decisions.read_text()
    # only lines were added: the old text is the new one without them
    assert re.sub(r"\n\^[a-z0-9-]+\n", "\n", new_live) == old_live
    assert [e.hash for e in entry.parse_entries(new_live)] == hashes  # nothing re-signed
    fresh = Vault.open(root)
    assert verify.verify(fresh).problems == ()
    assert notes.parse((root / "memory" / "launch-date.md").read_text()).meta["aliases"] == [
        "Launch date"
    ]
    assert (root / "memory" / "go-live.md").read_text() == own  # a person's aliases are theirs
    assert upgrade(fresh).steps == ()
    assert old_decisions != v.decisions.read_text()
