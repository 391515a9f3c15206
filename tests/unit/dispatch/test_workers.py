"""WorkerPool and CancelFlag."""

from __future__ import annotations

import threading
import time

from cronctl.dispatch.workers import CancelFlag, WorkerPool


def test_pool_runs_everything_in_order_with_one_worker() -> None:
    pool = WorkerPool(1)
    seen: list[int] = []
    for i in range(100):
        pool.submit(seen.append, i)
    pool.shutdown(wait=True)
    assert seen == list(range(100))
    assert pool.threads == 1


def test_pool_never_exceeds_its_bound() -> None:
    pool = WorkerPool(3)
    release = threading.Event()
    running, peak, changed = [0], [0], threading.Condition()

    def task() -> None:
        with changed:
            running[0] += 1
            peak[0] = max(peak[0], running[0])
            changed.notify_all()
        release.wait(5)
        with changed:
            running[0] -= 1

    for _ in range(10):
        pool.submit(task)
    with changed:  # wait for the pool to fill, however slow the machine
        assert changed.wait_for(lambda: running[0] >= 3, timeout=5)
    time.sleep(0.05)  # give a fourth worker (a bug) the chance to start
    release.set()
    pool.shutdown(wait=True)
    assert peak[0] == 3 and pool.threads == 3


def test_a_raising_task_does_not_kill_the_worker() -> None:
    pool = WorkerPool(1)
    done = threading.Event()

    def boom() -> None:
        raise RuntimeError("bug")

    pool.submit(boom)
    pool.submit(done.set)
    assert done.wait(5)
    pool.shutdown()


def test_cancel_flag_behaves_like_an_event() -> None:
    flag = CancelFlag()
    assert not flag.is_set()
    assert flag.wait(0.01) is False
    threading.Timer(0.05, flag.set).start()
    assert flag.wait(5) is True
    assert flag.is_set()
    flag.clear()
    assert not flag.is_set()


def test_tasks_queued_while_a_thread_is_idle_get_threads_of_their_own() -> None:
    # The regression: one thread idle, three tasks submitted before it took the first:
    # they saw "a thread is idle" and started none, so one thread ran them one by one.
    pool = WorkerPool(3)
    pool.submit(lambda: None)
    deadline = time.monotonic() + 5
    while pool._idle != 1 and time.monotonic() < deadline:  # the first thread waits
        time.sleep(0.001)
    release = threading.Event()
    running, changed = [0], threading.Condition()

    def task() -> None:
        with changed:
            running[0] += 1
            changed.notify_all()
        release.wait(5)

    for _ in range(3):
        pool.submit(task)
    with changed:
        assert changed.wait_for(lambda: running[0] == 3, timeout=5), running
    release.set()
    pool.shutdown(wait=True)
    assert pool.threads == 3
