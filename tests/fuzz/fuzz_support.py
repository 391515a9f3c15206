"""Shared settings of the fuzz tests.

The default example counts are modest so ``make test`` runs the whole directory in well
under a minute; ``CRONCTL_FUZZ_EXAMPLES=5000 pytest tests/fuzz`` runs a longer campaign
(each test scales its own default, and its pytest timeout, by the same factor).

A settings object, not a global profile: loading a profile here would change the
hypothesis defaults of every other test in the same pytest process.
"""

from __future__ import annotations

import os
import re
import signal
import sys
import time
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import pytest
from hypothesis import HealthCheck, settings

Test = TypeVar("Test", bound=Callable[..., Any])

_BASE = 100  # the unscaled default of CRONCTL_FUZZ_EXAMPLES


def _requested() -> int:
    raw = os.environ.get("CRONCTL_FUZZ_EXAMPLES", "").strip()
    try:
        return max(1, int(raw)) if raw else _BASE
    except ValueError:
        return _BASE


# pyproject's per-test pytest-timeout, meant for the default scale. A campaign runs each
# test that many times longer, so its timeout grows by the same factor (a 5000-example
# run would otherwise be cut off at two minutes and reported as a hang).
_TEST_TIMEOUT = 120


def scaled_timeout() -> float:
    """Seconds a fuzz test may take at the requested scale (never below the default)."""
    return _TEST_TIMEOUT * max(1.0, _requested() / _BASE)


def fuzz_settings(default_examples: int) -> Callable[[Test], Test]:
    """``default_examples`` at the default scale; proportionally more when
    ``CRONCTL_FUZZ_EXAMPLES`` asks for more (it is the count of a test whose default is
    100), with the test's timeout scaled alike (:func:`scaled_timeout`)."""
    examples = max(1, default_examples * _requested() // _BASE)
    chosen = _settings(examples)
    timeout = pytest.mark.timeout(scaled_timeout())

    def apply(test: Test) -> Test:
        return timeout(chosen(test))  # type: ignore[no-any-return]

    return apply


def _settings(examples: int) -> settings:
    return settings(
        max_examples=examples,
        deadline=None,  # hangs are caught by `deadline()` below, slowness is not a bug
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                               HealthCheck.filter_too_much,
                               HealthCheck.function_scoped_fixture],
        # make test (and CI) run the same examples every time, so a run never fails on
        # luck; a longer run (CRONCTL_FUZZ_EXAMPLES) explores new ones.
        derandomize="CRONCTL_FUZZ_EXAMPLES" not in os.environ,
        print_blob=True,
    )


class Hang(AssertionError):
    """One example ran past its deadline: a hang (or an unbounded loop) in the product."""


@contextmanager
def deadline(seconds: float) -> Iterator[None]:
    """Fail the current example with :class:`Hang` when it runs longer than ``seconds``.

    SIGALRM, so it interrupts pure-Python loops and sleeps; pytest runs tests in the main
    thread (also under xdist), where signals are delivered. pytest-timeout arms the same
    timer for the whole test, so its remaining time is put back afterwards.
    """

    def expired(signum: int, frame: object) -> None:
        raise Hang(f"example ran longer than {seconds:g}s")

    previous = signal.signal(signal.SIGALRM, expired)
    outer_left, outer_interval = signal.setitimer(signal.ITIMER_REAL, seconds)
    started = time.monotonic()
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        if outer_left > 0:
            left = max(outer_left - (time.monotonic() - started), 0.001)
            signal.setitimer(signal.ITIMER_REAL, left, outer_interval)


# --- the real CLI entry point, in process ------------------------------------------------


@dataclass(frozen=True)
class Outcome:
    argv: tuple[str, ...]
    code: int
    out: str
    err: str

    def __str__(self) -> str:
        return (f"cronctl {' '.join(map(repr, self.argv))} -> {self.code}\n"
                f"--- stdout:\n{self.out[:3000]}\n--- stderr:\n{self.err[:6000]}")


def clean_environ(**extra: str) -> dict[str, str | None]:
    """Overrides for ``os.environ``: nothing that would steer cronctl (``None`` unsets)."""
    env: dict[str, str | None] = {
        k: None for k in os.environ
        if k.startswith("CRONCTL_") or k in ("STATE_DIRECTORY", "NOTIFY_SOCKET",
                                             "WATCHDOG_USEC", "INVOCATION_ID")
    }
    env.update({"NO_COLOR": "1", "COLUMNS": "200", "TERM": "dumb"})
    env.update(extra)
    return env


def cli(argv: list[str], cwd: Path, *, seconds: float = 20, **env: str) -> Outcome:
    """``cronctl ARGV`` through :func:`cronctl.cli.app.main`, as the console script runs
    it, with stdin empty, stdout/stderr captured and the exit code of its SystemExit.

    Anything else that escapes main() is what a user would see as a traceback: it is
    returned as exit code -1 with the formatted traceback on stderr.
    """
    from click.testing import CliRunner
    from hypothesis import reject

    from cronctl.cli.app import main

    if any("\x00" in arg for arg in argv):
        reject()  # no real argv holds a NUL (execve's strings end at one)

    runner = CliRunner()
    old_cwd = os.getcwd()
    old_path = list(sys.path)  # loading jobs appends the config's directory to sys.path
    code = 0
    with runner.isolation(input="", env=clean_environ(**env)) as streams:
        os.chdir(cwd)
        try:
            with deadline(seconds):
                main(list(argv))
        except SystemExit as exc:
            code = _exit_code(exc.code)
        except Hang:
            raise
        except BaseException:  # noqa: BLE001 - what a user would see as a traceback
            sys.stderr.write(traceback.format_exc())  # starts with _TRACEBACK
            code = -1
        finally:
            os.chdir(old_cwd)
            sys.path[:] = old_path
            sys.stdout.flush()
            sys.stderr.flush()
        out = streams[0].getvalue().decode("utf-8", "replace")
        err = streams[1].getvalue().decode("utf-8", "replace")
    return Outcome(tuple(argv), code, out, err)


def _exit_code(code: object) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    return 1  # SystemExit("message"): Python prints the message and exits 1


_TRACEBACK = "Traceback (most recent call last)"
_LISTED = re.compile(r"error: (\d+) violation\(s\)")
_VERDICT = re.compile(
    r"(?:in)?valid: (?:(\d+) violations?)?(?:, )?(?:(\d+) warnings?)? in \d+ jobs?$"
    r"|valid: \d+ jobs?, no problems$"
)


def assert_clean(outcome: Outcome, *, allowed: tuple[int, ...] = (0, 1, 2, 3)) -> None:
    """The fuzzing contract: the command worked (0) or failed as a user error (1, 2, 3),
    never with a traceback, and every problem it reports is ONE line.

    A failure is one ``error: ...`` line on stderr (``warning:`` lines may come before
    it). Two shapes extend that: a command that refuses an invalid configuration lists
    its N violations first, one line each, then ``error: N violation(s)...``; and
    ``validate`` prints its violations and warnings on stdout, one line each, then its
    verdict (or one JSON document with ``--json``), leaving stderr empty.
    """
    assert _TRACEBACK not in outcome.err, str(outcome)
    assert _TRACEBACK not in outcome.out, str(outcome)
    assert outcome.code in allowed, str(outcome)
    if "validate" in outcome.argv and (outcome.code == 0 or not outcome.err.strip()):
        _assert_validate_output(outcome)  # else it failed before validating: error line
    if outcome.code == 0:
        return
    lines = [line for line in outcome.err.splitlines() if line.strip()]
    if not lines and "validate" in outcome.argv:
        return
    assert lines, str(outcome)
    assert lines[-1].startswith("error: "), str(outcome)
    listed = _LISTED.match(lines[-1])
    expected = int(listed.group(1)) + 1 if listed else 1
    warnings = sum(1 for line in lines[:-1] if line.startswith("warning: "))
    assert len(lines) - warnings == expected, str(outcome)


def _assert_validate_output(outcome: Outcome) -> None:
    if "--json" in outcome.argv:
        import json

        document = json.loads(outcome.out)  # exactly one document, nothing else
        assert document["ok"] is (outcome.code == 0), str(outcome)
        for problem in (*document["violations"], *document["warnings"]):
            assert "\n" not in problem["message"], str(outcome)
        return
    lines = [line for line in outcome.out.splitlines() if line.strip()]
    if not lines:
        assert "-q" in outcome.argv or "--quiet" in outcome.argv, str(outcome)
        return
    verdict = _VERDICT.match(lines[-1])
    assert verdict, str(outcome)
    counted = sum(int(n) for n in verdict.groups() if n)
    assert len(lines) - 1 == counted, str(outcome)
