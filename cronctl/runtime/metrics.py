"""Prometheus metrics and ``/healthz`` of ``cronctl run``
(docs/behaviour.md#retention-notifications-and-metrics, ``[metrics]``).

The metrics live in a :class:`~prometheus_client.CollectorRegistry` of their own, never
the process-global one (an application embedding the scheduler keeps its registry to
itself). What the scheduler thread does per event is one increment of a labelled child
cached per job (no label lookup on the fire path); gauges that are cheap to read are
computed when scraped (the next fire of every job, whether the store is up).

The HTTP server is the standard library's ``ThreadingHTTPServer`` on a thread of its own:
two read-only GET endpoints need no framework, and a slow scraper never touches the
scheduler thread.
"""

from __future__ import annotations

import contextlib
import json
import logging
import socket
import socketserver
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import prometheus_client
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from cronctl.config import format_listen
from cronctl.core import CloseInterrupted, JobState, Missed, Skip, SkipReason, schedule_for
from cronctl.core.timing import ScheduleLike
from cronctl.errors import ConfigError, first_line
from cronctl.ids import anomaly_of
from cronctl.jobs.model import ExecutionStatus, JobDefinition
from cronctl.listen import is_loopback
from cronctl.runtime.fire.records import Run
from cronctl.store.base import ExecutionRecord, Store

log = logging.getLogger("cronctl.runtime")

# Start minus planned: milliseconds when all is well, seconds when slots or groups are
# full, a minute and more when fires wait for the store.
LATENESS_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0,
                    10.0, 30.0, 60.0, 300.0)
# What finished commands used (docs/behaviour.md#sandbox-and-output): from a shell one-liner to
# hours of CPU, and from a few megabytes to many gigabytes of resident memory.
CPU_BUCKETS = (0.01, 0.05, 0.1, 0.5, 1.0, 5.0, 10.0, 30.0, 60.0, 300.0, 900.0, 3600.0)
RSS_BUCKETS = tuple(float(2**n) for n in range(20, 37, 2))  # 1 MiB ... 64 GiB
LOOP_STALE = 10.0  # seconds without a loop beat before /healthz calls the scheduler stalled


class Metrics:
    """The metrics of one scheduler; its methods are the :class:`~cronctl.runtime.fire.watch.
    Watch` hooks (scheduler thread), :meth:`health` and the registry are read by the
    HTTP thread."""

    def __init__(
        self, *, version: str, node_id: str, jobs: Callable[[], Sequence[JobDefinition]],
        clock: Callable[[], datetime], store_up: Callable[[], bool],
        running: Callable[[], int] = lambda: 0,
        history: Callable[[str], datetime | None] | None = None,
        scheduler_alive: Callable[[], bool] = lambda: True,
        refusing: Callable[[], bool] = lambda: False,
    ) -> None:
        # Counters without their *_created twins: the names stay exactly section 7's.
        prometheus_client.disable_created_metrics()  # type: ignore[no-untyped-call]
        self.registry = r = CollectorRegistry(auto_describe=True)
        self._fires = Counter("cronctl_fires_total", "Attempts dispatched, per job.", ["job"],
                              registry=r)
        self._executions = Counter("cronctl_executions_total",
                                   "Attempts ended, per job and final status.",
                                   ["job", "status"], registry=r)
        self._skipped = Counter("cronctl_skipped_total",
                                "Planned instants that did not run, per job and reason.",
                                ["job", "reason"], registry=r)
        self._lateness = Histogram("cronctl_lateness_seconds",
                                   "Start minus planned instant (plus jitter; a retry: its "
                                   "due time) of dispatched attempts.",
                                   buckets=LATENESS_BUCKETS, registry=r)
        self._cpu = Histogram("cronctl_execution_cpu_seconds",
                              "User + system CPU of finished commands and their reaped "
                              "descendants.", buckets=CPU_BUCKETS, registry=r)
        self._rss = Histogram("cronctl_execution_max_rss_bytes",
                              "Peak resident set size of finished commands.",
                              buckets=RSS_BUCKETS, registry=r)
        Gauge("cronctl_running_executions", "Attempts running on this node.",
              registry=r).set_function(lambda: float(running()))
        self._waiting = Gauge("cronctl_waiting_fires",
                              "Fires waiting for a slot or a serial group.", registry=r)
        self._store_up = Gauge("cronctl_store_up", "1 while the store is reachable.",
                               registry=r)
        self._store_up.set_function(lambda: 1.0 if store_up() else 0.0)
        self._anomalies = Counter("cronctl_anomalies_total",
                                  "Occurrences marked as an anomaly, per kind "
                                  "(concurrent_after_partition: docs/liveness.md).",
                                  ["kind"], registry=r)
        self.notify_failures = Counter("cronctl_notify_failures_total",
                                       "Notifications not delivered after every try.",
                                       registry=r)
        Gauge("cronctl_build_info", "The running cronctl.", ["version"],
              registry=r).labels(version).set(1)
        r.register(_NextFires(jobs, clock))
        # job -> Unix time of its last success: a plain dict the scheduler thread assigns
        # to, read when scraped (seeded from the store at start, see begin).
        self._successes: dict[str, float] = {}
        r.register(_LastSuccess(self._successes))
        self._history = history
        self._clock = clock
        self._node_id = node_id
        self._store_up_fn = store_up
        self._alive = scheduler_alive
        self._refusing = refusing
        self._beat = 0.0  # monotonic time of the last loop beat; 0: not started
        # Labelled children, created once per job (per job and status/reason).
        self._fire_of: dict[str, Any] = {}
        self._end_of: dict[tuple[str, str], Any] = {}
        self._skip_of: dict[tuple[str, str], Any] = {}
        for job in jobs():
            self._fire_of[job.id] = self._fires.labels(job.id)  # exported as 0 from the start

    # --- the Watch hooks (scheduler thread) ----------------------------------------------

    def begin(self, states: Mapping[str, JobState], now: datetime) -> None:
        """Seed the last successes from the store (in the background: start-up does not
        wait), so that an alert on their age works right after a restart too."""
        if self._history is not None:
            threading.Thread(target=self._seed, args=(self._history,), daemon=True,
                             name="cronctl-metrics-seed").start()

    def _seed(self, history: Callable[[str], datetime | None]) -> None:
        for job_id in list(self._fire_of):
            try:
                at = history(job_id)
            except Exception as exc:
                log.debug("metrics: last success of %s unknown: %s", job_id, exc)
                return
            if at is not None:
                self._successes.setdefault(job_id, at.timestamp())  # a newer one wins

    def close(self) -> None:
        return None

    def handled(self, job_id: str, planned: datetime) -> None:
        return None

    def abandoned(self, run: Run) -> None:
        return None

    def loop(self, waiting: int) -> None:
        self._beat = time.monotonic()
        self._waiting.set(waiting)

    def started(self, run: Run) -> None:
        job_id = run.job.id
        child = self._fire_of.get(job_id)
        if child is None:
            child = self._fire_of[job_id] = self._fires.labels(job_id)
        child.inc()
        at = run.started or self._clock()
        self._lateness.observe((at - run.fire.due).total_seconds())

    def finished(self, run: Run, status: ExecutionStatus, error: str | None) -> None:
        self._ended(run.job.id, status)
        usage = run.usage
        if usage is not None:
            if usage.cpu_seconds is not None:
                self._cpu.observe(usage.cpu_seconds)
            if usage.max_rss_bytes is not None:
                self._rss.observe(usage.max_rss_bytes)

    def interrupted(self, a: CloseInterrupted) -> None:
        self._ended(a.job_id, a.status)

    def _ended(self, job_id: str, status: ExecutionStatus) -> None:
        key = (job_id, status.value)
        child = self._end_of.get(key)
        if child is None:
            child = self._end_of[key] = self._executions.labels(job_id, status.value)
        child.inc()
        if status is ExecutionStatus.SUCCEEDED:
            self._successes[job_id] = self._clock().timestamp()

    def skipped(self, a: Skip) -> None:
        if not a.reported:
            return
        self._skip(a.job_id, a.reason.value, getattr(a, "count", 1))

    def fenced(self, row: ExecutionRecord, status: ExecutionStatus, at: datetime) -> None:
        kind = anomaly_of(row.error)
        if kind is not None:
            self._anomalies.labels(kind).inc()

    def missed(self, a: Missed) -> None:
        if a.dropped:
            self._skip(a.job_id, SkipReason.MISFIRE.value, a.dropped)

    def _skip(self, job_id: str, reason: str, count: int) -> None:
        key = (job_id, reason)
        child = self._skip_of.get(key)
        if child is None:
            child = self._skip_of[key] = self._skipped.labels(job_id, reason)
        child.inc(count)

    # --- read by the HTTP thread ---------------------------------------------------------

    def health(self) -> tuple[bool, dict[str, object]]:
        """(healthy, the one-line JSON document of ``/healthz``)."""
        if not self._beat or not self._alive():
            loop = "starting" if not self._beat else "stopped"
        elif time.monotonic() - self._beat > LOOP_STALE:
            loop = "stalled"
        elif self._refusing():
            loop = "refusing to act (clock skew)"
        else:
            loop = "running"
        store = "up" if self._store_up_fn() else "unreachable"
        ok = loop == "running" and store == "up"
        return ok, {"status": "ok" if ok else "unhealthy", "scheduler": loop, "store": store,
                    "node": self._node_id}


def last_success(store: Store, job_id: str) -> datetime | None:
    if not store.persistent:
        return None
    found = store.list_executions(job_id=job_id, status=ExecutionStatus.SUCCEEDED, limit=1)
    return found[0].finished_at if found else None


class _LastSuccess(Collector):
    """``cronctl_job_last_success_timestamp_seconds{job}``."""

    def __init__(self, successes: dict[str, float]) -> None:
        self._successes = successes

    def describe(self) -> Iterable[Metric]:
        return []

    def collect(self) -> Iterable[Metric]:
        family = GaugeMetricFamily("cronctl_job_last_success_timestamp_seconds",
                                   "When an attempt of the job last succeeded (Unix time; "
                                   "this node's, or the store's at start).", labels=["job"])
        for job_id, at in list(self._successes.items()):
            family.add_metric([job_id], at)
        yield family


class _NextFires(Collector):
    """``cronctl_job_next_fire_timestamp_seconds{job}``, computed when scraped from the
    current job set (a reload changes it; jobs sharing a schedule compute it once)."""

    def __init__(self, jobs: Callable[[], Sequence[JobDefinition]],
                 clock: Callable[[], datetime]) -> None:
        self._jobs = jobs
        self._clock = clock
        self._cache: tuple[Sequence[JobDefinition], dict[str, ScheduleLike]] | None = None

    def describe(self) -> Iterable[Metric]:
        return []

    def collect(self) -> Iterable[Metric]:
        family = GaugeMetricFamily("cronctl_job_next_fire_timestamp_seconds",
                                   "The next planned instant of the job (Unix time).",
                                   labels=["job"])
        now = self._clock()
        nexts: dict[int, datetime | None] = {}
        for job_id, schedule in self._schedules().items():
            key = id(schedule)
            if key not in nexts:
                nexts[key] = schedule.next_after(now)
            planned = nexts[key]
            if planned is not None:
                family.add_metric([job_id], planned.timestamp())
        yield family

    def _schedules(self) -> dict[str, ScheduleLike]:
        jobs = self._jobs()
        cached = self._cache
        if cached is not None and cached[0] is jobs:
            return cached[1]
        shared: dict[tuple[object, ...], ScheduleLike] = {}
        out: dict[str, ScheduleLike] = {}
        for job in jobs:
            if not job.enabled:
                continue
            key = (job.cron, job.every, job.anchor, job.timezone, job.dst_gap, job.dst_fold)
            if key not in shared:
                shared[key] = schedule_for(job)
            out[job.id] = shared[key]
        self._cache = (jobs, out)
        return out


# --- the HTTP server -------------------------------------------------------------------


MAX_CONNECTIONS = 8  # at once; more are closed at once (no thread, no descriptor kept)
REQUEST_DEADLINE = 5.0  # seconds from accepting to a whole request line and headers
ANSWER_DEADLINE = 60.0  # seconds from accepting to the end of the answer (a big /metrics)


class _Server(ThreadingHTTPServer):
    """Connections are bounded in number and in time, so that no client (a slowloris
    trickling a byte at a time, hundreds of idle sockets) can take file descriptors or
    threads from firing: at most :data:`MAX_CONNECTIONS` at once (the rest are closed as
    they are accepted; the kernel's backlog holds what waits), each shut down when it has
    not sent its request within :data:`REQUEST_DEADLINE` (or is not answered within
    :data:`ANSWER_DEADLINE`). The serving thread's poll does the reaping: no thread
    more."""

    daemon_threads = True
    block_on_close = False
    metrics: Metrics

    def __init__(self, address: tuple[str, int], handler: type[BaseHTTPRequestHandler]
                 ) -> None:
        super().__init__(address, handler)
        self._slots = threading.BoundedSemaphore(MAX_CONNECTIONS)
        self._deadlines: dict[socket.socket, float] = {}
        self._guard = threading.Lock()
        self.refused = 0  # connections closed for want of a slot (tests read it)

    def server_bind(self) -> None:
        # HTTPServer.server_bind looks up the host's FQDN (reverse DNS, slow on some
        # networks) only to name itself; the address is name enough.
        socketserver.TCPServer.server_bind(self)
        host, port = self.server_address[:2]
        self.server_name, self.server_port = str(host), int(port)

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self._slots.acquire(blocking=False):
            self.refused += 1
            self.shutdown_request(request)
            return
        with self._guard:
            self._deadlines[request] = time.monotonic() + REQUEST_DEADLINE
        try:
            super().process_request(request, client_address)
        except BaseException:
            self._done(request)
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._done(request)

    def answering(self, request: Any) -> None:
        """The request arrived whole: its answer may take longer (a big job set)."""
        with self._guard:
            if request in self._deadlines:
                self._deadlines[request] = time.monotonic() + ANSWER_DEADLINE

    def _done(self, request: Any) -> None:
        with self._guard:
            if self._deadlines.pop(request, None) is None:
                return
        self._slots.release()

    def service_actions(self) -> None:
        """Each poll of the serving thread: cut off the connections past their deadline
        (their thread sees the end of the stream and ends)."""
        now = time.monotonic()
        with self._guard:
            late = [r for r, at in self._deadlines.items() if at <= now]
        for request in late:
            with contextlib.suppress(OSError):
                request.shutdown(socket.SHUT_RDWR)

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that resets or goes away mid-answer is its own business: no traceback.
        error = sys.exc_info()[1]
        log.debug("metrics: a connection from %s ended badly: %s",
                  client_address[0] if client_address else "?",
                  first_line(error) if error is not None else "unknown error")


class _Server6(_Server):
    address_family = socket.AF_INET6


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    timeout = 10  # a client that sends nothing does not keep its thread forever

    def do_GET(self) -> None:  # noqa: N802 - the name http.server calls
        self.server.answering(self.request)
        path = self.path.split("?", 1)[0]
        metrics = self.server.metrics
        if path == "/metrics":
            body = prometheus_client.generate_latest(metrics.registry)
            self._send(200, prometheus_client.CONTENT_TYPE_LATEST, body)
        elif path == "/healthz":
            ok, doc = metrics.health()
            self._send(200 if ok else 503, "application/json",
                       json.dumps(doc, separators=(",", ":")).encode() + b"\n")
        else:
            self._send(404, "text/plain; charset=utf-8", b"not found: try /metrics or /healthz\n")

    def _send(self, code: int, content_type: str, body: bytes) -> None:
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base's name
        return None  # scrapes are not worth a log line each


@contextlib.contextmanager
def serve_metrics(listen: tuple[str, int] | None, metrics: Metrics | None) -> Iterator[None]:
    """Serve ``/metrics`` and ``/healthz`` on ``listen`` while inside; nothing when not
    configured. A port that cannot be bound is a one-line :class:`ConfigError`."""
    if listen is None or metrics is None:
        yield
        return
    shown = format_listen(listen)
    try:
        server = (_Server6 if ":" in listen[0] else _Server)(listen, _Handler)
    except OSError as exc:
        raise ConfigError(f"[metrics] listen = {shown!r}: cannot listen there: "
                          f"{exc.strerror or exc}") from None
    server.metrics = metrics
    thread = threading.Thread(target=server.serve_forever, name="cronctl-metrics",
                              kwargs={"poll_interval": 0.5}, daemon=True)
    thread.start()
    log.info("serving metrics on http://%s/metrics and /healthz", shown)
    if not is_loopback(listen[0]):
        log.warning("[metrics] listen = %r is reachable from other hosts: /metrics and "
                    "/healthz need no token (name every job and node); listen on "
                    "127.0.0.1 behind a proxy, or firewall the port", shown)
    try:
        yield
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)
