"""The table renderer of ``list``, ``history`` and ``status`` (cronctl/cli/tables.py):
shortening at word boundaries, fitting a width, dropping columns, plain text."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cronctl.cli.tables import (
    Column,
    Output,
    Row,
    Table,
    ago,
    layout,
    lines,
    local_time,
    plain,
    shorten,
    text_width,
    until,
)

ERROR = "connection refused by warehouse.internal.example.com:5432 after 3 attempts"
JOB = "nightly-warehouse-export-to-the-archive-bucket"


def _text(table: Table, width: int | None) -> list[str]:
    return ["".join(t for t, _ in line) for line in lines(table, layout(table, width), width)]


def _history_like() -> Table:
    columns = (Column("ID"), Column("JOB", shrink=True),
               Column("SCHEDULED", priority=1), Column("STATUS", status=True),
               Column("NODE", shrink=True, priority=3), Column("ERROR", shrink=True,
                                                               priority=2, floor=20))
    rows = (Row(("1", JOB, ("2026-12-01T09:14:05Z", "12-01 09:14:05"), "dead_letter",
                 "node-a-with-a-long-name", ERROR)),
            Row(("22", "short", ("2026-12-01T09:04:05Z", "12-01 09:04:05"), "succeeded",
                 "node-a", "-")))
    return Table(columns, rows)


# --- shorten ---------------------------------------------------------------------------


def test_shorten_keeps_what_fits_and_cuts_at_a_word_boundary() -> None:
    assert shorten("backup", 6) == "backup"
    assert shorten(ERROR, 25) == "connection refused by…"
    assert shorten(JOB, 22) == "nightly-warehouse…"
    assert shorten("python:pkg.module:function", 20) == "python:pkg.module…"


def test_shorten_cuts_a_single_long_word_where_it_must() -> None:
    assert shorten("abcdefghijklmnop", 8) == "abcdefg…"
    assert shorten("abc", 1) == "…"
    assert shorten("abc", 0) == ""


def test_shorten_counts_wide_characters_as_two_columns() -> None:
    assert text_width("日本語") == 6
    assert text_width(shorten("日本語のエラー", 7)) <= 7


# --- times -----------------------------------------------------------------------------


def test_short_times() -> None:
    now = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
    t = datetime(2026, 12, 1, 9, 14, 5, tzinfo=UTC)
    assert local_time(t, "UTC", now) == "12-01 09:14:05"
    assert local_time(t, "Europe/Helsinki", now) == "12-01 11:14:05"
    assert local_time(t, "UTC", now, date=False) == "09:14:05"
    assert local_time(t - timedelta(days=400), "UTC", now) == "2025-10-27 09:14"
    assert local_time(t, "No/Such_Zone", now) == "12-01 09:14:05"  # UTC, never an error
    assert ago(t, now) == "2h 45m ago" and ago(now, now) == "just now"
    assert until(now + timedelta(minutes=3, seconds=2), now) == "in 3m 2s"


def test_machine_local_time_follows_tz(monkeypatch: pytest.MonkeyPatch) -> None:
    import time

    monkeypatch.setenv("TZ", "Asia/Tokyo")
    time.tzset()
    try:
        now = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
        assert local_time(datetime(2026, 12, 1, 9, 14, 5, tzinfo=UTC), None, now) == (
            "12-01 18:14:05")
    finally:
        monkeypatch.undo()
        time.tzset()


# --- fitting ---------------------------------------------------------------------------


def test_a_table_that_fits_is_shown_in_full() -> None:
    out = _text(_history_like(), 200)
    assert all(len(line) <= 200 for line in out)
    assert "2026-12-01T09:14:05Z" in out[1] and JOB in out[1] and ERROR in out[1]


def test_narrow_uses_short_forms_shortens_then_drops_by_priority() -> None:
    table = _history_like()
    at_84 = layout(table, 84)
    assert at_84.forms[2] == 1 and at_84.dropped == ()  # a short time, every column
    out = _text(table, 84)
    assert all(len(line) <= 84 for line in out)
    assert "12-01 09:14:05" in out[1] and "dead_letter" in out[1] and "…" in out[1]
    # NODE fits in no form at 80; without it the full time does
    at_80 = layout(table, 80)
    assert at_80.forms[2] == 0 and at_80.dropped == ("NODE",)
    at_50 = layout(table, 50)
    assert at_50.dropped == ("NODE", "ERROR")  # highest priority number first
    assert all(len(line) <= 50 for line in _text(table, 50))


def test_status_words_and_whole_columns_are_never_shortened() -> None:
    for width in range(30, 120):
        for line in _text(_history_like(), width)[1:]:
            assert "dead_letter" in line or "succeeded" in line, (width, line)


def test_a_column_cut_at_a_word_boundary_gives_its_spare_room_to_the_others() -> None:
    table = Table((Column("JOB", shrink=True), Column("ERROR", shrink=True, floor=20)),
                  (Row((JOB, ERROR)),))
    fitted = layout(table, 60)
    job, error = _text(table, 60)[1].split("  ", 1)
    assert sum(fitted.widths) + 2 <= 60
    assert job.endswith("…") and error.strip().endswith("…")
    assert len(_text(table, 60)[1]) >= 55  # little room wasted


def test_only_unshrinkable_columns_left_are_cropped_to_the_width() -> None:
    table = Table((Column("ID"), Column("STATUS", status=True)),
                  (Row(("123456789", "dead_letter")),))
    out = _text(table, 12)
    assert [len(line) for line in out] == [12, 12] and out[1] == "123456789  …"


cells = st.text(st.characters(blacklist_categories=("Cs",)), max_size=60)


@settings(max_examples=200, deadline=None)
@given(rows=st.lists(st.tuples(cells, cells, cells, cells), min_size=1, max_size=6),
       width=st.integers(min_value=1, max_value=220))
def test_every_line_fits_and_every_row_is_one_line(rows: list[tuple[str, ...]],
                                                   width: int) -> None:
    columns = (Column("ID"), Column("JOB", shrink=True), Column("STATUS", status=True),
               Column("ERROR", shrink=True, priority=1))
    table = Table(columns, tuple(Row((a, b, (c, c[:5]), d)) for a, b, c, d in rows))
    out = _text(table, width)
    assert len(out) == len(rows) + 1
    for line in out:
        assert "\n" not in line and "\r" not in line and "\x1b" not in line
        assert text_width(line) <= width


# --- plain and output ------------------------------------------------------------------


def test_plain_is_aligned_full_and_independent_of_any_width() -> None:
    out = plain(_history_like(), indent="  ")
    assert out[0] == "  ID  JOB" + " " * (len(JOB) - 1) + "SCHEDULED             STATUS" + (
        "       NODE                     ERROR")
    assert out[1].startswith(f"  1   {JOB}  2026-12-01T09:14:05Z  dead_letter  ")
    assert out[2].endswith("node-a                   -")
    assert out[1].endswith(ERROR)


def test_control_characters_never_break_a_row() -> None:
    table = Table((Column("A"), Column("B", shrink=True)), (Row(("x\ny", "tab\there\x1b[2J")),))
    assert plain(table)[1] == "x\\ny  tab\\there\\x1b[2J"


def test_output_without_colour_writes_no_escape_code(capsys: pytest.CaptureFixture[str]
                                                    ) -> None:
    for wide in (False, True):
        out = Output(color=False, terminal=True, width=50, wide=wide)
        out.table(_history_like())
        out.line("title", "bold")
    text = capsys.readouterr().out
    assert "\x1b" not in text and "not shown: NODE, ERROR (--wide" in text
    assert ERROR in text  # --wide: in full


def test_output_in_colour(capsys: pytest.CaptureFixture[str]) -> None:
    Output(color=True, terminal=True, width=80).table(_history_like())
    text = capsys.readouterr().out
    assert "\x1b[" in text and "dead_letter" in text
    assert max(len(line) for line in _strip(text).splitlines()) <= 80


def test_piped_output_is_plain(capsys: pytest.CaptureFixture[str]) -> None:
    Output(color=True, terminal=False, width=20).table(_history_like())
    assert capsys.readouterr().out.splitlines() == plain(_history_like())


def _strip(text: str) -> str:
    import re

    return re.sub(r"\x1b\[[0-9;]*m", "", text)


def test_ids_are_shortened_in_the_middle_so_similar_ones_stay_apart() -> None:
    """Issue 24: at 80 columns `history` showed `reports…` for both `reports.compact` and
    `reports-summary`."""
    ids = ("reports.compact", "reports-summary")
    for width in range(5, 15):
        a, b = (shorten(x, width, middle=True) for x in ids)
        assert a != b and text_width(a) <= width and text_width(b) <= width, (width, a, b)
        assert a.startswith("r") and a[-1] == "t" and "…" in a
    # at word boundaries when a start and an end fit together
    assert shorten("nightly-warehouse-export-with-retention", 20, middle=True) == (
        "nightly…retention")
    table = Table((Column("JOB", shrink=True, floor=8, middle=True), Column("X")),
                  tuple(Row((x, "y" * 60)) for x in ids))
    shown = [plain_line for plain_line in plain_lines(table, 72)]
    assert len({line.split()[0] for line in shown[1:]}) == 2, shown


def plain_lines(table: Table, width: int) -> list[str]:
    return ["".join(text for text, _ in line) for line in lines(table, layout(table, width),
                                                                 width)]


def test_plain_is_the_full_layout_joined_for_any_cells() -> None:
    """``plain`` (pipes, files) pads in one pass; it must print exactly what the styled
    lines of the full layout say, whatever the cells (wide, combining, blank, forms)."""
    import random

    from cronctl.cli.tables import Column, Row, Table, layout, lines, plain

    rnd = random.Random(7)
    pieces = ["a", "b", " ", "é", "漢", "\t", "x y", "", "-", "\u0301"]
    for _ in range(2000):
        count = rnd.randint(1, 5)
        columns = tuple(Column(f"H{i}" + rnd.choice(["", " ", "漢"]),
                               shrink=rnd.random() < 0.5) for i in range(count))
        rows = []
        for _ in range(rnd.randint(0, 6)):
            cells: list[str | tuple[str, ...]] = []
            for _ in range(count):
                text = "".join(rnd.choice(pieces) for _ in range(rnd.randint(0, 5)))
                cells.append(text if rnd.random() < 0.6 else (text, text[:2]))
            rows.append(Row(tuple(cells)))
        table = Table(columns, tuple(rows))
        for indent in ("", "  "):
            styled = lines(table, layout(table, None), None, indent)
            assert plain(table, indent) == ["".join(t for t, _ in line) for line in styled]
