"""Notifications with two ``cronctl run`` nodes on one database, and with endpoints that
fail or hang (SPEC section 7): each event arrives exactly once cluster-wide, and a dead
endpoint costs WARNINGs, never a late fire."""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path

import pytest
from notify_support import SECRET, Hook, notify_config
from test_run_metrics import free_port, scrape, value
from test_run_support import Project, Running, open_sqlite

pytestmark = pytest.mark.slow

CLUSTER = '''
[jobs.flaky]
every = "1s"
mode = "single_instance"
max_attempts = 2
retry_backoff = "0s"
command = ["sh", "-c", "test -e {flag}"]

[jobs.solo]
every = "1s"
mode = "single_instance"
misfire_threshold = "1s"
misfire_policy = "skip"
command = ["sleep", "1.5"]

[jobs.hog]
every = "3s"
mode = "single_instance"
serial_group = "g"
command = ["sleep", "2"]

[jobs.waiter]
every = "1s"
mode = "single_instance"
serial_group = "g"
late_after = "1s"
command = ["true"]
'''


def _start_both(project: Project, suffix: str = "") -> tuple[Running, Running]:
    a = project.start(log_name=f"a{suffix}.log")
    b = project.start(config=project.root / "b.toml", log_name=f"b{suffix}.log")
    for run, node in ((a, "node-a"), (b, "node-b")):
        assert run.wait_for(lambda t, n=node: f"ready node={n}" in t, timeout=20), run.text()
    return a, b


def test_two_nodes_send_each_event_once(tmp_path: Path) -> None:
    hook = Hook()
    flag = tmp_path / "works"
    events = ["failed", "dead_letter", "recovered", "skipped", "late", "missed", "succeeded"]
    project = Project(tmp_path, f"sqlite:///{tmp_path / 'state.db'}",
                      extra=notify_config(hook.url, events))
    project.write_config("node-b", notify_config(hook.url, events), "b.toml")
    project.jobs(CLUSTER.format(flag=flag))
    a, b = _start_both(project)
    try:
        assert hook.wait(lambda: bool(hook.of("dead_letter", "flaky") and hook.of("late")
                                      and hook.of("skipped", "solo"))), hook.events
        flag.touch()
        assert hook.wait(lambda: bool(hook.of("recovered", "flaky"))), hook.events
    finally:
        assert a.stop() == 0, a.text()
        assert b.stop() == 0, b.text()
    time.sleep(3.0)  # no scheduler at all: the single_instance jobs miss instants
    a, b = _start_both(project, "2")
    try:
        assert hook.wait(lambda: bool(hook.of("missed", "solo"))), hook.events
        time.sleep(1.5)
    finally:
        assert a.stop() == 0, a.text()
        assert b.stop() == 0, b.text()
        hook.close()
    got = hook.events
    assert {e["node"] for e in got} == {"node-a", "node-b"}  # both nodes sent events
    # executions: each (event, execution) once, sent by the node that ran it
    store = open_sqlite(project)
    try:
        ran_on = {r.id: r.node_id for r in store.list_executions(limit=None)}
    finally:
        store.close()
    runs = Counter((e["event"], e["execution_id"]) for e in got if e["execution_id"])
    assert max(runs.values()) == 1, runs
    for e in got:
        if e["execution_id"] is not None:
            assert ran_on[e["execution_id"]] == e["node"], e
    # decisions both nodes take alike: once
    decided = Counter((e["event"], e["job"], e["scheduled_at"]) for e in got
                      if e["event"] in ("skipped", "late"))
    assert decided and max(decided.values()) == 1, decided
    assert len(hook.of("recovered", "flaky")) == 1
    missed = Counter(e["job"] for e in hook.of("missed"))
    assert missed["solo"] == 1, hook.of("missed")
    assert max(missed.values()) == 1, hook.of("missed")
    assert {h["Authorization"] for h in hook.headers} == {SECRET}


TICKS = '''
[jobs.tick]
every = "1s"
command = ["true"]

[jobs.tock]
every = "1s"
command = ["true"]

[jobs.tock.notify]
webhook = "{hang}"
'''


def test_a_failing_or_hanging_endpoint_delays_no_fire(tmp_path: Path) -> None:
    failing, hanging = Hook("fail"), Hook("hang")
    port = free_port()
    project = Project(tmp_path, f"sqlite:///{tmp_path / 'state.db'}",
                      extra=notify_config(failing.url, ["succeeded"])
                      + f'\n[metrics]\nlisten = "127.0.0.1:{port}"\n')
    project.jobs(TICKS.format(hang=hanging.url))
    run = project.start()
    try:
        assert run.wait_for(lambda t: "ready node=node-a" in t, timeout=15), run.text()
        assert run.wait_for(lambda t: "notification not delivered" in t, timeout=15), run.text()
        time.sleep(2.0)
        status = project.cli("status")
        failures = value(scrape(port), "cronctl_notify_failures_total")
        began = time.monotonic()
    finally:
        code = run.stop()
        stopped_in = time.monotonic() - began
        failing.close()
        hanging.close()
    text = run.text()
    assert code == 0, text
    assert stopped_in < 12, stopped_in  # a hanging endpoint does not hold the shutdown
    line = next(x for x in text.splitlines() if "notification not delivered" in x)
    assert " WARNING " in line
    assert (f"event=succeeded job=tick to webhook http://127.0.0.1:"
            f"{failing.server.server_address[1]}/… after 3 tries: HTTP 500") in line, line
    assert "T0KEN-in-path" not in text and SECRET not in text and "hunter2" not in text
    assert failing.hits >= 3 and hanging.hits >= 1
    assert failures >= 1
    assert "notifications failing on node-a since" in status.stdout, status.stdout
    assert "T0KEN" not in status.stdout and SECRET not in status.stdout
    # every fire on time although one endpoint fails every try and the other never answers
    store = open_sqlite(project)
    try:
        rows = [r for job in ("tick", "tock") for r in store.list_executions(job_id=job,
                                                                             limit=None)]
    finally:
        store.close()
    assert len(rows) >= 10
    lateness = sorted((r.started_at - r.scheduled_at).total_seconds() for r in rows
                      if r.started_at is not None)
    assert lateness[-1] < 0.5, lateness
    planned = sorted(r.scheduled_at for r in rows if r.job_id == "tick")
    steps = {(b - a).total_seconds() for a, b in zip(planned, planned[1:], strict=False)}
    assert steps == {1.0}, planned  # no instant dropped
