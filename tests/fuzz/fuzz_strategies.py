"""Hypothesis strategies for what users type: cron expressions, durations, times, integers.

Each mixes the plausible (what people mean to write, nearly right) with the hostile (huge
numbers, unicode digits, control characters, very long strings, nested syntax), since
both must end in a result or one clear line.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

from hypothesis import strategies as st

MONTHS = ("JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC")
DAYS = ("SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT")
BIG = (2**31 - 1, 2**31, 2**32, 2**53 + 1, 2**63 - 1, 2**63, 2**64, 10**20, 10**30, 10**100)
# Characters that have broken parsers elsewhere: unicode digits (str.isdigit() is true for
# them, int() takes some), odd spaces, control characters, a BOM, combining marks.
ODD = ("٣", "²", "①", "߃", "\u00a0", "\u2007", "\u3000", "\t", "\x00", "\x1b", "\x7f", "\ufeff",
       "\u0301", "\u202e", "\r", "\n", "\x0b", "Ⅻ", "𝟘", "ǅ",
       # what Python puts in argv for bytes that are not UTF-8 (surrogateescape)
       "\udcff", "\udc80")


def _cased(word: str) -> st.SearchStrategy[str]:
    return st.sampled_from((word, word.lower(), word.title(), word[:2], word + "X"))


numbers = st.one_of(
    st.integers(0, 61),
    st.sampled_from((-1, 0, 1, 6, 7, 8, 12, 13, 23, 24, 29, 30, 31, 32, 59, 60, 99, 100, 1000)),
    st.sampled_from(BIG),
    st.integers(-(10**25), 10**25),
)

_number_text = st.one_of(
    numbers.map(str),
    numbers.map(lambda n: f"0{n}"),  # leading zeros
    numbers.map(lambda n: f"+{n}"),
    st.sampled_from(ODD),
)

_atom = st.one_of(
    st.sampled_from(("*", "?", "L", "W", "LW", "L-3", "*/", "/", "-", "#", "", "**", "*-*")),
    _number_text,
    st.sampled_from(MONTHS).flatmap(_cased),
    st.sampled_from(DAYS).flatmap(_cased),
    st.text(alphabet=st.characters(codec="utf-8"), max_size=3),
)


@st.composite
def _item(draw: st.DrawFn) -> str:
    text = draw(_atom)
    for _ in range(draw(st.integers(0, 3))):
        sep = draw(st.sampled_from(("-", "/", "#", "L", ",", "")))
        text += sep + draw(_atom)
    return text


cron_field = st.lists(_item(), min_size=0, max_size=4).map(",".join)

_whitespace = st.sampled_from((" ", " ", " ", "  ", "\t", " \t ", "\u00a0", "\u3000", "\n"))


@st.composite
def _fields(draw: st.DrawFn) -> str:
    count = draw(st.sampled_from((5, 5, 6, 6, 0, 1, 4, 7, 8)))
    parts = [draw(cron_field) for _ in range(count)]
    text = parts[0] if parts else ""
    for part in parts[1:]:
        text += draw(_whitespace) + part
    return text


@st.composite
def _plausible(draw: st.DrawFn) -> str:
    """Five or six well-formed fields (mostly valid, sometimes out of range)."""
    def small(low: int, high: int) -> st.SearchStrategy[str]:
        n = st.integers(low, high)
        return st.one_of(
            st.just("*"),
            n.map(str),
            st.tuples(n, n).map(lambda ab: f"{min(ab)}-{max(ab)}"),
            st.tuples(n, st.integers(1, high + 2)).map(lambda ab: f"{ab[0]}/{ab[1]}"),
            st.integers(1, high + 30).map(lambda s: f"*/{s}"),
            st.lists(n, min_size=1, max_size=4).map(lambda xs: ",".join(map(str, xs))),
        )

    second = draw(small(0, 59))
    minute = draw(small(0, 59))
    hour = draw(small(0, 23))
    dom = draw(st.one_of(small(1, 31), st.sampled_from(("L", "?", "L,15", "32", "0"))))
    month = draw(st.one_of(small(1, 12), st.sampled_from(MONTHS).flatmap(_cased),
                           st.just("JAN-MAR"), st.just("13")))
    dow = draw(st.one_of(
        small(0, 7),
        st.sampled_from(DAYS).flatmap(_cased),
        st.tuples(st.integers(0, 8), st.integers(0, 6)).map(lambda wk: f"{wk[0]}#{wk[1]}"),
        st.integers(0, 8).map(lambda w: f"{w}L"),
        st.sampled_from(("MON-FRI", "FRI-MON", "SUN#5", "?", "5L", "7")),
    ))
    fields = [minute, hour, dom, month, dow]
    if draw(st.booleans()):
        fields.insert(0, second)
    return " ".join(fields)


durations = st.one_of(
    st.tuples(
        st.one_of(st.integers(0, 1000), st.sampled_from(BIG), st.integers(0, 10**15)),
        st.sampled_from(("ms", "s", "m", "h", "d", "w", "S", "H", "y", "us", "µs", "", " s")),
    ).map(lambda nu: f"{nu[0]}{nu[1]}"),
    st.lists(
        st.tuples(st.integers(0, 10**12), st.sampled_from(("d", "h", "m", "s", "ms"))),
        min_size=1, max_size=4,
    ).map(lambda parts: "".join(f"{n}{u}" for n, u in parts)),
    st.floats(allow_nan=True, allow_infinity=True).map(lambda f: f"{f}s"),
    st.sampled_from(("0s", "1s", "0.5s", "1.5.5s", "1e3s", "inf", "nan", "-1s", "+1s", "1_000s",
                     "0x10s", "١s", "1 h 30 m", "1h 30m", "90", "-0", "", " ", "s", "h1",
                     "99999999999d", "1000000000d", "100y", "36500d", "36501d")),
    st.text(max_size=12),
)


cron_expressions = st.one_of(
    _plausible(),
    _fields(),
    st.sampled_from(("@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight",
                     "@hourly", "@reboot", "@", "@@daily", "@DAILY", " @daily ", "@every",
                     "@every ", "@daily *", "@hourly\x00")),
    durations.map(lambda d: f"@every {d}"),
    st.text(max_size=40),
    # very long: many fields, long lists, deep nesting
    st.integers(1, 2000).map(lambda n: " ".join(["*"] * 5) + ",0" * n),
    st.integers(1, 3000).map(lambda n: "0 0 " + "1-2/" * n + "1 * *"),
    st.integers(1, 20000).map(lambda n: "*" * n),
    st.integers(1, 500).map(lambda n: " ".join(["1-59/2"] * n)),
)


# --- times (--since, --until, --from, AT) ----------------------------------------------

_offsets = st.one_of(
    st.none(),
    st.just(UTC),
    st.integers(-(24 * 60 - 1), 24 * 60 - 1).map(lambda m: timezone(timedelta(minutes=m))),
)


@st.composite
def _iso(draw: st.DrawFn) -> str:
    moment = draw(st.one_of(
        st.datetimes(),
        st.sampled_from((datetime.min, datetime.max, datetime(1970, 1, 1),
                         datetime(9999, 12, 31, 23, 59, 59), datetime(1, 1, 1, 0, 0, 1))),
    ))
    zone = draw(_offsets)
    if zone is not None:
        moment = moment.replace(tzinfo=zone)
    text = moment.isoformat(sep=draw(st.sampled_from(("T", " ", "t"))))
    style = draw(st.integers(0, 3))
    if style == 1:
        text = text.replace("+00:00", "Z")
    elif style == 2:
        text = text[:10]  # a bare date
    elif style == 3:
        text = text.replace("+00:00", "z")
    return text


relative_times = st.tuples(st.sampled_from(("", "-", "+", " ", "- ")), durations).map(
    lambda sd: sd[0] + sd[1]
)

times = st.one_of(
    _iso(),
    relative_times,
    st.sampled_from(("now", "NOW", "", " ", "today", "yesterday", "2026-13-01", "2026-02-30",
                     "2026-03-08T25:00", "2026-03-08T07:00:00+25:00", "T", "Z", "-", "--1d",
                     "2026-03-08T07:00:00ZZ", "9999-12-31T23:59:59.999999-23:59",
                     "0001-01-01T00:00:00+23:59", "2026-03-08T07:00:00[UTC]",
                     # local times in DST gaps and folds (New York, Helsinki, Lord Howe's
                     # 30 minutes, Apia's skipped day), meant for --tz / a job's zone
                     "2026-03-08T02:30", "2026-03-08T02:00:00", "2026-03-29T03:30",
                     "2026-10-04T02:15", "2011-12-30T12:00", "2026-11-01T01:30",
                     "2026-10-25T03:30:00")),
    st.text(max_size=30),
)


# --- integers (-n, execution ids, --limit, --max) ---------------------------------------

integers_text = st.one_of(
    st.integers(-(10**20), 10**20).map(str),
    st.sampled_from((0, 1, -1, 2**31, 2**63 - 1, 2**63, 2**64, 10**20, 10**40)).map(str),
    st.sampled_from(("", " ", "1.0", "1e3", "0x10", "+5", " 5", "5 ", "1_000", "١", "²", "-0",
                     "00", "inf", "nan", "5\x00", "--", "-")),
    st.text(max_size=8),
)

zones = st.one_of(
    st.sampled_from(("UTC", "utc", "Z", "America/New_York", "Europe/Helsinki",
                     "Australia/Lord_Howe", "Pacific/Apia", "Europe/Dublin", "Etc/GMT+14",
                     "Asia/Kolkata", "EST5EDT", "US/Eastern", "Factory", "localtime",
                     "posixrules", "", " ", "/", ".", "..", "../etc/passwd", "/etc/localtime",
                     "UTC/", "Nope/Zone", "America", "a" * 300, "America/New_York\x00",
                     "Europe/Helsinki ")),
    st.text(max_size=20),
)
