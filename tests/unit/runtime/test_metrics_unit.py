"""The metrics of section 7 as the fire path's hooks move them, read back through
prometheus_client's own text parser; /healthz; the server only when configured."""

from __future__ import annotations

import contextlib
import json
import socket
import urllib.error
import urllib.request
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace

import pytest
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from cronctl.core import CloseInterrupted, Fire, Missed, Skip, SkipReason
from cronctl.errors import ConfigError
from cronctl.jobs.model import (
    CommandTarget,
    ExecutionStatus,
    JobDefinition,
    MisfirePolicy,
    Origin,
)
from cronctl.jobs.notify import NotifySpec
from cronctl.runtime.fire.records import Run
from cronctl.runtime.fire.watch import Fanout, NullWatch, find_watch
from cronctl.runtime.metrics import Metrics, serve_metrics
from cronctl.runtime.observers import serving, watch_for

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
JOBS = (JobDefinition(id="a", target=CommandTarget(("true",)), every=timedelta(seconds=10)),
        JobDefinition(id="b", target=CommandTarget(("true",)), cron="0 0 * * * *"),
        JobDefinition(id="off", target=CommandTarget(("true",)), cron="0 0 * * * *",
                      enabled=False))


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> datetime:
        return self.now


def _metrics(clock: Clock, store: list[bool] | None = None) -> Metrics:
    up = store if store is not None else [True]
    return Metrics(version="9.9", node_id="n1", jobs=lambda: JOBS, clock=clock,
                   store_up=lambda: up[0], running=lambda: 3)


def _run(job: JobDefinition, due: datetime, attempt: int = 1) -> Run:
    fire = Fire(1, job.id, due, due, attempt, Origin.CRON, "occ")
    return Run(fire, job, 7)


def _samples(metrics: Metrics) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    text = generate_latest(metrics.registry).decode()
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def test_hooks_move_the_counters_and_gauges() -> None:
    clock = Clock()
    m = _metrics(clock)
    before = _samples(m)
    assert before[("cronctl_fires_total", (("job", "a"),))] == 0  # exported from the start
    assert before[("cronctl_build_info", (("version", "9.9"),))] == 1
    assert before[("cronctl_store_up", ())] == 1
    assert before[("cronctl_notify_failures_total", ())] == 0
    a, b = JOBS[0], JOBS[1]
    clock.now = T0 + timedelta(milliseconds=3)
    m.started(_run(a, T0))
    m.started(_run(a, T0))
    clock.now = T0 + timedelta(seconds=2)
    m.started(_run(b, T0))
    m.finished(_run(a, T0), ExecutionStatus.SUCCEEDED, None)
    m.finished(_run(b, T0), ExecutionStatus.FAILED, "boom")
    m.finished(_run(b, T0, 2), ExecutionStatus.DEAD_LETTER, "boom")
    m.interrupted(CloseInterrupted(9, "b", ExecutionStatus.LOST))
    m.skipped(Skip("a", T0, Origin.CRON, SkipReason.OVERLAP))
    m.skipped(Skip("a", T0, Origin.CRON, SkipReason.OVERLAP))
    m.skipped(Skip("a", T0, Origin.CRON, SkipReason.REMOVED))  # not a skip record
    m.skipped(Skip("a", T0, Origin.MISFIRE, SkipReason.MISFIRE))  # counted through missed
    # a late set's instant dropped behind the set's own fire: no Missed counts it
    m.skipped(Skip("a", T0, Origin.CRON, SkipReason.MISFIRE, detail="late"))
    m.missed(Missed("b", MisfirePolicy.FIRE_NOW, 5, 4, T0))
    m.missed(Missed("b", MisfirePolicy.FIRE_ALL, 2, 0, T0))  # nothing dropped
    m.loop(2)
    got = _samples(m)
    assert got[("cronctl_fires_total", (("job", "a"),))] == 2
    assert got[("cronctl_fires_total", (("job", "b"),))] == 1
    assert got[("cronctl_executions_total", (("job", "a"), ("status", "succeeded")))] == 1
    assert got[("cronctl_executions_total", (("job", "b"), ("status", "failed")))] == 1
    assert got[("cronctl_executions_total", (("job", "b"), ("status", "lost")))] == 1
    assert got[("cronctl_executions_total", (("job", "b"), ("status", "dead_letter")))] == 1
    assert got[("cronctl_skipped_total", (("job", "a"), ("reason", "overlap")))] == 2
    assert got[("cronctl_skipped_total", (("job", "b"), ("reason", "misfire")))] == 4
    assert got[("cronctl_skipped_total", (("job", "a"), ("reason", "misfire")))] == 1
    assert not any(k[0] == "cronctl_skipped_total" and ("reason", "removed") in k[1]
                   for k in got)
    assert got[("cronctl_lateness_seconds_count", ())] == 3
    assert got[("cronctl_lateness_seconds_bucket", (("le", "0.005"),))] == 2
    assert got[("cronctl_lateness_seconds_bucket", (("le", "1.0"),))] == 2
    assert got[("cronctl_lateness_seconds_bucket", (("le", "2.5"),))] == 3
    assert got[("cronctl_lateness_seconds_sum", ())] == pytest.approx(2.006)
    assert got[("cronctl_running_executions", ())] == 3
    assert got[("cronctl_waiting_fires", ())] == 2
    assert got[("cronctl_job_last_success_timestamp_seconds", (("job", "a"),))] == (
        clock.now.timestamp())
    assert ("cronctl_job_last_success_timestamp_seconds", (("job", "b"),)) not in got
    # the next planned instant of each enabled job, from the scheduler's clock
    assert got[("cronctl_job_next_fire_timestamp_seconds", (("job", "a"),))] == (
        (T0 + timedelta(seconds=10)).timestamp())
    assert got[("cronctl_job_next_fire_timestamp_seconds", (("job", "b"),))] == (
        (T0 + timedelta(hours=1)).timestamp())
    assert ("cronctl_job_next_fire_timestamp_seconds", (("job", "off"),)) not in got
    # no *_created series: the names are exactly section 7's
    assert not any(name.endswith("_created") for name, _ in got)


def test_health_follows_the_loop_and_the_store(monkeypatch: pytest.MonkeyPatch) -> None:
    up = [True]
    m = _metrics(Clock(), up)
    assert m.health() == (False, {"status": "unhealthy", "scheduler": "starting",
                                  "store": "up", "node": "n1"})
    m.loop(0)
    assert m.health()[0] is True
    up[0] = False
    ok, doc = m.health()
    assert (ok, doc["store"]) == (False, "unreachable")
    assert _samples(m)[("cronctl_store_up", ())] == 0
    up[0] = True
    import cronctl.runtime.metrics as mod

    beat = m._beat
    monkeypatch.setattr(mod.time, "monotonic", lambda: beat + mod.LOOP_STALE + 1)
    assert m.health() == (False, {"status": "unhealthy", "scheduler": "stalled",
                                  "store": "up", "node": "n1"})


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _get(url: str) -> tuple[int, str, str]:
    try:
        with urllib.request.urlopen(url, timeout=5) as resp:
            return resp.status, resp.headers["Content-Type"], resp.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.headers["Content-Type"], exc.read().decode()


def test_the_server_serves_metrics_and_healthz() -> None:
    up = [True]
    m = _metrics(Clock(), up)
    port = _free_port()
    with serve_metrics(("127.0.0.1", port), m):
        code, ctype, body = _get(f"http://127.0.0.1:{port}/healthz")
        assert (code, ctype) == (503, "application/json")
        assert body.count("\n") == 1 and json.loads(body)["scheduler"] == "starting"
        m.loop(0)
        assert _get(f"http://127.0.0.1:{port}/healthz")[0] == 200
        up[0] = False
        assert _get(f"http://127.0.0.1:{port}/healthz")[0] == 503
        code, ctype, body = _get(f"http://127.0.0.1:{port}/metrics")
        assert code == 200 and ctype.startswith("text/plain")
        names = {f.name for f in text_string_to_metric_families(body)}
        assert {"cronctl_fires", "cronctl_store_up", "cronctl_build_info"} <= names
        assert _get(f"http://127.0.0.1:{port}/other")[0] == 404
    with pytest.raises(urllib.error.URLError):
        urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=5)


def test_a_busy_port_is_one_clear_error() -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        with pytest.raises(ConfigError, match=r"^\[metrics\] listen = '127.0.0.1:\d+': "
                                              r"cannot listen there: .+"), \
                serve_metrics(("127.0.0.1", port), _metrics(Clock())):
            pass


class _View:
    """A scheduler as its observers see it (observers.SchedulerView)."""

    def __init__(self, listen: tuple[str, int] | None) -> None:
        self.config = SimpleNamespace(metrics_listen=listen, notify=NotifySpec(), node_id="n1")
        self.store = SimpleNamespace(persistent=False)
        self.clock = Clock()
        self.running = 0
        self.down = False

    def jobs(self) -> tuple[JobDefinition, ...]:
        return JOBS

    def job(self, job_id: str) -> JobDefinition | None:
        return next((j for j in JOBS if j.id == job_id), None)

    def store_down(self) -> bool:
        return self.down

    def running_count(self) -> int:
        return self.running

    def alive(self) -> bool:
        return True

    def refusing(self) -> bool:
        return False


def test_nothing_is_served_unless_configured() -> None:
    unconfigured = _View(None)
    watch = watch_for(unconfigured)  # type: ignore[arg-type]
    assert find_watch(watch, Metrics) is None
    assert isinstance(serving(unconfigured.config, watch),  # type: ignore[arg-type]
                      contextlib.nullcontext)
    with serve_metrics(None, None):
        pass
    m = _metrics(Clock())
    assert find_watch(Fanout(NullWatch(), m), Metrics) is m
    assert find_watch(NullWatch(), Metrics) is None


def test_the_metrics_read_the_scheduler_through_its_view() -> None:
    view = _View(("127.0.0.1", 0))
    m = find_watch(watch_for(view), Metrics)  # type: ignore[arg-type]
    assert m is not None
    view.running, view.down = 3, True
    got = _samples(m)
    assert got[("cronctl_running_executions", ())] == 3.0
    assert got[("cronctl_store_up", ())] == 0.0
    m.loop(0)
    assert m.health() == (False, {"status": "unhealthy", "scheduler": "running",
                                  "store": "unreachable", "node": "n1"})


def test_last_successes_are_seeded_from_the_store_and_newer_ones_win() -> None:
    clock = Clock()
    seen = {"a": T0 - timedelta(days=1), "b": T0 - timedelta(hours=1)}
    m = Metrics(version="9.9", node_id="n1", jobs=lambda: JOBS, clock=clock,
                store_up=lambda: True, history=seen.get)
    m.finished(_run(JOBS[1], T0), ExecutionStatus.SUCCEEDED, None)  # before the seed
    m._seed(seen.get)  # what begin() runs in the background
    got = _samples(m)
    assert got[("cronctl_job_last_success_timestamp_seconds", (("job", "a"),))] == (
        seen["a"].timestamp())
    assert got[("cronctl_job_last_success_timestamp_seconds", (("job", "b"),))] == (
        T0.timestamp())
    assert ("cronctl_job_last_success_timestamp_seconds", (("job", "off"),)) not in got


def test_finished_commands_feed_the_resource_histograms() -> None:
    from cronctl.jobs.model import ResourceUsage

    clock = Clock()
    m = _metrics(clock)
    a = JOBS[0]
    used = _run(a, T0)
    used.usage = ResourceUsage(exit_code=0, cpu_seconds=0.7, max_rss_bytes=3 * 1024**2)
    m.finished(used, ExecutionStatus.SUCCEEDED, None)
    m.finished(_run(a, T0), ExecutionStatus.SUCCEEDED, None)  # a Python handler: no figures
    got = _samples(m)
    assert got[("cronctl_execution_cpu_seconds_count", ())] == 1
    assert got[("cronctl_execution_cpu_seconds_sum", ())] == pytest.approx(0.7)
    assert got[("cronctl_execution_cpu_seconds_bucket", (("le", "0.5"),))] == 0
    assert got[("cronctl_execution_cpu_seconds_bucket", (("le", "1.0"),))] == 1
    assert got[("cronctl_execution_max_rss_bytes_count", ())] == 1
    assert got[("cronctl_execution_max_rss_bytes_bucket", (("le", "4.194304e+06"),))] == 1
    assert got[("cronctl_execution_max_rss_bytes_bucket", (("le", "1.048576e+06"),))] == 0
