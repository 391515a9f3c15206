"""IoWorker.in_background: long work in slices on a second thread, so the I/O thread's
own writes (final statuses) never wait for it."""

from __future__ import annotations

import threading
from collections.abc import Sequence

from cronctl.runtime.io import IoWorker


def test_the_io_thread_goes_on_while_a_slice_is_held_and_stop_waits_for_the_rest() -> None:
    io = IoWorker(name="test-io")
    seen: list[object] = []
    held, final = threading.Event(), threading.Event()

    def save(items: Sequence[int]) -> None:
        if items[0] == 0:
            assert held.wait(5)  # the first slice is stuck (a slow database) ...
        seen.append(tuple(items))

    io.in_background("defs", list(range(7)), save, 3)
    io.start()
    io.submit(final.set)
    assert final.wait(5)  # ... and a final status is written meanwhile
    assert seen == []
    held.set()
    assert io.stop(5)
    assert seen == [(0, 1, 2), (3, 4, 5), (6,)]


def test_a_later_run_of_the_same_name_drops_the_slices_left() -> None:
    io = IoWorker(name="test-io")
    seen: list[object] = []
    began, gate = threading.Event(), threading.Event()

    def old(items: Sequence[int]) -> None:
        began.set()
        assert gate.wait(5)
        seen.append(tuple(items))

    io.in_background("defs", list(range(6)), old, 2)
    io.start()
    assert began.wait(5)
    io.in_background("defs", ["new"], lambda items: seen.append(("new", *items)), 2)
    gate.set()
    assert io.stop(5)
    # the old run's slice under way ends; its other slices are dropped
    assert seen == [(0, 1), ("new", "new")]
