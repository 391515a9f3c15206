"""``cronctl status`` points out failing jobs, late jobs and failing notifications (SPEC
section 7), read from the state database; also with no scheduler running at all."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

from cronctl.ids import occurrence_id
from cronctl.jobs.model import ExecutionStatus, Origin
from cronctl.store import Store, open_store

JOBS = """\
[jobs.broken]
every = "1m"
command = ["false"]

[jobs.fine]
every = "1m"
command = ["true"]

[jobs.slowpoke]
every = "1m"
late_after = "5m"
command = ["true"]

[jobs.patient]
every = "1h"
late_after = "2h"
command = ["true"]
"""


def _ended(store: Store, job: str, at: datetime, status: ExecutionStatus) -> None:
    row = store.try_insert_execution(job_id=job, occurrence_id=occurrence_id(job, at),
                                     scheduled_at=at, attempt=1, origin=Origin.CRON,
                                     node_id="n1", scope_node="n1")
    assert row is not None and store.transition(row, ExecutionStatus.PENDING, status,
                                                error="exit code 1")


def test_status_shows_failing_late_and_notification_failures(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'state.db'}"
    (tmp_path / "jobs.d").mkdir()
    (tmp_path / "jobs.d" / "jobs.toml").write_text(JOBS)
    (tmp_path / "cronctl.toml").write_text(f'[scheduler]\ndatabase = "{url}"\n')
    now = datetime.now(UTC).replace(second=0, microsecond=0)
    store = open_store(url, node_id="n1")
    try:
        _ended(store, "broken", now - timedelta(minutes=2), ExecutionStatus.SUCCEEDED)
        _ended(store, "broken", now - timedelta(minutes=1), ExecutionStatus.DEAD_LETTER)
        _ended(store, "fine", now - timedelta(minutes=2), ExecutionStatus.FAILED)
        _ended(store, "fine", now - timedelta(minutes=1), ExecutionStatus.SUCCEEDED)
        store.advance_cursor("slowpoke", now - timedelta(minutes=30))  # nothing since
        store.advance_cursor("patient", now - timedelta(minutes=30))
        store.note_delivery("n1", ok=False, error="webhook https://h/…: HTTP 500",
                            now=now - timedelta(minutes=3))
    finally:
        store.close()
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": ":".join(sys.path)}
    run = [sys.executable, "-m", "cronctl", "-c", str(tmp_path / "cronctl.toml"), "status"]
    doc = json.loads(subprocess.run([*run, "--json"], capture_output=True, text=True,
                                    env=env, check=True, timeout=30).stdout)
    assert [(f["job"], f["status"], f["error"]) for f in doc["failing"]] == [
        ("broken", "dead_letter", "exit code 1")]
    [late] = doc["late"]
    assert (late["job"], late["late_after"]) == ("slowpoke", 300.0)
    assert late["planned"] == (now - timedelta(minutes=29)).strftime("%Y-%m-%dT%H:%M:%SZ")
    [failing] = doc["notify_failing"]
    assert (failing["node"], failing["failures"], failing["last_error"]) == (
        "n1", 1, "webhook https://h/…: HTTP 500")
    assert failing["live"] is False  # issue 24: no scheduler runs here
    text = subprocess.run(run, capture_output=True, text=True, env=env, check=True,
                          timeout=30).stdout
    assert "failing: broken (dead_letter, planned " in text
    assert "late: slowpoke (planned " in text and "not started after 5m)" in text
    # issue 24: it said "notifications failing on n1 since ..." under "no live nodes"
    assert "no live nodes" in text and "notifications failing on n1" not in text
    assert "notifications were failing on n1 in its last run (it is not live now)" in text
    assert "(webhook https://h/…: HTTP 500)" in text


def test_status_shows_late_a_fire_that_waits_with_its_row_written_ahead(tmp_path: Path) -> None:
    """Issue 24: a fire waiting for a slot has a pending first attempt (no start). It is
    late once late_after has passed, not only when it finally starts."""
    url = f"sqlite:///{tmp_path / 'state.db'}"
    (tmp_path / "jobs.d").mkdir()
    (tmp_path / "jobs.d" / "jobs.toml").write_text(
        '[jobs.queued]\nevery = "1m"\nlate_after = "3s"\ncommand = ["true"]\n')
    (tmp_path / "cronctl.toml").write_text(f'[scheduler]\ndatabase = "{url}"\n')
    now = datetime.now(UTC).replace(second=0, microsecond=0)
    store = open_store(url, node_id="n1")
    try:
        _ended(store, "queued", now - timedelta(minutes=2), ExecutionStatus.SUCCEEDED)
        store.advance_cursor("queued", now - timedelta(minutes=2))
        at = now - timedelta(minutes=1)
        assert store.try_insert_execution(job_id="queued", occurrence_id=occurrence_id(
            "queued", at), scheduled_at=at, attempt=1, origin=Origin.CRON, node_id="n1",
            scope_node="n1") is not None  # written ahead; it waits for a slot
    finally:
        store.close()
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": ":".join(sys.path)}
    run = [sys.executable, "-m", "cronctl", "-c", str(tmp_path / "cronctl.toml"), "status"]
    doc = json.loads(subprocess.run([*run, "--json"], capture_output=True, text=True,
                                    env=env, check=True, timeout=30).stdout)
    [late] = doc["late"]
    assert (late["job"], late["planned"]) == ("queued", at.strftime("%Y-%m-%dT%H:%M:%SZ"))
