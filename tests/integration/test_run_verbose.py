"""``cronctl run -v`` shows DEBUG lines: each job's next planned instant at start, what
each wake-up decided, and each fire's own line when fires share a wake; without ``-v``
fires that share a wake make one INFO line."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_run_support import Project

pytestmark = pytest.mark.slow

JOBS = ('[jobs.tick]\nevery = "1s"\ncommand = ["true"]\n'
        '[jobs.tock]\nevery = "1s"\ncommand = ["true"]\n')


def test_verbose_run_logs_debug_lines(tmp_path: Path) -> None:
    project = Project(tmp_path, "none")
    project.jobs(JOBS)
    run = project.start("-v")
    try:
        assert run.wait_for(lambda t: "DEBUG wake:" in t, 10), run.text()
        assert run.wait_for(lambda t: "DEBUG fired job=tick" in t
                            and "DEBUG fired job=tock" in t, 10), run.text()
        assert "DEBUG scheduled job=tick next=" in run.text()
    finally:
        assert run.stop() == 0
    quiet = project.start()
    try:
        assert quiet.wait_for(
            lambda t: "INFO fired 2 executions planned=" in t
            and ("(jobs tick, tock)" in t or "(jobs tock, tick)" in t), 10), quiet.text()
        assert "DEBUG" not in quiet.text()
        assert "fired job=" not in quiet.text()
    finally:
        assert quiet.stop() == 0


def test_a_fire_is_logged_before_its_failure(tmp_path: Path) -> None:
    """Issue 24: with fires waiting for a slot the `fired` lines were held while a failure
    was logged at once: `finished ... exec=3` came before `fired 3 executions`."""
    import re

    project = Project(tmp_path, f"sqlite:///{tmp_path / 'state.db'}",
                      extra="max_concurrent_jobs = 1\n")
    project.jobs("".join(f'[jobs.f{i}]\nevery = "2s"\ncommand = ["false"]\nmax_attempts = 1\n'
                         for i in range(3)))
    run = project.start("-v")
    try:
        assert run.wait_for(lambda t: t.count("status=dead_letter") >= 6, 20), run.text()
    finally:
        assert run.stop() == 0
    text = run.text()
    fired: set[str] = set()  # -v: each fire has its own line, also within a burst
    for line in text.splitlines():
        one = re.search(r"fired job=\S+ exec=(\d+)", line)
        if one:
            fired.add(one.group(1))
        done = re.search(r"finished job=\S+ exec=(\d+) status=dead_letter", line)
        if done:
            assert done.group(1) in fired, f"exec {done.group(1)} before its fired line:\n{text}"
