"""SHA-256 and BLAKE2b without OpenSSL (the built-in modules `hashlib` itself falls back to),
and base64 without the `base64` module (which imports re and struct for what is not used here).

`import hashlib` loads OpenSSL's libcrypto first (~2.5 ms, a fifth of `python -c pass`), and
every command hashes: an entry's hash, a key's id, the name of this machine's trust pins. The
built-in module gives the same digests (`hashlib.sha256` is OpenSSL's, this is CPython's own):
slower per call (2.1 against 0.9 us for an entry's ~300 bytes; 90 against 15 us for 20 KB), so
the import it saves pays for ~2,000 entry hashes, more than a per-turn command makes. (`core/seal.py` takes BLAKE2b the same
way itself: it imports nothing of vaultmem.)
"""

from __future__ import annotations

import binascii
from typing import TYPE_CHECKING

try:  # hashlib's own BLAKE2 is this one
    from _blake2 import blake2b as blake2b
except ImportError:  # pragma: no cover - another Python implementation
    from hashlib import blake2b as blake2b

if TYPE_CHECKING:  # the same function, as typeshed knows it
    from hashlib import sha256 as sha256
else:
    try:  # CPython 3.12+
        from _sha2 import sha256 as sha256
    except ImportError:
        try:  # CPython 3.11
            from _sha256 import sha256 as sha256
        except ImportError:  # pragma: no cover - another Python implementation
            from hashlib import sha256 as sha256


def b64encode(raw: bytes) -> str:
    """`base64.b64encode(raw).decode()`."""
    return binascii.b2a_base64(raw, newline=False).decode("ascii")


def b64decode(text: str | bytes, *, validate: bool = False) -> bytes:
    """`base64.b64decode(text, validate=validate)`, as that function is written: ASCII only
    (UnicodeEncodeError, a ValueError), then `a2b_base64` in strict mode when `validate`
    (binascii.Error, a ValueError, for anything but the alphabet and its padding)."""
    data = text.encode("ascii") if isinstance(text, str) else text
    return binascii.a2b_base64(data, strict_mode=validate)
