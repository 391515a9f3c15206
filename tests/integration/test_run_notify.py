"""Notifications from a real ``cronctl run`` (SPEC section 7), received by a webhook
server in a thread of the test and by a command that appends its input to a file: each
event type, its JSON, the headers that reach the server and never a log line."""

from __future__ import annotations

import time
from datetime import datetime
from pathlib import Path

import pytest
from notify_support import SECRET, Hook, command_events, notify_command, notify_config
from test_run_support import Project, open_sqlite

from cronctl.store import occurrence_id

pytestmark = pytest.mark.slow

ALL = ["succeeded", "failed", "dead_letter", "abandoned", "cancelled", "recovered", "missed",
       "skipped", "late"]
KEYS = ["event", "job", "occurrence_id", "scheduled_at", "execution_id", "attempt", "status",
        "error", "reason", "count", "node", "at"]

EXECUTIONS = '''
[jobs.flaky]
every = "1s"
max_attempts = 2
retry_backoff = "0s"
command = ["sh", "-c", "test -e {flag}"]

[jobs.slow]
every = "2s"
timeout = "1s"
max_attempts = 1
command = ["sleep", "10"]

[jobs.busy]
every = "1s"
command = ["sleep", "1.6"]

[jobs.cancelme]
cron = "0 0 0 1 1 *"
command = ["sleep", "30"]
'''


def test_each_execution_event_reaches_the_webhook_and_the_command(tmp_path: Path) -> None:
    hook = Hook()
    script, out = notify_command(tmp_path)
    flag = tmp_path / "works"
    project = Project(tmp_path, f"sqlite:///{tmp_path / 'state.db'}",
                      extra=notify_config(hook.url, ALL, script))
    project.jobs(EXECUTIONS.format(flag=flag))
    run = project.start("-v")  # each fire's own line, also when fires share a wake
    try:
        assert run.wait_for(lambda t: "ready node=node-a" in t, timeout=15), run.text()
        assert hook.wait(lambda: bool(hook.of("dead_letter", "flaky") and
                                      hook.of("dead_letter", "slow") and
                                      hook.of("skipped", "busy"))), hook.events
        assert project.cli("trigger", "cancelme").returncode == 0
        assert run.wait_for(lambda t: "fired job=cancelme" in t), run.text()
        cancelled = project.cli("cancel", "--job", "cancelme")
        assert cancelled.returncode == 0, cancelled.stderr
        flag.touch()
        assert hook.wait(lambda: bool(hook.of("recovered", "flaky")
                                      and hook.of("cancelled", "cancelme"))), hook.events
        listed = [project.cli(*args) for args in (("validate",), ("validate", "--json"),
                                                  ("list",), ("list", "--json"),
                                                  ("status",), ("status", "--json"))]
    finally:
        assert run.stop() == 0, run.text()
        hook.close()
    events = hook.events
    for e in events:
        assert list(e) == KEYS, e
        assert e["node"] == "node-a" and e["at"].endswith("Z")
    # the secret reaches the server, and nothing else
    assert {h["Authorization"] for h in hook.headers} == {SECRET}
    for text in [run.text(), *(r.stdout + r.stderr for r in listed)]:
        assert SECRET not in text and "hunter2" not in text
    assert all(r.returncode == 0 for r in listed), [r.stderr for r in listed]

    # failed ... dead_letter, then recovered once, on the first success after them
    dead = hook.of("dead_letter", "flaky")
    first = dead[0]
    attempts = [(e["attempt"], e["status"]) for e in hook.of("failed", "flaky")
                if e["occurrence_id"] == first["occurrence_id"]]
    assert attempts == [(1, "failed"), (2, "dead_letter")]
    assert (first["attempt"], first["status"], first["error"]) == (2, "dead_letter",
                                                                   "exit code 1")
    [recovered] = hook.of("recovered", "flaky")
    assert recovered["status"] == "succeeded" and recovered["attempt"] == 1
    assert recovered["scheduled_at"] > max(e["scheduled_at"] for e in dead)
    first_success = min(e["scheduled_at"] for e in hook.of("succeeded", "flaky"))
    assert recovered["scheduled_at"] == first_success
    assert recovered["occurrence_id"] == occurrence_id(
        "flaky", _parse(recovered["scheduled_at"]))
    # a timeout: abandoned, and, as it was the last attempt, dead_letter; never "failed"
    abandoned = hook.of("abandoned", "slow")[0]
    assert (abandoned["status"], abandoned["error"]) == ("abandoned", "timed out after 1s")
    assert [e["occurrence_id"] for e in hook.of("dead_letter", "slow")][0] == (
        abandoned["occurrence_id"])
    assert not hook.of("failed", "slow")
    skipped = hook.of("skipped", "busy")[0]
    assert (skipped["status"], skipped["reason"], skipped["count"], skipped["execution_id"]
            ) == ("skipped", "overlap", 1, None)
    [cancel] = hook.of("cancelled", "cancelme")
    assert cancel["status"] == "cancelled" and isinstance(cancel["execution_id"], int)
    # no event twice
    keys = [(e["event"], e["job"], e["execution_id"], e["scheduled_at"], e["status"])
            for e in events]
    assert len(keys) == len(set(keys)), events
    # the command got the same events, with the event, job and execution in its env
    got = command_events(out)
    assert sorted((e["event"], e["job"], e["scheduled_at"], e["status"]) for _, e in got) == (
        sorted((e["event"], e["job"], e["scheduled_at"], e["status"]) for e in events))
    for env, e in got:
        eid = "" if e["execution_id"] is None else str(e["execution_id"])
        assert env == f"{e['event']} {e['job']} {eid}"


LATE = '''
[jobs.hog]
every = "3s"
serial_group = "g"
command = ["sleep", "2"]

[jobs.waiter]
every = "1s"
serial_group = "g"
late_after = "1s"
command = ["true"]

[jobs.tick]
every = "1s"
misfire_threshold = "1s"
command = ["true"]
'''


def test_late_and_one_missed_after_downtime(tmp_path: Path) -> None:
    hook = Hook()
    project = Project(tmp_path, f"sqlite:///{tmp_path / 'state.db'}",
                      extra=notify_config(hook.url, ["late", "missed"]))
    project.jobs(LATE)
    run = project.start()
    try:
        assert run.wait_for(lambda t: "ready node=node-a" in t, timeout=15), run.text()
        assert hook.wait(lambda: bool(hook.of("late", "waiter"))), hook.events
    finally:
        assert run.stop() == 0, run.text()
    assert not hook.of("missed")  # a first start misses nothing
    time.sleep(3.5)  # no scheduler: tick misses about three instants
    again = project.start(log_name="run2.log")
    try:
        assert again.wait_for(lambda t: "ready node=node-a" in t, timeout=15), again.text()
        assert hook.wait(lambda: bool(hook.of("missed", "tick"))), hook.events
        time.sleep(1.0)
    finally:
        assert again.stop() == 0, again.text()
        hook.close()
    late = hook.of("late")
    assert {e["job"] for e in late} == {"waiter"}, late
    occurrences = [e["occurrence_id"] for e in late]
    assert len(occurrences) == len(set(occurrences))  # once per occurrence
    store = open_sqlite(project)
    try:
        for e in late:
            assert e["reason"] == "not started 1s after its planned instant"
            assert (e["execution_id"], e["attempt"], e["status"]) == (None, None, None)
            rows = store.executions_of_occurrence("waiter", e["occurrence_id"])
            planned = _parse(e["scheduled_at"])
            # late means: not started within late_after (it may start later, or be skipped)
            assert all(r.started_at is None or (r.started_at - planned).total_seconds() > 1
                       for r in rows), rows
            assert (_parse(e["at"]) - planned).total_seconds() >= 1  # not before late_after
    finally:
        store.close()
    [missed] = hook.of("missed", "tick")  # one event for the whole set
    assert (missed["status"], missed["reason"], missed["occurrence_id"]) == (
        "skipped", "misfire", None)
    assert 2 <= missed["count"] <= 5, missed
    assert not hook.of("missed", "waiter") or len(hook.of("missed", "waiter")) == 1


def _parse(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))
