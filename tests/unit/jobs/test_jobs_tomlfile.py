"""Reading TOML files (job files and cronctl.toml) whatever their bytes: one violation
per bad file, never an exception. Each case was found by fuzzing (tests/fuzz)."""

from __future__ import annotations

from pathlib import Path

import pytest
from jobs_helpers import Load

from cronctl.config import read_config
from cronctl.jobs.tomlfile import MAX_DEPTH, TomlFile, read_toml
from cronctl.jobs.violation import Violation
from cronctl.options import GlobalOptions

OK = '[jobs.x]\ncron = "0 * * * * *"\ncommand = ["true"]\n'


@pytest.mark.parametrize("body", [
    "[" * 600 + "]" * 600,  # tomllib raised RecursionError
    "{a = " * 600 + "1" + "}" * 600,
    "[" * (MAX_DEPTH + 5) + "]" * (MAX_DEPTH + 5),  # readable, but too deep to use
])
def test_deep_nesting_is_one_violation(jobs_dir: Path, load: Load, body: str) -> None:
    (jobs_dir / "a.toml").write_text(OK + f"parameters = {body}\n", encoding="utf-8")
    (jobs_dir / "b.toml").write_text(OK.replace("jobs.x", "jobs.y"), encoding="utf-8")
    result = load()
    (violation,) = result.violations
    assert violation.source.endswith("a.toml")
    assert f"nested more than {MAX_DEPTH} levels deep" in violation.message
    assert result.defined == 1  # the other file is still read


def test_nesting_that_real_files_use_is_fine(tmp_path: Path) -> None:
    path = tmp_path / "a.toml"
    path.write_text("a = " + "[" * 10 + "]" * 10 + "\n[x.y.z]\nb = {c = {d = 1}}\n",
                    encoding="utf-8")
    assert isinstance(read_toml(path), TomlFile)


def test_a_utf8_bom_is_accepted(jobs_dir: Path, load: Load) -> None:
    (jobs_dir / "a.toml").write_bytes(b"\xef\xbb\xbf" + OK.encode())
    result = load()
    assert result.ok and [job.id for job in result.jobs] == ["x"]


def test_utf16_says_so(jobs_dir: Path, load: Load) -> None:
    (jobs_dir / "a.toml").write_bytes(OK.encode("utf-16"))
    (violation,) = load().violations
    assert violation.message == "is UTF-16 text; save the file as UTF-8"


def test_config_file_deep_bom_and_lines(tmp_path: Path) -> None:
    config = tmp_path / "cronctl.toml"
    config.write_text("[scheduler]\nnode_id = " + "[" * 700 + "]" * 700 + "\n",
                      encoding="utf-8")
    (violation,) = read_config(GlobalOptions(config=config)).violations
    assert "nested more than" in violation.message
    config.write_bytes(b"\xef\xbb\xbf[scheduler]\nnode_id = 5\n")
    (violation,) = read_config(GlobalOptions(config=config)).violations
    assert violation.source.endswith("cronctl.toml:2")  # the BOM does not shift lines
    assert violation.key == "scheduler.node_id"


def test_a_directory_is_not_a_file(tmp_path: Path) -> None:
    (tmp_path / "d.toml").mkdir()
    found = read_toml(tmp_path / "d.toml", "job file")
    assert isinstance(found, Violation)
    assert found.message == "is a directory, not a job file"


@pytest.mark.parametrize(("key", "value", "message"), [
    ("jobs_dir", '"~nosuchuser_cronctl/jobs"', "cannot expand '~nosuchuser_cronctl'"),
    ("jobs_dir", '"a\\u0000b"', "contains a NUL character"),
    ("python_path", '["~nosuchuser_cronctl"]', "cannot expand"),
    ("python_path", '["lib\\u0000"]', "contains a NUL character"),
    ("database", '"~nosuchuser_cronctl/x.db"', "cannot expand"),
    ("database", '"sqlite:///a\\u0000b"', "contains a NUL character"),
])
def test_paths_no_file_system_accepts(tmp_path: Path, key: str, value: str,
                                      message: str) -> None:
    # pathlib raised RuntimeError (unknown ~user) and ValueError (NUL) from deep inside.
    config = tmp_path / "cronctl.toml"
    config.write_text(f"[scheduler]\n{key} = {value}\n", encoding="utf-8")
    violations = read_config(GlobalOptions(config=config)).violations
    assert [v.key for v in violations if message in v.message] == [f"scheduler.{key}"]


def test_jobs_dir_with_a_nul_is_a_violation() -> None:
    from cronctl.jobs.toml_source import read_jobs_dir

    (violation,) = read_jobs_dir(Path("a\x00b")).violations  # `--jobs-dir $'a\x00b'`
    assert violation.message.startswith("cannot read jobs directory")


def test_database_option_no_file_system_accepts(monkeypatch: pytest.MonkeyPatch,
                                                tmp_path: Path) -> None:
    from cronctl.errors import ConfigError, UsageError

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("CRONCTL_CONFIG", raising=False)
    monkeypatch.delenv("CRONCTL_DATABASE_URL", raising=False)
    with pytest.raises(UsageError, match="^--database: .*cannot expand"):
        read_config(GlobalOptions(database="~nosuchuser_cronctl/x.db"))
    monkeypatch.setenv("CRONCTL_DATABASE_URL", "~nosuchuser_cronctl/x.db")
    with pytest.raises(ConfigError, match=r"^\$CRONCTL_DATABASE_URL: .*cannot expand"):
        read_config(GlobalOptions())


def test_config_name_too_long_is_one_error(tmp_path: Path) -> None:
    from cronctl.config import find_config_file
    from cronctl.errors import ConfigError

    with pytest.raises(ConfigError, match=r"cannot be read: File name too long"):
        find_config_file(tmp_path / ("a" * 300))  # is_dir() raised ENAMETOOLONG


def test_violations_are_printed_on_one_safe_line() -> None:
    # A jobs_dir "a\rb", a job id with \x1c, an ESC in a cron field: str.splitlines breaks
    # at \r and \x1c, and ESC sequences drive terminals; surrogates (non-UTF-8 argv or
    # file-name bytes) are written as escapes too, whatever the stream's error handler.
    violation = Violation("jobs.d/a\rb", "x\x1cy", None, "minute field: \x1b[31m\udcff bad")
    text = str(violation)
    assert text.splitlines() == [text]
    assert "\x1b" not in text and "\\x1b[31m" in text
    assert "\\udcff" in text and text.encode("utf-8")
    assert "\\u2028" in str(Violation("a\u2028b", None, None, "m"))


def test_an_unsupported_database_scheme_is_said_when_the_config_is_read(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # `cronctl list --database mysql://` raised ValueError from deep in the store.
    from cronctl.errors import UsageError

    monkeypatch.delenv("CRONCTL_DATABASE_URL", raising=False)
    config = tmp_path / "cronctl.toml"
    config.write_text('[scheduler]\ndatabase = "mysql://u:pw@h/x"\n', encoding="utf-8")
    (violation,) = read_config(GlobalOptions(config=config)).violations
    assert violation.key == "scheduler.database"
    assert violation.message.startswith("unsupported database URL 'mysql://u:***@h/x'")
    with pytest.raises(UsageError, match="^--database: unsupported database URL"):
        read_config(GlobalOptions(database="foo://x"))
