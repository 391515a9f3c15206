"""OutputBudget (SPEC section 9): the first half and the last half of an execution's
output, by bytes and by lines, one line counting the middle; BoundedSink for Python
handlers' log lines."""

from __future__ import annotations

import logging

from cronctl.dispatch.output import BoundedSink, OutputBudget
from cronctl.dispatch.testing import RecordingSink

INFO, WARN = logging.INFO, logging.WARNING


def feed_lines(budget: OutputBudget, lines: list[bytes], level: int = INFO
               ) -> list[tuple[int, str]]:
    """What a reader does: a line to the head while it has room, else to the tail."""
    out: list[tuple[int, str]] = []
    for line in lines:
        if budget.head(len(line) + 1):
            out.append((level, line.decode()))
        else:
            budget.hold_block(level, line + b"\n")
    return out + budget.finish()


def test_output_within_the_limit_is_kept_whole_and_in_order() -> None:
    budget = OutputBudget(limit=100, max_lines=1000)
    lines = [f"{i:03d}".encode() for i in range(20)]  # 80 bytes
    out = feed_lines(budget, lines)
    assert [m for _, m in out] == [line.decode() for line in lines]
    assert budget.dropped_lines == 0


def test_bytes_bound_the_head_and_the_tail() -> None:
    budget = OutputBudget(limit=40, max_lines=1000)
    out = feed_lines(budget, [f"{i:03d}".encode() for i in range(100)])  # 4 bytes a line
    assert [m for _, m in out] == ([f"{i:03d}" for i in range(5)]
                                   + ["… 90 lines (360 bytes) dropped …"]
                                   + [f"{i:03d}" for i in range(95, 100)])
    assert out[5][0] == WARN


def test_lines_bound_the_head_and_the_tail() -> None:
    budget = OutputBudget(limit=1 << 20, max_lines=5)  # 2 at the head, 3 at the tail
    out = feed_lines(budget, [b"a", b"b", b"c", b"d", b"e", b"f", b"g"])
    assert [m for _, m in out] == ["a", "b", "… 2 lines (4 bytes) dropped …", "e", "f", "g"]


def test_blocks_are_cut_exactly_at_the_end_and_kept_bounded_meanwhile() -> None:
    budget = OutputBudget(limit=2048, max_lines=10**6)
    assert not budget.head(2000)  # the head is full at once
    block = b"".join(f"{i:07d}\n".encode() for i in range(100))  # 800 bytes, 100 lines
    for _ in range(1000):
        budget.hold_block(INFO, block)
        assert budget._tail_size <= 1024 + len(block)  # at most one block over the bound
    out = budget.finish()
    assert out[0] == (WARN, f"… {100000 - 128} lines ({(100000 - 128) * 8} bytes) dropped …")
    assert [m for _, m in out[1:]] == [f"{i:07d}" for i in [*range(72, 100), *range(100)]]


def test_levels_and_order_survive_the_tail() -> None:
    budget = OutputBudget(limit=64, max_lines=100)
    assert budget.head(30)
    assert not budget.head(5)
    assert not budget.head(1)  # once full, always full: the output keeps its order
    budget.hold_block(INFO, b"o1\no2\n")
    budget.hold_block(WARN, b"e1\n")
    budget.hold_block(INFO, b"o3\r\n")
    assert budget.finish() == [(INFO, "o1"), (INFO, "o2"), (WARN, "e1"), (INFO, "o3")]


def test_bounded_sink_keeps_a_handlers_first_and_last_lines() -> None:
    inner = RecordingSink()
    sink = BoundedSink(inner, OutputBudget(limit=1 << 20, max_lines=4))
    for i in range(10):
        sink.log(INFO, f"line {i}\nwith a second row")  # one record, however many rows
    sink.progress(1, 2, "half")
    assert inner.messages == ["line 0\nwith a second row", "line 1\nwith a second row"]
    sink.close()
    sink.close()  # once only
    assert inner.messages[2] == "… 6 lines (150 bytes) dropped …"
    assert inner.messages[3:] == ["line 8\nwith a second row", "line 9\nwith a second row"]
    assert inner.progress_calls == [(1, 2, "half")]
    sink.log(INFO, "after the end")  # a handler left running: dropped, never late
    assert len(inner.messages) == 5
