"""IoWorker.in_turns: a long task in slices, each at the back of the I/O queue."""

from __future__ import annotations

import threading
from collections.abc import Sequence

from cronctl.runtime.io import IoWorker


def test_tasks_submitted_meanwhile_run_between_slices() -> None:
    io = IoWorker(name="test-io")
    seen: list[object] = []
    gate, done = threading.Event(), threading.Event()

    def save(items: Sequence[int]) -> None:
        seen.append(tuple(items))
        if items[0] == 0:  # while the first slice runs, a final status is queued
            io.submit(lambda: seen.append("final"))
        if items[-1] == 6:
            done.set()

    io.submit(gate.wait)  # nothing runs until everything below is queued
    io.in_turns("defs", list(range(7)), save, 3)
    io.start()
    gate.set()
    assert done.wait(5)
    assert io.stop(5)
    assert seen == [(0, 1, 2), "final", (3, 4, 5), (6,)]


def test_a_later_run_of_the_same_name_drops_the_slices_left() -> None:
    io = IoWorker(name="test-io")
    seen: list[object] = []
    gate, done = threading.Event(), threading.Event()
    io.submit(gate.wait)
    io.in_turns("defs", list(range(6)), lambda items: seen.append(tuple(items)), 2)
    io.in_turns("defs", ["new"], lambda items: (seen.append(("new", *items)), done.set()), 2)
    io.start()
    gate.set()
    assert done.wait(5)
    assert io.stop(5)
    assert seen == [("new", "new")]
