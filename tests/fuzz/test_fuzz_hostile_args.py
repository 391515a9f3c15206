"""Hostile command-line arguments: job ids that are not UTF-8, database URLs with bad
ports, hosts, drivers and paths (and a password that must never be printed), counts in
digits that are not ASCII. Every input either works or exits 1/2/3 with one line on
stderr (``fuzz_support.assert_clean``); a handful run as real processes, where argv bytes
that are not UTF-8 reach Python as they do for a user."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from fuzz_support import assert_clean, cli, fuzz_settings
from hypothesis import given
from hypothesis import strategies as st

SECRET = "pw-s3cr3t"
CONFIG = '[scheduler]\ndatabase = "sqlite:///state.db"\njobs_dir = "jobs.d"\n'
JOBS = '[jobs.a]\nevery = "90s"\ncommand = ["true"]\n'


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("hostile-args")
    (root / "cronctl.toml").write_text(CONFIG, encoding="utf-8")
    (root / "jobs.d").mkdir()
    (root / "jobs.d" / "jobs.toml").write_text(JOBS, encoding="utf-8")
    outcome = cli(["db", "upgrade"], root)
    assert outcome.code == 0, str(outcome)
    return root


# Lone surrogates are what Python makes of argv bytes that are not UTF-8.
_odd_text = st.text(st.characters(codec=None, exclude_characters="\x00"), max_size=12)
job_ids = st.one_of(st.sampled_from(("a", "\udcff", "a\udc80", "\udcff" * 300, "A", "-")),
                    _odd_text)


@fuzz_settings(40)
@given(job=job_ids, command=st.sampled_from((
    ["cancel", "--job"], ["logs", "--job"], ["history", "--"], ["pause", "--"],
    ["resume", "--"], ["why", "--", "{job}", "now"])))
def test_job_ids(workdir: Path, job: str, command: list[str]) -> None:
    argv = [job if part == "{job}" else part for part in command]
    if "{job}" not in command:
        argv.append(job)
    outcome = cli(argv, workdir)
    assert_clean(outcome)
    if job != "a":
        assert outcome.code in (2, 3), str(outcome)


_scheme = st.sampled_from(("postgresql", "POSTGRESQL", "postgres", "postgresql+psycopg",
                           "PostgreSQL+Psycopg", "postgresql+nosuchdriver", "mysql", "sqlite",
                           "SQLITE", "x", ""))
_host = st.sampled_from(("127.0.0.1", "[::1", "[::1]", "::1", "[", "]", "", "127.0.0.1\udcff"))
_port = st.sampled_from(("", ":1", ":abc", ":65536", ":0", ":-1", ":\u0663", ":99999999999",
                         ":1.5"))
_path = st.sampled_from(("/db", "/", "", "/" + "d" * 300, "/db?password=" + SECRET))


@st.composite
def database_urls(draw: st.DrawFn) -> str:
    if draw(st.booleans()):
        return draw(st.sampled_from((
            "a" * 300, "sqlite:///" + "a" * 300, "sqlite:////tmp/" + "b" * 300,
            "sqlite:///" + "abcdefgh/" * 500 + "x.db", "\udcff", "sqlite:///\udcff",
            "none", "NONE", "sqlite://", "://", "postgresql://", "mysql://u@h/db")))
    scheme = draw(_scheme)
    return (f"{scheme}://u:{SECRET}@{draw(_host)}{draw(_port)}{draw(_path)}"
            + draw(st.sampled_from(("", "\udcff", " ", "#x"))))


@fuzz_settings(60)
@given(url=database_urls(), command=st.sampled_from((["validate"], ["history"], ["list"])))
def test_database_urls(workdir: Path, url: str, command: list[str]) -> None:
    outcome = cli(["--database", url, *command], workdir,
                  PGCONNECT_TIMEOUT="2")
    assert_clean(outcome)
    assert SECRET not in outcome.out and SECRET not in outcome.err, str(outcome)


@fuzz_settings(40)
@given(digits=st.text(st.characters(categories=["Nd"]), min_size=1, max_size=3),
       unit=st.sampled_from(("", "s", "h")))
def test_counts_and_durations_in_any_digits(workdir: Path, digits: str, unit: str) -> None:
    if unit:
        outcome = cli(["history", f"--since={digits}{unit}"], workdir)
    else:
        outcome = cli(["next", "a", "-n", digits], workdir)
    assert_clean(outcome)
    if not digits.isascii():
        assert outcome.code == 2, str(outcome)


# --- real processes: argv bytes that are not UTF-8 ---------------------------------------

def _run(args: list[bytes], cwd: Path) -> subprocess.CompletedProcess[bytes]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CRONCTL_")}
    env.update({"NO_COLOR": "1", "COLUMNS": "200", "LC_ALL": "C.UTF-8",
                "PYTHONIOENCODING": "utf-8:strict"})
    return subprocess.run([sys.executable.encode(), b"-m", b"cronctl", *args], cwd=cwd,
                          env=env, capture_output=True, timeout=60, check=False,
                          stdin=subprocess.DEVNULL)


@pytest.mark.parametrize(("args", "code"), [
    ([b"cancel", b"--job", b"\xff"], 2),
    ([b"logs", b"--job", b"\xff"], 2),
    ([b"history", b"\xff"], 2),
    ([b"--database", b"postgresql://u:" + SECRET.encode() + b"@[::1/db\xff", b"history"], 2),
    ([b"--database", b"a" * 300, b"history"], 2),
])
def test_non_utf8_argv_bytes(workdir: Path, args: list[bytes], code: int) -> None:
    proc = _run(args, workdir)
    err = proc.stderr.decode("utf-8")  # what was printed is valid UTF-8
    shown = f"{args!r} -> {proc.returncode}\n{proc.stdout!r}\n{err}"
    assert "Traceback" not in err, shown
    assert proc.returncode == code, shown
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), shown
    assert SECRET not in err, shown
