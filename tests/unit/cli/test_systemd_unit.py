"""``cronctl systemd-unit``: the unit's shape, and that every user-supplied value reaches
systemd as written or is refused with one line (systemd.syntax(7): ``%`` specifiers,
``$`` variables, quoting and C escapes in ``ExecStart=``; a newline would start a new
directive). ``systemd-analyze verify``, where installed, is the oracle for what systemd
itself accepts: it resolves ``ExecStart=``'s executable and checks the working
directory and every specifier."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cronctl.cli.cmd_systemd import exec_word, render_unit
from cronctl.errors import UsageError


def test_unit_is_type_notify_with_reload_and_watchdog(tmp_path: Path) -> None:
    config = tmp_path / "cronctl.toml"
    unit = render_unit("/usr/bin/cronctl", config, "cron", tmp_path, 45, after="postgresql.service")
    lines = unit.splitlines()
    assert "Type=notify" in lines
    assert f"ExecStart=/usr/bin/cronctl --config {config} run" in lines
    assert "ExecReload=/bin/kill -HUP $MAINPID" in lines
    assert "User=cron" in lines
    assert any(line.startswith("WatchdogSec=") for line in lines)
    assert "TimeoutStopSec=45" in lines
    assert lines[lines.index("[Unit]") + 4].endswith("postgresql.service")


def test_unit_without_config_or_user() -> None:
    unit = render_unit("/opt/venv/bin/cronctl", None, None, Path("/var/lib/cronctl"), 45)
    assert "ExecStart=/opt/venv/bin/cronctl run" in unit.splitlines()
    assert "User=" not in unit


# --- what systemd reads back -------------------------------------------------------------

_C_ESCAPES = {"\\": "\\", '"': '"', "'": "'", "n": "\n", "t": "\t", "r": "\r", "s": " "}


def exec_words(line: str) -> list[str]:
    """``ExecStart=``'s words as systemd reads them (systemd.service(5), "COMMAND LINES"):
    split at unquoted whitespace, quotes removed, C escapes decoded, ``%%`` -> ``%`` and,
    in arguments, ``$$`` -> ``$``. Only what render_unit writes is understood."""
    words: list[str] = []
    i = 0
    while i < len(line):
        if line[i] == " ":
            i += 1
            continue
        word = []
        if line[i] == '"':
            i += 1
            while line[i] != '"':
                if line[i] == "\\":
                    i += 1
                    word.append(_C_ESCAPES[line[i]])
                else:
                    word.append(line[i])
                i += 1
            i += 1
            assert i == len(line) or line[i] == " ", line  # a quote ends a word
        else:
            while i < len(line) and line[i] != " ":
                assert line[i] not in "\"'\\", line
                word.append(line[i])
                i += 1
        text = "".join(word)
        assert re.sub("%%", "", text).count("%") == 0, line  # no specifier left
        text = text.replace("%%", "%")
        if words:
            assert re.sub(r"\$\$", "", text).count("$") == 0, line  # no variable left
            text = text.replace("$$", "$")
        words.append(text)
    return words


def _exec_start(unit: str) -> list[str]:
    (line,) = [line for line in unit.splitlines() if line.startswith("ExecStart=")]
    return exec_words(line[len("ExecStart="):])


def _working_directory(unit: str) -> str:
    (line,) = [line for line in unit.splitlines() if line.startswith("WorkingDirectory=")]
    value = line[len("WorkingDirectory="):]
    assert value == value.strip() and not value.endswith("\\")
    assert re.sub("%%", "", value).count("%") == 0
    return value.replace("%%", "%")


HOSTILE = ["my configs", "100%", "%h", "%%", "$HOME", "${X}", "$$", 'a"b', "a'b", "a\\b",
           ";", "a;b", "é", "日本", "-x", "#x", "a=b", " lead", "@at", "!bang", "\\x41"]


@pytest.mark.parametrize("name", HOSTILE)
def test_hostile_paths_reach_systemd_as_written(tmp_path: Path, name: str) -> None:
    config = tmp_path / name.strip() / f"{name}.toml"
    jobs = tmp_path / name / "jobs.d"
    database = f"sqlite:///{tmp_path / name}.db"
    unit = render_unit(["/usr/bin/python3", "-m", "cronctl"], config, None, config.parent, 45,
                       jobs_dir=jobs, database=database)
    assert _exec_start(unit) == ["/usr/bin/python3", "-m", "cronctl", "--config", str(config),
                                 "--jobs-dir", str(jobs), "--database", database, "run"]
    assert _working_directory(unit) == str(config.parent)
    # Nothing the path holds became a directive of its own.
    keys = [line.split("=", 1)[0] for line in unit.splitlines() if "=" in line]
    assert keys.count("ExecStart") == 1 and keys.count("WorkingDirectory") == 1


@settings(max_examples=300, deadline=None)
@given(st.text(st.characters(blacklist_categories=("Cc", "Cs"),
                             blacklist_characters="\u2028\u2029")))
def test_any_argument_reads_back(text: str) -> None:
    assert exec_words(f"/bin/x {exec_word(text)}") == ["/bin/x", text]


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"config": Path("/etc/a\nExecStartPre=/bin/evil/c.toml")}, "--config: .*control character"),
    ({"config": Path("/etc/a\rb/c.toml")}, "--config: .*control character"),
    ({"config": Path("/etc/a\u2028b/c.toml")}, "--config: .*control character"),
    ({"jobs_dir": Path("/srv/j\x1bobs")}, "--jobs-dir: .*control character"),
    ({"database": "sqlite:////srv/x\n.db"}, "--database: .*control character"),
    ({"config": Path("/etc/\udcff/c.toml")}, "--config: .*not valid UTF-8"),
    ({"workdir": Path("/etc/trailing ")}, "whitespace or a backslash"),
    ({"workdir": Path("/etc/back\\")}, "whitespace or a backslash"),
    ({"user": "a b"}, "--user: 'a b' is not a user name"),
    ({"user": "root\nExecStartPre=/bin/evil"}, "--user: .* is not a user name"),
    ({"user": "%u"}, "--user: .* is not a user name"),
    ({"user": ""}, "--user: '' is not a user name"),
    ({"user": "-x"}, "--user: .* is not a user name"),
    ({"user": "99999999999"}, "--user: .* is not a user name"),
    ({"executable": "/opt/my\"venv/bin/cronctl"}, "quote or a backslash"),
    ({"executable": "cronctl"}, "not an absolute path"),
    ({"executable": "/opt/a\tb/cronctl"}, "control character"),
])
def test_what_a_unit_cannot_hold_is_one_line_naming_the_option(
        kwargs: dict[str, object], message: str) -> None:
    args: dict[str, object] = {"executable": "/usr/bin/cronctl", "config": None, "user": None,
                               "workdir": Path("/var/lib/cronctl"), "stop_timeout": 45}
    args.update(kwargs)
    with pytest.raises(UsageError, match=message) as caught:
        render_unit(**args)  # type: ignore[arg-type]
    assert len(str(caught.value).splitlines()) == 1


def test_user_names_and_uids_are_taken() -> None:
    for user in ("cronctl", "svc-cron_1", "Admin.X", "1000", "0", "machine$"):
        assert f"User={user}\n" in render_unit("/usr/bin/cronctl", None, user,
                                              Path("/var/lib/cronctl"), 45)


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="needs systemd-analyze")
def test_systemd_analyze_accepts_hostile_paths(tmp_path: Path) -> None:
    """systemd itself resolves the executable (spaces, ``%``, ``$``, ``;`` in its path)
    and every specifier of the unit."""
    base = tmp_path / "opt dir" / "100%h$HOME;x"
    base.mkdir(parents=True)
    executable = base / "cronctl"
    shutil.copy("/bin/true", executable)
    config = base / "conf %i" / "cronctl.toml"
    page = base / "man %d" / "cronctl.1"  # a file: URI in Documentation= (issue 24)
    unit = render_unit(str(executable), config, None, config.parent, 45,
                       jobs_dir=base / "jobs %n", database=f"sqlite:///{base}/state $X.db",
                       docs=(page,))
    assert "file:///" in unit and "%%25d" in unit
    path = tmp_path / "cronctl.service"
    path.write_text(unit, encoding="utf-8")
    verify = subprocess.run(["systemd-analyze", "verify", "--man=no", str(path)],
                            capture_output=True, text=True, timeout=60,
                            env={**os.environ, "SYSTEMD_LOG_LEVEL": "notice"}, check=False)
    assert verify.returncode == 0, verify.stdout + verify.stderr
    assert "not executable" not in verify.stderr and "specifier" not in verify.stderr, (
        verify.stderr)


def test_units_keep_the_state_private() -> None:
    """The state directory is 0700 and every file the service creates 0600 or tighter:
    job output and parameters are not for other users."""
    from cronctl.cli.cmd_systemd import SERVE_TEMPLATE, UNIT_TEMPLATE

    for template in (UNIT_TEMPLATE, SERVE_TEMPLATE):
        lines = template.splitlines()
        assert "UMask=0077" in lines
    # (the serve unit owns no state directory: it reads the scheduler's, issue 38)
    assert "StateDirectoryMode=0700" in UNIT_TEMPLATE.splitlines()
    assert not any(line.startswith("StateDirectory") for line in SERVE_TEMPLATE.splitlines())


def test_the_unit_never_imports_from_its_working_directory(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without a console script, the unit runs the interpreter isolated (``-I``): plain
    ``python -m cronctl`` in the state directory would import a ``typer.py`` lying there."""
    import sys

    from cronctl.cli import cmd_systemd

    interpreter = tmp_path / "bin" / "python3"
    interpreter.parent.mkdir()
    interpreter.touch()
    monkeypatch.setattr(sys, "executable", str(interpreter))
    monkeypatch.setattr(cmd_systemd.shutil, "which", lambda name: None)
    assert cmd_systemd._executable() == [str(interpreter), "-I", "-m", "cronctl"]
    script = interpreter.parent / "cronctl"
    script.write_text("#!/bin/sh\n")
    script.chmod(0o755)
    assert cmd_systemd._executable() == [str(script)]  # this installation's own script
