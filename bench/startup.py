"""Start-up cost of the commands agents run on every turn, as whole processes.

Prints medians over N runs (default 20) of `vaultmem --help`, `read`, `append` and `status` on
a copy of example-vault/, next to a trivial three-command typer app and a bare `python -c pass`,
all in this interpreter's environment and measured in one run, plus the ratios. `read` and
`append` are measured on the fast path (the default) and through typer (VAULTMEM_NO_FAST=1).

    python bench/startup.py [--runs 20]

PYTHONDONTWRITEBYTECODE is removed from the children's environment and everything is
byte-compiled first: otherwise every run recompiles and the figures double.
"""

from __future__ import annotations

import argparse
import compileall
import os
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
VAULT = REPO / "example-vault"

TRIVIAL_APP = """
import typer

app = typer.Typer()


@app.command()
def read(agent: str = "x", json: bool = False) -> None:
    print(agent)


@app.command()
def status() -> None:
    print("ok")


@app.command()
def append(summary: str) -> None:
    print(summary)


app()
"""


def median_ms(
    cmd: list[str], runs: int, env: dict[str, str], extra: dict[str, str] | None = None
) -> float:
    env = {**env, **(extra or {})}
    samples = []
    for _ in range(runs + 1):
        start = time.perf_counter()
        proc = subprocess.run(cmd, env=env, capture_output=True)
        samples.append((time.perf_counter() - start) * 1000)
        if proc.returncode != 0:
            raise SystemExit(f"{' '.join(cmd)} failed: {proc.stderr.decode()[-500:]}")
    return statistics.median(samples[1:])  # the first run warms the file cache


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env.pop("VAULTMEM_VAULT", None)
    env.pop("VAULTMEM_AGENT", None)
    compileall.compile_dir(str(REPO / "vaultmem"), quiet=1)
    compileall.compile_dir(sysconfig.get_paths()["purelib"], quiet=1)
    with tempfile.TemporaryDirectory() as tmp:
        vault = Path(tmp) / "vault"
        shutil.copytree(VAULT, vault, ignore=shutil.ignore_patterns(".vaultmem"))
        env["VAULTMEM_HOME"] = str(Path(tmp) / "home")
        app = Path(tmp) / "trivial_typer_app.py"
        app.write_text(TRIVIAL_APP)
        py = sys.executable
        vm = [py, "-m", "vaultmem"]
        v = ["--vault", str(vault), "--agent", "ella"]
        subprocess.run([*vm, "keys", "create", *v], env=env, capture_output=True, check=True)
        subprocess.run([*vm, "read", *v, "--peek"], env=env, capture_output=True, check=True)
        typer_path = {"VAULTMEM_NO_FAST": "1"}
        cases: dict[str, tuple[list[str], dict[str, str] | None]] = {
            "python -c pass": ([py, "-c", "pass"], None),
            "trivial typer app": ([py, str(app), "read", "--agent", "ella"], None),
            "vaultmem --help": ([*vm, "--help"], None),
            "vaultmem read": ([*vm, "read", *v, "--peek"], None),
            "vaultmem read --json": ([*vm, "read", *v, "--peek", "--json"], None),
            "read (typer path)": ([*vm, "read", *v, "--peek"], typer_path),
            "vaultmem append": ([*vm, "append", "bench entry", "--channel", "bench", *v], None),
            "append (typer path)": (
                [*vm, "append", "bench entry", "--channel", "bench", *v],
                typer_path,
            ),
            "vaultmem status": ([*vm, "status", "--vault", str(vault)], None),
        }
        results = {
            name: median_ms(cmd, args.runs, env, extra) for name, (cmd, extra) in cases.items()
        }
    bare, typer_floor = results["python -c pass"], results["trivial typer app"]
    print(f"medians over {args.runs} runs (ms); Python {sys.version.split()[0]}")
    print(f"{'command':<24}{'median':>10}{'x typer app':>14}{'x python -c pass':>18}")
    for name, ms in results.items():
        print(f"{name:<24}{ms:>10.1f}{ms / typer_floor:>14.2f}{ms / bare:>18.2f}")


if __name__ == "__main__":
    main()
