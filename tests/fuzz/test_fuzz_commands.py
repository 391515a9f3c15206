"""The commands that take files, paths and tables rather than times and ids:
``import-crontab``, ``systemd-unit``, ``init`` and ``prune`` (with the ``[retention]``,
``[metrics]`` and ``[notify]`` tables of SPEC section 7), through the real entry point.
Each either works or fails as a user error with one line (``assert_clean``); what it
writes is checked too: the unit file keeps its directives, init's files validate, the
crontab's job file is TOML.
"""

from __future__ import annotations

import json
import re
import shutil
import tempfile
import tomllib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from fuzz_strategies import ODD, zones
from fuzz_support import Outcome, assert_clean, cli, fuzz_settings
from fuzz_toml import SECTION_VALUES, any_value, encoded, value_text
from hypothesis import given
from hypothesis import strategies as st


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("commands")


@contextmanager
def fresh(root: Path) -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(dir=root))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


_paths = st.one_of(
    st.sampled_from(("cronctl.toml", "my configs/cronctl.toml", "100%/c.toml", "%h.toml",
                     "$HOME/c.toml", 'q"uote/c.toml', "b\\s/c.toml", "trail /c.toml",
                     "back\\/c.toml", "a\nb/c.toml", "a\rExecStartPre=/bin/x/c.toml",
                     "\u2028/c.toml", "\udcff.toml", "~/c.toml", "~nosuchuser_cronctl/x", "",
                     " ", ".", "/", "a" * 5000, "semi;colon", "ü/日本.toml", "-x")),
    st.text(max_size=20),
)
_users = st.one_of(
    st.sampled_from(("cronctl", "root", "0", "1000", "99999999999", "", " ", "a b", "%u", "-x",
                     ".x", "user$", "a\nUser=root", "ü", "a" * 300, "svc-cron_1")),
    st.text(max_size=12),
)
_databases = st.one_of(
    st.sampled_from(("none", "sqlite:///state.db", "sqlite:///st ate%.db", "x.db",
                     "postgresql+psycopg://u:secret@h/db", "postgresql://h/db?password=s",
                     "postgresql://h/db", "mysql://x", "sqlite:///a\nb", "sqlite:///\udcff",
                     "$DB", "")),
    st.text(max_size=20).filter(lambda t: "://" not in t),
)
def _unit_keys(unit: str) -> list[str]:
    return [line.split("=", 1)[0] for line in unit.splitlines()
            if line and not line.startswith(("#", "["))]


def _plain_unit_keys() -> list[str]:
    """The directives of the unit made with no option at all: what every unit has."""
    from cronctl.cli.cmd_systemd import render_unit

    return _unit_keys(render_unit("/usr/bin/cronctl", None, None, Path("/var/lib/cronctl"), 45))


# the directives an option adds: --user (User=), a SQLite file's directory (ReadWritePaths=)
_OPTIONAL_KEYS = ("User", "ReadWritePaths")


@fuzz_settings(100)
@given(config=st.one_of(st.none(), _paths), jobs_dir=st.one_of(st.none(), _paths),
       database=st.one_of(st.none(), _databases), user=st.one_of(st.none(), _users),
       stop=st.one_of(st.none(), st.sampled_from(("1", "45", "0", "-1", "99999999999999999999",
                                                  "²", "1.5", ""))),
       postgres=st.booleans())
def test_systemd_unit(scratch: Path, config: str | None, jobs_dir: str | None,
                      database: str | None, user: str | None, stop: str | None,
                      postgres: bool) -> None:
    argv = []
    for option, value in (("--config", config), ("--jobs-dir", jobs_dir),
                          ("--database", database)):
        if value is not None:
            argv.append(f"{option}={value}")
    argv.append("systemd-unit")
    if user is not None:
        argv.append(f"--user={user}")
    if stop is not None:
        argv.append(f"--stop-timeout={stop}")
    if postgres:
        argv.append("--postgres")
    outcome = cli(argv, scratch)
    assert_clean(outcome)
    if outcome.code != 0:
        return
    # Whatever was given, the unit has its own directives, once each, and nothing more.
    keys = _unit_keys(outcome.out)
    assert [key for key in keys if key not in _OPTIONAL_KEYS] == _plain_unit_keys(), str(
        outcome)
    assert keys.count("User") == (user is not None), str(outcome)
    assert keys.count("ReadWritePaths") <= 1, str(outcome)
    assert "secret" not in outcome.out and "password=s" not in outcome.out, str(outcome)


_CRONTAB_LINES = st.one_of(
    st.sampled_from(("* * * * * echo hi", "0 4 */2 * 1 backup", "@daily date +\\%F", "@reboot x",
                     "CRON_TZ=Europe/Berlin", "TZ=Nope/Zone", "MAILTO=ops@example.com",
                     "MAILTO=", "SHELL=/bin/bash", "PATH=/bin", "61 * * * * x", "# comment",
                     "", "* * * * *", "0 0 30 2 * never", "*/0 * * * * x", "@every 5m x",
                     "1-5/0 * * * * x", "* * * * * root echo", "@daily root", "0 0 L * * x",
                     "@daily \x08 0", "* * * * * \x1b[2J", "0 ² * * * x", "0 0 * * ٣ x")),
    st.lists(st.one_of(st.sampled_from(("*", "*/5", "0", "1-3", "MON", "jan", "%", "root",
                                        "echo", "=", "@daily", "'", '"', "#")),
                       st.sampled_from(ODD), st.text(max_size=6)),
             min_size=1, max_size=8).map(" ".join),
    st.text(max_size=60),
)


@fuzz_settings(100)
@given(data=st.data(), lines=st.lists(_CRONTAB_LINES, max_size=8),
       name=st.sampled_from(("crontab", "etc/crontab", "cron.d/backup", "my tab", "a\nb",
                             "x.toml", "ü")),
       mode=st.sampled_from((["--dry-run"], ["--json", "--dry-run"], ["--json"], [],
                             ["--out=-"], ["--out=out.toml"], ["--out=jobs.d"], ["--force"])),
       system=st.sampled_from(([], ["--system"], ["--user"])),
       tz=st.one_of(st.none(), zones))
def test_import_crontab(scratch: Path, data: st.DataObject, lines: list[str], name: str,
                        mode: list[str], system: list[str], tz: str | None) -> None:
    with fresh(scratch) as root:
        (root / "cronctl.toml").write_text('[scheduler]\ndatabase = "none"\n', encoding="utf-8")
        raw = data.draw(encoded("\n".join(lines) + "\n"), label="crontab bytes")
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(raw)
        argv = ["import-crontab", *mode, *system]
        if tz is not None:
            argv.append(f"--tz={tz}")
        outcome = cli([*argv, "--", name], root)
        _assert_import_clean(outcome)
        for written in (root / "jobs.d").glob("*.toml"):
            tomllib.loads(written.read_text(encoding="utf-8"))  # what it wrote is TOML
            assert_clean(cli(["validate"], root))


def _assert_import_clean(outcome: Outcome) -> None:
    """import-crontab's own shape (SPEC section 6): exit 1 when a line was not converted
    (0 with --dry-run, which only reports: issue 39), each reported as ``SOURCE:N: not
    converted: REASON``, one line each, with the summary and ``SOURCE:N: warning: ...``
    lines; with --json one document on stdout; any other failure is one ``error:`` line."""
    dry = "--dry-run" in outcome.argv
    assert "Traceback" not in outcome.err + outcome.out, str(outcome)
    assert outcome.code in (0, 1, 2), str(outcome)
    lines = [line for line in outcome.err.splitlines() if line.strip()]
    if lines and lines[-1].startswith("error: "):
        assert_clean(outcome)
        return
    if "--json" in outcome.argv:
        document = json.loads(outcome.out)
        assert (outcome.code == 1) == (bool(document["not_converted"]) and not dry), str(
            outcome)
        return
    summary = re.compile(r"\d+ jobs? converted")
    for line in lines:
        assert (" not converted: " in line or " run as that user (user = " in line
                or " warning: " in line or summary.match(line)), str(outcome)
    not_converted = sum(" not converted: " in line for line in lines)
    assert (outcome.code == 1) == (bool(not_converted) and not dry), str(outcome)


@fuzz_settings(40)
@given(directory=st.one_of(st.none(), _paths), force=st.booleans(),
       database=st.one_of(st.none(), st.sampled_from(("none", "x.db", "mysql://"))),
       twice=st.booleans())
def test_init(scratch: Path, directory: str | None, force: bool, database: str | None,
              twice: bool) -> None:
    with fresh(scratch) as root:
        argv = [f"--database={database}"] if database is not None else []
        argv.append("init")
        if directory is not None:
            argv.append(f"--dir={directory}")
        if force:
            argv.append("--force")
        outcome = cli(argv, root)
        assert_clean(outcome)
        if twice:
            assert_clean(cli(argv, root))  # exists: refused unless --force
        if outcome.code == 0:
            where = root / (directory or ".")
            if (where / "cronctl.toml").is_file():
                assert_clean(cli(["-c", str(where / "cronctl.toml"), "validate"], root))


@pytest.fixture(scope="module")
def database(scratch: Path) -> str:
    url = f"sqlite:///{scratch / 'prune.db'}"
    outcome = cli(["--database", url, "db", "upgrade"], scratch)
    assert outcome.code == 0, str(outcome)
    return url


@st.composite
def section_tables(draw: st.DrawFn) -> str:
    """``[retention]``, ``[metrics]`` and ``[notify]`` with known keys (plausible or
    hostile values) and sometimes unknown ones, or a section that is no table."""
    lines: list[str] = []
    for name in draw(st.lists(st.sampled_from(sorted(SECTION_VALUES)), min_size=1, max_size=3,
                              unique=True)):
        if draw(st.integers(0, 9)) == 0:
            lines.append(f"{name} = {value_text(draw(any_value))}")
            continue
        lines.append(f"[{name}]")
        known = SECTION_VALUES[name]
        for key in draw(st.lists(st.sampled_from(sorted(known)), max_size=5, unique=True)):
            lines.append(f"{key} = {value_text(draw(known[key]))}")
        if draw(st.integers(0, 4)) == 0:
            lines.append(f"{draw(st.sampled_from(('keep_lats', 'listn', 'webhok', 'x')))} = 1")
    return "\n".join(lines) + "\n"


@fuzz_settings(100)
@given(data=st.data(), sections=section_tables(),
       command=st.sampled_from((["prune", "--dry-run"], ["prune", "--dry-run", "--json"],
                                ["prune"], ["validate"], ["validate", "--json"], ["list"],
                                ["status"])))
def test_section_tables(scratch: Path, database: str, data: st.DataObject, sections: str,
                        command: list[str]) -> None:
    with fresh(scratch) as root:
        text = f'[scheduler]\ndatabase = "{database}"\n{sections}'
        (root / "cronctl.toml").write_bytes(data.draw(encoded(text), label="cronctl.toml"))
        (root / "jobs.d").mkdir()
        (root / "jobs.d" / "a.toml").write_text(
            '[jobs.a]\ncron = "0 * * * * *"\ncommand = ["true"]\n', encoding="utf-8")
        assert_clean(cli(command, root))


# --- what the fuzzers found, kept as fixed examples --------------------------------------

_INTERVAL = '[jobs.a]\nevery = "90s"\ncommand = ["true"]\n'


@pytest.mark.parametrize(("files", "argv", "code", "expected"), [
    # init: a --dir too long to stat was a traceback (OSError from Path.exists)
    ({}, ["init", "--dir=" + "a" * 5000], 1, "error: cannot write aaaa"),
    # an interval anchor outside years 1-9999 in UTC was a traceback (OverflowError)
    ({"jobs.d/a.toml": _INTERVAL + "anchor = 0001-01-01T00:00:00+01:00\n"}, ["validate"], 1,
     "key 'anchor': 0001-01-01T00:00:00+01:00 is out of range"),
    ({"jobs.d/a.toml": _INTERVAL + 'anchor = "9999-12-31T23:59:59-14:00"\n'}, ["next", "a"], 1,
     "is out of range"),
    # a local time in a DST gap names no instant
    ({}, ["next", "0 30 2 * * *", "--from=2026-03-08T02:30", "--tz=America/New_York"], 2,
     "error: --from: 2026-03-08 02:30:00 does not exist in America/New_York"),
    # a system crontab's user column with a control character was a traceback
    ({"crontab": "@daily \x08 0\n"}, ["import-crontab", "--system", "--dry-run", "crontab"], 0,
     "lines of \\x08 run as that user"),
    # systemd-unit: a newline in --config or --user would have added a directive
    ({}, ["-c", "a\nExecStartPre=/bin/evil/c.toml", "systemd-unit"], 2,
     "error: --config: "),
    ({}, ["systemd-unit", "--user", "root\nExecStartPre=/bin/evil"], 2,
     "error: --user: 'root\\nExecStartPre=/bin/evil' is not a user name"),
])
def test_findings(scratch: Path, files: dict[str, str], argv: list[str], code: int,
                  expected: str) -> None:
    with fresh(scratch) as root:
        (root / "cronctl.toml").write_text('[scheduler]\ndatabase = "none"\n', encoding="utf-8")
        for name, text in files.items():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            (root / name).write_text(text, encoding="utf-8")
        outcome = cli(argv, root)
        if argv[0] == "import-crontab":
            _assert_import_clean(outcome)
        else:
            assert_clean(outcome)
        assert outcome.code == code, str(outcome)
        assert expected in outcome.out + outcome.err, str(outcome)
        assert "ExecStartPre" not in outcome.out, str(outcome)
