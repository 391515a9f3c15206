"""Delivering notification events (docs/behaviour.md#retention-notifications-and-metrics): a webhook
``POST``, a command, or mail (:mod:`cronctl.runtime.notify.mail`).

Never on the scheduler thread: each destination (a webhook with its headers, or a
command) has its own *lane*, a bounded queue and a thread, so a dead or hanging endpoint
delays only its own events, in order, and never a fire or a slot. A full lane drops new
events with one WARNING until it has room again. Each delivery has a 10 s timeout and
up to 3 tries with backoff; a delivery that fails every try is one WARNING (the webhook
shown as ``scheme://host/…``, headers never) and one ``on_result(False, why)``.

HTTP uses the standard library's ``urllib.request``: one POST with a timeout needs
nothing more, and no extra dependency ships with every install. Redirects are not
followed, so a header holding a token never travels to another host.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import queue
import signal
import subprocess
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from typing import Any

from cronctl.dispatch.procenv import child_environ
from cronctl.jobs.notify import NotifySpec, redact_webhook
from cronctl.runtime.logsetup import ids

log = logging.getLogger("cronctl.runtime")

TIMEOUT = 10.0  # seconds, per try
TRIES = 3
BACKOFF = 1.0  # seconds before the second try; doubles
LANE_SIZE = 1000  # events waiting per destination before new ones are dropped
Event = Mapping[str, Any]


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None  # urllib then raises HTTPError for the 3xx


_OPENER = urllib.request.build_opener(_NoRedirect)


class Failed(Exception):
    """A try did not deliver; ``retry`` is False when another try cannot help."""

    def __init__(self, why: str, *, retry: bool = True) -> None:
        super().__init__(why)
        self.retry = retry


def post(url: str, headers: tuple[tuple[str, str], ...], body: bytes, timeout: float,
         user_agent: str) -> None:
    """POST ``body`` as JSON; any 2xx is delivered."""
    request = urllib.request.Request(url, data=body, method="POST", headers={
        "Content-Type": "application/json", "User-Agent": user_agent, **dict(headers)})
    try:
        with _OPENER.open(request, timeout=timeout) as response:
            response.read(65536)
    except urllib.error.HTTPError as exc:
        code = exc.code
        exc.close()
        raise Failed(f"HTTP {code} {exc.reason}".strip(),
                     retry=code >= 500 or code in (408, 429)) from None
    except urllib.error.URLError as exc:
        reason = exc.reason
        if isinstance(reason, TimeoutError):
            raise Failed(f"no answer within {timeout:g}s") from None
        raise Failed(str(getattr(reason, "strerror", None) or reason)) from None
    except TimeoutError:
        raise Failed(f"no answer within {timeout:g}s") from None
    except (OSError, ValueError) as exc:
        raise Failed(type(exc).__name__ + (f": {exc}" if str(exc) else "")) from None


def run_command(argv: tuple[str, ...], body: bytes, event: Event, timeout: float) -> None:
    """Run ``argv`` with the event JSON on standard input; exit status 0 is delivered."""
    env = child_environ()  # never cronctl's own settings or secrets
    env.update(CRONCTL_EVENT=str(event["event"]), CRONCTL_JOB_ID=str(event["job"]),
               CRONCTL_EXECUTION_ID="" if event["execution_id"] is None
               else str(event["execution_id"]))
    try:
        proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE, env=env, start_new_session=True)
    except OSError as exc:
        raise Failed(f"cannot run {argv[0]}: {exc.strerror or exc}", retry=False) from None
    try:
        _, err = proc.communicate(body, timeout=timeout)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(OSError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        raise Failed(f"{argv[0]} did not finish within {timeout:g}s (killed)") from None
    if proc.returncode != 0:
        first = err.decode("utf-8", "replace").strip().splitlines()[:1]
        detail = f": {first[0][:200]}" if first else ""
        raise Failed(f"{argv[0]} exited with status {proc.returncode}{detail}")


def send_mail(addresses: tuple[str, ...], server: str | None, event: Event,
              timeout: float) -> None:
    """One message to ``addresses``: through ``server`` (SMTP), else sendmail."""
    import smtplib

    from cronctl.runtime.notify import mail

    msg = mail.message(addresses, event)
    try:
        if server is None:
            mail.sendmail(addresses, msg, timeout)
        else:
            mail.smtp_send(server, msg, timeout)
    except mail.SendmailFailed as exc:
        raise Failed(str(exc), retry=exc.retry) from None
    except smtplib.SMTPResponseException as exc:  # 5xx: the server will not take it
        error = exc.smtp_error
        text = error.decode("utf-8", "replace") if isinstance(error, bytes) else str(error)
        raise Failed(f"SMTP {server}: {exc.smtp_code} {text}",
                     retry=exc.smtp_code < 500) from None
    except (smtplib.SMTPException, OSError) as exc:
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise Failed(f"SMTP {server}: {why or type(exc).__name__}") from None


class _Lane:
    """One destination's queue and thread."""

    def __init__(self, name: str, deliver: Callable[[bytes, Event], None],
                 done: Callable[[bool, str | None], None], *, tries: int, backoff: float
                 ) -> None:
        self.name = name
        self._deliver = deliver
        self._done = done
        self._tries = tries
        self._backoff = backoff
        self._queue: queue.Queue[tuple[bytes, Event] | None] = queue.Queue(LANE_SIZE)
        self._dropped = 0
        self._closing = threading.Event()
        self.thread = threading.Thread(target=self._run, name="cronctl-notify-lane",
                                       daemon=True)
        self.thread.start()

    def put(self, body: bytes, event: Event) -> None:
        try:
            self._queue.put_nowait((body, event))
        except queue.Full:
            self._dropped += 1
            if self._dropped == 1:
                log.warning("notifications to %s are not keeping up: %d waiting; dropping new "
                            "ones until there is room", self.name, LANE_SIZE)
            self._done(False, "dropped: queue full")
            return
        if self._dropped:
            log.info("notifications to %s have room again; %d were dropped", self.name,
                     self._dropped)
            self._dropped = 0

    def close(self) -> None:
        self._closing.set()
        # A full lane keeps delivering until the process exits (its thread is a daemon).
        with contextlib.suppress(queue.Full):
            self._queue.put_nowait(None)

    def _run(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            self._one(*item)

    def _one(self, body: bytes, event: Event) -> None:
        why = ""
        for attempt in range(1, self._tries + 1):
            try:
                self._deliver(body, event)
            except Failed as exc:
                why = str(exc)
                if not exc.retry or attempt == self._tries:
                    break
                # Backoff; at shutdown the remaining tries are given up.
                if self._closing.wait(self._backoff * 2 ** (attempt - 1)):
                    break
            except Exception as exc:  # a bug here must not end the lane
                why = f"internal error: {type(exc).__name__}: {exc}"
                break
            else:
                self._done(True, None)
                return
        log.warning("notification not delivered: event=%s job=%s to %s after %d %s: %s",
                    event["event"], event["job"], self.name, attempt,
                    "try" if attempt == 1 else "tries", why,
                    extra=ids(str(event["job"]), event["execution_id"]))
        self._done(False, f"{self.name}: {why}")


class Delivery:
    """Sends events to the destinations of a :class:`NotifySpec`, one lane each."""

    def __init__(self, done: Callable[[bool, str | None], None], *, user_agent: str,
                 timeout: float = TIMEOUT, tries: int = TRIES, backoff: float = BACKOFF
                 ) -> None:
        self._done = done
        self._user_agent = user_agent
        self._timeout = timeout
        self._tries = tries
        self._backoff = backoff
        self._lanes: dict[tuple[object, ...], _Lane] = {}
        self._lock = threading.Lock()

    def send(self, spec: NotifySpec, event: Event) -> None:
        body = json.dumps(event, separators=(",", ":")).encode()
        if spec.webhook:
            url, headers = spec.webhook, spec.headers or ()
            timeout, agent = self._timeout, self._user_agent
            self._lane(("webhook", url, headers), f"webhook {redact_webhook(url)}",
                       lambda b, _e: post(url, headers, b, timeout, agent)).put(body, event)
        if spec.command:
            argv, timeout = spec.command, self._timeout
            self._lane(("command", argv), f"command {argv[0]}",
                       lambda b, e: run_command(argv, b, e, timeout)).put(body, event)
        if spec.mail:
            to, server, timeout = spec.mail, spec.smtp, self._timeout
            self._lane(("mail", to, server), f"mail to {', '.join(to)}",
                       lambda _b, e: send_mail(to, server, e, timeout)).put(body, event)

    def _lane(self, key: tuple[object, ...], name: str,
              deliver: Callable[[bytes, Event], None]) -> _Lane:
        with self._lock:
            lane = self._lanes.get(key)
            if lane is None:
                lane = self._lanes[key] = _Lane(name, deliver, self._done, tries=self._tries,
                                                backoff=self._backoff)
            return lane

    def close(self, timeout: float) -> bool:
        """Deliver what is queued for up to ``timeout`` seconds; False if some lane is
        still busy then (its thread is a daemon and dies with the process)."""
        with self._lock:
            lanes = list(self._lanes.values())
        for lane in lanes:
            lane.close()
        deadline = time.monotonic() + timeout
        for lane in lanes:
            lane.thread.join(max(0.0, deadline - time.monotonic()))
        return not any(lane.thread.is_alive() for lane in lanes)
