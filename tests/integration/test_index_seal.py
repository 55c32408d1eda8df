"""A local writer cannot run code through the search index (issue 35, item 2).

The attacker can write the vault (an agent's sandbox, a sync tool, another account with write
access to the folder) but not VAULTMEM_HOME. Whoosh unpickles its table of contents, so the
attacker rewrites this machine's own TOC in place with a pickle that runs `touch MARKER`: the
same size, the same inode, the mtime put back. The generation's listing (name, size, mtime,
inode) cannot tell; the block MACs of `search/index_seal.py` can. `recall` and the prompt hook
(each a process of its own, as the person and the runtime run them) never run the payload, the
index is rebuilt from the vault's files, and recall still answers.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import pickle
from pathlib import Path

import pytest

from tests._hostile import Payload
from tests._proc import vm


def _evil_toc(marker: Path, size: int) -> bytes:
    """A whoosh TOC (whoosh's own header, `whoosh/index.py` `TOC.read`) whose schema unpickles
    `Payload`, zero-padded to `size` bytes: whoosh stops reading at the pickle."""
    from whoosh.filedb.structfile import StructFile
    from whoosh.index import _CURRENT_TOC_VERSION, _FLOAT_SIZE, _INT_SIZE, _LONG_SIZE

    buf = io.BytesIO()
    out = StructFile(buf)
    out.write_varint(_INT_SIZE)
    out.write_varint(_LONG_SIZE)
    out.write_varint(_FLOAT_SIZE)
    out.write_int(-12345)
    out.write_int(_CURRENT_TOC_VERSION)
    for num in (2, 7, 4):
        out.write_varint(num)
    out.write_string(pickle.dumps(Payload(marker), 2))
    data = buf.getvalue()
    assert len(data) <= size
    return data + b"\0" * (size - len(data))


def _rewrite_in_place(path: Path, data: bytes) -> None:
    """What a writer without VAULTMEM_HOME can do: same inode, same size, mtime restored."""
    before = path.stat()
    with open(path, "r+b") as fh:
        fh.write(data)
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = path.stat()
    assert (after.st_ino, after.st_size, after.st_mtime_ns) == (
        before.st_ino,
        before.st_size,
        before.st_mtime_ns,
    )


def _victim(tmp_path: Path) -> tuple[Path, Path]:
    home, vault = tmp_path / "home", tmp_path / "vault"
    res = vm("init", str(vault), "--agent", "ella", home=home)
    assert res.returncode == 0, res.stderr
    with open(vault / "vaultmem.toml", "a", encoding="utf-8") as fh:
        fh.write('\n[recall]\nmode = "keyword"\n')
    (vault / "wiki").mkdir()
    (vault / "wiki" / "Refunds.md").write_text("# Refunds\nRefunds go through the ledger.\n")
    assert vm("recall", "refunds", "--vault", str(vault), home=home).returncode == 0
    return home, vault


def _generation(vault: Path) -> Path:
    (gen,) = (p for p in (vault / ".vaultmem" / "index").iterdir() if p.name.startswith("g-"))
    return gen


def test_a_toc_rewritten_in_place_never_runs_in_recall_or_the_prompt_hook(
    tmp_path: Path,
) -> None:
    home, vault = _victim(tmp_path)
    at = ("--vault", str(vault))
    gen = _generation(vault)
    (toc,) = sorted(gen.glob("_MAIN_*.toc"))
    marker = tmp_path / "payload-ran"
    _rewrite_in_place(toc, _evil_toc(marker, toc.stat().st_size))

    hook = vm(
        "hook",
        "prompt",
        *at,
        "--agent",
        "ella",
        home=home,
        stdin=json.dumps({"prompt": "how do refunds work?"}),
    )
    assert hook.returncode == 0, hook.stderr
    assert not marker.exists()
    # the hook's recall met the rewritten TOC: said to the person, rebuilt, not shown the model
    assert "rebuilt" in hook.stderr and "rebuilt" not in hook.stdout

    # the rebuilt generation, attacked the same way: the plain recall command
    (toc,) = sorted(_generation(vault).glob("_MAIN_*.toc"))
    _rewrite_in_place(toc, _evil_toc(marker, toc.stat().st_size))
    res = vm("recall", "refunds", "--json", *at, home=home)
    assert res.returncode == 0, res.stderr
    found = json.loads(res.stdout)
    assert found["hits"] and found["hits"][0]["path"] == "wiki/Refunds.md"
    assert any("rebuilt" in w for w in found["index"]["warnings"])
    assert not marker.exists()


def test_the_rewritten_toc_is_live_under_plain_whoosh(tmp_path: Path) -> None:
    """The payload above is real: whoosh's own `open_dir` runs it, and so did vaultmem before
    the block seals (the listing check passed: same name, size, mtime and inode)."""
    from whoosh.index import open_dir

    _home, vault = _victim(tmp_path)
    gen = _generation(vault)
    (toc,) = sorted(gen.glob("_MAIN_*.toc"))
    marker = tmp_path / "payload-ran"
    _rewrite_in_place(toc, _evil_toc(marker, toc.stat().st_size))
    with contextlib.suppress(Exception):  # whatever whoosh makes of os.system's return value
        open_dir(str(gen)).close()
    assert marker.exists()


@pytest.mark.parametrize("target", ["_stored.col", ".pst", ".trm", "blocks.json"])
def test_any_other_index_file_changed_in_place_is_rebuilt_not_read(
    tmp_path: Path, target: str
) -> None:
    """Stored fields, postings and terms are unpickled too; the seals' own file is sealed."""
    home, vault = _victim(tmp_path)
    (path,) = (p for p in _generation(vault).iterdir() if p.name.endswith(target))
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01
    _rewrite_in_place(path, bytes(data))
    res = vm("recall", "refunds", "--json", "--vault", str(vault), home=home)
    assert res.returncode == 0, res.stderr
    found = json.loads(res.stdout)
    assert found["hits"] and found["hits"][0]["path"] == "wiki/Refunds.md"
    assert any("rebuilt" in w for w in found["index"]["warnings"])
