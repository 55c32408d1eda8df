"""Vault discovery, config, safe paths and init."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from vaultmem.app.lifecycle.scaffold import init, set_toml_names
from vaultmem.core.config import Config, parse_config
from vaultmem.core.errors import (
    ConfigError,
    PathOutsideVaultError,
    UnknownAgentError,
    UsageError,
    VaultNotFoundError,
)
from vaultmem.core.vault import Vault, find_vault, validate_name


def test_find_vault_walks_up(vault: Path) -> None:
    deep = vault / "wiki" / "sub"
    deep.mkdir(parents=True)
    assert find_vault(None, start=deep) == vault.resolve()


def test_find_vault_explicit_missing(tmp_path: Path) -> None:
    with pytest.raises(VaultNotFoundError, match="no vault at"):
        find_vault(tmp_path / "nope")


def test_find_vault_nothing_above(tmp_path: Path) -> None:
    with pytest.raises(VaultNotFoundError, match="no vault found"):
        find_vault(None, start=tmp_path)


@pytest.mark.parametrize(
    "rel",
    ["../x.md", "memory/../../x.md", "/etc/passwd", "~/x.md", "a\x00b.md", "a\\..\\b.md", ""],
)
def test_safe_path_refuses(vault: Path, rel: str) -> None:
    v = Vault.open(vault)
    with pytest.raises(PathOutsideVaultError):
        v.path(rel)


@pytest.mark.parametrize("rel", ["../x.md", "memory/../../x.md", "memory/../wiki/x.md", "a/.."])
def test_a_path_with_dot_dot_is_refused_for_what_it_is(vault: Path, rel: str) -> None:
    """`..` is refused as such, even when it would land inside the vault: names are plain, and
    the message names the real cause (not a symlink)."""
    with pytest.raises(PathOutsideVaultError, match=r"climbs out with '\.\.'"):
        Vault.open(vault).path(rel)


def test_safe_path_refuses_symlink_out(vault: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    os.symlink(outside, vault / "memory" / "escape")
    os.symlink(outside / "f.md", vault / "memory" / "f.md")
    v = Vault.open(vault)
    with pytest.raises(PathOutsideVaultError, match="symlink"):
        v.path("memory/escape/x.md")
    with pytest.raises(PathOutsideVaultError, match="symlink"):
        v.path("memory/f.md")


def test_safe_path_allows_symlink_inside(vault: Path) -> None:
    os.symlink(vault / "wiki", vault / "wiki-link")
    v = Vault.open(vault)
    assert v.path("wiki-link/Glossary.md").name == "Glossary.md"


@pytest.mark.parametrize("name", ["Ella", "ella!", "../x", "a/b", "", "-x", "x" * 41, "é"])
def test_invalid_agent_names(name: str) -> None:
    with pytest.raises(UsageError, match="invalid agent name"):
        validate_name(name)


def test_require_agent_lists_known(vault: Path) -> None:
    v = Vault.open(vault)
    with pytest.raises(UnknownAgentError) as info:
        v.require_agent("bob")
    assert "ella" in str(info.value) and "lyra" in str(info.value)


def test_config_defaults_and_errors(tmp_path: Path) -> None:
    cfg = parse_config('agents = ["a"]\n', tmp_path / "vaultmem.toml")
    assert cfg == Config(agents=("a",))
    with pytest.raises(ConfigError, match="not valid TOML"):
        parse_config("agents = [", tmp_path / "vaultmem.toml")
    with pytest.raises(ConfigError, match="unknown key"):
        parse_config("[log]\nbogus = 1\n", tmp_path / "vaultmem.toml")
    with pytest.raises(ConfigError, match="must be float"):
        parse_config('[log]\nlock_timeout = "x"\n', tmp_path / "vaultmem.toml")
    with pytest.raises(ConfigError, match="language"):
        parse_config('language = "xx"\n', tmp_path / "vaultmem.toml")


def test_init_creates_layout(tmp_path: Path) -> None:
    result = init(tmp_path / "v", agents=["ella"], reviewers=["chiara"])
    root = Path(result.root)
    for rel in (
        "vaultmem.toml",
        "agents/ella/IDENTITY.md",
        "memory/MEMORY.md",
        "nexus/live-context.md",
        "nexus/project-state.md",
        "nexus/decisions.md",
        ".gitignore",
        ".obsidian/app.json",
    ):
        assert (root / rel).is_file(), rel
    assert ".vaultmem/" in (root / ".gitignore").read_text()
    v = Vault.open(root)
    assert v.config.agents == ("ella",) and v.config.reviewers == ("chiara",)


def test_init_is_idempotent_and_never_overwrites(tmp_path: Path) -> None:
    root = tmp_path / "v"
    init(root, agents=["ella"], reviewers=[])
    identity = root / "agents/ella/IDENTITY.md"
    identity.write_text("my own words\n")
    (root / "vaultmem.toml").write_text(
        (root / "vaultmem.toml").read_text() + "\n# a comment a person added\n"
    )
    again = init(root, agents=["ella", "lyra"], reviewers=["chiara"])
    assert identity.read_text() == "my own words\n"
    assert again.agents_added == ("lyra",) and again.reviewers_added == ("chiara",)
    assert "agents/lyra/IDENTITY.md" in again.created
    text = (root / "vaultmem.toml").read_text()
    assert "# a comment a person added" in text
    assert Vault.open(root).config.agents == ("ella", "lyra")
    third = init(root, agents=["ella"], reviewers=[])
    assert not [c for c in third.created if not c.startswith(".vaultmem")]


def test_init_adopts_existing_notes(tmp_path: Path) -> None:
    root = tmp_path / "notes"
    root.mkdir()
    (root / "todo.md").write_text("# Todo\n")
    (root / "memory").mkdir()
    (root / "memory" / "MEMORY.md").write_text("# Mine\n")
    result = init(root, agents=["ella"], reviewers=[])
    assert result.adopted_notes == 2
    assert (root / "todo.md").read_text() == "# Todo\n"
    assert (root / "memory" / "MEMORY.md").read_text() == "# Mine\n"


def test_init_refuses_agent_reviewer_clash(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="both an agent and a reviewer"):
        init(tmp_path / "v", agents=["ella"], reviewers=["ella"])
    assert not (tmp_path / "v" / "vaultmem.toml").exists()


def test_set_toml_names_keeps_other_lines() -> None:
    text = '# hi\nagents = ["a",\n  "b"]\nreviewers = []\n\n[log]\nlock_timeout = 1.0\n'
    where = Path("vaultmem.toml")
    out = set_toml_names(text, "agents", ["a", "b", "c"], where)
    # the list keeps its own layout: a new item follows the last one, in its style
    assert out.startswith('# hi\nagents = ["a",\n  "b",\n  "c"]\nreviewers = []')
    out = set_toml_names("[log]\nlock_timeout = 1\n", "agents", ["a"], where)
    assert out.startswith('agents = ["a"]\n\n[log]')
    # a key inside a table is not the top-level key
    out = set_toml_names("[bank]\nread_limit = 3\n", "reviewers", ["c"], where)
    assert out == 'reviewers = ["c"]\n\n[bank]\nread_limit = 3\n'


def test_init_enables_the_core_plugins_a_vault_needs(tmp_path: Path) -> None:
    """Obsidian's current format (an object of plugin id -> enabled), with the plugins a person
    reviewing an agent's vault relies on: search, backlinks, properties, the command palette,
    file recovery (snapshots of notes an agent or a sync changed), bookmarks, the outline."""
    import json

    from vaultmem.app.lifecycle.scaffold import init

    init(tmp_path / "v", agents=["ella"], reviewers=["chiara"])
    plugins = json.loads((tmp_path / "v/.obsidian/core-plugins.json").read_text())
    assert isinstance(plugins, dict) and all(isinstance(v, bool) for v in plugins.values())
    wanted = {"file-explorer", "global-search", "switcher", "backlink", "outgoing-link",
              "tag-pane", "properties", "page-preview", "command-palette", "file-recovery",
              "bookmarks", "outline", "editor-status", "word-count"}  # fmt: skip
    assert {k for k, on in plugins.items() if on} >= wanted
    assert plugins["sync"] is False and plugins["publish"] is False
