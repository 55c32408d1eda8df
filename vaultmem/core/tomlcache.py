"""What tomllib made of `vaultmem.toml`'s exact bytes, kept in the vault's local state.

Importing tomllib (and `string`, which it imports) and parsing the file cost ~3-4 ms of every
command, a quarter of `python -c pass`. `.vaultmem/config.json` keeps the parsed file (the plain dict `tomllib.loads` returned)
under a BLAKE2b of the file's bytes, sealed (`core/seal.py`), so it is only ever what this
machine's vaultmem parsed: a hit is the dict tomllib would return for those very bytes, and
`config.parse_config` checks it as it checks a fresh parse. Other bytes (an edit, a pull) miss:
the file is parsed, and its parse replaces the entry.

Nothing here is ever an error: no secret on this machine, a seal that does not match, a value
JSON cannot give back (a TOML date), a `.vaultmem` that is not a plain folder (missing, a link),
a failed write: the file is parsed, as without this module.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

from vaultmem.core import seal
from vaultmem.core.hashes import blake2b

CACHE_NAME = "config.json"
_SCALARS = (str, int, float, bool)


def _where(config: Path) -> Path:
    return config.parent / seal.STATE_DIR / CACHE_NAME


def _fingerprint(data: bytes) -> str:
    """The file's bytes, hashed (the entry holding it is sealed: no key needed here)."""
    return blake2b(data, digest_size=32, person=b"vaultmem-toml").hexdigest()


def get(config: Path, data: bytes) -> dict[str, Any] | None:
    """The parse kept for exactly `data` (the bytes of the file at `config`), or None."""
    key = seal.secret(create=False)
    if key is None:
        return None
    found = seal.read(_where(config))
    if not isinstance(found, dict) or found.get("toml") != _fingerprint(data):
        return None
    raw = found.get("raw")
    return raw if isinstance(raw, dict) else None


def last(config: Path) -> dict[str, Any] | None:
    """The last parse this machine kept for the vault, whatever bytes it was made of: the
    settings a lenient command goes on with when the file now fails (`pins.load_config`)."""
    if seal.secret(create=False) is None:
        return None
    found = seal.read(_where(config))
    raw = found.get("raw") if isinstance(found, dict) else None
    return raw if isinstance(raw, dict) else None


def put(config: Path, data: bytes, raw: dict[str, Any]) -> None:
    """Keep `raw`, tomllib's parse of `data`, for the next command."""
    import contextlib

    from vaultmem.core.errors import VaultmemError
    from vaultmem.core.fsio import replace_cache

    where = _where(config)
    with contextlib.suppress(OSError, VaultmemError):
        # only into a plain folder: never through a link (a vault's state is never written
        # outside it), and never making `.vaultmem/` (a vault being set up, a read-only one)
        if not stat.S_ISDIR(os.lstat(where.parent).st_mode) or not _json_only(raw):
            return
        # the machine's secret is made on first use, as for every sealed file
        sealed = seal.dumps(where, {"toml": _fingerprint(data), "raw": raw})
        if sealed is not None:
            replace_cache(where, sealed)


def _json_only(value: Any) -> bool:
    """Does JSON give back exactly this (no TOML date or time anywhere in it)?"""
    if isinstance(value, dict):
        return all(isinstance(k, str) and _json_only(v) for k, v in value.items())
    if isinstance(value, list):
        return all(_json_only(v) for v in value)
    return isinstance(value, _SCALARS)
