"""Helpers for the notification tests (no tests here): a webhook receiver running in a
thread of the test, and a notify command that appends what it gets to a file."""

from __future__ import annotations

import json
import stat
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

SECRET = "Bearer hunter2-notify-Secret"


class Hook:
    """A local HTTP server that records every POST. ``mode``: ``ok`` (204), ``fail``
    (500) or ``hang`` (answers nothing for 60 s)."""

    def __init__(self, mode: str = "ok") -> None:
        self.mode = mode
        self.events: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.hits = 0
        self._lock = threading.Lock()
        hook = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                body = self.rfile.read(int(self.headers["Content-Length"]))
                with hook._lock:
                    hook.hits += 1
                    if hook.mode == "ok":
                        hook.events.append(json.loads(body))
                        hook.headers.append(dict(self.headers))
                if hook.mode == "hang":
                    time.sleep(60)
                    return
                self.send_response(204 if hook.mode == "ok" else 500)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
                return None

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hooks/T0KEN-in-path"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def of(self, kind: str, job: str | None = None) -> list[dict[str, Any]]:
        with self._lock:
            return [e for e in self.events
                    if e["event"] == kind and (job is None or e["job"] == job)]

    def wait(self, predicate: Callable[[], bool], timeout: float = 10.0) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if predicate():
                return True
            time.sleep(0.05)
        return predicate()


def notify_command(root: Path) -> tuple[Path, Path]:
    """A script that appends ``EVENT JOB EXECUTION_ID`` and the JSON on stdin (one line
    each) to a file; returns (script, file)."""
    out = root / "command-events.txt"
    script = root / "notify-cmd.sh"
    script.write_text('#!/bin/sh\n'
                      f'{{ echo "$CRONCTL_EVENT $CRONCTL_JOB_ID $CRONCTL_EXECUTION_ID"; cat; '
                      f'echo; }} >> "{out}"\n')
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return script, out


def command_events(out: Path) -> list[tuple[str, dict[str, Any]]]:
    """(the environment line, the event) of each run of the command."""
    if not out.exists():
        return []
    lines = out.read_text().splitlines()
    return [(lines[i], json.loads(lines[i + 1])) for i in range(0, len(lines) - 1, 2)]


def notify_config(url: str, events: list[str], command: Path | None = None) -> str:
    text = ("\n[notify]\n"
            f"on = {json.dumps(events)}\n"
            f'webhook = "{url}"\n')
    if command is not None:
        text += f'command = ["{command}"]\n'
    return text + f'\n[notify.headers]\nAuthorization = "{SECRET}"\n'
