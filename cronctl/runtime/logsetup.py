"""Process logging for ``cronctl run``: stderr, one line per event, ids on every line.

Text lines read ``2026-03-08T07:00:00.123Z INFO fired job=backup exec=42 ...``; with
``--log-format json`` each line is one JSON object with ``job`` and ``exec`` keys. Control
characters in messages (ids, targets and handler output included) are escaped, so a job
id with a newline or an ANSI escape cannot forge or corrupt log lines.
"""

from __future__ import annotations

import json
import logging
import math
import sys
from datetime import UTC, datetime
from typing import TextIO

from cronctl.escaping import printable
from cronctl.runtime.logwriter import ThreadedStreamHandler

_HANDLER_NAME = "cronctl-run"


class _Stamps:
    """``2026-03-08T07:00:00.123Z`` of a record: the text up to the second is made once
    per second, not once per line (a burst logs thousands of lines within one; making
    it was a fifth of the cost of a line). Thread-safe: one tuple swapped at a time."""

    def __init__(self) -> None:
        self._last: tuple[int, str] = (-1, "")

    def __call__(self, created: float) -> str:
        fraction, whole = math.modf(created)  # rounded as datetime.fromtimestamp does
        second, micro = int(whole), round(fraction * 1_000_000)
        if micro >= 1_000_000:
            second, micro = second + 1, micro - 1_000_000
        last = self._last
        if last[0] != second:
            text = datetime.fromtimestamp(second, UTC).strftime("%Y-%m-%dT%H:%M:%S.")
            last = self._last = (second, text)
        return f"{last[1]}{micro // 1000:03d}Z"


_stamp = _Stamps()


def _utc(record: logging.LogRecord) -> str:
    return _stamp(record.created)


class TextFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        text = f"{_utc(record)} {record.levelname} {record.getMessage()}"
        if record.exc_info:
            text += " | " + self.formatException(record.exc_info)
        return printable(text)


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        doc: dict[str, object] = {
            "ts": _utc(record),
            "level": record.levelname,
            "logger": record.name,
            "message": printable(record.getMessage()),
        }
        for attr, key in (("job_id", "job"), ("execution_id", "exec")):
            value = getattr(record, attr, None)
            if value is not None:
                doc[key] = printable(str(value))
        if record.exc_info:
            doc["error"] = printable(self.formatException(record.exc_info))
        return json.dumps(doc, ensure_ascii=False)


def configure_logging(level: int = logging.INFO, fmt: str = "text",
                      stream: TextIO | None = None) -> None:
    """Install the one stderr handler on the ``cronctl`` logger (idempotent). Lines are
    written by a thread of their own (:mod:`cronctl.runtime.logwriter`); call
    :func:`flush_logs` to wait for them."""
    root = logging.getLogger("cronctl")
    for handler in list(root.handlers):
        if handler.get_name() == _HANDLER_NAME:
            root.removeHandler(handler)
            handler.close()
    handler = ThreadedStreamHandler(stream or sys.stderr)
    handler.set_name(_HANDLER_NAME)
    handler.setFormatter(JsonFormatter() if fmt == "json" else TextFormatter())
    root.addHandler(handler)
    root.setLevel(level)
    root.propagate = False


def flush_logs() -> None:
    """Return once every line logged so far is written."""
    for handler in logging.getLogger("cronctl").handlers:
        if handler.get_name() == _HANDLER_NAME:
            handler.flush()


def ids(job_id: str, execution_id: int | None = None) -> dict[str, object]:
    """``extra=`` for a log call, so JSON lines carry the ids as fields."""
    return {"job_id": job_id, "execution_id": execution_id}
