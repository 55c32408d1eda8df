"""`vaultmem setup RUNTIME`: merged into files people already have, byte for byte where
untouched, idempotent, and `--remove` gives the original files back."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import tomllib
from pathlib import Path

import pytest

from tests._cli import run_cli

# A person's own Claude Code settings: 4-space indent, their own hooks (one on SessionStart),
# permissions and env; an .mcp.json with their server; a CLAUDE.md without a final newline.
USER_SETTINGS = """{
    "permissions": {"allow": ["Bash(npm run test:*)"], "deny": []},
    "env": {"NODE_ENV": "development"},
    "hooks": {
        "SessionStart": [
            {
                "matcher": "startup",
                "hooks": [{"type": "command", "command": "echo 'hello from my hook'"}]
            }
        ],
        "PreToolUse": [
            {"matcher": "Bash", "hooks": [{"type": "command", "command": "./check.sh", "timeout": 5}]}
        ]
    },
    "model": "opus"
}
"""
USER_MCP = '{\n  "mcpServers": {\n    "github": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-github"]}\n  }\n}\n'
USER_CLAUDE_MD = "# Orbit\n\nUse pnpm, not npm.\n- Keep PRs small."
USER_CODEX = """model = "gpt-5.1-codex"
approval_policy = "on-request"

[mcp_servers.docs]
command = "npx"
args = ["-y", "mcp-docs"]

[profiles.fast]
model = "gpt-5.1-codex-mini"
"""
USER_AGENTS_MD = "# Agents\n\nRun `make test` before you commit.\n"


def setup(*args: str) -> tuple[int, str, str]:
    res = run_cli("setup", *args)
    return res.exit_code, res.stdout, res.stderr


@pytest.fixture
def project(tmp_path: Path) -> Path:
    folder = tmp_path / "orbit"
    (folder / ".claude").mkdir(parents=True)
    (folder / ".claude" / "settings.json").write_text(USER_SETTINGS)
    (folder / ".mcp.json").write_text(USER_MCP)
    (folder / "CLAUDE.md").write_text(USER_CLAUDE_MD)
    (folder / "AGENTS.md").write_text(USER_AGENTS_MD)
    return folder


def snapshot(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


def cc(vault: Path, project: Path, *extra: str) -> tuple[int, str, str]:
    return setup(
        "claude-code", "--agent", "ella", "--vault", str(vault), "--project", str(project), *extra
    )


def test_claude_code_merge_twice_then_remove(vault: Path, project: Path) -> None:
    before = snapshot(project)
    code, out, err = cc(vault, project)
    assert code == 0, err
    assert "updated:" in out and "Claude Code asks once" in out
    settings_text = (project / ".claude" / "settings.json").read_text()
    settings = json.loads(settings_text)
    # the person's keys and hooks are all there, unchanged
    assert settings["permissions"] == {"allow": ["Bash(npm run test:*)"], "deny": []}
    assert settings["model"] == "opus"
    # the person's env entry stays; ours give every hook and tool call the vault and agent
    assert settings["env"] == {
        "NODE_ENV": "development",
        "VAULTMEM_VAULT": str(vault.resolve()),
        "VAULTMEM_AGENT": "ella",
    }
    starts = settings["hooks"]["SessionStart"]
    assert starts[0]["hooks"][0]["command"] == "echo 'hello from my hook'"
    assert settings["hooks"]["PreToolUse"][0]["hooks"][0]["command"] == "./check.sh"
    # ours: one command handler per event, with a timeout
    for event, name in (
        ("SessionStart", "session-start"),
        ("UserPromptSubmit", "prompt"),
        ("PreCompact", "pre-compact"),
        ("Stop", "stop"),
        ("SessionEnd", "session-end"),
    ):
        ours = [
            h
            for group in settings["hooks"][event]
            for h in group["hooks"]
            if f" hook {name} " in h["command"]
        ]
        assert len(ours) == 1 and ours[0]["type"] == "command" and ours[0]["timeout"] > 5
        assert "--agent ella" in ours[0]["command"] and str(vault.resolve()) in ours[0]["command"]
    # the untouched part of the file is byte for byte what the person wrote
    assert settings_text.startswith(USER_SETTINGS.split('"env"')[0])
    assert '"model": "opus"\n}\n' in settings_text
    assert '            {\n                "matcher": "startup",' in settings_text
    mcp = json.loads((project / ".mcp.json").read_text())
    assert mcp["mcpServers"]["github"]["args"] == ["-y", "@modelcontextprotocol/server-github"]
    assert mcp["mcpServers"]["vaultmem"]["args"][-4:] == [
        "--vault",
        str(vault.resolve()),
        "--agent",
        "ella",
    ]
    md = (project / "CLAUDE.md").read_text()
    assert md.startswith(USER_CLAUDE_MD + "\n\n<!-- vaultmem:start")
    assert "You are agent `ella`" in md and md.endswith("<!-- vaultmem:end -->\n")
    # the commands the block gives run as written: this vaultmem by absolute path, with
    # the vault and the agent (exit 127 / exit 3 otherwise)
    exe = mcp["mcpServers"]["vaultmem"]["command"]
    assert Path(exe).is_absolute() and f"`{exe} read --vault {vault.resolve()} --agent ella`" in md
    once = snapshot(project)
    code, _out, err = cc(vault, project)
    assert code == 0, err
    assert snapshot(project) == once  # idempotent: no duplicates, nothing rewritten
    code, out, err = cc(vault, project, "--remove")
    assert code == 0, err
    assert snapshot(project) == before  # exactly what the person had


def test_claude_code_on_an_empty_project(vault: Path, tmp_path: Path) -> None:
    empty = tmp_path / "fresh"
    empty.mkdir()
    assert cc(vault, empty)[0] == 0
    assert sorted(snapshot(empty)) == [".claude/settings.json", ".mcp.json", "CLAUDE.md"]
    assert cc(vault, empty, "--remove")[0] == 0
    assert list(empty.iterdir()) == []


def test_rerun_for_another_agent_updates_in_place(vault: Path, project: Path) -> None:
    cc(vault, project)
    run_cli(
        "setup", "claude-code", "--agent", "lyra", "--vault", str(vault), "--project", str(project)
    )
    text = (project / ".claude" / "settings.json").read_text()
    assert "--agent lyra" in text and "--agent ella" not in text
    assert text.count("hook session-start") == 1
    assert "You are agent `lyra`" in (project / "CLAUDE.md").read_text()


def test_dry_run_prints_a_diff_and_writes_nothing(vault: Path, project: Path) -> None:
    before = snapshot(project)
    code, out, _err = cc(vault, project, "--dry-run")
    assert code == 0 and snapshot(project) == before
    assert "+++ " in out and '+                        "type": "command",' in out
    assert "(dry run: nothing was written)" in out


def test_broken_settings_are_left_alone(vault: Path, project: Path) -> None:
    (project / ".claude" / "settings.json").write_text('{"hooks": {,}')
    before = snapshot(project)
    code, _out, err = cc(vault, project)
    assert code == 5 and "not valid JSON" in err and snapshot(project) == before


def test_someone_elses_server_named_vaultmem_is_refused(vault: Path, project: Path) -> None:
    (project / ".mcp.json").write_text(
        '{"mcpServers": {"vaultmem": {"command": "my-own-thing"}}}\n'
    )
    before = snapshot(project)
    code, _out, err = cc(vault, project)
    assert code == 8 and "not vaultmem's" in err and snapshot(project) == before


def test_user_scope(vault: Path, project: Path, isolated_env: Path) -> None:
    code, out, err = cc(vault, project, "--scope", "user")
    assert code == 0, err
    home = isolated_env
    settings = json.loads((home / ".claude" / "settings.json").read_text())
    assert "UserPromptSubmit" in settings["hooks"]
    assert (home / ".claude" / "CLAUDE.md").exists()
    assert "claude mcp add --scope user vaultmem --" in out
    assert (project / ".mcp.json").read_text() == USER_MCP
    assert cc(vault, project, "--scope", "user", "--remove")[0] == 0
    assert not (home / ".claude").exists()


def test_the_written_hooks_run(vault: Path, project: Path) -> None:
    """The commands in settings.json are real commands: run one as Claude Code would."""
    cc(vault, project)
    settings = json.loads((project / ".claude" / "settings.json").read_text())
    (command,) = [
        h["command"]
        for g in settings["hooks"]["SessionStart"]
        for h in g["hooks"]
        if "vaultmem" in h["command"]
    ]
    proc = subprocess.run(
        ["bash", "-c", command],
        input=json.dumps(
            {"session_id": "s", "hook_event_name": "SessionStart", "source": "startup"}
        ),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert (
        "Session context for ella"
        in json.loads(proc.stdout)["hookSpecificOutput"]["additionalContext"]
    )
    assert shlex.split(command)[1:3] == ["hook", "session-start"]


def test_plugin_folder(vault: Path, tmp_path: Path) -> None:
    folder = tmp_path / "vaultmem-plugin"
    code, out, err = setup(
        "claude-code", "--agent", "ella", "--vault", str(vault), "--plugin", str(folder)
    )
    assert code == 0, err
    manifest = json.loads((folder / ".claude-plugin" / "plugin.json").read_text())
    assert manifest["name"] == "vaultmem"
    market = json.loads((folder / ".claude-plugin" / "marketplace.json").read_text())
    assert market["plugins"][0]["source"] == "./"
    hooks = json.loads((folder / "hooks" / "hooks.json").read_text())["hooks"]
    assert set(hooks) == {"SessionStart", "UserPromptSubmit", "PreCompact", "Stop", "SessionEnd"}
    assert "vaultmem" in json.loads((folder / ".mcp.json").read_text())["mcpServers"]
    assert "claude --plugin-dir" in out
    again = snapshot(folder)
    setup("claude-code", "--agent", "ella", "--vault", str(vault), "--plugin", str(folder))
    assert snapshot(folder) == again
    (folder / "README.md").write_text("mine\n")
    setup(
        "claude-code", "--agent", "ella", "--vault", str(vault), "--plugin", str(folder), "--remove"
    )
    assert snapshot(folder) == {"README.md": b"mine\n"}


def codex(vault: Path, project: Path, *extra: str) -> tuple[int, str, str]:
    return setup(
        "codex", "--agent", "lyra", "--vault", str(vault), "--project", str(project), *extra
    )


def test_codex_merge_twice_then_remove(
    vault: Path, project: Path, isolated_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = isolated_env / "codex-home"
    home.mkdir()
    (home / "config.toml").write_text(USER_CODEX)
    monkeypatch.setenv("CODEX_HOME", str(home))
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-not-for-config")
    before = snapshot(home), snapshot(project)
    code, _out, err = codex(vault, project, "--scope", "user")
    assert code == 0, err
    config = (home / "config.toml").read_text()
    assert "sk-not-for-config" not in config
    assert config.startswith(USER_CODEX + "\n# vaultmem:start")
    data = tomllib.loads(config)
    assert data["mcp_servers"]["docs"]["command"] == "npx"
    assert data["mcp_servers"]["vaultmem"]["args"][-2:] == ["--agent", "lyra"]
    # Codex starts the server with a filtered environment: the table carries what it needs
    assert data["mcp_servers"]["vaultmem"]["env"] == {
        "VAULTMEM_HOME": str((isolated_env / "vaultmem-home").resolve()),
        "VAULTMEM_VAULT": str(vault.resolve()),
        "VAULTMEM_AGENT": "lyra",
    }
    assert data["profiles"]["fast"]["model"] == "gpt-5.1-codex-mini"
    agents = (project / "AGENTS.md").read_text()
    assert agents.startswith(USER_AGENTS_MD + "\n<!-- vaultmem:start") and "agent `lyra`" in agents
    # shell tool calls get the vault and the agent; the hooks feature is on
    assert data["shell_environment_policy"]["set"] == {
        "VAULTMEM_VAULT": str(vault.resolve()),
        "VAULTMEM_AGENT": "lyra",
    }
    assert data["features"]["hooks"] is True
    # the lifecycle hooks, in hooks.json next to config.toml (developers.openai.com/codex/hooks)
    hooks = json.loads((home / "hooks.json").read_text())["hooks"]
    assert sorted(hooks) == ["PreCompact", "SessionStart", "Stop", "UserPromptSubmit"]
    for event, name in (
        ("SessionStart", "session-start"),
        ("UserPromptSubmit", "prompt"),
        ("PreCompact", "pre-compact"),
        ("Stop", "stop"),
    ):
        ((handler,),) = [g["hooks"] for g in hooks[event]]
        assert handler["type"] == "command" and f" hook {name} " in handler["command"]
        assert handler["command"].endswith(f"--vault {vault.resolve()} --agent lyra")
    once = snapshot(home), snapshot(project)
    assert codex(vault, project, "--scope", "user")[0] == 0
    assert (snapshot(home), snapshot(project)) == once
    assert codex(vault, project, "--scope", "user", "--remove")[0] == 0
    assert (snapshot(home), snapshot(project)) == before


def test_codex_refuses_a_server_of_the_same_name(
    vault: Path, project: Path, isolated_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = isolated_env / ".codex"
    home.mkdir()
    (home / "config.toml").write_text('[mcp_servers.vaultmem]\ncommand = "elsewhere"\n')
    before = snapshot(home)
    code, _out, err = codex(vault, project, "--scope", "user")
    assert code == 8 and "outside vaultmem's block" in err and snapshot(home) == before


def test_codex_leaves_the_tables_a_person_has_to_them(
    vault: Path, project: Path, isolated_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A [features] or [shell_environment_policy] table of the person's cannot be opened
    again in vaultmem's block: setup says what to add instead, and the file stays valid."""
    home = isolated_env / "codex-home"
    home.mkdir()
    mine = '[features]\nweb_search = true\n\n[shell_environment_policy]\ninherit = "core"\nset = { A = "1" }\n'
    (home / "config.toml").write_text(mine)
    monkeypatch.setenv("CODEX_HOME", str(home))
    code, out, err = codex(vault, project, "--scope", "user")
    assert code == 0, err
    data = tomllib.loads((home / "config.toml").read_text())
    assert data["features"] == {"web_search": True} and data["shell_environment_policy"]["set"] == {
        "A": "1"
    }
    assert "add hooks = true to it" in out and "VAULTMEM_AGENT" in out
    assert codex(vault, project, "--scope", "user", "--remove")[0] == 0
    assert (home / "config.toml").read_text() == mine


def test_codex_project_scope(vault: Path, project: Path) -> None:
    assert codex(vault, project, "--scope", "project")[0] == 0
    data = tomllib.loads((project / ".codex" / "config.toml").read_text())
    assert "vaultmem" in data["mcp_servers"]
    assert codex(vault, project, "--scope", "project", "--remove")[0] == 0
    assert not (project / ".codex").exists()


def test_codex_two_projects_keep_their_own_wiring(
    vault: Path, tmp_path: Path, isolated_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 37: wiring lyra in a second project must not take ella's hooks from the first.
    The default scope is the project's `.codex/` (Codex loads it in a trusted project,
    developers.openai.com/codex/hooks); the user-wide files, which wire one agent for every
    project, refuse another agent (exit 8, nothing changed) and say the way out."""
    home = isolated_env / "codex-home"
    home.mkdir()
    monkeypatch.setenv("CODEX_HOME", str(home))
    api, web = tmp_path / "api", tmp_path / "web"
    api.mkdir()
    web.mkdir()
    args = ("codex", "--vault", str(vault))
    code, out, err = setup(*args, "--agent", "ella", "--project", str(api))
    assert code == 0, err
    assert "trusted project" in out and "codex exec --trust" in out
    ella = snapshot(api)
    assert setup(*args, "--agent", "lyra", "--project", str(web))[0] == 0
    assert snapshot(api) == ella and snapshot(home) == {}
    for folder, agent in ((api, "ella"), (web, "lyra")):
        hooks = json.loads((folder / ".codex" / "hooks.json").read_text())["hooks"]
        (command,) = [h["command"] for g in hooks["SessionStart"] for h in g["hooks"]]
        assert command.endswith(f"--agent {agent}")
        server = tomllib.loads((folder / ".codex" / "config.toml").read_text())["mcp_servers"]
        assert server["vaultmem"]["args"][-1] == agent
        assert f"agent `{agent}`" in (folder / "AGENTS.md").read_text()

    # user scope: one agent for every project; another is refused, not swapped in
    assert setup(*args, "--agent", "ella", "--project", str(api), "--scope", "user")[0] == 0
    wired = snapshot(home), snapshot(web)
    code, _out, err = setup(*args, "--agent", "lyra", "--project", str(web), "--scope", "user")
    assert code == 8 and "already wires agent 'ella'" in err
    assert "--scope project" in err and "--scope user --remove" in err
    assert (snapshot(home), snapshot(web)) == wired
    # the same agent again is fine, and a project's own wiring is told of the user-wide one
    assert setup(*args, "--agent", "ella", "--project", str(api), "--scope", "user")[0] == 0
    code, out, _err = setup(*args, "--agent", "lyra", "--project", str(web))
    assert code == 0 and "also wires agent 'ella'" in out


def test_cursor_merge_twice_then_remove(vault: Path, project: Path) -> None:
    (project / ".cursor").mkdir()
    (project / ".cursor" / "mcp.json").write_text(USER_MCP)
    before = snapshot(project)
    args = ("cursor", "--agent", "ella", "--vault", str(vault), "--project", str(project))
    assert setup(*args)[0] == 0
    rule = (project / ".cursor" / "rules" / "vaultmem.mdc").read_text()
    assert rule.startswith("---\ndescription:") and "alwaysApply: true" in rule
    servers = json.loads((project / ".cursor" / "mcp.json").read_text())["mcpServers"]
    assert set(servers) == {"github", "vaultmem"}
    once = snapshot(project)
    assert setup(*args)[0] == 0 and snapshot(project) == once
    assert setup(*args, "--remove")[0] == 0
    assert snapshot(project) == before and not (project / ".cursor" / "rules").exists()


def test_cursor_leaves_a_rule_it_did_not_write(vault: Path, project: Path) -> None:
    rules = project / ".cursor" / "rules"
    rules.mkdir(parents=True)
    (rules / "vaultmem.mdc").write_text("my own rule\n")
    code, _out, err = setup(
        "cursor", "--agent", "ella", "--vault", str(vault), "--project", str(project)
    )
    assert code == 8 and "not written by vaultmem" in err
    assert (rules / "vaultmem.mdc").read_text() == "my own rule\n"


def test_generic_prints_instructions_and_mcp_json(vault: Path) -> None:
    code, out, _err = setup("generic", "--agent", "ella", "--vault", str(vault))
    assert code == 0 and "You are agent `ella`" in out
    snippet = json.loads(out[out.index("{") :])
    assert (
        snippet["mcpServers"]["vaultmem"]["args"][0:1] == ["mcp"]
        or "mcp" in snippet["mcpServers"]["vaultmem"]["args"]
    )


def test_setup_needs_a_known_agent(vault: Path, project: Path) -> None:
    code, _out, err = setup(
        "claude-code", "--agent", "bob", "--vault", str(vault), "--project", str(project)
    )
    assert code == 4 and "unknown agent" in err
    code, _out, err = setup("claude-code", "--vault", str(vault), "--project", str(project))
    assert code == 2 and "--agent" in err


def test_a_symlinked_settings_file_is_edited_where_it_points(
    vault: Path, project: Path, tmp_path: Path
) -> None:
    """Dotfiles keep `.claude/settings.json` as a link into a dotfiles repository: setup edits
    the file the link points at and leaves the link a link; --remove restores its bytes and
    never deletes the file behind the link (issue 22)."""
    dotfiles = tmp_path / "dotfiles" / "claude-settings.json"
    dotfiles.parent.mkdir()
    link = project / ".claude" / "settings.json"
    dotfiles.write_text(link.read_text())
    link.unlink()
    link.symlink_to(dotfiles)
    before = dotfiles.read_bytes()
    code, _out, err = cc(vault, project)
    assert code == 0, err
    assert link.is_symlink() and Path(os.readlink(link)) == dotfiles
    assert "vaultmem" in dotfiles.read_text() and "hook" in dotfiles.read_text()
    code, _out, err = cc(vault, project, "--remove")
    assert code == 0, err
    assert link.is_symlink() and dotfiles.read_bytes() == before


def test_a_dangling_settings_link_is_refused(vault: Path, project: Path, tmp_path: Path) -> None:
    link = project / ".claude" / "settings.json"
    link.unlink()
    link.symlink_to(tmp_path / "nowhere.json")
    before = snapshot(project)
    code, _out, err = cc(vault, project)
    assert code == 8 and "is a link to" in err and snapshot(project) == before
    assert link.is_symlink() and not (tmp_path / "nowhere.json").exists()


def test_a_read_only_file_is_refused_not_replaced(vault: Path, project: Path) -> None:
    settings = project / ".claude" / "settings.json"
    settings.chmod(0o444)
    before = snapshot(project)
    try:
        code, _out, err = cc(vault, project)  # refused by its mode, even when run as root
        assert code == 8 and "read-only" in err and snapshot(project) == before
        assert oct(settings.stat().st_mode & 0o777) == "0o444"
    finally:
        settings.chmod(0o644)


def test_duplicate_keys_are_refused(vault: Path, project: Path) -> None:
    """Two "hooks" members in one object: parsers keep one, so an edit to the other would
    install nothing and still exit 0. Setup refuses and changes nothing (issue 22)."""
    settings = project / ".claude" / "settings.json"
    settings.write_text('{"hooks": {}, "model": "x", "hooks": {"Stop": []}}\n')
    before = snapshot(project)
    code, _out, err = cc(vault, project)
    assert code == 5 and "'hooks' twice" in err and snapshot(project) == before


def test_a_persons_own_handler_for_another_vault_is_theirs(vault: Path, project: Path) -> None:
    """A person's own `vaultmem hook stop --vault /other` handler is not setup's: setup adds
    its own Stop handler next to it, and --remove takes out only what setup wrote (issue 22)."""
    settings = project / ".claude" / "settings.json"
    mine = {"type": "command", "command": "vaultmem hook stop --vault /srv/other --agent ops"}
    data = json.loads(settings.read_text())
    data.setdefault("hooks", {})["Stop"] = [{"hooks": [mine]}]
    settings.write_text(json.dumps(data, indent=4) + "\n")
    before = settings.read_bytes()
    code, _out, err = cc(vault, project)
    assert code == 0, err
    stops = [h for g in json.loads(settings.read_text())["hooks"]["Stop"] for h in g["hooks"]]
    assert mine in stops and len(stops) == 2
    assert any(str(vault.resolve()) in h["command"] for h in stops if h != mine)
    code, _out, err = cc(vault, project, "--remove")
    assert code == 0, err
    assert settings.read_bytes() == before


def test_remove_keeps_an_empty_folder_the_person_had(vault: Path, tmp_path: Path) -> None:
    """An empty `.cursor/` made by the person stays after `setup cursor --remove`; the folders
    setup made itself (`.cursor/rules/`) go (issue 22)."""
    folder = tmp_path / "app"
    (folder / ".cursor").mkdir(parents=True)
    args = ("cursor", "--agent", "ella", "--vault", str(vault), "--project", str(folder))
    assert setup(*args)[0] == 0
    assert (folder / ".cursor" / "rules").is_dir()
    assert setup(*args, "--remove")[0] == 0
    assert (folder / ".cursor").is_dir() and list((folder / ".cursor").iterdir()) == []
