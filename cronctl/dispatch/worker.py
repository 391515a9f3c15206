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
(SPEC section 3) when it takes one, awaited when it is ``async``. ``ctx.log`` writes its
records, marked with their level (:mod:`cronctl.dispatch.workerlines`: the job log keeps
that level), to standard error; ``ctx.progress()`` writes a line; ``ctx.is_cancelled()``
turns true on SIGTERM; ``ctx.still_owner()`` raises (the store is the scheduler's, not the
child's).
Exit 0: succeeded. An exception: its traceback in the job log, its last line (``ValueError:
boom``) as a marked line the scheduler makes the attempt's error, exit 1.
"""

from __future__ import annotations

import asyncio
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


def _context(cancelled: threading.Event) -> Any:
    from cronctl.context import JobContext

    env = os.environ
    log = logging.Logger(f"cronctl.job.{env.get('CRONCTL_JOB_ID', '')}")
    log.addHandler(_LineHandler())
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
        payload=json.loads(env.get(WORKER_PAYLOAD) or "null"),
        fencing_token=int(token) if token.isdigit() else None,
        log=log,
        _cancel_event=cancelled,
        _progress=_progress,
        _owner=_not_owner,
    )


def main(argv: list[str]) -> int:
    from cronctl import trust

    # Judged as in the scheduler: no file of the target, of what it imports, or of a
    # service's package runs here unless only root or this user can write it.
    if os.environ.get(WORKER_INSECURE) == "1":
        trust.permit_insecure()
    trust.install_guard()
    for entry in json.loads(os.environ.get(WORKER_PATH) or "[]"):
        if entry not in sys.path:
            sys.path.append(entry)
    from cronctl.dispatch.base import TargetUnresolved
    from cronctl.dispatch.python import (
        default_service_resolver,
        error_text,
        import_target,
        shape_of,
    )
    from cronctl.jobs.model import PythonTarget

    text = argv[1] if len(argv) > 1 else ""
    try:
        if text.startswith("python:") and text.count(":") == 2:
            _, module, function = text.split(":")
            fn = import_target(PythonTarget(module, function))
        elif text.startswith("service:"):
            fn = default_service_resolver(text[len("service:"):])
        else:
            raise TargetUnresolved(f"{text!r} is not a python: or service: target")
        shape = shape_of(fn)
    except Exception as exc:
        print(f"cannot resolve {text}: {exc}", file=sys.stderr, flush=True)
        print(error_line(f"cannot resolve {text}: {exc}"), file=sys.stderr, flush=True)
        return EXIT_UNRESOLVED
    cancelled = threading.Event()
    signal.signal(signal.SIGTERM, lambda signum, frame: cancelled.set())
    args = (_context(cancelled),) if shape.takes_context else ()
    try:
        if shape.is_async:
            asyncio.run(fn(*args))
        else:
            fn(*args)
    except BaseException as exc:  # SystemExit(0) included: a handler's own exit
        if isinstance(exc, SystemExit) and exc.code in (0, None):
            return 0
        traceback.print_exc(file=sys.stderr)
        print(error_line(error_text(exc)), file=sys.stderr, flush=True)
        return 1
    return 0


if __name__ == "__main__":
    sys.stdout.flush()
    code = main(sys.argv)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)  # (no wait for threads the handler left behind)
