"""`vaultmem show PATH[:LINE[-LINE]]`: the lines a recall hit points at, scoped like recall."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests._cli import run_cli


def show(vault: Path, *args: str) -> tuple[int, str, str]:
    res = run_cli("show", *args, "--vault", str(vault))
    return res.exit_code, res.stdout, res.stderr


def test_a_recall_hit_is_printed_by_its_path_and_lines(vault: Path) -> None:
    res = run_cli("recall", "review days", "--vault", str(vault), "--json", "--agent", "ella")
    hit = json.loads(res.stdout)["hits"][0]
    code, out, _ = show(vault, f"{hit['path']}:{hit['line_start']}-{hit['line_end']}")
    assert code == 0
    assert out.startswith(f"{hit['path']}:{hit['line_start']}-{hit['line_end']} (of ")
    lines = (vault / hit["path"]).read_text().splitlines()
    assert out.splitlines()[1:] == lines[hit["line_start"] - 1 : hit["line_end"]]


def test_a_line_and_a_count_and_the_marker_for_what_follows(vault: Path) -> None:
    code, out, _ = show(vault, "nexus/live-context.md:3", "--lines", "2")
    assert code == 0 and out.splitlines()[0] == "nexus/live-context.md:3-4 (of {} lines)".format(
        len((vault / "nexus/live-context.md").read_text().splitlines())
    )
    assert "more lines: vaultmem show nexus/live-context.md:5-" in out.splitlines()[-1]
    data = json.loads(
        run_cli("show", "memory/MEMORY.md:1-2", "--vault", str(vault), "--json").stdout
    )
    assert (data["line_start"], data["line_end"], data["cut"]) == (1, 2, False)


def test_an_agent_never_sees_another_agents_private_notes(vault: Path) -> None:
    private = next((vault / "agents/lyra/memory").glob("*.md"))
    rel = private.relative_to(vault).as_posix()
    assert show(vault, rel)[0] == 0  # a person sees everything
    assert show(vault, rel, "--agent", "lyra")[0] == 0
    code, _out, err = show(vault, rel, "--agent", "ella")
    assert code == 4 and f"no note {rel}" in err  # as if it did not exist
    # a link inside the vault is scoped by where it points
    os.symlink(private, vault / "wiki" / "payroll-notes.md")
    assert show(vault, "wiki/payroll-notes.md", "--agent", "ella")[0] == 4
    assert show(vault, "wiki/payroll-notes.md", "--agent", "lyra")[0] == 0
    assert show(vault, "Review.md", "--agent", "ella")[0] == 4  # a page for people


@pytest.mark.parametrize(
    ("spec", "code"),
    [
        ("../x.md", 8),
        ("/etc/passwd", 8),
        (".vaultmem/queue/ella/x.md", 8),
        (".git/config.md", 8),
        ("vaultmem.toml", 2),
        ("memory/MEMORY.md:5-2", 2),
        ("memory/MEMORY.md:0", 2),
        ("memory/MEMORY.md:99999", 4),
        ("memory/nothing-here.md", 4),
        ("", 2),
    ],
)
def test_bad_specs_have_their_exit_codes(vault: Path, spec: str, code: int) -> None:
    got, out, err = show(vault, spec)
    assert got == code, err
    assert out == "" and err.startswith("Error: ")


def test_a_link_out_of_the_vault_is_never_followed(vault: Path, tmp_path: Path) -> None:
    secret = tmp_path / "shadow.md"
    secret.write_text("root:*:19000:0:99999:7:::\n")
    os.symlink(secret, vault / "wiki" / "shadow.md")
    code, out, err = show(vault, "wiki/shadow.md")
    assert code == 8 and "root:" not in out + err


def test_a_huge_or_broken_note_is_shown_in_part_with_a_warning(vault: Path) -> None:
    big = vault / "wiki" / "big.md"
    big.write_bytes(b"line\n" * 300_000 + b"\xff\xfe tail\n")
    code, out, err = show(vault, "wiki/big.md:1-3")
    assert code == 0 and out.splitlines()[1:] == ["line", "line", "line"]
    assert "only the first" in err
    (vault / "wiki" / "bad.md").write_bytes(b"ok\n\xff\xfe\n")
    code, out, err = show(vault, "wiki/bad.md")
    assert code == 0 and "not UTF-8" in err and "ok" in out
