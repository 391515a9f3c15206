"""The output an execution keeps (docs/behaviour.md#sandbox-and-output): its first half and its last
half.

One :class:`OutputBudget` per execution, for commands and Python handlers alike, bounds
both the bytes (``output_limit``, default 1 MiB) and the lines (``[retention]
max_log_lines``). Lines are passed on as they come until half of either is used (the
head); after that they are held in a tail that keeps the newest other half, older lines
leaving it as newer ones come (the middle, only counted). When the execution ends, one
line says what was dropped and the tail follows it::

    … 812345 lines (64987600 bytes) dropped …

A command's output past the head never goes through Python line by line: the reactor
hands over blocks of whole lines (:meth:`OutputBudget.hold_block`), which cost one
``bytes.count`` and an append, and whole blocks leave the tail while the rest still
fills it. So a job writing a gigabyte at full speed costs the scheduler a few hundred
kilobytes of memory and little CPU; the exact cut into lines happens once, at the end.
"""

from __future__ import annotations

import logging
from collections import deque
from dataclasses import dataclass

from cronctl.dispatch.base import LogSink

MAX_LINE_BYTES = 64 * 1024  # a longer line is split into pieces of this size
DROPPED_LINE = "… {lines} lines ({size} bytes) dropped …"


@dataclass(slots=True)
class _Held:
    level: int
    data: bytes  # whole lines, each ending with b"\n" (a record: one message and b"\n")
    lines: int
    record: bool = False  # a Python log message: one line however many newlines


class OutputBudget:
    """Head, middle and tail of one execution's output (see the module docstring).
    Not thread-safe: one reader (the reactor thread, or a handler's sink) feeds it."""

    __slots__ = ("_head_bytes", "_head_lines", "_tail_bytes", "_tail_lines", "_used_bytes",
                 "_used_lines", "full", "_tail", "_tail_size", "_tail_count",
                 "dropped_lines", "dropped_bytes")

    def __init__(self, limit: int, max_lines: int) -> None:
        self._head_bytes = limit // 2
        self._tail_bytes = limit - self._head_bytes
        self._head_lines = max_lines // 2
        self._tail_lines = max_lines - self._head_lines
        self._used_bytes = 0
        self._used_lines = 0
        self.full = False  # the head is used up: everything else goes to the tail
        self._tail: deque[_Held] = deque()
        self._tail_size = 0
        self._tail_count = 0
        self.dropped_lines = 0
        self.dropped_bytes = 0

    def head(self, size: int) -> bool:
        """Whether a line of ``size`` bytes (its newline counted) is passed on now; once
        one is not, none is (the output keeps its order)."""
        if self.full:
            return False
        if self._used_bytes + size > self._head_bytes or self._used_lines >= self._head_lines:
            self.full = True
            return False
        self._used_bytes += size
        self._used_lines += 1
        return True

    def hold_block(self, level: int, data: bytes) -> None:
        """Hold whole lines (``data`` ends with ``b"\\n"``) in the tail."""
        if data:
            self._hold(_Held(level, data, data.count(b"\n")))

    def hold_record(self, level: int, message: str) -> None:
        """Hold one log message in the tail."""
        data = message.encode("utf-8", "surrogateescape") + b"\n"
        self._hold(_Held(level, data, 1, record=True))

    def _hold(self, held: _Held) -> None:
        self._tail.append(held)
        self._tail_size += len(held.data)
        self._tail_count += held.lines
        # Drop whole blocks while the rest fills the tail by bytes or by lines; the exact
        # cut is made once, in finish (meanwhile the tail is over by at most one block).
        while len(self._tail) > 1:
            front = self._tail[0]
            if (self._tail_size - len(front.data) < self._tail_bytes
                    and self._tail_count - front.lines < self._tail_lines):
                break  # the rest alone is within both bounds: some of ``front`` stays
            self._drop(self._tail.popleft())

    def _drop(self, held: _Held) -> None:
        self._tail_size -= len(held.data)
        self._tail_count -= held.lines
        self.dropped_lines += held.lines
        self.dropped_bytes += len(held.data)

    def finish(self) -> list[tuple[int, str]]:
        """The lines still to be passed on, in order: the one line counting what was
        dropped (if anything was), then the tail. Leaves the budget empty."""
        self._cut()
        out: list[tuple[int, str]] = []
        if self.dropped_lines:
            out.append((logging.WARNING, DROPPED_LINE.format(lines=self.dropped_lines,
                                                             size=self.dropped_bytes)))
        for held in self._tail:
            if held.record:
                out.append((held.level, held.data[:-1].decode("utf-8", "surrogateescape")))
                continue
            for raw in held.data[:-1].split(b"\n"):
                if raw.endswith(b"\r"):
                    raw = raw[:-1]
                out.append((held.level, raw.decode("utf-8", "replace")))
        self._tail.clear()
        self._tail_size = self._tail_count = 0
        return out

    def _cut(self) -> None:
        """Drop the oldest held lines until the tail is within both of its bounds."""
        while self._tail and (self._tail_size > self._tail_bytes
                              or self._tail_count > self._tail_lines):
            front = self._tail[0]
            excess_bytes = self._tail_size - self._tail_bytes
            excess_lines = self._tail_count - self._tail_lines
            if front.record or excess_bytes >= len(front.data) or excess_lines >= front.lines:
                self._drop(self._tail.popleft())
                continue
            cut = lines = 0  # whole lines off the front of this block
            while cut < excess_bytes or lines < excess_lines:
                cut = front.data.index(b"\n", cut) + 1
                lines += 1
            if cut >= len(front.data):
                self._drop(self._tail.popleft())
                continue
            self._tail[0] = _Held(front.level, front.data[cut:], front.lines - lines)
            self._tail_size -= cut
            self._tail_count -= lines
            self.dropped_lines += lines
            self.dropped_bytes += cut


class BoundedSink:
    """A :class:`LogSink` whose lines go through an :class:`OutputBudget` (the log lines
    of a Python handler); :meth:`close` passes on the count and the tail."""

    __slots__ = ("_inner", "_budget", "_closed")

    def __init__(self, inner: LogSink, budget: OutputBudget) -> None:
        self._inner = inner
        self._budget = budget
        self._closed = False

    def log(self, level: int, message: str) -> None:
        if self._budget.head(len(message.encode("utf-8", "surrogateescape")) + 1):
            self._inner.log(level, message)
        elif not self._closed:  # (a handler left running after its end: dropped)
            self._budget.hold_record(level, message)

    def progress(self, done: float, total: float | None, message: str | None) -> None:
        self._inner.progress(done, total, message)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        for level, message in self._budget.finish():
            self._inner.log(level, message)


__all__ = ["DROPPED_LINE", "MAX_LINE_BYTES", "BoundedSink", "OutputBudget"]
