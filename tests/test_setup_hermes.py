"""`vaultmem setup hermes`: the plugin folder and `memory.provider` in Hermes Agent's home,
idempotent, `--remove` gives config.yaml back byte for byte. The layouts below follow
hermes-agent 0.19.0's own config (hermes_cli/config.py DEFAULT_CONFIG: a `memory:` mapping
with `provider: ""`; `hermes config set` writes block style)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests._cli import run_cli

# a person's config.yaml: comments, their own memory settings, a provider already chosen
WITH_PROVIDER = """# my Hermes
model:
  default: claude-sonnet-4-5   # the one I pay for
  provider: anthropic

memory:
    memory_enabled: true
    provider: 'holographic'  # tried it in March
    user_char_limit: 1375
display:
  skin: mono
"""
WITHOUT_PROVIDER = "memory:\r\n  memory_enabled: true\r\nterminal:\r\n  cwd: .\r\n"
NO_MEMORY = "model:\n  default: claude-sonnet-4-5"  # no final newline


def setup(home: Path, *args: str) -> tuple[int, str, str]:
    res = run_cli("setup", "hermes", "--agent", "lyra", "--hermes-home", str(home), *args)
    return res.exit_code, res.stdout, res.stderr


@pytest.fixture
def home(tmp_path: Path, vault: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("VAULTMEM_VAULT", str(vault))
    return tmp_path / "hermes-home"


def provider(home: Path) -> object:
    data = yaml.safe_load((home / "config.yaml").read_text())
    return data["memory"]["provider"]


@pytest.mark.parametrize("before", [WITH_PROVIDER, WITHOUT_PROVIDER, NO_MEMORY, None])
def test_setup_selects_the_provider_and_remove_restores_the_bytes(
    home: Path, before: str | None
) -> None:
    home.mkdir()
    config = home / "config.yaml"
    if before is not None:
        config.write_bytes(before.encode())
    code, out, err = setup(home)
    assert code == 0, err
    assert provider(home) == "vaultmem"
    plugin = home / "plugins" / "vaultmem"
    assert "register_memory_provider" in (plugin / "__init__.py").read_text()
    assert yaml.safe_load((plugin / "plugin.yaml").read_text())["kind"] == "exclusive"
    text = config.read_bytes()
    assert setup(home)[0] == 0 and config.read_bytes() == text  # idempotent
    if before == WITH_PROVIDER:
        assert "memory.provider was 'holographic'" in out
        was = "    provider: vaultmem  # vaultmem:was \" 'holographic'  # tried it in March\"\n"
        assert was in config.read_text()  # what --remove puts back, the comment with it
    code, _out, err = setup(home, "--remove")
    assert code == 0, err
    if before is None:
        assert not config.exists()
    else:
        assert config.read_bytes() == before.encode()
    assert not (home / "plugins").exists()  # setup made the folders, --remove takes them


def test_dry_run_shows_the_diff_and_writes_nothing(home: Path) -> None:
    home.mkdir()
    (home / "config.yaml").write_text(WITH_PROVIDER)
    code, out, _err = setup(home, "--dry-run")
    assert code == 0
    assert "+    provider: vaultmem  # vaultmem:was " in out
    assert "-    provider: 'holographic'" in out and "(dry run: nothing was written)" in out
    assert (home / "config.yaml").read_text() == WITH_PROVIDER
    assert not (home / "plugins").exists()


def test_a_plugin_folder_of_yours_is_refused(home: Path) -> None:
    mine = home / "plugins" / "vaultmem"
    mine.mkdir(parents=True)
    (mine / "__init__.py").write_text("# my own experiment\n")
    (home / "config.yaml").write_text(WITH_PROVIDER)
    code, _out, err = setup(home)
    assert code == 8 and "was not written by vaultmem" in err
    assert (mine / "__init__.py").read_text() == "# my own experiment\n"
    assert (home / "config.yaml").read_text() == WITH_PROVIDER


@pytest.mark.parametrize(
    ("text", "code", "said"),
    [
        ("memory: [unclosed\n", 5, "not valid YAML"),
        ("memory: {provider: mem0}\n", 8, "written inline"),
        ("- a list\n", 5, "does not hold a YAML mapping"),
    ],
)
def test_a_config_setup_cannot_edit_is_left_alone(
    home: Path, text: str, code: int, said: str
) -> None:
    home.mkdir()
    (home / "config.yaml").write_text(text)
    got, _out, err = setup(home)
    assert got == code and said in err, err
    assert (home / "config.yaml").read_text() == text
    assert not (home / "plugins").exists()


def test_the_vault_must_exist(home: Path, tmp_path: Path) -> None:
    res = run_cli(
        "setup", "hermes", "--agent", "lyra", "--vault", str(tmp_path / "nowhere"),
        "--hermes-home", str(home),
    )  # fmt: skip
    assert res.exit_code == 3 and "nowhere" in res.stderr
    assert not home.exists()


def test_hermes_home_comes_from_the_environment(
    tmp_path: Path, vault: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HERMES_HOME", str(tmp_path / "profile"))
    res = run_cli("setup", "hermes", "--agent", "lyra", "--vault", str(vault))
    assert res.exit_code == 0, res.stderr
    assert (tmp_path / "profile" / "plugins" / "vaultmem" / "__init__.py").is_file()


def test_the_shim_loads_vaultmem_in_a_python_that_does_not_have_it(home: Path) -> None:
    """Hermes runs in its own venv: the shim finds vaultmem where setup recorded it. Here a
    Python started without site-packages (-S) and outside the repository stands for it."""
    assert setup(home)[0] == 0
    shim = home / "plugins" / "vaultmem" / "__init__.py"
    script = f"""
import importlib.util, sys
assert "vaultmem" not in sys.modules
try:
    import vaultmem
    raise SystemExit("vaultmem was importable")
except ImportError:
    pass
spec = importlib.util.spec_from_file_location("_hermes_user_memory.vaultmem", {str(shim)!r})
mod = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mod)
class Ctx:
    def register_memory_provider(self, p):
        self.p = p
ctx = Ctx()
mod.register(ctx)
print(ctx.p.name, ctx.p.agent, ctx.p.is_available())
from vaultmem.core.environment import python
print(python())
"""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    res = subprocess.run(
        [sys.executable, "-S", "-c", script], cwd=home, env=env, capture_output=True, text=True
    )
    assert res.returncode == 0, res.stderr
    first, second = res.stdout.splitlines()
    assert first == "vaultmem lyra True"
    assert second == sys.executable  # the processes vaultmem starts use its own Python


def fake_hermes(tmp_path: Path, provider_source: str | None) -> Path:
    """A `hermes` script on this Python whose `agent.memory_provider` is `provider_source`
    (None: no such module, as in a Hermes before memory providers)."""
    import venv

    env_dir = tmp_path / "fake-hermes-venv"  # a venv of this Python: setup asks it isolated
    venv.EnvBuilder(with_pip=False).create(env_dir)
    site = next((env_dir / "lib").glob("python*/site-packages"))
    (site / "plugins" / "memory").mkdir(parents=True)
    (site / "plugins" / "__init__.py").write_text("")
    (site / "plugins" / "memory" / "__init__.py").write_text("def _get_user_plugins_dir(): pass\n")
    if provider_source is not None:
        (site / "agent").mkdir()
        (site / "agent" / "__init__.py").write_text("")
        (site / "agent" / "memory_provider.py").write_text(provider_source)
    exe = tmp_path / "bin" / "hermes"
    exe.parent.mkdir()
    exe.write_text(f"#!{env_dir / 'bin' / 'python'}\nraise SystemExit(0)\n")
    exe.chmod(0o755)
    return exe


OLD_PROVIDER = """class MemoryProvider:
    def system_prompt_block(self): ...
    def prefetch(self, query): ...
    def sync_turn(self, user, assistant): ...
    def get_tool_schemas(self): ...
    def handle_tool_call(self, name, args): ...
"""


@pytest.mark.parametrize(
    ("source", "said"),
    [
        (None, "agent.memory_provider.MemoryProvider"),
        (OLD_PROVIDER, "on_pre_compress, on_session_end, on_session_switch"),
    ],
)
def test_a_hermes_without_the_interface_is_refused_with_the_version_it_needs(
    home: Path, tmp_path: Path, source: str | None, said: str
) -> None:
    exe = fake_hermes(tmp_path, source)
    code, _out, err = setup(home, "--hermes", str(exe))
    assert code == 8, err
    assert said in err and "hermes-agent >= 0.19.0" in err
    assert not home.exists()


def test_the_installed_hermes_passes_the_check(home: Path) -> None:
    from tests.e2e._runtimes import BIN

    if not BIN["hermes"].exists():
        pytest.skip(f"Hermes is not installed at {BIN['hermes']} (tests/e2e/runtimes.txt)")
    code, out, err = setup(home, "--hermes", str(BIN["hermes"]))
    assert code == 0, err
    assert "no `hermes` found to check" not in out


def test_a_shim_whose_vaultmem_moved_says_so(home: Path) -> None:
    assert setup(home)[0] == 0
    shim = home / "plugins" / "vaultmem" / "__init__.py"
    text = shim.read_text()
    start = text.index("PACKAGE = ") + len("PACKAGE = ")
    end = text.index("  #", start)
    shim.write_text(text[:start] + '"/nowhere/vaultmem"' + text[end:])
    script = f"""
import importlib.util, logging
logging.basicConfig(format="%(levelname)s %(name)s: %(message)s")
spec = importlib.util.spec_from_file_location("_hermes_user_memory.vaultmem", {str(shim)!r})
mod = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mod)
mod.register(object())
"""
    res = subprocess.run([sys.executable, "-S", "-c", script], capture_output=True, text=True)
    assert res.returncode == 1
    assert "WARNING vaultmem: vaultmem memory provider not loaded: vaultmem is no longer " in (
        res.stderr
    )
    assert "run `vaultmem setup hermes` again" in res.stderr
