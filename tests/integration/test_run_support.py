"""Helpers for the ``cronctl run`` / ``trigger`` integration tests (no tests here):
a project directory with a config and job files, and a running ``cronctl run``."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

HANDLERS = '''
import os, time

def work(ctx):
    ctx.log.info("hello from %s attempt %d", ctx.job_id, ctx.attempt)
    ctx.progress(1, 1, "done")

def fail(ctx):
    raise RuntimeError("boom")
'''


class Project:
    def __init__(self, root: Path, database: str, node_id: str = "node-a",
                 extra: str = "") -> None:
        self.root = root
        self.database = database
        (root / "jobs.d").mkdir(parents=True, exist_ok=True)
        (root / "handlers_pkg").mkdir(exist_ok=True)
        (root / "handlers_pkg" / "cronctl_test_handlers.py").write_text(HANDLERS)
        self.config = self.write_config(node_id, extra)

    def write_config(self, node_id: str, extra: str = "", name: str = "cronctl.toml") -> Path:
        path = self.root / name
        path.write_text(
            "[scheduler]\n"
            f'database = "{self.database}"\n'
            f'jobs_dir = "{self.root / "jobs.d"}"\n'
            f'node_id = "{node_id}"\n'
            'progress_flush_interval = "1s"\n'
            'heartbeat_interval = "1s"\n'
            'shutdown_timeout = "2s"\n' + extra
        )
        return path

    def jobs(self, text: str, name: str = "jobs.toml") -> None:
        (self.root / "jobs.d" / name).write_text(text)

    def env(self, **extra: str) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items()
               if k not in ("NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID",
                            "CRONCTL_DATABASE_URL", "CRONCTL_CONFIG")}
        env["PYTHONPATH"] = os.pathsep.join(
            [str(self.root / "handlers_pkg"), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
        env["PYTHONFAULTHANDLER"] = "1"  # (see Running.stop)
        env.update(extra)
        return env

    def cli(self, *args: str, config: Path | None = None, timeout: float = 30,
            **env: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "cronctl", "-c", str(config or self.config), *args],
            capture_output=True, text=True, env=self.env(**env), cwd=self.root,
            timeout=timeout)

    def start(self, *args: str, config: Path | None = None, log_name: str = "run.log",
              **env: str) -> Running:
        log = self.root / log_name
        handle = log.open("w")
        proc = subprocess.Popen(
            [sys.executable, "-m", "cronctl", "-c", str(config or self.config), "run", *args],
            stdout=subprocess.DEVNULL, stderr=handle, env=self.env(**env), cwd=self.root,
            start_new_session=True)
        handle.close()
        return Running(proc, log)


class Running:
    def __init__(self, proc: subprocess.Popen[bytes], log: Path) -> None:
        self.proc = proc
        self.log = log

    def text(self) -> str:
        return self.log.read_text(errors="replace")

    def wait_for(self, predicate: Callable[[str], bool], timeout: float = 8.0) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if predicate(self.text()):
                return True
            if self.proc.poll() is not None:
                return predicate(self.text())
            time.sleep(0.05)
        return False

    def signal(self, sig: signal.Signals) -> None:
        self.proc.send_signal(sig)

    def stop(self, timeout: float = 15.0) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            # Say what the process was doing: its log, and where each of its threads is
            # (PYTHONFAULTHANDLER: a SIGABRT prints every thread's stack to the log).
            self.proc.send_signal(signal.SIGABRT)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(3)
            raise AssertionError(
                f"cronctl run did not stop within {timeout} s of SIGTERM:\n{self.text()}"
            ) from None
        finally:
            self.kill()

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(5)


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # a zombie is not running: look at its state
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
    except OSError:
        return False
    return state != "Z"


def open_sqlite(project: Project):  # type: ignore[no-untyped-def]
    from cronctl.store import open_store

    return open_store(project.database, node_id="test-reader")
