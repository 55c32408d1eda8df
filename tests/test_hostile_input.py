"""Hostile input on one machine: texts built to make the scanner or a reader work for minutes
(issue 22). Each command answers with its normal outcome; none of these takes a measurable
time any more, so they are ordinary tests (the time bound itself is in test_secrets_linear)."""

from __future__ import annotations

from pathlib import Path

from tests._cli import run_cli
from tests._layer3_helpers import make_keys

BACKTRACKERS = ["_" * 8000 + " token", "-" * 8000 + " pass", "a." * 4000 + " ://"]


def test_an_oversized_body_is_refused_by_its_cap_before_it_is_scanned(vault: Path) -> None:
    make_keys(vault, "ella")
    body = "-" * 5_000_000 + " pass"  # 5 MB: the old scanner would run for hours
    result = run_cli(
        "append", "big", "--body", "-", "--type", "note", "--agent", "ella", "--vault", str(vault),
        stdin=body,
    )  # fmt: skip
    assert result.exit_code == 2 and "at most 20000" in result.stderr
    state = run_cli(
        "state", "set", "Big", "-", "--agent", "ella", "--vault", str(vault), stdin=body
    )
    assert state.exit_code == 2 and "at most 20000" in state.stderr


def test_accepted_bodies_that_backtracked_are_written(vault: Path) -> None:
    make_keys(vault, "ella")
    for n, body in enumerate(BACKTRACKERS):
        result = run_cli(
            "append", f"entry {n}", "--body", "-", "--type", "note", "--agent", "ella",
            "--vault", str(vault), stdin=body,
        )  # fmt: skip
        assert result.exit_code == 0, result.stderr
        state = run_cli(
            "state", "set", f"Section {n}", "-", "--agent", "ella", "--vault", str(vault),
            stdin=body,
        )  # fmt: skip
        assert state.exit_code == 0, state.stderr
    assert run_cli("verify", "--vault", str(vault)).exit_code == 0
