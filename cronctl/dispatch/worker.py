"""One attempt of a Python job in a process of its own (``isolation = "process"``).

The scheduler starts ``python -I -m cronctl.dispatch.worker TARGET`` through the command
machinery (:mod:`cronctl.dispatch.command`), so the attempt gets everything a command
gets: its own process group, the parent-death signal, ``timeout`` then SIGTERM and
SIGKILL after ``kill_timeout``, ``cronctl cancel``, output into the job log within
``output_limit``, exit code, signal, CPU and memory recorded, the supervisor of a frozen
scheduler, recovery after a crash. And nothing it does reaches the scheduler:
``os._exit``, a changed ``os.environ`` or working directory, a handler spinning past its
timeout.

Here the handler is resolved as in the scheduler (the scheduler's ``sys.path``, with its
``python_path``, comes in ``CRONCTL_WORKER_PATH``; ``-I`` keeps the working directory and
``PYTHON*`` variables out) behind the same import guard (:mod:`cronctl.trust`), called
with a :class:`~cronctl.context.JobContext` built from the ``CRONCTL_*`` variables
(docs/behaviour.md#running) when it takes one, awaited when it is ``async``. ``ctx.log`` writes its
records, marked with their level (:mod:`cronctl.dispatch.workerlines`: the job log keeps
that level), to standard error; ``ctx.progress()`` writes a line; ``ctx.is_cancelled()``
turns true on SIGTERM; ``ctx.still_owner()`` raises (the store is the scheduler's, not the
child's).
``--serve FD`` makes it a warm worker of :mod:`cronctl.dispatch.pool`: attempts one by
one, with the same guard, and its messages (records, progress, output, the end with the
exception's last line) on ``FD``.
Exit 0: succeeded. An exception: its traceback in the job log, its last line (``ValueError:
boom``) as a marked line the scheduler makes the attempt's error, exit 1.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import signal
import sys
import threading
import traceback
from datetime import datetime
from typing import Any

from cronctl.dispatch.procenv import WORKER_INSECURE, WORKER_PATH, WORKER_PAYLOAD
from cronctl.dispatch.workerlines import error_line, record_line

EXIT_UNRESOLVED = 2  # the target could not be imported or found here


class _LineHandler(logging.Handler):
    """``ctx.log`` records as lines marked with their level (each line of a record):
    warnings and worse on standard error, the rest on standard output."""

    def emit(self, record: logging.LogRecord) -> None:
        stream = sys.stderr if record.levelno >= logging.WARNING else sys.stdout
        try:
            lines = record.getMessage().split("\n")
            print("\n".join(record_line(record.levelno, line) for line in lines),
                  file=stream, flush=True)
        except Exception:
            self.handleError(record)


def _not_owner() -> bool:
    raise RuntimeError("ctx.still_owner() is not available with isolation = \"process\" "
                       "(the child has no store); use isolation = \"thread\" for handlers "
                       "that need it")


def _progress(done: float, total: float | None, message: str | None) -> None:
    shown = f"{done:g}" if total is None else f"{done:g}/{total:g}"
    print(f"progress {shown}{' ' + message if message else ''}", file=sys.stderr, flush=True)


def _context(cancelled: threading.Event, handler: logging.Handler | None = None,
             progress: Any = None, payload: Any = None) -> Any:
    from cronctl.context import JobContext

    env = os.environ
    log = logging.Logger(f"cronctl.job.{env.get('CRONCTL_JOB_ID', '')}")
    log.addHandler(handler or _LineHandler())
    execution = env.get("CRONCTL_EXECUTION_ID") or ""
    token = env.get("CRONCTL_FENCING_TOKEN") or ""
    return JobContext(
        job_id=env.get("CRONCTL_JOB_ID", ""),
        execution_id=int(execution) if execution.isdigit() else None,
        occurrence_id=env.get("CRONCTL_OCCURRENCE_ID", ""),
        scheduled_at=datetime.fromisoformat(env.get("CRONCTL_SCHEDULED_AT", "")
                                            .replace("Z", "+00:00")),
        attempt=int(env.get("CRONCTL_ATTEMPT", "1")),
        origin=env.get("CRONCTL_ORIGIN", "cron"),
        parameters=json.loads(env.get("CRONCTL_PARAMETERS") or "{}"),
        payload=payload if payload is not None else json.loads(env.get(WORKER_PAYLOAD) or "null"),
        fencing_token=int(token) if token.isdigit() else None,
        log=log,
        _cancel_event=cancelled,
        _progress=progress or _progress,
        _owner=_not_owner,
    )


def _path() -> None:
    """The scheduler's ``sys.path``, behind the same import guard (:mod:`cronctl.trust`):
    no file of the target, of what it imports, or of a service's package runs here
    unless only root or this user can write it."""
    from cronctl import trust

    if os.environ.get(WORKER_INSECURE) == "1":
        trust.permit_insecure()
    trust.install_guard()
    for entry in json.loads(os.environ.get(WORKER_PATH) or "[]"):
        if entry not in sys.path:
            sys.path.append(entry)


def _resolve(text: str) -> tuple[Any, Any] | str:
    """The handler of target ``text`` and its shape, or why not (also said on standard
    error, into the job log)."""
    from cronctl.dispatch.base import TargetUnresolved
    from cronctl.dispatch.python import default_service_resolver, import_target, shape_of
    from cronctl.jobs.model import PythonTarget

    try:
        if text.startswith("python:") and text.count(":") == 2:
            _, module, function = text.split(":")
            fn = import_target(PythonTarget(module, function))
        elif text.startswith("service:"):
            fn = default_service_resolver(text[len("service:"):])
        else:
            raise TargetUnresolved(f"{text!r} is not a python: or service: target")
        return fn, shape_of(fn)
    except Exception as exc:
        print(f"cannot resolve {text}: {exc}", file=sys.stderr, flush=True)
        return f"cannot resolve {text}: {exc}"


def main(argv: list[str]) -> int:
    _path()
    text = argv[1] if len(argv) > 1 else ""
    resolved = _resolve(text)
    if isinstance(resolved, str):
        print(error_line(resolved), file=sys.stderr, flush=True)
        return EXIT_UNRESOLVED
    cancelled = threading.Event()
    signal.signal(signal.SIGTERM, lambda signum, frame: cancelled.set())
    code, error = _call(*resolved, _context(cancelled))
    if error is not None:
        print(error_line(error), file=sys.stderr, flush=True)
    return code


def _call(fn: Any, shape: Any, ctx: Any) -> tuple[int, str | None]:
    """The exit code, and the error's last line when the handler raised."""
    from cronctl.dispatch.python import error_text

    args = (ctx,) if shape.takes_context else ()
    try:
        if shape.is_async:
            asyncio.run(fn(*args))
        else:
            fn(*args)
    except BaseException as exc:  # SystemExit(0) included: a handler's own exit
        if isinstance(exc, SystemExit) and exc.code in (0, None):
            return 0, None
        traceback.print_exc(file=sys.stderr)
        return 1, error_text(exc)
    return 0, None


class _Messages:
    """The pool's message pipe (cronctl.dispatch.pool): one JSON line per message."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._lock = threading.Lock()

    def send(self, message: dict[str, Any]) -> None:
        data = (json.dumps(message, default=str) + "\n").encode()
        with self._lock:
            while data:
                data = data[os.write(self._fd, data):]


class _MessageHandler(logging.Handler):
    def __init__(self, messages: _Messages) -> None:
        super().__init__()
        self._messages = messages

    def emit(self, record: logging.LogRecord) -> None:
        try:
            for line in record.getMessage().split("\n"):  # a job log line is one line
                self._messages.send({"log": record.levelno, "m": line})
        except Exception:
            self.handleError(record)


class _Capture:
    """This process's standard output or error (the file descriptor itself, so that what
    a handler's children print is caught too) forwarded as the attempt's lines: by a
    thread while the attempt runs (a pipe holds only 64 KiB), and by :meth:`drain` at its
    end, under the same lock, so the end costs one read when nothing was printed."""

    def __init__(self, target: int, level: int, messages: _Messages) -> None:
        read, write = os.pipe()
        os.dup2(write, target)
        os.close(write)
        os.set_blocking(read, False)
        self._read = read
        self._level = level
        self._messages = messages
        self._lock = threading.Lock()
        self._partial = b""
        threading.Thread(target=self._forward, daemon=True).start()

    def _forward(self) -> None:
        import select

        while True:
            select.select([self._read], [], [])
            self._take(final=False)

    def _take(self, *, final: bool) -> None:
        with self._lock:
            while True:
                try:
                    data = os.read(self._read, 65536)
                except BlockingIOError:
                    break
                if not data:
                    break
                *lines, self._partial = (self._partial + data).split(b"\n")
                for line in lines:
                    self._send(line)
            if final and self._partial:
                self._send(self._partial)
                self._partial = b""

    def _send(self, line: bytes) -> None:
        self._messages.send({"out": self._level, "m": line.decode("utf-8", "replace")})

    def drain(self) -> None:
        """Send what was printed so far (the end of an attempt)."""
        self._take(final=True)


def serve(fd: int) -> int:
    """A warm worker of the pool: attempts one by one from standard input (see
    :mod:`cronctl.dispatch.pool`); ends at EOF."""
    import resource

    _path()
    messages = _Messages(fd)
    handler = _MessageHandler(messages)
    captures = [_Capture(1, logging.INFO, messages), _Capture(2, logging.WARNING, messages)]
    sys.stdout = os.fdopen(1, "w", buffering=1, closefd=False)
    sys.stderr = os.fdopen(2, "w", buffering=1, closefd=False)
    base_env, base_cwd = dict(os.environ), os.getcwd()
    cancelled = threading.Event()
    signal.signal(signal.SIGTERM, lambda signum, frame: cancelled.set())
    handlers: dict[str, tuple[Any, Any]] = {}

    def progress(done: float, total: float | None, message: str | None) -> None:
        messages.send({"progress": [done, total, message]})

    for line in sys.stdin.buffer:
        request = json.loads(line)
        cancelled.clear()
        env: dict[str, str] = request["env"]
        os.environ.update(env)
        before = resource.getrusage(resource.RUSAGE_SELF)
        text = request["target"]
        resolved = handlers.get(text) or _resolve(text)
        error: str | None
        if isinstance(resolved, str):
            code, error = EXIT_UNRESOLVED, resolved
        else:
            handlers[text] = resolved
            code, error = _call(*resolved, _context(cancelled, handler, progress,
                                                    request.get("payload")))
        sys.stdout.flush()
        sys.stderr.flush()
        for capture in captures:
            capture.drain()
        used = resource.getrusage(resource.RUSAGE_SELF)
        cpu = (used.ru_utime + used.ru_stime) - (before.ru_utime + before.ru_stime)
        if dict(os.environ) != {**base_env, **env}:  # a handler changed it: put it back
            os.environ.clear()
            os.environ.update(base_env)
        else:
            for key in env:
                if key in base_env:
                    os.environ[key] = base_env[key]
                else:
                    del os.environ[key]
        if os.getcwd() != base_cwd:
            with contextlib.suppress(OSError):
                os.chdir(base_cwd)
        messages.send({"code": code, "cpu": round(cpu, 6), "rss": used.ru_maxrss * 1024,
                       "error": error})
    return 0


if __name__ == "__main__":
    sys.stdout.flush()
    if len(sys.argv) == 3 and sys.argv[1] == "--serve":
        os._exit(serve(int(sys.argv[2])))
    code = main(sys.argv)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)  # (no wait for threads the handler left behind)
