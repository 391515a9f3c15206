"""SQLite's write-ahead log stays on a bound while ``cronctl run`` writes (issue: the WAL
filled a 2 MB disk after 41 executions without a checkpoint). Five per-second jobs print
~180 KB each for several seconds, more than 4 MB of job log lines in all; the WAL file is
checkpointed every ~1 MiB and cut back to 1 MiB, never near SQLite's default of 4 MB."""

from __future__ import annotations

import sqlite3
import sys
import time
from pathlib import Path

import pytest
from test_run_support import Project

pytestmark = pytest.mark.slow

PRINT = "import sys\nsys.stdout.write(('y' * 120 + '\\n') * 1500)\n"


def test_the_wal_stays_near_one_mebibyte(tmp_path: Path) -> None:
    project = Project(tmp_path, f"sqlite:///{tmp_path / 'state.db'}")
    script = tmp_path / "print.py"
    script.write_text(PRINT)
    project.jobs("\n".join(
        f'[jobs.out{i}]\nevery = "1s"\ncommand = ["{sys.executable}", "-I", "{script}"]\n'
        for i in range(5)))
    wal = tmp_path / "state.db-wal"
    node = project.start()
    sizes: list[int] = []
    try:
        assert node.wait_for(lambda t: "ready node=" in t, 20), node.text()
        end = time.monotonic() + 7
        while time.monotonic() < end:
            if wal.exists():
                sizes.append(wal.stat().st_size)
            time.sleep(0.1)
    finally:
        code = node.stop()
    assert code == 0, node.text()[-2000:]
    with sqlite3.connect(tmp_path / "state.db") as conn:
        finished = conn.execute("SELECT count(*) FROM job_executions "
                                "WHERE status = 'succeeded'").fetchone()[0]
    conn.close()
    assert finished >= 20, node.text()[-2000:]  # > 3.6 MB of log lines went through the WAL
    assert sizes and max(sizes) <= 1_600_000, max(sizes)
