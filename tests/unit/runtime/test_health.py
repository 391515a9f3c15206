"""The store probe's backoff (SPEC section 4: retries with backoff). Its longest delay is
near the heartbeat, so a node is back within ~2 s of the database's return. The delays
are recorded, not slept."""

from __future__ import annotations

from collections.abc import Callable

from cronctl.runtime.health import MAX_RETRY, DatabaseHealth


def test_probe_delays_double_and_stop_near_the_heartbeat() -> None:
    delays: list[float] = []
    queued: list[Callable[[], object]] = []
    failures = 12

    def check() -> None:
        nonlocal failures
        if failures:
            failures -= 1
            raise OSError("connection timed out")

    backs: list[bool] = []
    health = DatabaseHealth(check=check, back=lambda: backs.append(True),
                            later=lambda delay, fn: (delays.append(delay), queued.append(fn)))
    health.failed(OSError("connection timed out"))
    while queued:
        queued.pop()()
    assert backs == [True]
    assert delays[:4] == [0.5, 1.0, 2.0, 2.0]
    assert max(delays) == MAX_RETRY <= 2.0
    # 12 failed probes in a row: at most ~24 s of retries, never a 15 s gap
    assert sum(delays) <= 0.5 + 12 * 2.0


def test_a_failure_while_down_does_not_start_a_second_probe() -> None:
    queued: list[float] = []
    health = DatabaseHealth(check=lambda: None, back=lambda: None,
                            later=lambda delay, fn: queued.append(delay))
    health.failed(OSError("x"))
    health.failed(OSError("y"))
    assert queued == [0.5]
    assert health.down
