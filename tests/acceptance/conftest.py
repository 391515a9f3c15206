"""Fixtures of the black-box acceptance checks of SPEC.md: the ``cronctl`` executable
in a temporary directory with real TOML files, and the public engine API."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from acc_helpers import CRONCTL, Result, Run, Write, clean_env


@pytest.fixture
def run(tmp_path: Path) -> Run:
    """Run ``cronctl ARGS`` in ``tmp_path`` (or ``cwd=``), piped, in a clean environment;
    ``module=True`` runs ``python -m cronctl`` instead of the console script."""

    def invoke(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None,
               module: bool = False, timeout: float = 30) -> Result:
        argv = [sys.executable, "-m", "cronctl"] if module else [str(CRONCTL)]
        proc = subprocess.run([*argv, *args], cwd=cwd or tmp_path,
                              env=env if env is not None else clean_env(),
                              capture_output=True, text=True, timeout=timeout,
                              stdin=subprocess.DEVNULL, check=False)
        return Result(tuple(args), proc.returncode, proc.stdout, proc.stderr)

    return invoke


@pytest.fixture
def write(tmp_path: Path) -> Write:
    """Write a text file under ``tmp_path`` (dedented), creating its directories."""

    def write_file(name: str, text: str) -> Path:
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
        return path

    return write_file
