"""``cronctl --version``: one line ``cronctl <version>`` from the package metadata."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

import cronctl
from cronctl.cli.app import version

ROOT = Path(__file__).resolve().parents[2]


def test_version_prints_one_line_and_exits_0() -> None:
    proc = subprocess.run([sys.executable, "-m", "cronctl", "--version"], capture_output=True,
                          text=True, timeout=60, env={"PYTHONPATH": str(ROOT)})
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    assert proc.stdout == f"cronctl {version()}\n"
    assert re.fullmatch(r"cronctl \d+\.\d+\.\d+\S*\n", proc.stdout)


def test_the_fallback_version_matches_pyproject() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert cronctl.__version__ == project["version"]
