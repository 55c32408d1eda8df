"""This machine's trust pins of a vault's security settings (docs/FORMAT.md, "Trust pins").

This machine pins, per vault, the security settings it enforces (and, through nexus/trust.py,
the reviewers' public keys and each agent's first key): trust on first use, like SSH's
known_hosts. A change in vaultmem.toml (a remote's or an edit) that loosens them takes effect
only when a person on this machine runs `vaultmem trust accept`; one that tightens them takes
effect at once (it cannot help an attacker). Reading the pins is one small JSON read, on every
command's path (`load_config`, the vault's config as this machine enforces it, is here): no
cryptography, nothing else imported.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from vaultmem.core import tomlcache
from vaultmem.core.config import Config, parse_config, parse_toml
from vaultmem.core.environment import home_dir
from vaultmem.core.errors import ConfigError
from vaultmem.core.records import evolve

PINS_VERSION = 1


def pins_path(root: Path) -> Path:
    """`VAULTMEM_HOME/trust/<digest of the vault root's real path>.json`."""
    from vaultmem.core.hashes import sha256

    real = str(root.resolve()).encode("utf-8", "surrogateescape")
    return home_dir() / "trust" / f"{sha256(real).hexdigest()[:32]}.json"


def security_of(config: Config) -> dict[str, Any]:
    """The settings a machine pins, as they are stored in the pin file."""
    return {
        "require_signatures": config.log.require_signatures,
        "secrets_policy": config.secrets.policy,
        "reviewers": list(config.reviewers),
        "agents": list(config.agents),
    }


def read_pins(root: Path) -> dict[str, Any] | None:
    """This machine's pins for the vault at `root`, or None when it has none yet."""
    path = pins_path(root)
    try:
        data = json.loads(path.read_bytes())
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise ConfigError(
            f"cannot read this machine's trust pins {path}: {exc}",
            "remove the file to pin the vault's current settings again (trust on first use)",
        ) from None
    ok = (
        isinstance(data, dict)
        and data.get("v") == PINS_VERSION
        and isinstance(data.get("settings"), dict)
    )
    if not ok:
        raise ConfigError(
            f"this machine's trust pins {path} are not in a known form",
            "remove the file to pin the vault's current settings again (trust on first use)",
        )
    return dict(data)


def write_pins(root: Path, data: dict[str, Any], *, create: bool = False) -> bool:
    """Write the pin file (mode 0600, folder 0700). `create`: only when there is none yet
    (False when another process pinned first)."""
    from vaultmem.core.fsio import atomic_write, create_private

    path = pins_path(root)
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    raw = (json.dumps(data, indent=1, sort_keys=True) + "\n").encode("utf-8")
    if create:
        return create_private(path, raw)
    atomic_write(path, raw, mode=0o600)
    return True


def first_pins(root: Path, config: Config) -> dict[str, Any]:
    """What a machine pins the first time it sees a vault (the keys are pinned by
    nexus/trust.py the first time keys are judged)."""
    from vaultmem.core.clock import stamp

    return {
        "v": PINS_VERSION,
        "root": str(root.resolve()),
        "pinned_at": stamp(),
        "settings": security_of(config),
    }


def effective(config: Config, root: Path) -> Config:
    """`config` with the security settings this machine enforces: the pinned ones, or the
    stricter of pinned and current (signatures required if either requires them, `refuse` if
    either refuses, only reviewers and agents that both list). First use pins `config`."""
    pins = read_pins(root)
    if pins is None:
        try:
            write_pins(root, first_pins(root, config), create=True)
        except (OSError, ConfigError):
            return config  # a read-only home: nothing pinned, the files as they are
        pins = read_pins(root) or {}
    pinned = pins.get("settings", {})
    if security_of(config) == pinned:
        return config
    require = config.log.require_signatures or pinned.get("require_signatures") is not False
    policy = (
        "refuse"
        if "refuse" in (config.secrets.policy, pinned.get("secrets_policy"))
        else (config.secrets.policy)
    )

    def both(current: tuple[str, ...], key: str) -> tuple[str, ...]:
        listed = pinned.get(key)
        allowed = set(listed) if isinstance(listed, list) else set()
        return tuple(n for n in current if n in allowed)

    return evolve(
        config,
        log=evolve(config.log, require_signatures=require),
        secrets=evolve(config.secrets, policy=policy),
        reviewers=both(config.reviewers, "reviewers"),
        agents=both(config.agents, "agents"),
        default_reviewer=config.default_reviewer,
    )


def load_config(path: Path, *, pinned: bool = True, lenient: bool = False) -> Config:
    """The vault's config as this machine enforces it: the file's settings, with the security
    settings taken from this machine's pins (`pinned`, see `effective`); `pinned=False` gives
    the file as it is.

    `lenient` (sync, verify, trust and the hooks: what must work to pull a fix): a file that
    cannot be read or does not pass its checks does not stop the command. It goes on with the
    last settings this machine accepted for this vault (the sealed parse `core/tomlcache.py`
    keeps), else the defaults, with this machine's pinned security settings over them, and
    says so once on stderr (`core/tomlguard.py`)."""
    try:
        config = _load_file(path)
    except ConfigError as exc:
        if not lenient:
            raise
        config, pins_known = _fallback(path, exc)
        if not pins_known:
            return config  # never pin what a broken file left: the defaults, strictest
    if not pinned:
        return config
    return effective(config, path.parent)


def _fallback(path: Path, problem: ConfigError) -> tuple[Config, bool]:
    """The settings a lenient command goes on with, and whether this machine has pins for the
    vault; the problem said once per process on stderr."""
    import contextlib

    from vaultmem.core.tomlguard import say_once

    config, what = Config(), "the default settings"
    raw = tomlcache.last(path)
    if raw is not None:
        with contextlib.suppress(ConfigError):
            config, what = parse_config("", path, raw), "the last settings this machine accepted"
    pins_known = pins_path(path.parent).is_file()
    say_once(path, problem, what, pinned=pins_known)
    return config, pins_known


def _load_file(path: Path) -> Config:
    """The file's own settings, every check passed (ConfigError naming the file otherwise)."""
    from vaultmem.core.tomlguard import MAX_BYTES

    try:
        with path.open("rb") as fh:
            data = fh.read(MAX_BYTES + 1)
    except OSError as exc:
        raise ConfigError(
            f"cannot read {path}: {exc.strerror}", "check the file's permissions"
        ) from exc
    if len(data) > MAX_BYTES:
        raise ConfigError(
            f"{path}: more than {MAX_BYTES:,} bytes, more than a vaultmem.toml may hold",
            "fix the file (a real one is a few KB)",
        )
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8 text", "re-save the file as UTF-8") from exc
    raw = tomlcache.get(path, data)
    if raw is not None:
        return parse_config(text, path, raw)
    raw = parse_toml(text, path)
    config = parse_config(text, path, raw)  # only a config that passes its checks is kept
    tomlcache.put(path, data, raw)
    return config
