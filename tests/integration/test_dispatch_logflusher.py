"""LogFlusher against the real stores: batching, drain, bounded drains with a store that
fails (a fault-injecting wrapper around the real store, not a mock)."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from cronctl.dispatch.logbuffer import LogFlusher, ProcessLogSink, printable
from cronctl.jobs.model import Origin
from cronctl.store import Store, open_store
from cronctl.store.base import LogEntry, StoreUnavailable

T0 = datetime(2026, 1, 1, tzinfo=UTC)


@pytest.fixture(params=["sqlite", "none", pytest.param("postgres", marks=pytest.mark.postgres)])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    if request.param == "postgres":
        url = request.getfixturevalue("postgres_url")
    else:
        url = f"sqlite:///{tmp_path / 'state.db'}" if request.param == "sqlite" else "none"
    s = open_store(url, node_id="n1")
    yield s
    s.close()


def new_execution(store: Store, n: int) -> int:
    eid = store.try_insert_execution(
        job_id="job", occurrence_id=f"occ-{n}", scheduled_at=T0, attempt=1,
        origin=Origin.CRON, node_id="n1", scope_node="n1",
    )
    assert eid is not None
    return eid


class CountingStore:
    """Delegates to a real store; counts writes and can be told to fail them."""

    def __init__(self, inner: Store) -> None:
        self.inner = inner
        self.append_calls: list[int] = []
        self.fail_appends = 0  # fail the next N append_logs calls
        self.fail_always = False

    def append_logs(self, batch: Sequence[LogEntry]) -> None:
        if self.fail_always or self.fail_appends > 0:
            self.fail_appends -= 1
            raise StoreUnavailable("database unreachable (injected)")
        self.append_calls.append(len(batch))
        self.inner.append_logs(batch)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def messages(store: Store, eid: int) -> list[str]:
    return [line.message for line in store.read_logs(eid)]


def test_flush_writes_all_executions_in_one_batch(store: Store) -> None:
    counting = CountingStore(store)
    flusher = LogFlusher(counting)  # type: ignore[arg-type]
    a, b = new_execution(store, 1), new_execution(store, 2)
    sa, sb = flusher.sink_for(a), flusher.sink_for(b)
    sa.log(logging.INFO, "a1")
    sb.log(logging.WARNING, "b1")
    sa.log(logging.ERROR, "a2")
    sa.progress(3, 10, "three")
    sa.progress(4, 10, "four")  # only the latest is written
    assert flusher.buffered == 3
    assert flusher.flush()
    assert counting.append_calls == [3]
    assert messages(store, a) == ["a1", "a2"]
    assert [(x.seq, x.level, x.message) for x in store.read_logs(b)] == [(1, "WARNING", "b1")]
    record = store.get_execution(a)
    assert record is not None
    assert (record.progress_done, record.progress_total, record.progress_message) == (
        4, 10, "four")
    assert flusher.flush()
    assert counting.append_calls == [3]  # nothing new: no write at all


def test_drain_writes_only_that_execution(store: Store) -> None:
    counting = CountingStore(store)
    flusher = LogFlusher(counting)  # type: ignore[arg-type]
    a, b = new_execution(store, 1), new_execution(store, 2)
    flusher.sink_for(a).log(logging.INFO, "a")
    flusher.sink_for(b).log(logging.INFO, "b")
    assert flusher.drain(a)
    assert messages(store, a) == ["a"] and messages(store, b) == []
    assert flusher.drain(a)  # nothing left: no write
    assert counting.append_calls == [1]
    flusher.flush()
    assert messages(store, b) == ["b"]


def test_refused_lines_stay_buffered_in_order(store: Store) -> None:
    counting = CountingStore(store)
    flusher = LogFlusher(counting)  # type: ignore[arg-type]
    eid = new_execution(store, 1)
    sink = flusher.sink_for(eid)
    sink.log(logging.INFO, "one")
    counting.fail_appends = 1
    assert not flusher.flush()
    sink.log(logging.INFO, "two")
    assert flusher.flush()
    assert messages(store, eid) == ["one", "two"]


def test_drain_retries_then_reports_what_was_lost(
    store: Store, caplog: pytest.LogCaptureFixture,
) -> None:
    counting = CountingStore(store)
    flusher = LogFlusher(counting)  # type: ignore[arg-type]
    eid = new_execution(store, 1)
    flusher.sink_for(eid).log(logging.INFO, "survives a glitch")
    counting.fail_appends = 2
    assert flusher.drain(eid, rounds=3)
    assert messages(store, eid) == ["survives a glitch"]

    counting.fail_always = True
    for i in range(5):
        flusher.sink_for(eid).log(logging.INFO, f"lost {i}")
    with caplog.at_level(logging.WARNING, logger="cronctl.dispatch"):
        assert not flusher.drain(eid, rounds=3)
    assert any("5 job log lines" in r.getMessage() and "could not be written" in r.getMessage()
               for r in caplog.records)
    assert flusher.buffered == 0  # dropped, not kept forever


def test_drain_all_is_bounded_by_its_deadline(
    store: Store, caplog: pytest.LogCaptureFixture,
) -> None:
    counting = CountingStore(store)
    flusher = LogFlusher(counting)  # type: ignore[arg-type]
    eid = new_execution(store, 1)
    for i in range(7):
        flusher.sink_for(eid).log(logging.INFO, f"line {i}")
    counting.fail_always = True
    started = time.monotonic()
    with caplog.at_level(logging.WARNING, logger="cronctl.dispatch"):
        lost = flusher.drain_all(time.monotonic() + 0.3, retry_interval=0.05)
    assert lost == 7
    assert time.monotonic() - started < 2.0
    assert any("7 job log lines" in r.getMessage() for r in caplog.records)

    counting.fail_always = False
    flusher.sink_for(eid).log(logging.INFO, "after")
    assert flusher.drain_all(time.monotonic() + 1) == 0
    assert messages(store, eid) == ["after"]


def test_buffer_cap_while_the_database_is_away(
    store: Store, caplog: pytest.LogCaptureFixture,
) -> None:
    counting = CountingStore(store)
    flusher = LogFlusher(counting, max_buffered=10)  # type: ignore[arg-type]
    eid = new_execution(store, 1)
    counting.fail_always = True
    for i in range(25):
        flusher.sink_for(eid).log(logging.INFO, f"{i}")
    assert flusher.buffered == 10
    flusher.flush()
    counting.fail_always = False
    with caplog.at_level(logging.WARNING, logger="cronctl.dispatch"):
        assert flusher.flush()
    assert messages(store, eid) == [str(i) for i in range(10)]
    assert any("15 job log lines were dropped" in r.getMessage() for r in caplog.records)


def test_concurrent_sinks_and_flushes_keep_every_line_in_order(store: Store) -> None:
    flusher = LogFlusher(store)
    eids = [new_execution(store, n) for n in range(4)]
    stop = threading.Event()

    def flushing() -> None:
        while not stop.is_set():
            flusher.flush()

    def writer(eid: int) -> None:
        sink = flusher.sink_for(eid)
        for i in range(300):
            sink.log(logging.INFO, str(i))

    flusher_thread = threading.Thread(target=flushing)
    flusher_thread.start()
    writers = [threading.Thread(target=writer, args=(eid,)) for eid in eids]
    for t in writers:
        t.start()
    for t in writers:
        t.join()
    for eid in eids:
        flusher.drain(eid)
    stop.set()
    flusher_thread.join()
    for eid in eids:
        lines = store.read_logs(eid)
        assert [x.message for x in lines] == [str(i) for i in range(300)]
        assert [x.seq for x in lines] == list(range(1, 301))


def test_lines_of_unknown_executions_are_dropped_by_the_store(store: Store) -> None:
    flusher = LogFlusher(store)
    flusher.sink_for(999_999).log(logging.INFO, "orphan")
    assert flusher.flush()


def test_process_log_sink_escapes_control_characters(caplog: pytest.LogCaptureFixture) -> None:
    sink = ProcessLogSink("job\x1b[31m")
    with caplog.at_level(logging.DEBUG, logger="cronctl.job"):
        sink.log(logging.WARNING, "two\nlines\r and \x1b[2J")
        sink.progress(1, 2, "half\n")
    text = [r.getMessage() for r in caplog.records]
    assert text[0] == "job job\\x1b[31m: two\\nlines\\r and \\x1b[2J"
    assert text[1] == "job job\\x1b[31m: progress 1/2 half\\n"
    assert printable("tab\there\x7f\x85") == "tab\\there\\x7f\\x85"
