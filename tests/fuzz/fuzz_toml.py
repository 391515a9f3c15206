"""Hypothesis strategies for TOML files: job files (``jobs.d/*.toml``) and ``cronctl.toml``.

Values are mostly what each key expects, sometimes any TOML value (huge integers, nan,
datetimes, deep arrays and tables); files are mostly valid TOML, sometimes not (raw
garbage, deep nesting, truncated), and mostly UTF-8 (sometimes with a BOM, in UTF-16 or
Latin-1, or with bytes that are not text at all).
"""

from __future__ import annotations

import json
import math
import re
from datetime import date, datetime, time
from typing import Any

from fuzz_strategies import BIG, ODD, cron_expressions, durations, zones
from hypothesis import strategies as st

_BARE = re.compile(r"[A-Za-z0-9_-]+")


def key_text(key: str) -> str:
    return key if _BARE.fullmatch(key) else json.dumps(key, ensure_ascii=False)


def value_text(value: Any) -> str:
    """A TOML literal for a Python value (strings as basic strings, JSON escapes)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, datetime | date | time):
        return value.isoformat()
    if isinstance(value, list):
        return "[" + ", ".join(value_text(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{key_text(k)} = {value_text(v)}" for k, v in value.items()) + "}"
    raise TypeError(type(value))


_keys = st.one_of(
    st.sampled_from(("a", "b", "x-y", "1", "_", "cron", "jobs", "scheduler", "", " ", "a.b",
                     "ü", "\t", "a\"b", "[x]")),
    st.text(max_size=12),
)

_scalars = st.one_of(
    st.booleans(),
    st.integers(-(2**63), 2**63 - 1),
    st.sampled_from(BIG),
    st.integers(-(10**30), 10**30),
    st.floats(),  # nan, inf and all
    st.text(max_size=20),
    st.datetimes(),
    st.datetimes(timezones=st.timezones()),
    st.dates(),
    st.times(),
)

any_value = st.recursive(
    _scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.dictionaries(_keys, children, max_size=4),
    ),
    max_leaves=12,
)

_enum_words = ("auto", "shift", "skip", "first", "second", "both", "every_instance",
               "single_instance", "every-instance", "SINGLE_INSTANCE", "allow", "queue_one",
               "queue-one", "fire_now", "fire_all", "fire-all", "Fire_Now", "", "bogus")
_durationish = st.one_of(durations, st.integers(-(10**20), 10**20), st.floats(), any_value)
_countish = st.one_of(st.integers(-5, 200), st.sampled_from(BIG),
                      st.integers(-(10**25), 10**25), any_value)
_paths = st.one_of(
    st.sampled_from(("", ".", "..", "/", "jobs.d", "nope", "/nonexistent/dir", "cronctl.toml",
                     "~", "~/x", "~nosuchuser_cronctl/x", "a\x00b", "\x00", "a" * 5000, "//",
                     "/dev/null", "/proc/self", "~root", "$HOME", "C:\\x")),
    st.text(max_size=20),
)
# python: targets import their module on validation: only modules that are safe to import
# (or that do not exist); arbitrary names could import antigravity and open a browser.
_targets = st.one_of(
    st.sampled_from(("python:os.path:join", "python:os:getcwd", "python:os:nope",
                     "python:cronctl_fuzz_nomodule:f", "python:", "python:os", "python::",
                     "python:os.path:join:x", "python:.os:x", "python:os..path:x",
                     "python:\x00:x", "service:a.b.c", "service:", "service:...",
                     "service:example.reports.compact", "shell:ls", "")),
    st.text(max_size=20).map(lambda t: "service:" + t),
    st.text(max_size=20),
    any_value,
)
_commands = st.one_of(
    st.lists(st.text(max_size=10), max_size=4),
    st.sampled_from((["true"], ["/bin/true"], "true", "echo 'unterminated", "", [], [""],
                     ["a\x00b"], "a\x00b")),
    st.text(max_size=30),
    any_value,
)

# Text that breaks parsers: unicode digits (str.isdigit() is true, int() refuses some),
# control characters, odd spaces, very long strings, mixed into otherwise good values.
_strange = st.one_of(
    st.sampled_from(ODD),
    st.lists(st.sampled_from(ODD), min_size=1, max_size=3).map("".join),
    st.tuples(st.sampled_from(("1", "80", "9464", "30d", "1h", "x", "")), st.sampled_from(ODD))
    .map(lambda t: t[0] + t[1]),
    st.sampled_from(("a" * 5000, "1" * 5000, "²", "1²", "²s", "٣m", "①d", "𝟘", "9464²")),
    st.text(max_size=20),
)
_durationish_strange = st.one_of(_durationish, _strange)
_countish_strange = st.one_of(_countish, _strange, st.floats(),
                              st.sampled_from(("5", "20", "-1", "1e3", "²")))

# [retention], [metrics], [notify] (SPEC section 7), and a job's notify table.
RETENTION_VALUES: dict[str, st.SearchStrategy[Any]] = {
    "executions": _durationish_strange,
    "skipped": _durationish_strange,
    "interval": _durationish_strange,
    "keep_last": _countish_strange,
    "max_log_lines": _countish_strange,
}
_listen = st.one_of(
    st.sampled_from(("127.0.0.1:9464", ":9464", "9464", "[::1]:9464", "[::1]", "::1:9464",
                     "localhost:", "localhost:80", "host:²", "²", ":²", "[zz]:1", "[::1]:٣",
                     "a b:1", "\x00:1", "h\n:1", "0.0.0.0:0", ":65536", ":-1", "0x10", "+80",
                     " 80 ", "1_000", "ü.example:80", "[", "]:1", "[]:1", ":", "",
                     "999999999999999999999", "a" * 300 + ":80", "-a:80", "1.2.3.4.5:80")),
    st.integers(-(2**64), 2**64),
    st.sampled_from((0, 1, 80, 65535, 65536, -1)),
    _strange,
    any_value,
)
METRICS_VALUES: dict[str, st.SearchStrategy[Any]] = {"listen": _listen}
_events = st.sampled_from(("dead_letter", "dead-letter", "DEAD_LETTER", "abandoned", "missed",
                           "recovered", "late", "succeeded", "failed", "cancelled", "skipped",
                           "dead", "", " ", "missed ", "ü", "late\n"))
_webhooks = st.one_of(
    st.sampled_from(("https://hooks.example.org/x", "http://127.0.0.1:1/h", "https://", "http:",
                     "ftp://x/y", "https://h:99999/x", "https://h:port/x", "https://[::1/x",
                     "https://h/a b", "https://h/\x00", "https://h/\n", "https://ü.example/x",
                     "https://u:p@h/x?token=s", "//h/x", "hooks.example.org", "",
                     "https://" + "a" * 3000)),
    st.text(max_size=30).map(lambda t: "https://h/" + t),
    _strange,
    any_value,
)
_header_tables = st.dictionaries(
    st.one_of(st.sampled_from(("Authorization", "X-Token", "", "a b", "ü", "a:b", "\n")),
              st.text(max_size=8)),
    st.one_of(st.text(max_size=20), _strange, any_value), max_size=3)
_argvs = st.one_of(
    st.lists(st.one_of(st.sampled_from(("/usr/sbin/sendmail", "-t", "true", "")), _strange),
             max_size=3),
    st.sampled_from(("sendmail -t", "", [], [""], [" "], ["a\x00b"])),
    any_value,
)
NOTIFY_VALUES: dict[str, st.SearchStrategy[Any]] = {
    "on": st.one_of(st.lists(_events, max_size=4), _events, any_value),
    "webhook": _webhooks,
    "headers": st.one_of(_header_tables, any_value),
    "command": _argvs,
}
SECTION_VALUES = {"retention": RETENTION_VALUES, "metrics": METRICS_VALUES,
                  "notify": NOTIFY_VALUES}


@st.composite
def notify_table(draw: st.DrawFn) -> dict[str, Any]:
    keys = draw(st.lists(st.sampled_from(sorted(NOTIFY_VALUES)), max_size=4, unique=True))
    return {key: draw(NOTIFY_VALUES[key]) for key in keys}


JOB_VALUES: dict[str, st.SearchStrategy[Any]] = {
    "cron": st.one_of(cron_expressions, any_value),
    "every": st.one_of(durations, _durationish),
    "anchor": st.one_of(st.datetimes(), st.datetimes(timezones=st.timezones()), st.dates(),
                        st.times(), st.text(max_size=30), any_value,
                        st.sampled_from(("2026-01-01T00:00:00Z", "1970-01-01", "0001-01-01T00:00Z",
                                         "9999-12-31T23:59:59Z", "9999-12-31T23:59:59-14:00"))),
    "timezone": st.one_of(zones, any_value),
    "target": _targets,
    "command": _commands,
    "shell": st.one_of(st.booleans(), any_value),
    "enabled": st.one_of(st.booleans(), any_value),
    "tracked": st.one_of(st.booleans(), any_value),
    "mode": st.one_of(st.sampled_from(_enum_words), any_value),
    "overlap_policy": st.one_of(st.sampled_from(_enum_words), any_value),
    "misfire_policy": st.one_of(st.sampled_from(_enum_words), any_value),
    "dst_gap": st.one_of(st.sampled_from(_enum_words), any_value),
    "dst_fold": st.one_of(st.sampled_from(_enum_words), any_value),
    "serial_group": st.one_of(st.text(max_size=20), any_value),
    "misfire_threshold": _durationish,
    "retry_backoff": _durationish,
    "timeout": _durationish,
    "kill_timeout": _durationish,
    "jitter": _durationish,
    "late_after": _durationish,
    "catchup_limit": _countish,
    "max_attempts": _countish,
    "parameters": any_value,
    "payload": any_value,
    "env": st.one_of(st.dictionaries(_keys, st.text(max_size=10), max_size=4), any_value),
    "cwd": st.one_of(_paths, any_value),
    "description": st.one_of(st.text(max_size=200), any_value),
    "notify": st.one_of(notify_table(), any_value),
}
_job_ids = st.one_of(
    st.sampled_from(("a", "b", "job-1", "x.y", "A_b-9", "", " ", "a b", "é", "a" * 201,
                     "a" * 200, "-", ".", "..", "\x00", "a/b", "nl\nx")),
    st.text(max_size=15),
)


_VALID_CRON = st.sampled_from(("0 * * * * *", "*/5 * * * *", "0 30 2 * * *", "@daily",
                               "0 0 0 L * *", "0 0 9 * * MON-FRI", "0 0 0 29 2 *", "* * * * * *",
                               "0 0 0 */2 * 1", "0 30 1 * * *"))
_VALID: dict[str, st.SearchStrategy[Any]] = {
    "cron": _VALID_CRON,
    "every": st.sampled_from(("90s", "1s", "15m", "1h30m", "36500d", 60, 1.5)),
    "command": st.sampled_from((["true"], "true", ["echo", "hi"])),
    "target": st.sampled_from(("python:os.path:join", "python:os:getcwd")),
}


def _often(draw: st.DrawFn) -> bool:
    return bool(draw(st.sampled_from((True, True, True, False))))


@st.composite
def job_table(draw: st.DrawFn) -> dict[str, Any]:
    """One job's keys: usually a schedule and a target or command (usually valid ones),
    then any keys with plausible or hostile values, then unknown keys."""
    table: dict[str, Any] = {}
    if _often(draw):
        key = draw(st.sampled_from(("cron", "cron", "every")))
        table[key] = draw(_VALID[key] if _often(draw) else JOB_VALUES[key])
    if _often(draw):
        key = draw(st.sampled_from(("command", "command", "target")))
        table[key] = draw(_VALID[key] if _often(draw) else JOB_VALUES[key])
    for key in draw(st.lists(st.sampled_from(sorted(JOB_VALUES)), max_size=4, unique=True)):
        table[key] = draw(JOB_VALUES[key])
    if not _often(draw):
        for key in draw(st.lists(_keys, max_size=2)):
            table[key] = draw(any_value)  # unknown keys
    return table


def _document(tables: dict[str, dict[str, Any]], prefix: str, extra: dict[str, Any]) -> str:
    lines = [f"{key_text(k)} = {value_text(v)}" for k, v in extra.items()]
    for name, table in tables.items():
        lines.append(f"[{prefix}{key_text(name)}]")
        lines.extend(f"{key_text(k)} = {value_text(v)}" for k, v in table.items())
    return "\n".join(lines) + "\n"


@st.composite
def job_file_text(draw: st.DrawFn) -> str:
    shape = draw(st.sampled_from(("tables",) * 12 + ("inline", "array", "scalar", "nested",
                                                     "deep", "garbage")))
    if shape == "tables":
        ids = st.sampled_from(("a", "b", "c", "job-1")) if _often(draw) else _job_ids
        jobs = draw(st.dictionaries(ids, job_table(), min_size=_often(draw), max_size=3))
        extra = {} if _often(draw) else draw(st.dictionaries(_keys, any_value, max_size=1))
        return _document(jobs, "jobs.", extra)
    if shape == "inline":
        jobs = draw(st.dictionaries(_job_ids, job_table(), min_size=1, max_size=2))
        return "".join(f"jobs.{key_text(k)} = {value_text(v)}\n" for k, v in jobs.items())
    if shape == "array":
        tables = draw(st.lists(job_table(), min_size=1, max_size=2))
        return "".join("[[jobs]]\n" + "".join(f"{key_text(k)} = {value_text(v)}\n"
                                              for k, v in t.items()) for t in tables)
    if shape == "scalar":
        return f"jobs = {value_text(draw(any_value))}\n"
    if shape == "nested":
        depth = draw(st.integers(1, 60))
        path = ".".join(draw(st.sampled_from(("a", "x", '"q"'))) for _ in range(depth))
        return f"[jobs.{path}]\ncron = \"* * * * *\"\ncommand = [\"true\"]\n"
    if shape == "deep":
        depth = draw(st.integers(50, 3000))
        kind = draw(st.sampled_from(("array", "table")))
        body = "[" * depth + "]" * depth if kind == "array" else (
            "{a = " * depth + "1" + "}" * depth)
        return f"[jobs.a]\ncron = \"* * * * *\"\ncommand = [\"true\"]\nparameters = {body}\n"
    return draw(st.text(max_size=300))


@st.composite
def encoded(draw: st.DrawFn, text: str) -> bytes:
    """The file's bytes: mostly UTF-8, sometimes with a BOM, another encoding or damage."""
    how = draw(st.sampled_from(("utf-8",) * 12 + ("bom", "utf-16", "latin-1", "bytes",
                                                  "truncate", "nul")))
    if how == "bom":
        return b"\xef\xbb\xbf" + text.encode("utf-8", "surrogatepass")
    if how == "utf-16":
        return text.encode("utf-16", "surrogatepass")
    if how == "latin-1":
        return text.encode("latin-1", "replace")
    data = text.encode("utf-8", "surrogatepass")
    if how == "bytes":
        at = draw(st.integers(0, len(data)))
        return data[:at] + draw(st.binary(min_size=1, max_size=8)) + data[at:]
    if how == "truncate":
        return data[: draw(st.integers(0, len(data)))]
    if how == "nul":
        return data.replace(b"\n", b"\x00\n", 1)
    return data


# --- cronctl.toml ------------------------------------------------------------------------

# No network: database URLs are SQLite, "none" or something that is no URL at all.
_databases = st.one_of(
    st.sampled_from(("none", "NONE", "sqlite:///state.db", "sqlite:///", "sqlite://",
                     "sqlite:////nonexistent/dir/x.db", "state.db", "", " ", "sqlite:///:memory:",
                     "mysql://", "foo://bar", "sqlite:///a\x00b", "sqlite:///~nosuchuser_cronctl/x",
                     "sqlite:///" + "a" * 5000, "postgresql+psycopg://", "sqlite:///%zz")),
    st.text(max_size=20).filter(lambda t: "://" not in t or t.startswith("sqlite")),
)
SCHEDULER_VALUES: dict[str, st.SearchStrategy[Any]] = {
    "database": st.one_of(_databases, any_value),
    "jobs_dir": st.one_of(_paths, any_value),
    "node_id": st.one_of(st.text(max_size=20), st.just("a" * 1000), any_value),
    "tracked": st.one_of(st.booleans(), any_value),
    "auto_migrate": st.one_of(st.booleans(), any_value),
    "max_concurrent_jobs": _countish,
    "progress_flush_interval": _durationish,
    "shutdown_timeout": _durationish,
    "heartbeat_interval": _durationish,
    "clock_skew_limit": _durationish,
    "python_path": st.one_of(st.lists(_paths, max_size=3), any_value),
}
_sections = ("scheduler", "scheduler", "scheduler", "retention", "retention", "notify", "notify",
             "metrics", "metrics", "jobs", "schedulr", "notfy")


@st.composite
def config_text(draw: st.DrawFn) -> str:
    shape = draw(st.sampled_from(("tables", "tables", "tables", "scalar", "deep", "garbage")))
    if shape == "scalar":
        return f"scheduler = {value_text(draw(any_value))}\n"
    if shape == "deep":
        depth = draw(st.integers(50, 3000))
        return "[scheduler]\nnode_id = " + "[" * depth + "]" * depth + "\n"
    if shape == "garbage":
        return draw(st.text(max_size=300))
    sections: dict[str, dict[str, Any]] = {}
    for name in draw(st.lists(st.sampled_from(_sections), max_size=3, unique=True)):
        table: dict[str, Any] = {}
        known = SCHEDULER_VALUES if name == "scheduler" else SECTION_VALUES.get(name)
        if known:
            for key in draw(st.lists(st.sampled_from(sorted(known)), max_size=5, unique=True)):
                table[key] = draw(known[key])
        if not known or not _often(draw):
            for key in draw(st.lists(_keys, max_size=2)):
                table[key] = draw(any_value)  # unknown keys
        sections[name] = table
    return _document(sections, "", {})
