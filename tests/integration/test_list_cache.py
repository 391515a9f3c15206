"""``cronctl list`` on a big job set keeps the validated set beside the database
(:mod:`cronctl.jobs.setcache`) and shows the same jobs from it; ``validate`` never reads
or writes it. Real processes, a real SQLite state directory."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import time
from pathlib import Path

from cronctl.jobs.setcache import MIN_JOBS


def _project(root: Path) -> None:
    jobs = root / "jobs.d"
    jobs.mkdir()
    for f in range(4):
        (jobs / f"f{f}.toml").write_text("".join(
            f'[jobs.j{f}-{i}]\ncron = "{i % 60} {i % 24} * * *"\ncommand = ["/bin/true"]\n'
            for i in range(MIN_JOBS // 4 + 1)))
    (root / "cronctl.toml").write_text(
        '[scheduler]\ndatabase = "sqlite:///state/cronctl.db"\njobs_dir = "jobs.d"\n')
    (root / "state").mkdir(mode=0o700)


def _cronctl(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "cronctl", "-c", "cronctl.toml", *args],
                          cwd=root, capture_output=True, text=True, timeout=120)


def _cache(root: Path, within: float = 30.0) -> list[Path]:
    deadline = time.monotonic() + within
    while True:  # written by a child the command did not wait for
        found = [p for p in (root / "state").glob("jobs-*.pickle")]
        if found or time.monotonic() > deadline:
            return found
        time.sleep(0.05)


def _ids(out: str) -> list[str]:
    return [row["id"] for row in json.loads(out)["jobs"]]


def test_list_keeps_the_set_and_lists_the_same_jobs_from_it(tmp_path: Path) -> None:
    _project(tmp_path)
    assert _cronctl(tmp_path, "validate").returncode == 0
    assert _cache(tmp_path, within=0) == []  # validate never writes it
    first = _cronctl(tmp_path, "list", "--json")
    assert first.returncode == 0, first.stderr
    (path,) = _cache(tmp_path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    written = path.stat().st_mtime_ns
    second = _cronctl(tmp_path, "list", "--json")
    assert second.returncode == 0, second.stderr
    assert _ids(second.stdout) == _ids(first.stdout)
    assert len(_ids(second.stdout)) >= MIN_JOBS
    assert path.stat().st_mtime_ns == written  # a hit: nothing written again


def test_an_edited_job_file_shows_at_once(tmp_path: Path) -> None:
    _project(tmp_path)
    _cronctl(tmp_path, "list", "--json")
    (path,) = _cache(tmp_path)
    with (tmp_path / "jobs.d" / "f0.toml").open("a") as f:
        f.write('[jobs.added]\ncron = "0 0 * * *"\ncommand = ["/bin/true"]\n')
    listed = _cronctl(tmp_path, "list", "--json")
    assert "added" in _ids(listed.stdout)
    (tmp_path / "jobs.d" / "f1.toml").write_text('[jobs.broken]\ncron = "nope"\n')
    refused = _cronctl(tmp_path, "list", "--json")
    assert refused.returncode == 1 and "broken" in refused.stderr
    assert os.path.exists(path)
