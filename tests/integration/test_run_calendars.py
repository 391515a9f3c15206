"""Calendars with a real ``cronctl run`` (SPEC section 8): an excluded instant does not
run, is a skip record (reason calendar, naming the calendar and the rule), and ``why``,
``history`` and ``next`` say so."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from test_run_support import Project, open_sqlite

pytestmark = pytest.mark.slow


def _jobs() -> str:
    today = datetime.now(UTC).astimezone(ZoneInfo("Europe/Helsinki")).date()
    span = f"{today - timedelta(days=1)}..{today + timedelta(days=1)}"
    return f'''
[calendars.freeze]
exclude = ["{span}"]

[jobs.frozen]
every = "1s"
timezone = "Europe/Helsinki"
calendar = "freeze"
command = ["true"]

[jobs.free]
every = "1s"
command = ["true"]
''', span


def test_excluded_instants_are_calendar_skips(tmp_path: Path) -> None:
    project = Project(tmp_path, f"sqlite:///{tmp_path / 'state.db'}")
    text, span = _jobs()
    project.jobs(text)
    run = project.start()
    try:
        assert run.wait_for(lambda t: "ready" in t.lower(), 15), run.text()
        time.sleep(3)
    finally:
        assert run.stop() == 0, run.text()[-2000:]
    store = open_sqlite(project)
    try:
        assert store.list_executions(job_id="frozen", limit=None) == []
        assert store.list_executions(job_id="free", limit=None)  # the other job ran
        skips = store.list_skips(job_id="frozen", limit=None)
    finally:
        store.close()
    assert len(skips) >= 2
    assert {s.reason for s in skips} == {"calendar"}
    detail = "calendar freeze excludes "
    assert all(s.detail is not None and s.detail.startswith(detail)
               and s.detail.endswith(f"(exclude: {span})") for s in skips), skips

    at = skips[0].first_at.isoformat()
    why = project.cli("why", "frozen", at, "--json")
    assert why.returncode == 0, why.stderr
    doc = json.loads(why.stdout)
    assert (doc["outcome"], doc["reason"]) == ("skipped", "calendar")
    assert "calendar freeze excludes" in doc["detail"] and f"exclude: {span}" in doc["detail"]

    history = project.cli("history", "frozen", "--status", "skipped", "--json")
    assert history.returncode == 0, history.stderr
    reasons = {e["reason"] for e in json.loads(history.stdout)["executions"]}
    assert reasons == {"calendar"}

    nxt = project.cli("next", "frozen", "-n", "1", "--json")
    assert nxt.returncode == 0, nxt.stderr
    doc = json.loads(nxt.stdout)
    # a per-second job inside a three-day exclusion: every instant next looked at is out
    assert doc["fires"] == [] and len(doc["excluded"]) == 1000
    assert doc["excluded"][0]["note"].startswith("calendar freeze excludes")
