"""Helpers of the acceptance checks: run the ``cronctl`` executable as a user would."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

CRONCTL = Path(sys.executable).with_name("cronctl")


@dataclass(frozen=True)
class Result:
    args: tuple[str, ...]
    rc: int
    out: str
    err: str

    def json(self) -> Any:
        """stdout must be exactly one JSON document (json.loads rejects trailing text)."""
        return json.loads(self.out)

    def __str__(self) -> str:
        return (f"cronctl {' '.join(self.args)} -> {self.rc}\n"
                f"stdout:\n{self.out}\nstderr:\n{self.err}")


Run = Callable[..., Result]
Write = Callable[[str, str], Path]


def clean_env(**extra: str) -> dict[str, str]:
    """The caller's environment without anything that would steer cronctl."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("CRONCTL_") and k not in ("STATE_DIRECTORY", "NOTIFY_SOCKET",
                                                          "WATCHDOG_USEC")}
    env["NO_COLOR"] = "1"
    env["COLUMNS"] = "200"
    env.update(extra)
    return env


def assert_user_error(result: Result, rc: int) -> None:
    """A user error: the exit code, nothing on stdout, one line on stderr, no traceback."""
    assert result.rc == rc, str(result)
    assert "Traceback" not in result.err, str(result)
    assert result.out == "", str(result)
    lines = [line for line in result.err.splitlines() if line.strip()]
    assert lines, str(result)


def assert_one_error_line(result: Result, rc: int) -> str:
    """Exit ``rc`` with exactly one ``error: ...`` line on stderr (not usage boxes)."""
    assert_user_error(result, rc)
    lines = [line for line in result.err.splitlines() if line.strip()]
    assert len(lines) == 1, str(result)
    return lines[0]


def iso_z(text: str) -> datetime:
    """An ISO 8601 UTC time written with a trailing ``Z``."""
    assert isinstance(text, str) and text.endswith("Z"), text
    return datetime.fromisoformat(text[:-1] + "+00:00")
