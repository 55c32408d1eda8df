"""Symlinks from the attacker's side (issue 20, items 4 and 5): a link committed to the vault
never makes vaultmem read a file outside it (for `read`, the hooks, recall, `show`, MCP), and a
link inside the vault is scoped by its target, never by where the link sits.

The attacker commits the links; the victim only runs vaultmem. Each target outside the vault
holds a unique marker string: it must never appear in anything vaultmem prints.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests._cli import run_cli
from vaultmem.app.hooks.run import run_hook

MARKER = "zqoutsidemarker7731"


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    folder = tmp_path / "outside"
    folder.mkdir()
    (folder / "secret.md").write_text(f"---\nname: x\n---\n# Secret\n{MARKER} root:*:19000\n")
    (folder / "hostname").write_text(f"{MARKER}-host\n")
    return folder


def _link(vault: Path, rel: str, target: str | Path) -> None:
    path = vault / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists() or path.is_symlink():
        if path.is_dir() and not path.is_symlink():
            import shutil

            shutil.rmtree(path)
        else:
            path.unlink()
    os.symlink(target, path)


def _relative_to(vault: Path, rel: str, target: Path) -> str:
    """`../../../x`: the relative spelling of `target` from where the link sits."""
    return os.path.relpath(target, (vault / rel).parent)


def _attack(vault: Path, outside: Path, how: str) -> str:
    """Plant one kind of link; return the vault-relative name of the link that leads out."""
    secret = outside / "secret.md"
    if how == "identity-absolute":  # agents/ella/IDENTITY.md -> /etc/shadow
        _link(vault, "agents/ella/IDENTITY.md", secret)
        return "agents/ella/IDENTITY.md"
    if how == "memory-index":  # agents/ella/MEMORY.md -> /proc/self/environ
        _link(vault, "agents/ella/MEMORY.md", secret)
        return "agents/ella/MEMORY.md"
    if how == "checkpoint":  # checkpoint.md -> /etc/hostname
        _link(vault, "agents/ella/checkpoint.md", outside / "hostname")
        return "agents/ella/checkpoint.md"
    if how == "relative":  # ../../../x
        rel = "agents/ella/IDENTITY.md"
        _link(vault, rel, _relative_to(vault, rel, secret))
        return rel
    if how == "chain":  # a link to a link (inside the vault) to a file outside
        _link(vault, "wiki/hop.md", secret)
        _link(vault, "agents/ella/IDENTITY.md", "../../wiki/hop.md")
        return "agents/ella/IDENTITY.md"
    if how == "folder":  # a link to a folder outside
        _link(vault, "agents/ella/memory", outside)
        return "agents/ella/memory"
    if how == "shared-profile":
        _link(vault, "memory/PROFILE.md", secret)
        return "memory/PROFILE.md"
    raise AssertionError(how)


ATTACKS = [
    "identity-absolute",
    "memory-index",
    "checkpoint",
    "relative",
    "chain",
    "folder",
    "shared-profile",
]


def _session_start(vault: Path, agent: str = "ella") -> str:
    out = run_hook("session-start", "{}", vault_path=vault, agent=agent)
    return out.stdout + out.stderr + out.context


@pytest.mark.parametrize("how", ATTACKS)
def test_a_link_out_of_the_vault_never_reaches_a_pack_or_a_hook(
    vault: Path, outside: Path, how: str
) -> None:
    rel = _attack(vault, outside, how)
    res = run_cli("read", "--vault", str(vault), "--agent", "ella", "--peek")
    assert res.exit_code == 0, res.stderr
    assert MARKER not in res.stdout + res.stderr
    as_json = run_cli("read", "--vault", str(vault), "--agent", "ella", "--peek", "--json")
    assert as_json.exit_code == 0 and MARKER not in as_json.stdout
    context = _session_start(vault)
    assert MARKER not in context
    assert "vaultmem" in context  # the hook still gave its context
    if how != "folder":  # a folder of facts is not read by the pack; the file links are named
        assert rel in res.stdout and "Files not read" in res.stdout
        assert rel in json.loads(as_json.stdout)["sections"]["not_read"]["text"]
    # recall and show never read it either
    rec = run_cli("recall", MARKER, "--vault", str(vault), "--json")
    assert rec.exit_code == 0, rec.stderr
    assert json.loads(rec.stdout)["hits"] == [] and "root:*" not in rec.stdout
    # nor the facts an agent lists (a memory folder that is a link out holds none)
    mem = run_cli("memories", "--vault", str(vault), "--json")
    assert mem.exit_code == 0 and MARKER not in mem.stdout and "root:*" not in mem.stdout
    # status names it, without following it
    st = run_cli("status", "--vault", str(vault), "--json")
    assert MARKER not in st.stdout
    kinds = {(p["path"], p["kind"]) for p in json.loads(st.stdout)["problems"]}
    assert (rel, "symlink-outside") in kinds
    # and so does verify (exit 5: an integrity problem), without following it
    ver = run_cli("verify", "--vault", str(vault), "--json")
    assert ver.exit_code == 5 and MARKER not in ver.stdout
    assert (rel, "symlink-outside") in {
        (p["path"], p["kind"]) for p in json.loads(ver.stdout)["problems"]
    }


def test_proc_self_environ_never_reaches_the_session_start_hook(vault: Path) -> None:
    if not Path("/proc/self/environ").exists():
        pytest.skip("no /proc on this platform")
    _link(vault, "agents/ella/MEMORY.md", "/proc/self/environ")
    _link(vault, "agents/ella/checkpoint.md", "/etc/hostname")
    context = _session_start(vault)
    assert "VAULTMEM_HOME=" not in context and "PATH=" not in context
    hostname = Path("/etc/hostname").read_text().strip() if Path("/etc/hostname").exists() else ""
    if len(hostname) > 6:
        assert hostname not in context
    res = run_cli("read", "--vault", str(vault), "--agent", "ella", "--peek")
    assert res.exit_code == 0 and "VAULTMEM_HOME=" not in res.stdout


def test_show_and_the_vault_reader_refuse_a_link_out(vault: Path, outside: Path) -> None:
    from vaultmem.core.vault import LinkOutsideVaultError, Vault

    _link(vault, "wiki/leak.md", outside / "secret.md")
    res = run_cli("show", "wiki/leak.md", "--vault", str(vault))
    assert res.exit_code == 8 and MARKER not in res.stdout + res.stderr
    v = Vault.open(vault)
    with pytest.raises(LinkOutsideVaultError, match=r"wiki/leak\.md"):
        v.read_text(vault / "wiki" / "leak.md")
    _link(vault, "wiki/folder.md", vault / "wiki")  # a link to a folder inside: not a file
    with pytest.raises(LinkOutsideVaultError, match="not a regular file"):
        v.read_bytes(vault / "wiki" / "folder.md")
    assert v.read_text(vault / "memory" / "MEMORY.md").startswith("---") or True


# --- an in-vault link is scoped by its target -----------------------------------------------

PAYROLL = "zqpayrolllyra4410"


def _payroll(vault: Path) -> None:
    """lyra's private fact, and a shared wiki page that is a link to it."""
    fact = vault / "agents" / "lyra" / "memory" / "payroll.md"
    fact.write_text(
        "---\nname: payroll\ndescription: payroll\ntype: project\n---\n"
        f"Payroll runs on the 27th; account {PAYROLL}.\n"
    )
    _link(vault, "wiki/payroll-notes.md", "../agents/lyra/memory/payroll.md")
    # and one inside ella's own folder, pointing into lyra's
    _link(vault, "agents/ella/memory/payroll.md", "../../lyra/memory/payroll.md")


def test_an_in_vault_link_never_hands_another_agents_fact_to_recall(vault: Path) -> None:
    _payroll(vault)
    ella = run_cli("recall", PAYROLL, "--vault", str(vault), "--agent", "ella", "--json")
    assert ella.exit_code == 0, ella.stderr
    assert json.loads(ella.stdout)["hits"] == []
    lyra = run_cli("recall", PAYROLL, "--vault", str(vault), "--agent", "lyra", "--json")
    paths = [h["path"] for h in json.loads(lyra.stdout)["hits"]]
    assert paths and set(paths) == {"agents/lyra/memory/payroll.md"}  # indexed at its target
    # the prompt hook's recall and the pack's --query recall are the same recall
    out = run_hook(
        "prompt",
        json.dumps({"prompt": f"what is the payroll account {PAYROLL}?"}),
        vault_path=vault,
        agent="ella",
    )
    assert PAYROLL not in out.stdout + out.context
    pack = run_cli("read", "--vault", str(vault), "--agent", "ella", "--peek", "--query", PAYROLL)
    assert pack.exit_code == 0 and PAYROLL not in pack.stdout
    # facts are files, never links: ella's memory folder link is not one of her facts
    mem = run_cli("memories", "--vault", str(vault), "--json")
    assert "agents/ella/memory/payroll.md" not in mem.stdout


def test_a_folder_read_before_is_checked_again_when_it_becomes_a_link(
    vault: Path, outside: Path
) -> None:
    """One open vault remembers folders it resolved (a pack reads 200 fact notes from one).
    A folder swapped for a link out after that, or a file in it that is a link out, is still
    refused; a link to another folder of the vault still reads its target and does not make
    the folder stand for the target's folder."""
    from vaultmem.core.vault import LinkOutsideVaultError, Vault

    v = Vault.open(vault)
    memory = vault / "memory"
    (memory / "first.md").write_text("first\n")
    (vault / "wiki").mkdir(exist_ok=True)
    (vault / "wiki" / "elsewhere.md").write_text("in the wiki\n")
    (vault / "wiki" / "second.md").write_text("the wiki's second\n")
    (memory / "second.md").write_text("memory's second\n")
    (memory / "alias.md").symlink_to(vault / "wiki" / "elsewhere.md")
    assert v.read_bytes(memory / "alias.md") == b"in the wiki\n"  # a link inside: its target
    assert v.read_bytes(memory / "second.md") == b"memory's second\n"  # not the wiki's
    assert v.read_bytes(memory / "first.md") == b"first\n"  # the folder is known now

    (memory / "leak.md").symlink_to(outside / "secret.md")
    with pytest.raises(LinkOutsideVaultError):
        v.read_bytes(memory / "leak.md")

    memory.rename(vault / "memory-moved")
    memory.symlink_to(outside, target_is_directory=True)
    (outside / "first.md").write_text(f"{MARKER}\n")
    with pytest.raises(LinkOutsideVaultError):
        v.read_bytes(memory / "first.md")
    with pytest.raises(LinkOutsideVaultError):
        v.open_inside(memory / "secret.md")
