"""The process log's writer thread: log calls only queue their record; one thread formats
and writes the lines, several per ``write``.

``cronctl run`` logs from the scheduler thread (in a burst a few summary lines, see
:mod:`cronctl.runtime.fire.wakelog`; one or two lines per fire otherwise, and at DEBUG);
formatting and writing them there took a third of its time per fire in a burst
(bench/PROFILE.md), time it can spend starting the next fire while the writer catches
up. What stays on the calling thread is the record itself and its message text (so
that arguments changed after the call cannot change the line). Lines keep the order of
the calls; :meth:`ThreadedStreamHandler.flush` returns once everything queued before it
is written (at exit too: :func:`atexit`), so only a SIGKILL loses lines, those of the
last moment.
"""

from __future__ import annotations

import atexit
import logging
import queue
import threading
from typing import TextIO

_BATCH = 512  # records per write at most
_FLUSH_WAIT = 5.0  # seconds flush() waits for the writer


class _Mark:
    """Queued by flush(): set once every record before it is written."""

    __slots__ = ("done",)

    def __init__(self) -> None:
        self.done = threading.Event()


class ThreadedStreamHandler(logging.Handler):
    """A :class:`logging.StreamHandler` whose formatting and writing run on a thread of
    its own (started with the handler, stopped by :meth:`close`)."""

    def __init__(self, stream: TextIO, name: str = "cronctl-log") -> None:
        super().__init__()
        self.stream = stream
        self._queue: queue.SimpleQueue[logging.LogRecord | _Mark | None] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._write, name=name, daemon=True)
        self._thread.start()
        atexit.register(self.flush)

    def handle(self, record: logging.LogRecord) -> bool:
        # No handler lock: the queue is thread-safe, and the writer is the only thread
        # that touches the stream.
        if not self.filter(record):
            return False
        self.emit(record)
        return True

    def emit(self, record: logging.LogRecord) -> None:
        try:
            record.msg = record.getMessage()
            record.args = None
        except Exception:
            self.handleError(record)
            return
        self._queue.put(record)

    def flush(self) -> None:
        """Wait (up to 5 s) until every record queued so far is written and flushed."""
        if not self._thread.is_alive():
            return
        mark = _Mark()
        self._queue.put(mark)
        mark.done.wait(_FLUSH_WAIT)

    def close(self) -> None:
        if self._thread.is_alive():
            self.flush()
            self._queue.put(None)
            self._thread.join(_FLUSH_WAIT)
        atexit.unregister(self.flush)
        super().close()

    def _write(self) -> None:
        get, get_nowait = self._queue.get, self._queue.get_nowait
        while True:
            item = get()
            lines: list[str] = []
            marks: list[_Mark] = []
            stop = False
            while True:
                if item is None:
                    stop = True
                    break
                if isinstance(item, _Mark):
                    marks.append(item)
                else:
                    try:
                        lines.append(self.format(item))
                    except Exception:
                        self.handleError(item)
                if len(lines) >= _BATCH:
                    break
                try:
                    item = get_nowait()
                except queue.Empty:
                    break
            if lines:
                try:
                    self.stream.write("\n".join(lines) + "\n")
                    self.stream.flush()
                except Exception:  # a closed or broken stream: nothing to tell it to
                    pass
            for mark in marks:
                mark.done.set()
            if stop:
                return


__all__ = ["ThreadedStreamHandler"]
