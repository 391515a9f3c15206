"""Line numbers for violations: tomllib gives none, so the loader finds them in the text."""

from __future__ import annotations

from pathlib import Path

from cronctl.jobs.toml_source import read_job_file

TEXT = '''\
# header comment
[jobs]

[jobs."quoted.id"]   # trailing comment
cron = "0 * * * * *"
description = """
command = "this line is inside a string"
"""
command = [
  "echo",
  "timeout = 'not a key'",
]
timeout = "1m"

[ jobs . 'literal-id' ]
"every" = "5m"
parameters.deep = 1
command = "true"

[jobs.sub]
every = "1m"
command = "true"

[jobs.sub.env]
A = "b"

[jobs.sub.parameters]
x = 1
'''


def test_lines_of_tables_and_keys(tmp_path: Path) -> None:
    path = tmp_path / "a.toml"
    path.write_text(TEXT)
    jobs, violations = read_job_file(path)
    assert violations == []
    by_id = {job.id: job for job in jobs}

    def line(job: str, key: str | None = None) -> int:
        source = by_id[job].source_of(key)
        return int(source.rsplit(":", 1)[1])

    assert line("quoted.id") == 4
    assert line("quoted.id", "cron") == 5
    assert line("quoted.id", "description") == 6
    assert line("quoted.id", "command") == 9  # not the text inside the string on line 7
    assert line("quoted.id", "timeout") == 13  # not the array item on line 11
    assert line("literal-id") == 15
    assert line("literal-id", "every") == 16
    assert line("literal-id", "parameters") == 17
    assert line("sub", "env") == 24
    assert line("sub", "parameters") == 27


def test_inline_and_dotted_forms(tmp_path: Path) -> None:
    path = tmp_path / "b.toml"
    path.write_text('jobs.a.cron = "0 * * * * *"\njobs.a.command = "x"\n\n'
                    'jobs.b = { every = "1m", command = "y" }\n')
    jobs, _ = read_job_file(path)
    sources = {job.id: (job.source, job.source_of("command")) for job in jobs}
    assert sources["a"] == (f"{path}:1", f"{path}:2")
    assert sources["b"] == (f"{path}:4", f"{path}:4")
