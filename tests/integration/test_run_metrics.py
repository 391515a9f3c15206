"""``[metrics] listen`` on a real ``cronctl run`` (SPEC section 7): /metrics scraped over
HTTP and read with prometheus_client's parser while per-second jobs run; /healthz 503
while the store is down (PostgreSQL behind a TCP proxy that is cut) and 200 when back."""

from __future__ import annotations

import contextlib
import json
import socket
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families
from test_run_store_outage import CuttableProxy
from test_run_support import Project, Running

pytestmark = pytest.mark.slow

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]

JOBS = '''
[jobs.ok]
every = "1s"
command = ["true"]

[jobs.bad]
every = "1s"
max_attempts = 1
command = ["false"]

[jobs.slow]
every = "1s"
command = ["sleep", "2.5"]
'''


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def scrape(port: int) -> Samples:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as resp:
        text = resp.read().decode()
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def healthz(port: int) -> tuple[int, dict[str, object]]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=5) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def until(predicate: Callable[[], bool], timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError):
            if predicate():
                return True
        time.sleep(0.1)
    return False


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


def test_counters_move_as_jobs_run(tmp_path: Path) -> None:
    port = free_port()
    project = Project(tmp_path, f"sqlite:///{tmp_path / 'state.db'}",
                      extra=f'\n[metrics]\nlisten = "127.0.0.1:{port}"\n')
    project.jobs(JOBS)
    run = project.start()
    try:
        assert run.wait_for(lambda t: "ready node=node-a" in t, timeout=15), run.text()
        assert f"serving metrics on http://127.0.0.1:{port}/metrics" in run.text()
        assert until(lambda: value(scrape(port), "cronctl_fires_total", job="ok") >= 2)
        first = scrape(port)
        assert until(lambda: value(scrape(port), "cronctl_fires_total", job="ok")
                     >= value(first, "cronctl_fires_total", job="ok") + 2)
        assert until(lambda: value(scrape(port), "cronctl_skipped_total", job="slow",
                                   reason="overlap") >= 1)
        assert until(lambda: value(scrape(port), "cronctl_running_executions") >= 1)
        got = scrape(port)
        code, doc = healthz(port)
    finally:
        assert run.stop() == 0, run.text()
    ok = value(got, "cronctl_executions_total", job="ok", status="succeeded")
    assert ok >= 2 and ok > value(first, "cronctl_executions_total", job="ok", status="succeeded")
    assert value(got, "cronctl_executions_total", job="bad", status="dead_letter") >= 2
    assert value(got, "cronctl_lateness_seconds_count") >= value(got, "cronctl_fires_total",
                                                                 job="ok")
    assert value(got, "cronctl_job_last_success_timestamp_seconds", job="ok") > time.time() - 30
    assert value(got, "cronctl_job_next_fire_timestamp_seconds", job="ok") > time.time() - 5
    assert value(got, "cronctl_store_up") == 1
    assert value(got, "cronctl_notify_failures_total") == 0
    assert ("cronctl_build_info", (("version", "0.1.0"),)) in got
    assert (code, doc["status"], doc["store"], doc["node"]) == (200, "ok", "up", "node-a")
    # stopped: nothing listens any more
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", port), timeout=2).close()


def test_nothing_listens_without_metrics(tmp_path: Path) -> None:
    project = Project(tmp_path, f"sqlite:///{tmp_path / 'state.db'}")
    project.jobs(JOBS)
    run = project.start()
    try:
        assert run.wait_for(lambda t: "ready node=node-a" in t, timeout=15), run.text()
        assert "serving metrics" not in run.text()
        listening = Path(f"/proc/{run.proc.pid}/net/tcp").read_text()
        inodes = {line.split()[9] for line in listening.splitlines()[1:]
                  if line.split()[3] == "0A"}  # LISTEN sockets of the network namespace
        mine = set()
        for fd in Path(f"/proc/{run.proc.pid}/fd").iterdir():
            try:
                target = str(fd.readlink())
            except FileNotFoundError:  # closed meanwhile (a job's pipe, a database file)
                continue
            if target.startswith("socket:"):
                mine.add(target)
        assert not {f"socket:[{i}]" for i in inodes} & mine
    finally:
        assert run.stop() == 0, run.text()


def test_a_bad_listen_is_a_violation_and_a_busy_port_an_error(tmp_path: Path) -> None:
    project = Project(tmp_path, f"sqlite:///{tmp_path / 'state.db'}",
                      extra='\n[metrics]\nlisten = "127.0.0.1:70000"\n')
    project.jobs(JOBS)
    checked = project.cli("validate")
    assert checked.returncode == 1
    assert "key 'metrics.listen': port '70000' must be a number from 1 to 65535" in (
        checked.stdout + checked.stderr)
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        config = project.write_config("node-a", f'\n[metrics]\nlisten = ":{port}"\n', "busy.toml")
        result = project.cli("run", config=config)
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert lines[-1] == (f"error: [metrics] listen = '127.0.0.1:{port}': cannot listen there: "
                         "Address already in use"), result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.postgres
def test_healthz_is_503_while_the_store_is_down(tmp_path: Path, postgres_url: str) -> None:
    head, _, database = postgres_url.rpartition("/")
    user_host = head.rsplit("@", 1)
    host, _, pg_port = user_host[-1].partition(":")
    proxy = CuttableProxy((host, int(pg_port or 5432)))
    port = free_port()
    project = Project(tmp_path, f"{user_host[0]}@127.0.0.1:{proxy.port}/{database}",
                      extra=f'\n[metrics]\nlisten = "127.0.0.1:{port}"\n')
    project.jobs('[jobs.solo]\nevery = "1s"\nmode = "single_instance"\ncommand = ["true"]\n')
    run: Running = project.start()
    try:
        assert run.wait_for(lambda t: "ready node=node-a" in t, timeout=15), run.text()
        assert until(lambda: healthz(port)[0] == 200), healthz(port)
        proxy.cut()
        assert until(lambda: healthz(port)[0] == 503), run.text()
        code, doc = healthz(port)
        assert (doc["status"], doc["scheduler"], doc["store"]) == (
            "unhealthy", "running", "unreachable")
        assert value(scrape(port), "cronctl_store_up") == 0
        proxy.restore()
        assert until(lambda: healthz(port)[0] == 200, timeout=20), run.text()
        assert value(scrape(port), "cronctl_store_up") == 1
    finally:
        code = run.stop()
        with contextlib.suppress(AssertionError):
            proxy.cut()
    assert code == 0, run.text()
