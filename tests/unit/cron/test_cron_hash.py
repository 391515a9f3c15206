"""Hash spread ``H`` (SPEC section 8) against the formula, written out here from scratch.

The reference computes each field's value set straight from the SPEC text (its own
sha256, its own ranges, its own steps) and compares it with the sets the parsed
expression holds; it shares no code with ``cronctl.cron.hashspread``.
"""

from __future__ import annotations

import hashlib
import pickle
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cronctl.cron import (
    CronExpression,
    CronSyntaxError,
    MissingHashIdError,
    Schedule,
    parse_cron,
    resolve_hash,
)

# SPEC: the H range of each field number; day-of-month 1-28, day-of-week 0-6.
RANGES = {0: (0, 59), 1: (0, 59), 2: (0, 23), 3: (1, 28), 4: (1, 12), 5: (0, 6)}
ATTRS = ("seconds", "minutes", "hours", "days", "months", "weekdays")
STAR = {0: set(range(60)), 1: set(range(60)), 2: set(range(24)), 3: set(range(1, 32)),
        4: set(range(1, 13)), 5: set(range(7))}

job_ids = st.from_regex(r"[A-Za-z0-9._-]{1,200}", fullmatch=True)


def h(job_id: str, i: int) -> int:
    return int.from_bytes(hashlib.sha256(f"{job_id}\0{i}".encode()).digest()[:8], "big")


def reference(job_id: str, i: int, form: tuple[int, int, int | None] | None) -> set[int]:
    """The set SPEC section 8 gives: ``form`` is (a, b, n) (``None`` = plain ``H``)."""
    lo, hi = RANGES[i]
    if form is None:
        return {lo + h(job_id, i) % (hi - lo + 1)}
    a, b, n = form
    if n is None:
        return {a + h(job_id, i) % (b - a + 1)}
    return set(range(a + h(job_id, i) % n, b + 1, n))


def spelled(i: int, form: tuple[int, int, int | None] | None, full: bool) -> str:
    """``H``, ``H(a-b)``, ``H/n`` or ``H(a-b)/n`` (``full``: a,b is the whole range)."""
    if form is None:
        return "H"
    a, b, n = form
    base = "H" if full else f"H({a}-{b})"
    return base if n is None else f"{base}/{n}"


@st.composite
def h_fields(draw: st.DrawFn, i: int) -> tuple[str, tuple[int, int, int | None] | None]:
    """One field: its spelling (``*`` or an H form) and the form for :func:`reference`."""
    kind = draw(st.sampled_from(["*", "H", "H(a-b)", "H/n", "H(a-b)/n"]))
    lo, hi = RANGES[i]
    if kind == "*":
        return "*", None
    if kind == "H":
        return "H", None
    if kind == "H/n":
        n = draw(st.integers(1, hi - lo + 1))
        return f"H/{n}", (lo, hi, n)
    a = draw(st.integers(lo, hi))
    b = draw(st.integers(a, hi))
    n = draw(st.integers(1, b - a + 1)) if kind == "H(a-b)/n" else None
    return spelled(i, (a, b, n), False), (a, b, n)


@settings(max_examples=300, deadline=None)
@given(job_id=job_ids, data=st.data())
def test_six_fields_match_the_formula(job_id: str, data: st.DataObject) -> None:
    fields = [data.draw(h_fields(i)) for i in range(6)]
    text = " ".join(f[0] for f in fields)
    expr = CronExpression(text, hash_id=job_id)
    for i, (spelling, form) in enumerate(fields):
        want = STAR[i] if spelling == "*" else reference(job_id, i, form)
        assert set(getattr(expr, ATTRS[i])) == want, (text, i)
    # The resolved text is an ordinary expression with the same sets and DST reading.
    assert CronExpression(expr.text) == expr
    assert CronExpression(expr.text).periodic_hours == expr.periodic_hours


@settings(max_examples=200, deadline=None)
@given(job_id=job_ids, data=st.data())
def test_five_fields_keep_their_six_field_numbers(job_id: str, data: st.DataObject) -> None:
    fields = [data.draw(h_fields(i)) for i in range(1, 6)]
    text = " ".join(f[0] for f in fields)
    expr = CronExpression(text, hash_id=job_id)
    assert expr.seconds == frozenset({0})
    for i, (spelling, form) in enumerate(fields, start=1):
        want = STAR[i] if spelling == "*" else reference(job_id, i, form)
        assert set(getattr(expr, ATTRS[i])) == want, (text, i)
    assert expr == CronExpression("0 " + text, hash_id=job_id)
    # resolve_hash keeps five fields five, and reads as the same expression.
    resolved = resolve_hash(text, job_id)
    assert len(resolved.split()) == 5 and "H" not in resolved
    assert CronExpression(resolved) == expr


@settings(max_examples=100, deadline=None)
@given(job_id=job_ids, i=st.integers(0, 5), extra=st.data())
def test_h_in_a_list(job_id: str, i: int, extra: st.DataObject) -> None:
    lo, hi = RANGES[i]
    a = extra.draw(st.integers(lo, hi))
    b = extra.draw(st.integers(a, hi))
    other = extra.draw(st.integers(lo, hi))
    field = f"H({a}-{b}),{other}"
    parts = ["*"] * 6
    parts[i] = field
    expr = CronExpression(" ".join(parts), hash_id=job_id)
    assert set(getattr(expr, ATTRS[i])) == reference(job_id, i, (a, b, None)) | {other}


def test_exact_examples() -> None:
    # Pinned values: any change to the formula (separator, digest bytes, ranges) shows.
    assert CronExpression("H H(1-5) * * *", hash_id="backup").text == "0 34 1 * * *"
    assert resolve_hash("H H(1-5) * * *", "backup") == "34 1 * * *"
    assert CronExpression("H * * * * *", hash_id="backup").text == "41 * * * * *"
    assert h("backup", 1) % 60 == 34 and 1 + h("backup", 2) % 5 == 1
    assert CronExpression("0 H/15 * * * *", hash_id="backup").minutes == frozenset(
        range(h("backup", 1) % 15, 60, 15))
    expr = CronExpression("0 0 0 H * H(MON-FRI)", hash_id="report")
    assert min(expr.days) == 1 + h("report", 3) % 28
    assert expr.weekdays == frozenset({1 + h("report", 5) % 5})
    # Names and any case; "?" is "*"; THU (an H inside a name) is no H.
    assert CronExpression("0 0 0 ? * h(mon-fri)", hash_id="report").written == \
        "0 0 0 * * H(MON-FRI)"
    assert CronExpression("0 0 0 * * THU").hash_id is None


def test_written_text_hash_id_and_equality() -> None:
    expr = CronExpression("H H(1-5) * * *", hash_id="backup")
    assert expr.written == "0 H H(1-5) * * *" and expr.hash_id == "backup"
    assert expr == CronExpression("0 34 1 * * *")  # equality is on what fires
    assert repr(expr) == "CronExpression('0 H H(1-5) * * *', hash_id='backup')"
    assert pickle.loads(pickle.dumps(expr)).written == expr.written
    plain = CronExpression("0 5 * * *", hash_id="backup")  # an id without H changes nothing
    assert plain.hash_id is None and plain.written == plain.text == "0 0 5 * * *"


def test_ids_spread_and_stay_put() -> None:
    values = {min(CronExpression("H * * * * *", hash_id=f"job-{n}").seconds)
              for n in range(500)}
    assert len(values) > 50  # spread over (nearly) every second
    assert CronExpression("H * * * * *", hash_id="a") == CronExpression("H * * * * *",
                                                                        hash_id="a")


def test_parse_cron_caches_per_id() -> None:
    a = parse_cron("H * * * * *", "one")
    assert parse_cron("H * * * * *", "one") is a
    assert parse_cron("H * * * * *", "two").seconds == frozenset({h("two", 0) % 60})
    assert parse_cron("0 * * * * *", "one") is parse_cron("0 * * * * *")


def test_schedule_fires_like_the_resolved_expression() -> None:
    start = datetime(2026, 3, 7, tzinfo=UTC)
    for text in ("H H * * *", "H H/3 * * *", "0 H(0-29)/10 H(1-3) * * *"):
        hashed = Schedule(text, "America/New_York", hash_id="dst")
        plain = Schedule(CronExpression(text, hash_id="dst").text, "America/New_York")
        assert hashed.between(start, start + timedelta(days=3), 500) == plain.between(
            start, start + timedelta(days=3), 500)
        assert hashed.dst_gap.value == "shift"  # an H hour is a fixed-time hour


def test_h_needs_an_id() -> None:
    with pytest.raises(MissingHashIdError, match=r"^minute field: H: .*hash_id") as caught:
        CronExpression("H * * * *")
    assert isinstance(caught.value, CronSyntaxError) and caught.value.field == "minute"
    with pytest.raises(MissingHashIdError):
        Schedule("0 0 H * * *")


@pytest.mark.parametrize(("text", "field", "pieces"), [
    ("H(5-1) * * * *", "minute", ["H(5-1)", "0-59", "descending"]),
    ("H(0-99) * * * *", "minute", ["H(0-99)", "0-59", "out of range"]),
    ("H/0 * * * *", "minute", ["H/0", "1-60"]),
    ("H/61 * * * *", "minute", ["H/61", "1-60"]),
    ("* H(0-5)/10 * * *", "hour", ["H(0-5)/10", "1-6"]),
    ("* * H(1-31) * *", "day-of-month", ["H(1-31)", "1-28"]),
    ("* * H/29 * *", "day-of-month", ["H/29", "1-28"]),
    ("* * * * H(1-7)", "day-of-week", ["H(1-7)", "0-6"]),
    ("* * * * H#2", "day-of-week", ["H#2", "0-6"]),
    ("Hx * * * * *", "second", ["Hx", "0-59"]),
    ("H(3) * * * *", "minute", ["H(3)", "0-59"]),
    ("H/x * * * *", "minute", ["H/x", "1-60"]),
    ("H(a-5) * * * *", "minute", ["H(a-5)", "0-59"]),
    ("* * * H(JAN-FOO) *", "month", ["H(JAN-FOO)", "1-12"]),
    ("H(1-5)/ * * * *", "minute", ["H(1-5)/", "1-5"]),
])
def test_bad_h_is_one_line_naming_field_text_and_range(text: str, field: str,
                                                       pieces: list[str]) -> None:
    with pytest.raises(CronSyntaxError) as caught:
        CronExpression(text, hash_id="job")
    message = str(caught.value)
    assert "\n" not in message and message.startswith(f"{field} field: "), message
    for piece in pieces:
        assert piece in message, message
    assert caught.value.field == field
