"""What the read commands and the dashboard's strip say matches what happened (issue 39):
one bad job file does not make ``list`` and ``status`` say there are no jobs (item 1),
and the strip and ``why`` agree on the instants before any scheduler had a job (item 10).
Real ``cronctl`` processes on a real SQLite file; the strip on the real store."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

from cronctl.ids import occurrence_id
from cronctl.jobs.model import ExecutionStatus, Origin
from cronctl.store import open_store

JOBS = """\
[jobs.alpha]
every = "10m"
command = ["false"]
max_attempts = 1

[jobs.beta]
cron = "0 0 3 * * *"
command = ["true"]
"""
TYPO = """\
[jobs.typo]
command = ["true"]
cron = "0 25 * * *"
"""


def _project(tmp_path: Path) -> tuple[Path, str]:
    (tmp_path / "jobs.d").mkdir()
    (tmp_path / "jobs.d" / "jobs.toml").write_text(JOBS)
    url = f"sqlite:///{tmp_path / 'state.db'}"
    config = tmp_path / "cronctl.toml"
    config.write_text(f'[scheduler]\ndatabase = "{url}"\njobs_dir = "jobs.d"\n'
                      'node_id = "node-a"\n')
    return config, url


def _cli(config: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "cronctl", "-c", str(config), *args],
                          capture_output=True, text=True, timeout=60, cwd=config.parent)


def test_one_bad_job_file_leaves_the_valid_jobs_listed_and_their_attention(
        tmp_path: Path) -> None:
    config, url = _project(tmp_path)
    store = open_store(url, node_id="node-a")
    try:
        at = datetime.now(UTC).replace(second=0, microsecond=0) - timedelta(minutes=30)
        eid = store.try_insert_execution(
            job_id="alpha", occurrence_id=occurrence_id("alpha", at), scheduled_at=at,
            attempt=1, origin=Origin.CRON, node_id="node-a", scope_node="node-a")
        assert eid is not None
        store.transition(eid, ExecutionStatus.PENDING, ExecutionStatus.DEAD_LETTER,
                         error="exit status 1")
    finally:
        store.close()
    (tmp_path / "jobs.d" / "zz-typo.toml").write_text(TYPO)

    listed = _cli(config, "list")
    assert listed.returncode == 1
    assert "alpha" in listed.stdout and "beta" in listed.stdout
    assert "zz-typo.toml:3" in listed.stderr and "25" in listed.stderr
    assert "valid ones" in listed.stderr
    doc = json.loads(_cli(config, "list", "--json").stdout)
    assert [j["id"] for j in doc["jobs"]] == ["alpha", "beta"]

    status = _cli(config, "status")
    assert status.returncode == 0, status.stderr
    assert "no enabled, unpaused jobs" not in status.stdout
    assert "alpha" in status.stdout and "beta" in status.stdout
    assert "failing: alpha (dead_letter" in status.stdout  # attention stays
    assert "zz-typo.toml:3" in status.stderr
    state = json.loads(_cli(config, "status", "--json").stdout)
    assert [f["job"] for f in state["failing"]] == ["alpha"]
    assert {f["job"] for f in state["next"]} == {"alpha", "beta"}


def test_the_strip_and_why_agree_before_a_scheduler_had_the_job(tmp_path: Path) -> None:
    from cronctl.jobs.loader import load_jobs
    from cronctl.jobs.settings import JobSettings
    from cronctl.serve.strip import PAST_SLOTS, SLOT, strips

    config, url = _project(tmp_path)
    now = datetime.now(UTC)
    jobs = load_jobs(JobSettings(jobs_dir=tmp_path / "jobs.d", base_dir=tmp_path), now=now).jobs
    alpha = next(job for job in jobs if job.id == "alpha")
    store = open_store(url, node_id="node-a")
    try:
        # a fresh install: no scheduler ever had the job
        fresh = strips([alpha], store, now)["alpha"]
        past = fresh[:PAST_SLOTS - 1]
        assert {slot.state for slot in past} == {"unplanned"}
        assert "no scheduler had the job" in past[0].label
        why = json.loads(_cli(config, "why", "alpha", "3h", "--json").stdout)
        assert (why["outcome"], why["reason"]) == ("not_planned", "not_yet_scheduled")
        # a scheduler first had it two hours ago: before that nothing was planned, after
        # it the instants with no record are "no record", as why says "missed"
        store.save_definitions([alpha], now=now - timedelta(hours=2))
        store.advance_cursor("alpha", now - timedelta(minutes=1))
        seen = strips([alpha], store, now)["alpha"]
        assert seen[PAST_SLOTS - 8].state == "unplanned"  # four hours ago
        assert seen[PAST_SLOTS - 2].state == "unknown"  # one hour ago
        assert seen[PAST_SLOTS - 2].start > now - timedelta(hours=2) + SLOT
        early = json.loads(_cli(config, "why", "alpha", "4h", "--json").stdout)
        late = json.loads(_cli(config, "why", "alpha", "1h", "--json").stdout)
        assert (early["outcome"], early["reason"]) == ("not_planned", "not_yet_scheduled")
        assert late["outcome"] == "missed"
    finally:
        store.close()
