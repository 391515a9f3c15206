"""The man pages parse cleanly in mandoc, a second formatter beside groff: a `.TH` date
it cannot read shows verbatim in the page footer and makes `mandoc -Tlint` warn."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "man" / "cronctl.1", ROOT / "man" / "cronctl.toml.5"]


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.name)
def test_mandoc_finds_no_warning(page: Path) -> None:
    if shutil.which("mandoc") is None:
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail("mandoc is required in CI (.ci/run installs it)")
        pytest.skip("mandoc is not installed here")
    # -W warning: report warnings and worse, not the style notes (lines over 80 bytes)
    lint = subprocess.run(["mandoc", "-T", "lint", "-W", "warning", str(page)],
                          capture_output=True, text=True, timeout=30)
    assert lint.returncode == 0, lint.stdout + lint.stderr
