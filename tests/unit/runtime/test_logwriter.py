"""The process log's writer thread: every line written, in call order, formatted off the
calling thread, with the message as it was at the call."""

from __future__ import annotations

import io
import logging
import threading

from cronctl.runtime.logwriter import ThreadedStreamHandler


class _Recording(logging.Formatter):
    def __init__(self) -> None:
        super().__init__()
        self.threads: set[str] = set()

    def format(self, record: logging.LogRecord) -> str:
        self.threads.add(threading.current_thread().name)
        return record.getMessage()


def _logger(handler: logging.Handler) -> logging.Logger:
    log = logging.Logger("test-logwriter")  # not registered: nothing else sees it
    log.addHandler(handler)
    log.propagate = False
    return log


def test_lines_in_order_formatted_by_the_writer() -> None:
    out = io.StringIO()
    handler = ThreadedStreamHandler(out, name="test-writer")
    formatter = _Recording()
    handler.setFormatter(formatter)
    log = _logger(handler)
    try:
        def burst(tag: str) -> None:
            for i in range(2_000):
                log.warning("%s %d", tag, i)

        threads = [threading.Thread(target=burst, args=(t,)) for t in "abc"]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        handler.flush()
        lines = out.getvalue().splitlines()
        assert len(lines) == 6_000
        for tag in "abc":
            assert [int(x.split()[1]) for x in lines if x[0] == tag] == list(range(2_000))
        assert formatter.threads == {"test-writer"}
    finally:
        handler.close()


def test_message_is_taken_at_the_call() -> None:
    out = io.StringIO()
    handler = ThreadedStreamHandler(out)
    log = _logger(handler)
    items = ["before"]
    log.warning("items=%s", items)
    items.append("after")  # the writer may not have formatted the line yet
    handler.close()  # writes what is queued, then stops the thread
    assert out.getvalue() == "items=['before']\n"
    handler.close()  # idempotent
    assert not any(t.name == "cronctl-log" and t.is_alive() for t in threading.enumerate()
                   if t is handler._thread)
