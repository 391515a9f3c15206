"""One test per validation rule: a job table in, exactly the expected violation out."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from jobs_helpers import Load, WriteJob

from cronctl.jobs.convert import JOB_KEY_ALIASES, JOB_KEYS

OK = 'cron = "0 * * * * *"\ncommand = ["true"]\n'

# (test id, job table body, key of the violation, text the message must contain)
RULES = [
    ("unknown-key", OK + 'corn = "x"\n', "corn", "did you mean 'cron'"),
    ("unknown-key-no-match", OK + 'zzz = 1\n', "zzz", "unknown key"),
    # What other schedulers call a key: ours is named.
    ("unknown-key-other-tools-name", OK + 'depends_on = ["a"]\n', "depends_on",
     "did you mean 'after'"),
    ("unknown-key-camel-case-alias", OK + 'concurrencyPolicy = "Forbid"\n',
     "concurrencyPolicy", "did you mean 'overlap_policy'"),
    ("unknown-key-camel-case", OK + 'maxAttempts = 2\n', "maxAttempts",
     "did you mean 'max_attempts'"),
    ("unknown-key-kebab-case", OK + 'kill-timeout = "5s"\n', "kill-timeout",
     "did you mean 'kill_timeout'"),
    ("bad-cron-range", 'cron = "61 * * * * *"\ncommand = ["true"]\n', "cron",
     "second field: 61 is out of range 0-59"),
    ("bad-cron-fields", 'cron = "* * *"\ncommand = ["true"]\n', "cron", ""),
    ("cron-days-never-exist", 'cron = "0 0 0 30 2 *"\ncommand = ["true"]\n', "cron",
     "never"),
    ("cron-never-within-4-years", 'cron = "0 0 0 * 2 FRI#5"\ncommand = ["true"]\n', "cron",
     "never fires"),
    ("cron-not-a-string", 'cron = 5\ncommand = ["true"]\n', "cron", "must be a string"),
    ("cron-blank", 'cron = " "\ncommand = ["true"]\n', "cron", "blank"),
    ("both-cron-and-every", OK + 'every = "5m"\n', "every", "either 'cron' or 'every'"),
    ("neither-cron-nor-every", 'command = ["true"]\n', "cron", "no schedule"),
    ("every-too-short", 'every = "500ms"\ncommand = ["true"]\n', "every", "minimum 1s"),
    ("every-bad", 'every = "fortnight"\ncommand = ["true"]\n', "every", "not a duration"),
    ("anchor-with-cron", OK + 'anchor = 2024-01-01T00:00:00Z\n', "anchor",
     "only applies to 'every'"),
    ("anchor-bad", 'every = "1m"\nanchor = "yesterday"\ncommand = ["true"]\n', "anchor",
     "ISO 8601"),
    # Found by fuzzing: both were tracebacks (OverflowError converting to UTC).
    ("anchor-before-year-1-in-utc",
     'every = "1m"\nanchor = 0001-01-01T00:00:00+01:00\ncommand = ["true"]\n', "anchor",
     "out of range"),
    ("anchor-after-year-9999-in-utc",
     'every = "1m"\nanchor = "9999-12-31T23:59:59-14:00"\ncommand = ["true"]\n', "anchor",
     "out of range"),
    ("unknown-zone", OK + 'timezone = "Europe/Berln"\n', "timezone",
     "did you mean 'Europe/Berlin'"),
    ("zone-not-string", OK + "timezone = 3\n", "timezone", "must be a string"),
    ("bad-mode", OK + 'mode = "singel_instance"\n', "mode", "did you mean 'single_instance'"),
    ("bad-overlap", OK + 'overlap_policy = "queue"\n', "overlap_policy", "not one of"),
    ("bad-misfire", OK + 'misfire_policy = "fire-later"\n', "misfire_policy", "not one of"),
    ("bad-dst-gap", OK + 'dst_gap = "jump"\n', "dst_gap", "not one of"),
    ("bad-dst-fold", OK + 'dst_fold = "third"\n', "dst_fold", "not one of"),
    ("both-target-and-command", OK + 'target = "python:os:getcwd"\n', "command",
     "either 'target' or 'command'"),
    ("neither-target-nor-command", 'cron = "0 * * * * *"\n', "target", "nothing to run"),
    ("target-bad-scheme", 'cron = "0 * * * * *"\ntarget = "http://x"\n', "target",
     "must start with 'service:' or 'python:'"),
    ("target-python-malformed", 'cron = "0 * * * * *"\ntarget = "python:os"\n', "target",
     "python:<module>:<function>"),
    ("target-service-malformed", 'cron = "0 * * * * *"\ntarget = "service:x"\n', "target",
     "service:<namespace>.<service>.<operation>"),
    ("service-not-registered", 'cron = "0 * * * * *"\ntarget = "service:a.b.c"\n', "target",
     "no registered service operation 'a.b.c'"),
    ("python-not-importable",
     'cron = "0 * * * * *"\ntarget = "python:no_such_module_xyz:run"\n', "target",
     "cannot import module 'no_such_module_xyz': ModuleNotFoundError"),
    ("python-no-attribute", 'cron = "0 * * * * *"\ntarget = "python:os.path:jion"\n',
     "target", "did you mean 'join'"),
    ("python-not-callable", 'cron = "0 * * * * *"\ntarget = "python:math:pi"\n', "target",
     "not a callable"),
    ("command-empty", 'cron = "0 * * * * *"\ncommand = []\n', "command", "empty"),
    ("command-not-strings", 'cron = "0 * * * * *"\ncommand = ["ls", 1]\n', "command",
     "must be a string"),
    ("command-unbalanced-quote", 'cron = "0 * * * * *"\ncommand = "echo \'hi"\n', "command",
     "cannot split"),
    ("shell-with-array", OK + "shell = true\n", "command", "one string"),
    ("shell-without-command", 'cron = "0 * * * * *"\ntarget = "python:os:getcwd"\n'
     "shell = true\n", "shell", "only applies to command jobs"),
    ("env-not-strings", OK + "env = { A = 1 }\n", "env", "quote it"),
    ("parameters-not-table", OK + "parameters = 3\n", "parameters", "must be a table"),
    ("enabled-not-bool", OK + 'enabled = "yes"\n', "enabled", "true or false"),
    ("tracked-not-bool", OK + "tracked = 1\n", "tracked", "true or false"),
    ("serial-group-blank", OK + 'serial_group = ""\n', "serial_group", "blank"),
    ("bad-duration", OK + 'timeout = "5 parsecs"\n', "timeout", "not a duration"),
    ("timeout-zero", OK + 'timeout = "0s"\n', "timeout", "zero"),
    ("jitter-negative-string", OK + 'jitter = "-1s"\n', "jitter", "not a duration"),
    ("jitter-negative-number", OK + "jitter = -5\n", "jitter", "negative"),
    ("kill-timeout-negative", OK + "kill_timeout = -1\n", "kill_timeout", "negative"),
    ("retry-backoff-bool", OK + "retry_backoff = true\n", "retry_backoff", "not a duration"),
    ("max-attempts-zero", OK + "max_attempts = 0\n", "max_attempts", ">= 1"),
    ("max-attempts-float", OK + "max_attempts = 2.5\n", "max_attempts", "whole number"),
    ("catchup-limit-zero", OK + "catchup_limit = 0\n", "catchup_limit", ">= 1"),
    ("single-instance-overlap-allow", OK + 'mode = "single_instance"\n'
     'overlap_policy = "allow"\n', "overlap_policy", "need overlap_policy \"skip\""),
    ("queue-one-with-single-instance", OK + 'mode = "single-instance"\n'
     'overlap_policy = "QUEUE_ONE"\n', "overlap_policy", "queue_one works only with"),
]


@pytest.mark.parametrize(("body", "key", "text"), [r[1:] for r in RULES],
                         ids=[r[0] for r in RULES])
def test_rule(write: WriteJob, load: Load, body: str, key: str, text: str) -> None:
    path = write("a.toml", "[jobs.job1]\n" + body)
    result = load()
    assert result.jobs == ()
    assert len(result.violations) == 1, result.violations
    violation = result.violations[0]
    assert violation.job == "job1"
    assert violation.key == key
    assert text in violation.message
    assert violation.source.startswith(str(path) if os.path.isabs(violation.source)
                                       else "")
    assert ":" in violation.source  # path:line
    assert "\n" not in violation.message


def test_single_instance_needs_a_database(write: WriteJob, load: Load) -> None:
    write("a.toml", '[jobs.x]\n' + OK + 'mode = "single_instance"\n')
    assert load().ok
    result = load(database="none")
    assert [(v.key, "needs a database" in v.message) for v in result.violations] == [
        ("mode", True)
    ]


@pytest.mark.parametrize(
    ("table", "text"),
    [
        ('[jobs.""]', "missing or blank id"),
        ('[jobs."a b"]', "may only hold letters"),
        ('[jobs."caf\u00e9"]', "may only hold letters"),
        (f'[jobs.{"x" * 201}]', "at most 200"),
    ],
    ids=["blank", "space", "non-ascii", "too-long"],
)
def test_bad_ids(write: WriteJob, load: Load, table: str, text: str) -> None:
    write("a.toml", table + "\n" + OK)
    (violation,) = load().violations
    assert text in violation.message
    assert violation.source.endswith(":1")


def test_id_of_200_chars_is_fine(write: WriteJob, load: Load) -> None:
    write("a.toml", f"[jobs.{'x' * 200}]\n" + OK)
    assert load().ok


# --- file-level problems --------------------------------------------------------------


def test_malformed_toml_names_the_line(write: WriteJob, load: Load) -> None:
    write("a.toml", '[jobs.x]\ncron = "0 * * * * *"\ncommand = [\n"true"\nbroken =\n')
    (violation,) = load().violations
    assert violation.message.startswith("malformed TOML")
    assert violation.source.endswith("a.toml:5")


def test_non_utf8_file(jobs_dir: Path, load: Load) -> None:
    (jobs_dir / "a.toml").write_bytes(b'[jobs.x]\ndescription = "caf\xe9"\n')
    (violation,) = load().violations
    assert "UTF-8" in violation.message
    assert violation.source.endswith("a.toml:2")


def test_unknown_top_level_key(write: WriteJob, load: Load) -> None:
    write("a.toml", 'job = 1\n[jobs.x]\n' + OK)
    (violation,) = load().violations
    assert (violation.key, violation.source.rsplit(":", 1)[1]) == ("job", "1")


def test_jobs_must_be_a_table(write: WriteJob, load: Load) -> None:
    write("a.toml", 'jobs = 3\n')
    (violation,) = load().violations
    assert violation.key == "jobs" and "table" in violation.message


def test_job_must_be_a_table(write: WriteJob, load: Load) -> None:
    write("a.toml", '[jobs]\nx = 3\n')
    (violation,) = load().violations
    assert violation.job == "x" and violation.source.endswith(":2")


def test_array_of_tables_is_not_jobs(write: WriteJob, load: Load) -> None:
    write("a.toml", '[[jobs]]\ncron = "0 * * * * *"\n')
    (violation,) = load().violations
    assert violation.key == "jobs"


def test_an_empty_file_is_a_warning_and_others_still_load(write: WriteJob, load: Load) -> None:
    """Issue 24: an empty jobs.d/empty.toml made `run` exit 1 and `list` refuse. It is
    valid TOML with no jobs: a warning."""
    write("empty.toml", "")
    write("comments.toml", "# nothing yet\n")
    write("real.toml", '[jobs.a]\ncron = "0 * * * * *"\ncommand = ["true"]\n')
    result = load()
    assert result.violations == () and result.defined == 1
    assert sorted(v.source.rsplit("/", 1)[-1] for v in result.warnings) == [
        "comments.toml", "empty.toml"]
    assert all("defines no jobs" in v.message for v in result.warnings)


def test_unknown_top_level_key_has_its_line_and_a_did_you_mean(write: WriteJob,
                                                                load: Load) -> None:
    """Issue 24: `[job.singular]` said "unknown top-level key 'job'" with no line."""
    write("a.toml", '# one job\n[job.singular]\nevery = "1m"\ncommand = ["true"]\n')
    (violation,) = load().violations
    assert violation.source.endswith("a.toml:2") and violation.key == "job"
    assert "did you mean 'jobs'" in violation.message


def test_files_that_look_like_job_files_but_are_not_read_are_warned_about(
        write: WriteJob, load: Load, jobs_dir: Path) -> None:
    """Issue 24: jobs.d/x.tml and x.yaml were ignored without a word."""
    write("real.toml", '[jobs.a]\ncron = "0 * * * * *"\ncommand = ["true"]\n')
    for name in ("x.tml", "x.yaml", "y.yml", "z.TOML", "old.toml~", "old.toml.bak",
                 "off.toml.disabled", "README.md", ".hidden.yaml"):
        (jobs_dir / name).write_text("")
    result = load()
    assert result.violations == ()
    assert sorted(v.source.rsplit("/", 1)[-1] for v in result.warnings) == [
        "x.tml", "x.yaml", "y.yml", "z.TOML"]
    assert all("not read: only *.toml files" in v.message for v in result.warnings)


def test_missing_jobs_dir(tmp_path: Path, load: Load, jobs_dir: Path) -> None:
    jobs_dir.rmdir()
    (violation,) = load().violations
    assert "does not exist" in violation.message


def test_jobs_dir_is_a_file(tmp_path: Path, load: Load, jobs_dir: Path) -> None:
    jobs_dir.rmdir()
    jobs_dir.write_text("")
    (violation,) = load().violations
    assert "not a directory" in violation.message


def test_symlink_loop_and_dangling_link(write: WriteJob, jobs_dir: Path, load: Load) -> None:
    write("good.toml", "[jobs.good]\n" + OK)
    (jobs_dir / "loop.toml").symlink_to(jobs_dir / "loop.toml")
    (jobs_dir / "gone.toml").symlink_to(jobs_dir / "missing-target.toml")
    (jobs_dir / "dir.toml").mkdir()
    result = load()
    by_file = {Path(v.source).name: v.message for v in result.violations}
    assert set(by_file) == {"loop.toml", "gone.toml", "dir.toml"}
    assert "cannot read" in by_file["loop.toml"]
    assert "cannot read" in by_file["gone.toml"]


def test_other_files_are_ignored(write: WriteJob, load: Load) -> None:
    write("README.md", "not toml")
    write("a.toml.bak", "garbage [")
    write("a.toml", "[jobs.a]\n" + OK)
    assert [j.id for j in load().jobs] == ["a"]


def test_duplicate_ids_across_files(write: WriteJob, load: Load) -> None:
    first = write("a.toml", "[jobs.same]\n" + OK)
    write("b.toml", "# comment\n\n[jobs.same]\n" + OK)
    (violation,) = load().violations
    assert violation.job == "same"
    assert violation.source.endswith("b.toml:3")
    assert f"{first}:1" in violation.message or "a.toml:1" in violation.message


def test_disabled_job_is_validated_but_its_target_not_imported(
    write: WriteJob, load: Load
) -> None:
    write("a.toml", '[jobs.off]\ncron = "0 * * * * *"\ntarget = "python:no_such_mod_q:f"\n'
                    "enabled = false\n")
    result = load()
    assert result.ok
    assert [(j.id, j.enabled) for j in result.jobs] == [("off", False)]
    assert result.enabled_jobs == ()
    write("a.toml", '[jobs.off]\ncron = "0 61 * * * *"\ncommand = ["x"]\nenabled = false\n')
    assert not load().ok


# --- warnings -----------------------------------------------------------------------


def test_warning_both_day_fields_restricted(write: WriteJob, load: Load) -> None:
    write("a.toml", '[jobs.w]\ncron = "0 0 0 */2 * 1"\ncommand = ["true"]\n')
    result = load()
    assert result.ok and len(result.jobs) == 1
    (warning,) = result.warnings
    assert warning.key == "cron"
    assert "day-of-month OR day-of-week" in warning.message
    assert warning.source.endswith("a.toml:2")


def test_no_warning_when_one_day_field_is_a_full_set(write: WriteJob, load: Load) -> None:
    write("a.toml", '[jobs.w]\ncron = "0 0 0 */1 * 1"\ncommand = ["true"]\n')
    assert load().warnings == ()


def test_warning_fires_closer_than_timeout(write: WriteJob, load: Load) -> None:
    write("a.toml", '[jobs.w]\ncron = "0 */5 * * * *"\ncommand = ["true"]\ntimeout = "10m"\n'
                    '[jobs.i]\nevery = "1m"\ncommand = ["true"]\ntimeout = "2m"\n'
                    '[jobs.fine]\nevery = "1h"\ncommand = ["true"]\ntimeout = "2m"\n')
    result = load()
    assert result.ok
    assert sorted((w.job, w.key) for w in result.warnings) == [("i", "timeout"),
                                                               ("w", "timeout")]
    assert sorted(w.source.rsplit(":", 1)[1] for w in result.warnings) == ["4", "8"]


def test_warning_fire_all_per_second(write: WriteJob, load: Load) -> None:
    write("a.toml", '[jobs.w]\ncron = "*/10 * * * * *"\ncommand = ["true"]\n'
                    'misfire_policy = "fire_all"\n'
                    '[jobs.m]\ncron = "0 * * * * *"\ncommand = ["true"]\n'
                    'misfire_policy = "fire_all"\n')
    result = load()
    assert [(w.job, w.key) for w in result.warnings] == [("w", "misfire_policy")]


def test_independent_checks_still_run_next_to_other_violations(write: WriteJob,
                                                               load: Load) -> None:
    write("a.toml", '[jobs.b]\nevery = "1m"\ntarget = "service:x.y.z"\nmode = "single"\n'
                    '[jobs.c]\ncron = "0 0 0 1 * MON"\ncommand = ["true"]\nmax_attempts = 0\n')
    result = load()
    assert sorted((v.job, v.key) for v in result.violations) == [
        ("b", "mode"), ("b", "target"), ("c", "max_attempts")]
    mode = next(v for v in result.violations if v.key == "mode")
    assert "did you mean 'single_instance'" in mode.message
    assert [v.source.rsplit(":", 1)[1] for v in result.violations] == ["3", "4", "8"]
    assert [(w.job, w.key) for w in result.warnings] == [("c", "cron")]


@pytest.mark.parametrize(("command", "shell", "text"), [
    ('["cronctl-no-such-command-xyz", "a"]', False, "not found on this process's PATH"),
    ('"/nonexistent/dir/tool --flag"', False, "'/nonexistent/dir/tool' does not exist"),
    ('"/"', False, "is not an executable file"),
    ('"cronctl-no-such-command-xyz | grep x"', True, "'cronctl-no-such-command-xyz' not found"),
])
def test_a_command_that_would_not_start_is_a_warning(write: WriteJob, load: Load, command: str,
                                                     shell: bool, text: str) -> None:
    """Issue 24: a command that does not exist passed `validate --strict`."""
    extra = "shell = true\n" if shell else ""
    write("a.toml", f'[jobs.a]\nevery = "1m"\n{extra}command = {command}\n')
    result = load()
    assert result.violations == () and result.defined == 1
    (warning,) = result.warnings
    assert (warning.job, warning.key) == ("a", "command") and text in warning.message
    assert warning.source.endswith(":4" if shell else ":3")


@pytest.mark.parametrize(("command", "shell", "own_path"), [
    ('["sh", "-c", "true"]', False, False),
    ('"cd /tmp && cronctl-no-such-command-xyz"', True, False),  # a builtin first: not checked
    ('"X=1 cronctl-no-such-command-xyz"', True, False),
    ('["mytool"]', False, True),  # found on the PATH of the job's env
])
def test_commands_that_start_or_cannot_be_judged_draw_no_warning(
        write: WriteJob, load: Load, tmp_path: Path, command: str, shell: bool,
        own_path: bool) -> None:
    extra = "shell = true\n" if shell else ""
    if own_path:
        tool = tmp_path / "bin" / "mytool"
        tool.parent.mkdir()
        tool.write_text("#!/bin/sh\n")
        tool.chmod(0o755)
        extra += f'env = {{ PATH = "{tool.parent}" }}\n'
    write("a.toml", f'[jobs.a]\nevery = "1m"\n{extra}command = {command}\n')
    result = load()
    assert result.violations == () and result.warnings == ()


def test_a_module_not_found_names_no_location_inside_python(write: WriteJob, load: Load,
                                                            tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch
                                                            ) -> None:
    """Issue 24: `cannot import module 'nosuchmodule': ModuleNotFoundError: ...
    (<frozen importlib._bootstrap>:1140)`: Python's own frame said nothing to the user. A
    missing import inside the user's module still names its line."""
    mods = tmp_path / "mods"
    mods.mkdir()
    (mods / "issue24_user_mod.py").write_text("import issue24_missing_dep\n\ndef f(): pass\n")
    monkeypatch.syspath_prepend(str(mods))
    write("a.toml", '[jobs.a]\nevery = "1m"\ntarget = "python:issue24_no_such_mod:f"\n'
                    '[jobs.b]\nevery = "1m"\ntarget = "python:issue24_user_mod:f"\n')
    a, b = sorted(load().violations, key=lambda v: v.job or "")
    assert a.message == ("cannot import module 'issue24_no_such_mod': ModuleNotFoundError: "
                         "No module named 'issue24_no_such_mod'")
    assert b.message.endswith(f"No module named 'issue24_missing_dep' "
                              f"({mods / 'issue24_user_mod.py'}:1)"), b.message


def test_every_alias_names_a_job_key_and_shadows_none() -> None:
    assert set(JOB_KEY_ALIASES.values()) <= set(JOB_KEYS)
    assert not set(JOB_KEY_ALIASES) & set(JOB_KEYS)
    assert all(alias == alias.lower() and "-" not in alias for alias in JOB_KEY_ALIASES)


def test_python_jobs_run_in_processes_by_default(write: WriteJob, load: Load) -> None:
    from cronctl.jobs.model import Isolation

    write("a.toml", '[jobs.p]\nevery = "1m"\ntarget = "python:os:getcwd"\n'
                    '[jobs.t]\nevery = "1m"\ntarget = "python:os:getcwd"\n'
                    'isolation = "thread"\n')
    result = load()
    assert result.ok
    by_id = {j.id: j.isolation for j in result.jobs}
    assert by_id == {"p": Isolation.PROCESS, "t": Isolation.THREAD}
    assert result.warnings == ()  # (every_instance: no retry can run beside it)


def test_warning_single_instance_on_threads(write: WriteJob, load: Load) -> None:
    write("a.toml", '[jobs.t]\nevery = "1m"\ntarget = "python:os:getcwd"\n'
                    'mode = "single_instance"\nisolation = "thread"\n'
                    '[jobs.p]\nevery = "1m"\ntarget = "python:os:getcwd"\n'
                    'mode = "single_instance"\n')
    result = load()
    assert result.ok
    (warning,) = result.warnings
    assert (warning.job, warning.key) == ("t", "isolation")
    assert warning.message == ('isolation = "thread" may run beside its retry after a freeze; '
                               "call ctx.still_owner() before side effects")
