"""``cronctl serve`` under load: 50 concurrent clients for 30 s against
``/api/v1/executions`` and ``/`` (the dashboard's jobs page) on the big SQLite data set of
:mod:`bench._bigdb` (1,000,000 executions, 100 jobs firing every minute), and each page's
single-request time. Loopback only; every loop is bounded in time and in count.

    .venv/bin/python -m bench bench_serve            # both targets
    .venv/bin/python -m bench.bench_serve pages      # single requests only

Printed per target: requests, errors, throughput, p50/p99/max latency (client side).
There is no baseline program to run beside it; the single-request times are what SPEC
section 10's "pages render in ≤ 300 ms server-side on 1M executions" is read against.
"""

from __future__ import annotations

import http.client
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from bench._support import percentiles, tree_env

CLIENTS = 50
SECONDS = 30.0
MAX_REQUESTS = 200_000  # per target, whatever the time
TARGETS = {"executions": "/api/v1/executions?limit=20", "jobs page": "/"}
PAGES = {
    "GET /": "/",
    "GET /jobs/j0042": "/jobs/j0042",
    "GET /status": "/status",
    "GET /executions/500000": "/executions/500000",
    "GET /api/v1/executions": "/api/v1/executions",
    "GET /api/v1/executions?job=j0042&status=failed": "/api/v1/executions?job=j0042&status=failed",
    "GET /api/v1/jobs": "/api/v1/jobs",
    "GET /api/v1/status": "/api/v1/status",
}


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


BENCH_TOKEN = "bench-" + "0" * 40  # serve needs a token for every request


def _tokens(folder: Path) -> None:
    import hashlib

    (folder / "tokens").write_text(
        f"bench read {hashlib.sha256(BENCH_TOKEN.encode()).hexdigest()}\n")
    config = folder / "cronctl.toml"
    if "[api]" not in config.read_text():
        config.write_text(config.read_text() + '\n[api]\ntokens_file = "tokens"\n')


def _start(folder: Path) -> tuple[subprocess.Popen[bytes], int]:
    _tokens(folder)
    port = _free_port()
    child = subprocess.Popen([sys.executable, "-m", "cronctl", "-c", "cronctl.toml", "serve",
                              "--listen", f"127.0.0.1:{port}"], cwd=folder, env=tree_env(),
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            status, _ = _get(port, "/api/v1/openapi.json")
            if status == 200:
                return child, port
        except OSError:
            time.sleep(0.2)
    child.kill()
    raise RuntimeError("cronctl serve did not start")


def _get(port: int, path: str, conn: http.client.HTTPConnection | None = None
         ) -> tuple[int, int]:
    own = conn is None
    conn = conn or http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        conn.request("GET", path, headers={"Authorization": f"Bearer {BENCH_TOKEN}"})
        response = conn.getresponse()
        body = response.read()
        return response.status, len(body)
    finally:
        if own:
            conn.close()


def single(port: int, runs: int = 7) -> dict[str, Any]:
    """The first request of each page (nothing shared yet: the jobs page's data is
    shared for 2 s), then the median and worst of ``runs`` more, back to back."""
    out: dict[str, Any] = {}
    for name, path in PAGES.items():
        time.sleep(2.5)  # past the jobs page's sharing window
        started = time.perf_counter()
        status, size = _get(port, path)
        first = time.perf_counter() - started
        walls = []
        for _ in range(runs):
            started = time.perf_counter()
            _get(port, path)
            walls.append(time.perf_counter() - started)
        walls.sort()
        out[name] = {"status": status, "bytes": size, "first_ms": round(first * 1000, 1),
                     "median_ms": round(walls[len(walls) // 2] * 1000, 1),
                     "max_ms": round(walls[-1] * 1000, 1)}
    return out


def cold(port: int, path: str, runs: int = 3) -> list[float]:
    """``path`` requested ``runs`` times, each after the server's shared data (the jobs,
    re-read every JOBS_TTL s, and the jobs page's data, shared for PAGE_TTL s) has gone
    stale: what a lone operator opening the page sees. Milliseconds, sorted."""
    from cronctl.serve.context import JOBS_TTL, PAGE_TTL

    walls = []
    for _ in range(runs):
        time.sleep(max(JOBS_TTL, PAGE_TTL) + 0.5)
        started = time.perf_counter()
        _get(port, path)
        walls.append((time.perf_counter() - started) * 1000)
    return sorted(walls)


def load(port: int, path: str) -> dict[str, Any]:
    """CLIENTS threads, each on its own keep-alive connection, for SECONDS (or until
    MAX_REQUESTS in all)."""
    latencies: list[float] = []
    errors = [0]
    lock = threading.Lock()
    deadline = time.monotonic() + SECONDS
    count = [0]

    def client() -> None:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        mine: list[float] = []
        failed = 0
        while time.monotonic() < deadline:
            with lock:
                if count[0] >= MAX_REQUESTS:
                    break
                count[0] += 1
            started = time.perf_counter()
            try:
                status, _ = _get(port, path, conn)
                if status != 200:
                    failed += 1
            except (OSError, http.client.HTTPException):
                failed += 1
                conn.close()
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
            mine.append(time.perf_counter() - started)
        conn.close()
        with lock:
            latencies.extend(mine)
            errors[0] += failed

    started = time.monotonic()
    threads = [threading.Thread(target=client) for _ in range(CLIENTS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=SECONDS + 120)
    elapsed = time.monotonic() - started
    stats = percentiles(latencies)
    return {"requests": len(latencies), "errors": errors[0],
            "per_s": round(len(latencies) / elapsed, 1),
            **{k: round(v, 1) if isinstance(v, float) else v for k, v in stats.items()}}


def main(argv: list[str] | None = None) -> None:
    from bench._bigdb import big_sqlite

    wanted = argv if argv is not None else sys.argv[1:]
    with big_sqlite() as (folder, _base):
        child, port = _start(folder)
        try:
            print("  single requests (1M executions, SQLite):")
            for name, result in single(port).items():
                print(f"    {name:<48} {result['first_ms']:>8.1f} ms first "
                      f"{result['median_ms']:>8.1f} ms median "
                      f"{result['max_ms']:>8.1f} ms max  ({result['status']}, "
                      f"{result['bytes']} bytes)")
            walls = cold(port, "/")
            print(f"    GET / with nothing shared (jobs and page data stale), {len(walls)} runs: "
                  f"median {walls[len(walls) // 2]:.1f} ms, max {walls[-1]:.1f} ms")
            if "pages" in wanted:
                return
            for name, path in TARGETS.items():
                result = load(port, path)
                print(f"  {CLIENTS} clients x {SECONDS:.0f}s on {name} ({path}): "
                      f"{result['requests']} requests, {result['errors']} errors, "
                      f"{result['per_s']}/s, p50 {result.get('p50_ms')} ms, "
                      f"p99 {result.get('p99_ms')} ms, max {result.get('max_ms')} ms")
        finally:
            child.terminate()
            try:
                child.wait(timeout=30)
            except subprocess.TimeoutExpired:
                child.kill()


if __name__ == "__main__":
    main()
