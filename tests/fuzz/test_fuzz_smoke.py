"""A few of the fuzzers' findings through a real process (``python -m cronctl``): what
in-process runs cannot show, such as argv bytes that are not UTF-8, real stdout/stderr
encodings and the interpreter's own handling of an uncaught exception."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ONE_JOB = b'[jobs.a]\ncron = "0 * * * * *"\ncommand = ["true"]\n'


def _run(args: list[bytes], cwd: Path) -> subprocess.CompletedProcess[bytes]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CRONCTL_")}
    # Strict UTF-8 output, as Python has it in en_US.UTF-8 and most UTF-8 locales (under
    # C.UTF-8 it uses surrogateescape, which hides surrogate problems).
    env.update({"NO_COLOR": "1", "COLUMNS": "200", "LC_ALL": "C.UTF-8",
                "PYTHONIOENCODING": "utf-8:strict"})
    return subprocess.run([sys.executable.encode(), b"-m", b"cronctl", *args], cwd=cwd,
                          env=env, capture_output=True, timeout=60, check=False,
                          stdin=subprocess.DEVNULL)


@pytest.mark.parametrize(("files", "args", "codes"), [
    # argv bytes that are not UTF-8: Python passes them on as surrogates
    ({}, [b"next", b"\xff * * * *"], (2,)),
    ({}, [b"next", b"0 0 * * *", b"--tz", b"\xfe\xff"], (2,)),
    ({}, [b"next", b"\x1b[31m * * * *"], (2,)),
    # (3: the file does not exist, said in one line; issue 39)
    ({}, [b"--database", b"sqlite:///\xff", b"status"], (3,)),
    ({"jobs.d/\udcff.toml": b"garbage =\n"}, [b"validate"], (1,)),  # a file name byte 0xff
    ({"jobs.d/\udcff.toml": b"garbage =\n"}, [b"list"], (1,)),
    # times and counts at the edges
    ({}, [b"next", b"@every 1s", b"--from", b"9999-12-31T23:59:59Z"], (0, 2)),
    ({"jobs.d/a.toml": ONE_JOB}, [b"why", b"a", b"0001-01-01T00:00:00"], (0, 1, 3)),
    ({}, [b"next", b"* * * * *", b"-n", b"99999999999999999999"], (2,)),
    # files
    ({"jobs.d/a.toml": b"\xef\xbb\xbf" + ONE_JOB}, [b"validate"], (0,)),
    ({"jobs.d/a.toml": ONE_JOB + b"parameters = " + b"[" * 3000 + b"]" * 3000 + b"\n"},
     [b"validate"], (1,)),
    ({"cronctl.toml": b'[scheduler]\njobs_dir = "~nosuchuser_cronctl/j"\n'}, [b"list"], (1,)),
    ({}, [b"-c", b"a" * 300, b"validate"], (1,)),
    # issue 25 item 13: each a traceback before
    ({}, [b"cancel", b"--job", b"\xff"], (2,)),
    ({}, [b"logs", b"--job", b"\xff"], (2,)),
    ({}, [b"history", b"\xff"], (2,)),
    ({}, [b"--database", b"\xff", b"status"], (0, 1, 3)),
    ({}, [b"--database", b"a" * 300, b"status"], (2,)),
    ({}, [b"--database", b"postgresql://u@h:notaport/db", b"status"], (2,)),
    ({}, [b"--database", b"postgresql://u@[::1/db", b"status"], (2,)),
    ({}, [b"--database", b"POSTGRESQL://u@nohost.invalid:1/db", b"status"], (1,)),
    ({}, [b"--database", b"mysql://u@h/db", b"status"], (2,)),
])
def test_real_process(tmp_path: Path, files: dict[str, bytes], args: list[bytes],
                      codes: tuple[int, ...]) -> None:
    for name, data in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    proc = _run(args, tmp_path)
    err = proc.stderr.decode("utf-8", "replace")
    shown = f"{args!r} -> {proc.returncode}\n{proc.stdout!r}\n{err}"
    assert b"Traceback" not in proc.stderr, shown
    assert proc.returncode in codes, shown
    if proc.returncode and err.strip():
        lines = [line for line in err.splitlines() if line.strip()]
        assert lines[-1].startswith("error: "), shown
        assert "\x1b" not in err, shown
    proc.stderr.decode("utf-8")  # what was printed is valid UTF-8
