"""``cronctl run -v`` shows DEBUG lines: each job's next planned instant at start, and
what each wake-up decided."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_run_support import Project

pytestmark = pytest.mark.slow


def test_verbose_run_logs_debug_lines(tmp_path: Path) -> None:
    project = Project(tmp_path, "none")
    project.jobs('[jobs.tick]\nevery = "1s"\ncommand = ["true"]\n')
    run = project.start("-v")
    try:
        assert run.wait_for(lambda t: "DEBUG wake:" in t, 10), run.text()
        assert "DEBUG scheduled job=tick next=" in run.text()
    finally:
        assert run.stop() == 0
    quiet = project.start()
    try:
        assert quiet.wait_for(lambda t: "fired job=tick" in t, 10), quiet.text()
        assert "DEBUG" not in quiet.text()
    finally:
        assert quiet.stop() == 0
