"""What a command sees and how its end is described: its environment, its parent-death
signal, and the one-line errors for exits, signals and failed spawns."""

from __future__ import annotations

import errno
import json
import os
import signal
from collections.abc import Callable, Mapping
from datetime import UTC

from cronctl.dispatch.base import DispatchRequest
from cronctl.jobs.model import CommandTarget


def scheduled_iso(request: DispatchRequest) -> str:
    """The planned instant as ISO 8601 with ``Z``: ``2026-03-08T07:00:00Z``."""
    text = request.scheduled_at.astimezone(UTC).replace(tzinfo=None).isoformat()
    return text + "Z"


# What a process-isolated Python attempt gets (cronctl.dispatch.worker): the scheduler's
# sys.path (JSON) and the job's payload (JSON).
WORKER_PATH = "CRONCTL_WORKER_PATH"
WORKER_PAYLOAD = "CRONCTL_WORKER_PAYLOAD"
# Set when the scheduler runs with --allow-insecure: the worker then loads, with a
# WARNING, Python files its import guard would refuse (docs/trust.md).
WORKER_INSECURE = "CRONCTL_WORKER_INSECURE"

# What a child inherits of the scheduler's environment: what cron passes (PATH, HOME,
# SHELL, LOGNAME, USER, the locale, TZ), and PYTHONUNBUFFERED (the unit sets it) so that
# Python jobs' lines reach the log as they are printed. Nothing else: the rest is the
# scheduler's own (CRONCTL_DATABASE_URL with its password, PGPASSWORD, NOTIFY_SOCKET,
# CREDENTIALS_DIRECTORY, ...). A job passes what else it needs in its own env.
INHERITED = frozenset(("PATH", "HOME", "SHELL", "LOGNAME", "USER", "LANG", "LANGUAGE", "TZ",
                       "PYTHONUNBUFFERED"))
DEFAULT_PATH = "/usr/local/bin:/usr/bin:/bin"


def child_environ() -> dict[str, str]:
    """The environment every child (job command, notify command) starts from, like
    cron's: :data:`INHERITED` and ``LC_*`` of the scheduler's, ``PATH`` defaulted."""
    env = {k: v for k, v in os.environ.items() if k in INHERITED or k.startswith("LC_")}
    env.setdefault("PATH", DEFAULT_PATH)
    return env


def command_env(request: DispatchRequest, target: CommandTarget,
                account: Mapping[str, str] | None = None) -> dict[str, str]:
    """:func:`child_environ` + ``account`` (``HOME``, ``USER``, ``LOGNAME``, ``SHELL`` of
    the job's ``user``) + the job's ``env`` + the ``CRONCTL_*`` variables (these win)."""
    env = child_environ()
    if account:
        env.update(account)
    env.update(target.env)
    env.update(
        CRONCTL_JOB_ID=request.job.id,
        CRONCTL_EXECUTION_ID="" if request.execution_id is None else str(request.execution_id),
        CRONCTL_OCCURRENCE_ID=request.occurrence_id,
        CRONCTL_SCHEDULED_AT=scheduled_iso(request),
        CRONCTL_ATTEMPT=str(request.attempt),
        CRONCTL_FENCING_TOKEN="" if request.fencing_token is None else str(request.fencing_token),
        CRONCTL_PARAMETERS=json.dumps(dict(request.job.parameters), default=str),
        CRONCTL_ORIGIN=str(request.origin),
    )
    return env


def exit_text(returncode: int) -> str:
    name = signal_name(returncode)
    return f"exit code {returncode}" if name is None else f"killed by {name}"


def signal_name(returncode: int) -> str | None:
    """The name of the signal that ended a child (``returncode < 0``), else ``None``."""
    if returncode >= 0:
        return None
    try:
        return signal.Signals(-returncode).name
    except ValueError:
        return f"signal {-returncode}"


def unsent_kill_text(returncode: int) -> str:
    """The error of a child that ended by itself: a SIGKILL the scheduler did not send
    is most often the kernel's out-of-memory killer (or a memory cgroup)."""
    if returncode == -signal.SIGKILL:
        return "killed by SIGKILL (out of memory?)"
    return exit_text(returncode)


def spawn_error(exc: OSError, argv: list[str], target: CommandTarget) -> str:
    program = argv[0]
    if target.cwd and isinstance(exc, FileNotFoundError) and exc.filename == target.cwd:
        return f"working directory not found: {target.cwd}"
    if isinstance(exc, FileNotFoundError):
        return f"command not found: {program}"
    if isinstance(exc, PermissionError) or exc.errno == errno.EACCES:
        return f"permission denied: {exc.filename or program}"
    if isinstance(exc, NotADirectoryError):
        return f"not a directory: {exc.filename or target.cwd or program}"
    return f"cannot start {program}: {exc.strerror or exc}"


def exec_refused(exc: OSError, target: CommandTarget) -> bool:
    """Whether starting failed because of the program itself (not found, not executable,
    not a program): another attempt would fail the same way, so it is not retried. A
    missing working directory may be a mount that comes back, and a full process table
    (EAGAIN) or file table (EMFILE) passes: those are retried."""
    if target.cwd and exc.filename == target.cwd:
        return False
    return exc.errno in (errno.ENOENT, errno.EACCES, errno.ENOEXEC, errno.ENOTDIR,
                         errno.EISDIR)


_PR_SET_PDEATHSIG = 1


def parent_death_signal() -> Callable[[], None] | None:
    """A ``preexec_fn`` that arms SIGKILL for when the spawning thread exits, or None
    where ``prctl`` is unavailable (not Linux). Resolved here, in the parent: the child
    between fork and exec must not import or allocate more than it has to."""
    try:
        import ctypes

        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    parent = os.getpid()
    kill = int(signal.SIGKILL)

    def arm() -> None:
        prctl(_PR_SET_PDEATHSIG, kill, 0, 0, 0)
        if os.getppid() != parent:  # the parent died before the signal was armed
            os.kill(os.getpid(), signal.SIGKILL)

    return arm
