"""`vaultmem setup openclaw`: vaultmem's memory plugin and MCP server spliced into a person's
openclaw.json, idempotent, `--dry-run` a diff, `--remove` the file back byte for byte; the
plugin folder shipped as package data; OpenClaw session transcripts read as turns.

The config shapes follow OpenClaw 2026.9.6's docs (node_modules/openclaw/docs/:
gateway/config-extensions.md "Plugins", tools/plugin.md "Configure plugin policy",
plugins/hooks.md "Permissions and scope", cli/mcp/registry.md)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests._cli import run_cli
from vaultmem.app.setup.openclaw import PLUGIN_DIR, PLUGIN_ID, config_path

# A person's own OpenClaw config: their model provider, another memory plugin in the slot, an
# allowlist, a local plugin of theirs, an MCP server of theirs; 4-space indent, no final newline.
USER_CONFIG = """{
    "agents": {"defaults": {"model": {"primary": "anthropic/claude-sonnet-4-6"}}},
    "plugins": {
        "allow": ["memory-lancedb", "voice-call"],
        "load": {"paths": ["~/src/voice-call-plugin"]},
        "slots": {"memory": "memory-lancedb"},
        "entries": {
            "memory-lancedb": {"enabled": true, "config": {"embedding": {"provider": "openai"}}}
        }
    },
    "mcp": {"servers": {"context7": {"command": "uvx", "args": ["context7-mcp"]}}}
}"""


@pytest.fixture(autouse=True)
def _no_openclaw_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENCLAW_CONFIG_PATH", "OPENCLAW_STATE_DIR", "OPENCLAW_HOME"):
        monkeypatch.delenv(name, raising=False)


def setup(*args: str) -> tuple[int, str, str]:
    res = run_cli("setup", "openclaw", *args)
    return res.exit_code, res.stdout, res.stderr


def config_file() -> Path:
    return Path.home() / ".openclaw" / "openclaw.json"


def person_config() -> Path:
    path = config_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(USER_CONFIG)
    return path


def test_merge_twice_then_remove_gives_the_file_back(vault: Path) -> None:
    path = person_config()
    code, out, err = setup("--agent", "ella", "--vault", str(vault))
    assert code == 0, err
    assert "memory-lancedb" in out  # the note: the slot it took, and how to get it back
    data = json.loads(path.read_text())
    plugins = data["plugins"]
    assert plugins["slots"]["memory"] == PLUGIN_ID
    assert plugins["load"]["paths"] == ["~/src/voice-call-plugin", str(PLUGIN_DIR)]
    assert plugins["allow"] == [
        "memory-lancedb",
        "voice-call",
        PLUGIN_ID,
    ]  # an allowlist loads only what it names
    entry = plugins["entries"][PLUGIN_ID]
    assert entry["enabled"] is True
    assert entry["hooks"] == {"allowConversationAccess": True}
    config = entry["config"]
    assert config["command"] == [sys.executable, "-I", "-m", "vaultmem"]
    assert config["vault"] == str(vault.resolve()) and config["agent"] == "ella"
    assert config["previousMemorySlot"] == "memory-lancedb" and config["addedToAllow"] is True
    assert plugins["entries"]["memory-lancedb"]["config"]["embedding"] == {"provider": "openai"}
    server = data["mcp"]["servers"]["vaultmem"]
    assert server["command"] == sys.executable
    assert server["args"][-5:] == ["mcp", "--vault", str(vault.resolve()), "--agent", "ella"]
    assert data["mcp"]["servers"]["context7"] == {"command": "uvx", "args": ["context7-mcp"]}
    # the person's bytes are where they were: their lines, their indentation
    text = path.read_text()
    assert text.startswith(
        '{\n    "agents": {"defaults": {"model": {"primary": "anthropic/claude-sonnet-4-6"}}},'
    )
    assert '        "slots": {"memory": "vaultmem"},' in text

    once = path.read_bytes()
    code, _out, err = setup("--agent", "ella", "--vault", str(vault))
    assert code == 0, err
    assert path.read_bytes() == once  # a re-run changes nothing

    code, out, err = setup("--agent", "ella", "--vault", str(vault), "--remove")
    assert code == 0, err
    assert path.read_text() == USER_CONFIG  # byte for byte, the memory slot given back
    code, _out, err = setup("--agent", "ella", "--vault", str(vault), "--remove")
    assert code == 0 and path.read_text() == USER_CONFIG  # removing twice is harmless


def test_rerun_for_another_agent_updates_in_place(vault: Path) -> None:
    path = person_config()
    assert setup("--agent", "ella", "--vault", str(vault))[0] == 0
    assert setup("--agent", "lyra", "--vault", str(vault))[0] == 0
    data = json.loads(path.read_text())
    assert data["plugins"]["entries"][PLUGIN_ID]["config"]["agent"] == "lyra"
    assert data["plugins"]["entries"][PLUGIN_ID]["config"]["previousMemorySlot"] == "memory-lancedb"
    assert data["plugins"]["load"]["paths"].count(str(PLUGIN_DIR)) == 1
    assert data["plugins"]["allow"].count(PLUGIN_ID) == 1
    assert data["mcp"]["servers"]["vaultmem"]["args"][-1] == "lyra"
    assert setup("--agent", "lyra", "--vault", str(vault), "--remove")[0] == 0
    assert path.read_text() == USER_CONFIG


def test_no_config_yet_then_remove(vault: Path) -> None:
    """No openclaw.json (OpenClaw's defaults): setup creates it with its own keys only, and
    --remove deletes it and the ~/.openclaw folder it made."""
    path = config_file()
    code, _out, err = setup("--agent", "ella", "--vault", str(vault))
    assert code == 0, err
    data = json.loads(path.read_text())
    assert set(data) == {"plugins", "mcp"}
    assert "allow" not in data["plugins"]  # no allowlist of ours: it would block every other plugin
    assert "previousMemorySlot" not in data["plugins"]["entries"][PLUGIN_ID]["config"]
    assert setup("--agent", "ella", "--vault", str(vault), "--remove")[0] == 0
    assert not path.exists() and not path.parent.exists()


def test_dry_run_prints_a_diff_and_writes_nothing(vault: Path) -> None:
    path = person_config()
    code, out, err = setup("--agent", "ella", "--vault", str(vault), "--dry-run")
    assert code == 0, err
    assert f"+++ {path}" in out and '+            "vaultmem": {' in out
    assert "(dry run: nothing was written)" in out
    assert path.read_text() == USER_CONFIG
    setup("--agent", "ella", "--vault", str(vault))
    code, out, err = setup("--agent", "ella", "--vault", str(vault), "--remove", "--dry-run")
    assert code == 0, err
    assert (
        '-            "vaultmem": {' in out
        and '+        "slots": {"memory": "memory-lancedb"},' in out
    )
    assert path.read_text() != USER_CONFIG  # still installed


def test_the_config_path_follows_openclaws_variables(
    vault: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    state = tmp_path / "claw-state"
    monkeypatch.setenv("OPENCLAW_STATE_DIR", str(state))
    assert config_path() == state / "openclaw.json"
    elsewhere = tmp_path / "conf" / "oc.json"
    monkeypatch.setenv("OPENCLAW_CONFIG_PATH", str(elsewhere))
    assert config_path() == elsewhere
    code, _out, err = setup("--agent", "ella", "--vault", str(vault))
    assert code == 0, err
    assert json.loads(elsewhere.read_text())["plugins"]["slots"]["memory"] == PLUGIN_ID
    explicit = tmp_path / "explicit.json"
    code, _out, err = setup("--agent", "ella", "--vault", str(vault), "--config", str(explicit))
    assert code == 0, err
    assert explicit.exists()


def test_a_plugin_entry_or_server_named_vaultmem_that_is_not_ours_is_refused(vault: Path) -> None:
    path = config_file()
    path.parent.mkdir(parents=True)
    theirs = '{"plugins": {"entries": {"vaultmem": {"enabled": true, "config": {"x": 1}}}}}\n'
    path.write_text(theirs)
    code, _out, err = setup("--agent", "ella", "--vault", str(vault))
    assert code == 8, err
    assert "not vaultmem's" in err and path.read_text() == theirs
    theirs = '{"mcp": {"servers": {"vaultmem": {"command": "npx", "args": ["other"]}}}}\n'
    path.write_text(theirs)
    code, _out, err = setup("--agent", "ella", "--vault", str(vault))
    assert code == 8, err
    assert "MCP server" in err and path.read_text() == theirs


# OpenClaw's config as its docs write it: JSON5 (comments, unquoted keys, single quotes,
# trailing commas), docs/gateway/config-extensions.md
USER_JSON5 = """// ~/.openclaw/openclaw.json
{
  agents: { defaults: { model: { primary: 'anthropic/claude-sonnet-4-6' } } }, // my model
  /* the gateway stays on loopback */
  gateway: { port: 18789, bind: "loopback", },
  plugins: {
    slots: { memory: "memory-core", },
    entries: { "voice-call": { enabled: false } },
  },
}
"""


def test_a_json5_config_keeps_its_comments_and_comes_back_byte_for_byte(vault: Path) -> None:
    path = config_file()
    path.parent.mkdir(parents=True)
    path.write_text(USER_JSON5)
    code, _out, err = setup("--agent", "ella", "--vault", str(vault))
    assert code == 0, err
    text = path.read_text()
    assert "// my model" in text and "/* the gateway stays on loopback */" in text
    from vaultmem.app.setup import json5edit

    data = json5edit.value_of(text, json5edit.parse(text))
    assert data["gateway"] == {"port": 18789, "bind": "loopback"}
    assert data["plugins"]["slots"]["memory"] == PLUGIN_ID
    assert data["plugins"]["entries"][PLUGIN_ID]["config"]["previousMemorySlot"] == "memory-core"
    assert data["plugins"]["entries"]["voice-call"] == {"enabled": False}
    assert setup("--agent", "ella", "--vault", str(vault))[0] == 0
    assert path.read_text() == text
    assert setup("--agent", "ella", "--vault", str(vault), "--remove")[0] == 0
    assert path.read_text() == USER_JSON5


def test_a_config_setup_cannot_read_is_left_alone(vault: Path) -> None:
    """Not JSON5 (an unclosed object), or a key twice: exit 5, the reason, nothing changed."""
    path = config_file()
    path.parent.mkdir(parents=True)
    for broken in ("{\n  gateway: {port: 18789,\n}\n", '{"mcp": {}, "mcp": {"servers": {}}}\n'):
        path.write_text(broken)
        code, _out, err = setup("--agent", "ella", "--vault", str(vault))
        assert code == 5, err
        assert ("not valid JSON5" in err or "twice" in err) and path.read_text() == broken


def test_json5_values() -> None:
    from vaultmem.app.setup import json5edit

    text = "{a: 'it\\'s', b: [0x1F, +2, .5, -Infinity, 1e3,], c: null, 'd-e': \"\\u00e9\", /* x */ f: true}"
    got = json5edit.value_of(text, json5edit.parse(text))
    assert got == {
        "a": "it's",
        "b": [31, 2, 0.5, float("-inf"), 1000.0],
        "c": None,
        "d-e": "é",
        "f": True,
    }
    with pytest.raises(ValueError, match="line 2"):
        json5edit.parse("{a: 1,\n b: }")


def test_a_symlinked_config_is_edited_where_it_points(vault: Path, tmp_path: Path) -> None:
    target = tmp_path / "dotfiles" / "openclaw.json"
    target.parent.mkdir()
    target.write_text(USER_CONFIG)
    link = config_file()
    link.parent.mkdir(parents=True)
    link.symlink_to(target)
    assert setup("--agent", "ella", "--vault", str(vault))[0] == 0
    assert link.is_symlink() and PLUGIN_ID in target.read_text()
    assert setup("--agent", "ella", "--vault", str(vault), "--remove")[0] == 0
    assert link.is_symlink() and target.read_text() == USER_CONFIG


def test_setup_needs_a_known_agent_and_a_vault(vault: Path, tmp_path: Path) -> None:
    code, _out, err = setup("--agent", "nobody", "--vault", str(vault))
    assert code != 0 and "nobody" in err
    code, _out, err = setup("--agent", "ella", "--vault", str(tmp_path / "no-such-vault"))
    assert code != 0 and err
    assert not config_file().exists()


def test_the_plugin_folder_is_what_openclaw_loads() -> None:
    """openclaw.plugin.json: the id setup names, the memory kind, a config schema that takes
    what setup writes; package.json names the entry module, which exists."""
    manifest = json.loads((PLUGIN_DIR / "openclaw.plugin.json").read_text())
    assert manifest["id"] == PLUGIN_ID and manifest["kind"] == "memory"
    schema = manifest["configSchema"]
    assert schema["additionalProperties"] is False
    written = {"command", "vault", "agent", "previousMemorySlot", "addedToAllow"}
    assert written <= set(schema["properties"]) and set(schema["required"]) <= written
    package = json.loads((PLUGIN_DIR / "package.json").read_text())
    assert package["type"] == "module"
    for entry in package["openclaw"]["extensions"]:
        assert (PLUGIN_DIR / entry).is_file()
    source = (PLUGIN_DIR / "index.js").read_text()
    assert '"-I"' not in source  # the interpreter and its flags come from setup's config
    assert "vaultmem:owned" in source


@pytest.mark.slow
def test_the_plugin_ships_in_the_wheel(tmp_path: Path) -> None:
    """The plugin is package data: the wheel built from this tree (hatchling, from the
    machine's package index) carries its three files."""
    import subprocess
    import zipfile

    root = Path(__file__).resolve().parents[1]
    res = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path), str(root)],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr[-2000:]
    wheel = next(tmp_path.glob("vaultmem-*.whl"))
    names = set(zipfile.ZipFile(wheel).namelist())
    for name in ("index.js", "openclaw.plugin.json", "package.json"):
        assert f"vaultmem/app/setup/openclaw_plugin/{name}" in names


def test_an_openclaw_session_is_read_as_turns() -> None:
    """A transcript the plugin wrote from a real OpenClaw 2026.9.6 run (three turns, one
    `exec` tool call) against the fake model API."""
    from vaultmem.bank.transcripts import TranscriptFormat, parse_transcript

    path = Path(__file__).resolve().parent / "fixtures" / "transcripts" / "openclaw-session.jsonl"
    t = parse_transcript(path.read_text())
    assert t.format == TranscriptFormat.OPENCLAW
    assert t.session_id and t.cwd and t.started
    roles = [turn.role for turn in t.turns]
    assert roles == ["user", "assistant", "user", "assistant", "user", "tool", "assistant"]
    assert t.turns[0].text == "first turn"
    assert t.turns[5].text.startswith("exec: echo hi") and t.turns[5].text.endswith("→ ok")
    assert t.last_request and t.last_request.startswith("third")
    assert "usage" not in " ".join(turn.text for turn in t.turns)
