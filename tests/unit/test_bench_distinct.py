"""The 100k scale benchmark's job set (bench/bench_scale.py): different expressions that
cronctl accepts, every second of the day, the same on every run."""

from __future__ import annotations

from bench.bench_scale import _DAYS, distinct_expressions
from cronctl.cron.expression import parse_cron


def test_every_expression_differs_and_every_second_of_the_day_is_there() -> None:
    exprs = distinct_expressions(100_000)
    assert len(exprs) == 100_000
    assert len(set(exprs)) == 100_000
    seconds = set()
    for expr in exprs[:86_400]:
        second, minute, hour = (int(f) for f in expr.split()[:3])
        seconds.add(hour * 3600 + minute * 60 + second)
    assert seconds == set(range(86_400))


def test_the_set_is_the_same_on_every_run() -> None:
    assert distinct_expressions(2_000) == distinct_expressions(2_000)


def test_cronctl_accepts_every_day_part_and_the_extras() -> None:
    # A refused expression makes `validate` exit 1 and `run` stop before READY: the
    # benchmark would time a failure.
    for dom, month, dow, _ in _DAYS:
        parse_cron(f"0 0 0 {dom} {month} {dow}")
    for expr in distinct_expressions(100_000)[86_400::7]:
        parse_cron(expr)
