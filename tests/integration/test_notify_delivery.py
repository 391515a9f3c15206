"""Delivery of notification events to a real local HTTP server and a real command: tries,
backoff and timeouts, redirects refused, one WARNING per failed delivery without secrets,
a full lane dropping with one WARNING, and lanes that do not wait for each other."""

from __future__ import annotations

import logging
import threading
import time
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from notify_support import SECRET, Hook, command_events, notify_command

from cronctl.jobs.notify import NotifySpec
from cronctl.runtime.notify import delivery as notify_delivery
from cronctl.runtime.notify.delivery import Delivery
from cronctl.runtime.notify.events import event

pytestmark = pytest.mark.slow
EVENT = event("dead_letter", "job-1", "n1", datetime(2026, 1, 1, tzinfo=UTC), execution_id=42,
              attempt=3, status="dead_letter", error="boom")


class Results:
    def __init__(self) -> None:
        self.got: list[tuple[bool, str | None]] = []
        self.done = threading.Event()
        self.want = 1

    def __call__(self, ok: bool, why: str | None) -> None:
        self.got.append((ok, why))
        if len(self.got) >= self.want:
            self.done.set()


def _delivery(results: Results, **kw: Any) -> Delivery:
    return Delivery(results, user_agent="cronctl/test", timeout=kw.pop("timeout", 2.0),
                    tries=kw.pop("tries", 3), backoff=kw.pop("backoff", 0.05))


def test_a_webhook_gets_the_json_and_its_headers() -> None:
    hook, results = Hook(), Results()
    delivery = _delivery(results)
    try:
        delivery.send(NotifySpec(webhook=hook.url, headers=(("Authorization", SECRET),)), EVENT)
        assert results.done.wait(5)
    finally:
        assert delivery.close(5)
        hook.close()
    assert results.got == [(True, None)]
    assert hook.events == [EVENT]
    assert hook.headers[0]["Authorization"] == SECRET
    assert hook.headers[0]["Content-Type"] == "application/json"
    assert hook.headers[0]["User-Agent"] == "cronctl/test"


def test_a_500_is_tried_three_times_then_one_warning(caplog: pytest.LogCaptureFixture) -> None:
    hook, results = Hook("fail"), Results()
    delivery = _delivery(results)
    with caplog.at_level(logging.WARNING, "cronctl.runtime"):
        try:
            delivery.send(NotifySpec(webhook=hook.url, headers=(("X-Token", SECRET),)), EVENT)
            assert results.done.wait(5)
        finally:
            delivery.close(5)
            hook.close()
    assert hook.hits == 3
    [warning] = [r.getMessage() for r in caplog.records]
    port = hook.server.server_address[1]
    assert warning == (f"notification not delivered: event=dead_letter job=job-1 to webhook "
                       f"http://127.0.0.1:{port}/… after 3 tries: HTTP 500 Internal Server "
                       "Error")
    assert results.got == [(False, f"webhook http://127.0.0.1:{port}/…: HTTP 500 Internal "
                                   "Server Error")]
    assert SECRET not in warning and "T0KEN" not in warning


def test_a_hanging_endpoint_times_out_and_delays_no_other_lane() -> None:
    hang, ok, results = Hook("hang"), Hook(), Results()
    results.want = 2
    delivery = _delivery(results, timeout=0.5, tries=2)
    try:
        began = time.monotonic()
        delivery.send(NotifySpec(webhook=hang.url), EVENT)
        delivery.send(NotifySpec(webhook=ok.url), EVENT)
        assert ok.wait(lambda: len(ok.events) == 1, timeout=5)
        assert time.monotonic() - began < 0.5  # it did not wait for the hanging one
        assert results.done.wait(5)
    finally:
        delivery.close(1)
        hang.close()
        ok.close()
    assert sorted(results.got, key=lambda r: r[0]) == [
        (False, f"webhook http://127.0.0.1:{hang.server.server_address[1]}/…: no answer "
                "within 0.5s"), (True, None)]
    assert hang.hits == 2


def test_a_redirect_is_not_followed() -> None:
    target = Hook()

    class Redirect(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802
            self.send_response(307)
            self.send_header("Location", target.url)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
            return None

    server = ThreadingHTTPServer(("127.0.0.1", 0), Redirect)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    results = Results()
    delivery = _delivery(results)
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/x"
        delivery.send(NotifySpec(webhook=url, headers=(("Authorization", SECRET),)), EVENT)
        assert results.done.wait(5)
    finally:
        delivery.close(5)
        server.shutdown()
        server.server_close()
        target.close()
    assert results.got[0][0] is False and "HTTP 307" in str(results.got[0][1])
    assert target.hits == 0  # the token never went anywhere else


def test_a_command_gets_the_event_on_stdin_and_in_its_environment(tmp_path: Path) -> None:
    script, out = notify_command(tmp_path)
    results = Results()
    delivery = _delivery(results)
    try:
        delivery.send(NotifySpec(command=(str(script),)), EVENT)
        assert results.done.wait(5)
    finally:
        delivery.close(5)
    assert results.got == [(True, None)]
    assert command_events(out) == [("dead_letter job-1 42", EVENT)]


def test_a_failing_command_is_retried_a_missing_one_is_not(tmp_path: Path,
                                                         caplog: pytest.LogCaptureFixture
                                                         ) -> None:
    count = tmp_path / "count"
    failing = tmp_path / "fail.sh"
    failing.write_text(f'#!/bin/sh\necho x >> "{count}"\necho "no mail today" >&2\nexit 3\n')
    failing.chmod(0o755)
    results = Results()
    results.want = 2
    delivery = _delivery(results)
    with caplog.at_level(logging.WARNING, "cronctl.runtime"):
        try:
            delivery.send(NotifySpec(command=(str(failing),)), EVENT)
            delivery.send(NotifySpec(command=(str(tmp_path / "missing"),)), EVENT)
            assert results.done.wait(5)
        finally:
            delivery.close(5)
    assert count.read_text().count("x") == 3
    messages = sorted(r.getMessage() for r in caplog.records)
    assert messages == [
        f"notification not delivered: event=dead_letter job=job-1 to command {failing} after "
        f"3 tries: {failing} exited with status 3: no mail today",
        f"notification not delivered: event=dead_letter job=job-1 to command "
        f"{tmp_path / 'missing'} after 1 try: cannot run {tmp_path / 'missing'}: No such file "
        "or directory",
    ]


def test_a_command_that_hangs_is_killed(tmp_path: Path) -> None:
    slow = tmp_path / "slow.sh"
    slow.write_text("#!/bin/sh\nsleep 30\n")
    slow.chmod(0o755)
    results = Results()
    delivery = _delivery(results, timeout=0.3, tries=1)
    began = time.monotonic()
    try:
        delivery.send(NotifySpec(command=(str(slow),)), EVENT)
        assert results.done.wait(5)
    finally:
        delivery.close(5)
    assert time.monotonic() - began < 3
    assert results.got == [(False, f"command {slow}: {slow} did not finish within 0.3s "
                                   "(killed)")]


def test_a_full_lane_drops_with_one_warning(monkeypatch: pytest.MonkeyPatch,
                                            caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setattr(notify_delivery, "LANE_SIZE", 2)
    hang, results = Hook("hang"), Results()
    results.want = 3
    delivery = _delivery(results, timeout=1.0, tries=1)
    with caplog.at_level(logging.WARNING, "cronctl.runtime"):
        try:
            spec = NotifySpec(webhook=hang.url)
            delivery.send(spec, EVENT)
            assert hang.wait(lambda: hang.hits == 1, timeout=5)  # the first one is in flight
            for _ in range(5):  # two wait, three are dropped
                delivery.send(spec, EVENT)
            assert results.done.wait(5)
        finally:
            delivery.close(0.5)
            hang.close()
    assert [why for _, why in results.got[:3]] == ["dropped: queue full"] * 3
    assert len([r for r in caplog.records if "not keeping up" in r.getMessage()]) == 1
