"""SHA-256 and BLAKE2b without OpenSSL: the built-in modules `hashlib` itself falls back to.

`import hashlib` loads OpenSSL's libcrypto first (~2.5 ms, a fifth of `python -c pass`), and
every command hashes: an entry's hash, a key's id, the name of this machine's trust pins. The
built-in module gives the same digests (`hashlib.sha256` is OpenSSL's, this is CPython's own):
slower per call (2.1 against 0.9 us for an entry's ~300 bytes; 90 against 15 us for 20 KB), so
the import it saves pays for ~2,000 entry hashes, more than a per-turn command makes. (`core/seal.py` takes BLAKE2b the same
way itself: it imports nothing of vaultmem.)
"""

from __future__ import annotations

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
