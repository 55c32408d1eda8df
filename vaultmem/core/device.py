"""This machine's device id: which chain an agent writes when it writes from here.

An agent that writes from several machines has one chain per machine, so two machines never
hand out the same sequence number. The chain of the agent's first key (usually the machine the
vault was made on) keeps plain ids, `ella.12`; another machine's chain carries its device id,
`ella.k2f7.3`. The id is four characters (lowercase base32, `[a-z2-7]`), created once per
`VAULTMEM_HOME` and written next to the private keys.
"""

from __future__ import annotations

import os
from pathlib import Path

from vaultmem.core import environment
from vaultmem.core.errors import VaultmemError
from vaultmem.core.fsio import create_private
from vaultmem.core.names import DEVICE_RE

_ALPHABET = "abcdefghijklmnopqrstuvwxyz234567"


def device_id(*, create: bool = True) -> str | None:
    """This machine's device id (made on first use when `create`)."""
    path = environment.home_dir() / "device"
    try:
        text = path.read_text(encoding="ascii").strip()
    except (FileNotFoundError, UnicodeDecodeError):
        text = ""
    if DEVICE_RE.fullmatch(text):
        return text
    if not create:
        return None
    import secrets  # random and hmac: only the first time, to make the id

    made = "".join(secrets.choice(_ALPHABET) for _ in range(4))
    try:
        if not create_private(path, made.encode("ascii") + b"\n"):
            return device_id(create=False) or made  # another process made it first
    except OSError as exc:
        raise VaultmemError(
            f"cannot write this machine's device id {path}: {exc.strerror}",
            "check that VAULTMEM_HOME is writable",
        ) from exc
    return made


def memo_secret(*, create: bool = True) -> bytes | None:
    """A 32-byte secret kept next to the private keys (made on first use), which keys the
    memo of checked signatures: an agent that can write the vault, but not VAULTMEM_HOME,
    cannot add a line that makes a forged entry pass. None when VAULTMEM_HOME is not writable,
    or when it does not exist yet and `create` is False (`read` writes nothing there).
    """
    path = environment.home_dir() / "memo.key"
    for _ in range(2):
        try:
            raw = path.read_bytes()
            if len(raw) == 32:
                return raw
            return None  # damaged: no memo, every signature is checked
        except FileNotFoundError:
            if not create:
                return None
        except OSError:
            return None
        made = os.urandom(32)  # what secrets.token_bytes does
        try:
            if create_private(path, made):
                return made
        except OSError:
            return None
        # another process made it first: read theirs
    return None


_REPLICATED: dict[str, bool] = {}


def replicated(root: Path) -> bool:
    """Is the folder `root` inside a git work tree (a `.git` directory or file in it or above)?
    Then other machines write to the same folders, and new note names carry this device id."""
    key = str(root)
    if key not in _REPLICATED:
        _REPLICATED[key] = any((p / ".git").exists() for p in (root, *root.parents))
    return _REPLICATED[key]


def note_stem(root: Path, slug: str) -> str:
    """The file name (without `.md`) for a new note called `slug`: the slug itself, or in a
    vault replicated through git `slug-<device id>`, so two machines that write a note of the
    same name make two files that merge, never one file in conflict."""
    if not replicated(root):
        return slug
    device = device_id()
    return f"{slug}-{device}" if device else slug
