"""`vaultmem init`: create a vault from templates/, or adopt a folder that already holds notes.

Idempotent: running it again adds what is missing (a new agent, a new reviewer, a file someone
deleted) and never overwrites a file.
"""

from __future__ import annotations

from pathlib import Path

from vaultmem.app.lifecycle.upgrade import current_format
from vaultmem.core import clock
from vaultmem.core.config import (
    CONFIG_NAME,
    SUPPORTED_LANGUAGES,
    set_toml_key,
    toml_list,
)
from vaultmem.core.errors import UsageError, VaultError
from vaultmem.core.fsio import atomic_write, create_exclusive, read_text
from vaultmem.core.pins import load_config
from vaultmem.core.records import record
from vaultmem.core.templates import template
from vaultmem.core.vault import STATE_DIR, Vault, validate_name


@record
class InitResult:
    root: str
    created: tuple[str, ...]  # vault-relative paths of files created now
    agents_added: tuple[str, ...]
    reviewers_added: tuple[str, ...]
    adopted_notes: int  # markdown notes that were already there
    existed: bool  # a vaultmem.toml was already there
    git: str | None = None  # what `git=True` did (a new repository, or drivers registered)


def set_toml_names(text: str, key: str, names: list[str], path: Path) -> str:
    """Rewrite one top-level `key = [...]` array in place, keeping every other line."""
    return set_toml_key(text, key, list(names), path)


def _count_notes(root: Path) -> int:
    return sum(
        1
        for p in root.rglob("*.md")
        if not any(part.startswith(".") for part in p.relative_to(root).parts)
    )


def init(
    path: Path,
    *,
    agents: list[str],
    reviewers: list[str],
    language: str | None = None,
    git: bool = False,
) -> InitResult:
    """Create a vault at `path` (or add agents and reviewers to the one there); with `git`,
    also make it a git repository ready for `vaultmem sync`."""
    for name in agents:
        validate_name(name, "agent")
        if name == "all":  # `append --to all` means every agent
            raise UsageError(
                "'all' cannot be an agent's name", "it addresses every agent (--to all)"
            )
    for name in reviewers:
        validate_name(name, "reviewer")
    if language is not None and language not in SUPPORTED_LANGUAGES:
        raise UsageError(
            f"language {language!r} is not supported",
            f"use one of: {', '.join(SUPPORTED_LANGUAGES)}",
        )
    if path.exists() and not path.is_dir():
        raise VaultError(f"{path} is a file, not a folder", "pass a folder for the vault")
    root = path.resolve()
    root.mkdir(parents=True, exist_ok=True)
    adopted = _count_notes(root)
    config_path = root / CONFIG_NAME
    existed = config_path.exists()

    if existed:
        # the file's lists, not this machine's pins: init edits the file
        config = load_config(config_path, pinned=False)
        all_agents = list(config.agents)
        all_reviewers = list(config.reviewers)
    else:
        config = None
        all_agents, all_reviewers = [], []
    agents_added = tuple(a for a in dict.fromkeys(agents) if a not in all_agents)
    reviewers_added = tuple(r for r in dict.fromkeys(reviewers) if r not in all_reviewers)
    all_agents += agents_added
    all_reviewers += reviewers_added
    clash = sorted(set(all_agents) & set(all_reviewers))
    if clash:
        raise UsageError(
            f"{', '.join(clash)} cannot be both an agent and a reviewer",
            "reviewers are people; agents never approve their own facts",
        )
    if not all_agents:
        raise UsageError("a vault needs at least one agent", "pass --agent NAME")

    if existed:
        text = read_text(config_path, what="config")
        new_text = set_toml_names(
            set_toml_names(text, "agents", all_agents, config_path),
            "reviewers",
            all_reviewers,
            config_path,
        )
        if new_text != text:
            atomic_write(config_path, new_text)
    else:
        atomic_write(
            config_path,
            template(
                "vaultmem.toml",
                agents=toml_list(all_agents),
                reviewers=toml_list(all_reviewers),
                format=str(current_format()),
                language=language or "en",
            ),
        )

    vault = Vault.open(root)  # a vault this machine never saw is pinned as it is now
    if existed:
        from vaultmem.nexus.trust import pin_names  # what a person here added is trusted here

        pin_names(vault, agents=agents_added, reviewers=reviewers_added)
        vault = Vault.open(root)
    created: list[str] = [CONFIG_NAME] if not existed else []
    stamp = clock.stamp()

    def make(rel: str, content: str) -> None:
        target = vault.path(rel)
        if create_exclusive(target, content):
            created.append(rel)

    make("Start.md", template("Start.md"))
    from vaultmem.bank.review_page import review_page_text  # layer 2
    from vaultmem.bank.store import list_bank
    from vaultmem.core.vault import REVIEW_PAGE

    make(REVIEW_PAGE, review_page_text(list_bank(vault)))
    make("memory/MEMORY.md", template("memory/MEMORY.md"))
    for rel in ("nexus/live-context.md", "nexus/project-state.md", "nexus/decisions.md"):
        make(rel, template(rel))
    make(".gitignore", template("gitignore"))
    make(".gitattributes", template("gitattributes"))
    make(".obsidian/app.json", template("obsidian/app.json"))
    make(".obsidian/core-plugins.json", template("obsidian/core-plugins.json"))
    for agent in all_agents:
        make(
            f"agents/{agent}/IDENTITY.md", template("agent/IDENTITY.md", name=agent, created=stamp)
        )
        make(f"agents/{agent}/MEMORY.md", template("agent/MEMORY.md", name=agent))
    (root / STATE_DIR).mkdir(exist_ok=True)
    from vaultmem.nexus.keyring import ensure_key

    for agent in all_agents:
        # a key pair per agent; existing keys (and their keys.md lines) are never replaced
        made = ensure_key(vault, agent)
        if made is not None and made.public_path not in created:
            created.append(made.public_path)

    git_note = None
    if git:
        from vaultmem.app.sync.machines import init_git

        git_note = init_git(Vault.open(root))
    return InitResult(
        root=str(root),
        created=tuple(created),
        agents_added=agents_added,
        reviewers_added=reviewers_added,
        adopted_notes=adopted,
        existed=existed,
        git=git_note,
    )
