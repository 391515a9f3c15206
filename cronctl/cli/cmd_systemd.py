"""``cronctl systemd-unit``: print a unit file for this installation.

Every value that comes from the user (the executable's path, ``--config``,
``--jobs-dir``, ``--database``, ``--user``) is written so that systemd reads back exactly
that value (systemd.syntax(7), systemd.service(5) "COMMAND LINES"): ``%`` is doubled (a
specifier otherwise), ``ExecStart=`` words with spaces, quotes, backslashes or ``;`` are
double-quoted with C-style escapes, and ``$`` in an argument is doubled (a variable
otherwise). What a unit file cannot hold is refused with one ``error:`` line naming the
option, never written half-right: control characters (a newline would start a new
directive), text that is not UTF-8, a working directory ending in whitespace or a
backslash (systemd trims the one and continues the line at the other), quotes or
backslashes in the executable's path (systemd refuses to run it), and a database
password (a unit file is readable by every user).
"""

from __future__ import annotations

import os
import re
import shutil
import sys
import unicodedata
from pathlib import Path
from typing import Annotated

import typer

from cronctl import argtypes
from cronctl.cli.options import global_options
from cronctl.cli.shared import MAN_LINKS, MAN_PAGES, man_finds_pages, man_page
from cronctl.errors import UsageError
from cronctl.escaping import printable
from cronctl.options import GlobalOptions

UNIT_TEMPLATE = """\
[Unit]
Description=cronctl scheduler
Documentation={docs}
Wants=network-online.target
After=network-online.target{after}

[Service]
Type=notify
NotifyAccess=main
ExecStart={exec_start}
ExecReload=/bin/kill -HUP $MAINPID
{user}WorkingDirectory={workdir}
StateDirectory=cronctl
# The state (job output, parameters) is for the service's user alone.
StateDirectoryMode=0700
UMask=0077
Environment=PYTHONUNBUFFERED=1
# cronctl lets running executions finish for shutdown_timeout, then cancels them.
KillSignal=SIGTERM
KillMode=mixed
TimeoutStopSec={stop_timeout}
WatchdogSec={watchdog}
Restart=on-failure
RestartSec=5
# Each command attempt runs in a cgroup of its own below this unit's, and ends with it,
# whatever it started (cronctl.toml(5), cgroup).
Delegate=yes
Environment=CRONCTL_CGROUP_DELEGATED=1

# Hardening (systemd-analyze security). The commands of the jobs run inside it too: give
# a job what it needs beyond it in a drop-in (systemctl edit), e.g. ReadWritePaths=/srv/x.
ProtectSystem=strict
{rw_paths}ProtectHome=read-only
PrivateTmp=yes
PrivateDevices=yes
ProtectKernelTunables=yes
ProtectKernelModules=yes
ProtectKernelLogs=yes
ProtectClock=yes
ProtectHostname=yes
PrivateMounts=yes
RestrictNamespaces=yes
RestrictRealtime=yes
RestrictSUIDSGID=yes
LockPersonality=yes
NoNewPrivileges=yes
SystemCallArchitectures=native
SystemCallFilter=@system-service
SystemCallFilter=~@mount @swap @reboot @raw-io @module @debug @cpu-emulation @obsolete @clock
SystemCallErrorNumber=EPERM
RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6
# Running a job as its `user` needs setuid/setgid/setgroups; ending what a job left
# behind needs kill (its processes run as other users). Nothing else.
CapabilityBoundingSet=CAP_SETUID CAP_SETGID CAP_KILL
# Relaxed: ProtectControlGroups= would make the delegated cgroup read-only.
ProtectControlGroups=no
# Relaxed: ProtectProc=invisible and ProcSubset=pid would hide the processes of the jobs'
# users and /proc/sys/kernel (the boot id that tells a process from a reused pid).
ProtectProc=default
# Relaxed: MemoryDenyWriteExecute= would break the JIT of a job's runtime (Java, Node.js).
MemoryDenyWriteExecute=no
# Relaxed: PrivateUsers= and PrivateNetwork= would hide the jobs' users and the network.

[Install]
WantedBy=multi-user.target
"""

# `cronctl serve`: stateless (everything is in the database), so plain Type=exec, a quick
# stop, and sandboxing; any number of replicas may run (e.g. as cronctl-serve@.service).
SERVE_TEMPLATE = """\
[Unit]
Description=cronctl HTTP API and dashboard
Documentation={docs}
Wants=network-online.target
After=network-online.target{after}

[Service]
Type=exec
ExecStart={exec_start}
{user}WorkingDirectory={workdir}
UMask=0077
Environment=PYTHONUNBUFFERED=1
# Where the scheduler's unit keeps the state (StateDirectory=cronctl): the same default
# database.
Environment=STATE_DIRECTORY=/var/lib/cronctl
KillSignal=SIGTERM
TimeoutStopSec={stop_timeout}
Restart=on-failure
RestartSec=5

# Hardening (systemd-analyze security): never root, no capability, the file system
# read-only (no StateDirectory=: the scheduler's state directory is not its to own).
{rw_paths}ProtectSystem=strict
ProtectHome=yes
PrivateTmp=yes
PrivateDevices=yes
PrivateUsers=yes
ProtectKernelTunables=yes
ProtectKernelModules=yes
ProtectKernelLogs=yes
ProtectControlGroups=yes
ProtectClock=yes
ProtectHostname=yes
RestrictNamespaces=yes
RestrictRealtime=yes
RestrictSUIDSGID=yes
LockPersonality=yes
MemoryDenyWriteExecute=yes
NoNewPrivileges=yes
RemoveIPC=yes
CapabilityBoundingSet=
AmbientCapabilities=
SystemCallArchitectures=native
SystemCallFilter=@system-service
SystemCallFilter=~@privileged @resources
SystemCallErrorNumber=EPERM
# It listens on TCP or on a Unix socket, and reaches PostgreSQL over either.
RestrictAddressFamilies=AF_INET AF_INET6 AF_UNIX
DevicePolicy=closed
KeyringMode=private
# Relaxed: PrivateNetwork= and IPAddressDeny= would cut it off from its clients.
# Relaxed: ProtectProc=invisible and ProcSubset=pid would hide the scheduler's process and
# the boot id, which tell the status page how a live node on this host ends commands.

[Install]
WantedBy=multi-user.target
"""

MAX_STOP_TIMEOUT = 36525 * 86400  # 100 years, as every duration (systemd takes more)
# After shutdown_timeout cronctl cancels what still runs (SIGTERM, SIGKILL after the
# default kill_timeout of 10 s) and drains logs (up to 5 s): TimeoutStopSec must cover it.
STOP_MARGIN = 15
SERVE_STOP_TIMEOUT = 45  # `--serve`: the HTTP server's TimeoutStopSec unless given
# A word that systemd reads as written, unquoted (after %-doubling).
_PLAIN_WORD = re.compile(r"[A-Za-z0-9_./:@+=,%-]+")
# User=: a user name (what useradd and systemd's relaxed check both take) or a uid.
_USER = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,255}\$?")
_MAX_UID = 2**32 - 2  # (uid_t) -1 is "no user"


def _representable(what: str, text: str) -> None:
    """Refuse what no unit file can hold: control characters (C0, C1, DEL, the line and
    paragraph separators) and lone surrogates (argv bytes that are not UTF-8)."""
    for ch in text:
        category = unicodedata.category(ch)
        if category == "Cs":
            raise UsageError(f"{what}: {_shown(text)} is not valid UTF-8, which a unit file "
                             "must be; rename it")
        if category == "Cc" or ch in "\u2028\u2029":
            raise UsageError(f"{what}: {_shown(text)} contains the control character "
                             f"{printable(ch)}, which a unit file cannot hold; rename it")


def _shown(text: str) -> str:
    return repr(text) if len(text) <= 200 else repr(text[:200]) + "..."


def exec_word(text: str, *, executable: bool = False) -> str:
    """One word of ``ExecStart=``, quoted as systemd needs it to read back ``text``."""
    escaped = text.replace("%", "%%")
    if not executable:
        escaped = escaped.replace("$", "$$")  # systemd expands $VAR in arguments only
    if _PLAIN_WORD.fullmatch(text):
        return escaped
    return '"' + escaped.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _exec_start(argv: list[str], names: list[str]) -> str:
    executable = argv[0]
    _representable(names[0], executable)
    if not executable.startswith("/"):
        raise UsageError(f"{names[0]}: {_shown(executable)} is not an absolute path, which "
                         "ExecStart= needs; run cronctl by its full path")
    if any(ch in executable for ch in "\"'\\"):
        raise UsageError(f"{names[0]}: {_shown(executable)} contains a quote or a backslash, "
                         "and systemd refuses to run such an executable; install cronctl "
                         "under another path")
    words = [exec_word(executable, executable=True)]
    for arg, name in zip(argv[1:], names[1:], strict=True):
        _representable(name, arg)
        words.append(exec_word(arg))
    return " ".join(words)


def _directory(what: str, path: Path) -> str:
    """A ``WorkingDirectory=`` value: taken literally by systemd except for specifiers."""
    text = str(path)
    _representable(what, text)
    if text != text.rstrip() or text.endswith("\\"):
        raise UsageError(f"{what}: {_shown(text)} ends in whitespace or a backslash, which "
                         "WorkingDirectory= cannot hold; rename the directory")
    return text.replace("%", "%%")


def _user_line(user: str | None) -> str:
    if user is None:
        return ""
    if not _USER.fullmatch(user) or (user.isdecimal() and int(user) > _MAX_UID):
        raise UsageError(f"--user: {_shown(user)} is not a user name (letters, digits, "
                         "'_', '.' and '-', not starting with '.' or '-') or a numeric uid")
    return f"User={user}\n"


STATE_DIR = "/var/lib/cronctl"  # StateDirectory=cronctl


def _serve_user_line(user: str | None) -> str:
    if user is None:
        return "DynamicUser=yes\n"
    if user in ("root", "0"):
        raise UsageError("--user: the serve unit never runs as root; name the user that "
                         "owns the state (or leave --user out: DynamicUser=yes)")
    return _user_line(user)


def _rw_lines(sqlite_dir: str | None, serve: bool) -> str:
    """``ReadWritePaths=`` of a SQLite database's directory (its -wal and -shm files are
    made beside it) when the unit does not own it already, with the reason."""
    if sqlite_dir is None or (not serve and (sqlite_dir + "/").startswith(STATE_DIR + "/")):
        return ""
    _representable("--database", sqlite_dir)
    word = exec_word(sqlite_dir).replace("$$", "$")  # (no variables here; % still doubled)
    why = ("# SQLite: triggers, cancels and the audit trail are written to the state file.\n"
           if serve else "# The SQLite state file lives outside the state directory.\n")
    return f"{why}ReadWritePaths={word}\n"


def render_unit(
    executable: str | list[str],
    config: Path | None,
    user: str | None,
    workdir: Path,
    stop_timeout: int,
    after: str = "",
    *,
    jobs_dir: Path | None = None,
    database: str | None = None,
    docs: tuple[Path, ...] = (),
    serve: bool = False,
    watchdog: int = 10,
    sqlite_dir: str | None = None,
    man_links: bool = True,
) -> str:
    """The unit file, or :class:`UsageError` for a value it cannot hold (module doc).
    ``man_links``: name the pages as ``man:`` too (only where ``man`` finds them, or
    ``systemd-analyze verify`` fails the unit); the ``docs`` files are named either way."""
    argv = [executable] if isinstance(executable, str) else list(executable)
    names = ["the cronctl executable"] * len(argv)
    for option, value in (("--config", config), ("--jobs-dir", jobs_dir),
                          ("--database", database)):
        if value is not None:
            argv += [option, str(value)]
            names += [option, option]
    argv.append("serve" if serve else "run")
    names.append(argv[-1])
    exec_start = _exec_start(argv, names)
    return (SERVE_TEMPLATE if serve else UNIT_TEMPLATE).format(
        docs=" ".join([*(MAN_LINKS if man_links or not docs else ()),
                       *(_file_uri(p) for p in docs)]),
        after=f" {after}" if after else "",
        exec_start=exec_start,
        user=_serve_user_line(user) if serve else _user_line(user),
        rw_paths=_rw_lines(sqlite_dir, serve),
        workdir=_directory("--config" if config is not None else "WorkingDirectory", workdir),
        stop_timeout=stop_timeout,
        watchdog=watchdog,
    )


def _file_uri(path: Path) -> str:
    """A ``Documentation=`` ``file:`` URI: percent-encoded, then ``%`` doubled (a systemd
    specifier otherwise)."""
    return path.absolute().as_uri().replace("%", "%%")


def _executable() -> list[str]:
    """The console script of this installation (beside its interpreter), else one on
    PATH, else this interpreter with ``-I``: ``python -m cronctl`` run in the state
    directory would import a ``typer.py`` (or any module) lying there."""
    beside = Path(sys.executable).parent / "cronctl"
    if beside.is_file() and os.access(beside, os.X_OK):
        return [str(beside.absolute())]
    found = shutil.which("cronctl")
    if found:
        return [os.path.abspath(found)]
    return [sys.executable, "-I", "-m", "cronctl"]


def _database(value: str) -> str:
    """``--database`` as the service must see it: a relative SQLite path made absolute
    (the service runs elsewhere), and never with a password in it."""
    from cronctl.config import normalize_database
    from cronctl.store.urls import password_of

    try:
        url = normalize_database(value, Path.cwd())
    except ValueError as exc:
        raise UsageError(f"--database: {exc}") from None
    if password_of(url):
        raise UsageError("--database: the URL holds a password, and a unit file is readable "
                         "by every user; put the URL in the config file or in "
                         "CRONCTL_DATABASE_URL through an EnvironmentFile= instead")
    return url


def _sqlite_dir(options: GlobalOptions, database: str | None) -> str | None:
    """The directory of the SQLite state file the service will use: ``--database``, the
    config file's ``database``, else the state directory's ``cronctl.db``; ``None`` for
    PostgreSQL (or a configuration that cannot be read)."""
    from cronctl.config import load_config
    from cronctl.errors import CronctlError
    from cronctl.store.urls import kind_of, sqlite_path

    url = database
    if url is None:
        try:
            config = load_config(options)
        except CronctlError:
            return None
        url = config.database if config.path is not None and _sets_database(
            config.path) else f"sqlite:///{STATE_DIR}/cronctl.db"
    if kind_of(url) != "sqlite":
        return None
    path = sqlite_path(url)
    return os.path.dirname(os.path.abspath(path)) if path else None


def _sets_database(path: Path) -> bool:
    import tomllib

    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    table = data.get("scheduler")
    return isinstance(table, dict) and "database" in table


def _watchdog(options: GlobalOptions) -> int:
    """``WatchdogSec``: twice the config's ``heartbeat_interval``. A peer takes a silent
    node's attempts over after three intervals (its lease,
    docs/behaviour.md#durability-and-clusters); a scheduler frozen whole (its command supervisor
    too) misses its watchdog pings first, and systemd kills its control group, commands included,
    before anyone may run them again."""
    import math

    from cronctl.config import load_config
    from cronctl.errors import CronctlError

    try:
        beat = load_config(options).heartbeat_interval.total_seconds()
    except CronctlError:
        beat = 5.0  # (the stop timeout has warned already)
    return max(2, math.floor(2 * beat))


def _stop_timeout(options: GlobalOptions, given: int | None) -> int:
    """``--stop-timeout``, or the config's ``shutdown_timeout`` plus :data:`STOP_MARGIN`;
    a given one too short for the config draws one warning (systemd would SIGKILL the
    executions that cronctl was still letting finish)."""
    import math

    from cronctl.config import load_config
    from cronctl.errors import CronctlError

    try:
        shutdown = load_config(options).shutdown_timeout.total_seconds()
    except CronctlError as exc:
        shutdown = 30.0
        typer.echo(f"warning: cannot read the configuration ({exc}); assuming "
                   "shutdown_timeout = 30s", err=True)
    needed = math.ceil(shutdown) + STOP_MARGIN
    if given is None:
        return min(needed, MAX_STOP_TIMEOUT)
    if given < needed:
        typer.echo(f"warning: --stop-timeout {given} is shorter than shutdown_timeout "
                   f"({math.ceil(shutdown)}s) + {STOP_MARGIN}s to cancel and drain: systemd "
                   "would SIGKILL executions cronctl is still letting finish; use at least "
                   f"{needed}, or leave --stop-timeout out", err=True)
    return given


def register(app: typer.Typer) -> None:
    @app.command("systemd-unit")
    def systemd_unit(
        ctx: typer.Context,
        user: Annotated[
            str | None, typer.Option("--user", help="Run the service as this user.")
        ] = None,
        postgres: Annotated[
            bool,
            typer.Option("--postgres", help="Order the unit after postgresql.service."),
        ] = False,
        stop_timeout: Annotated[
            int | None,
            typer.Option(
                "--stop-timeout",
                parser=argtypes.count("--stop-timeout", maximum=MAX_STOP_TIMEOUT),
                help="TimeoutStopSec (seconds); default: the config's shutdown_timeout "
                     f"+ {STOP_MARGIN}. A shorter one is warned about.",
            ),
        ] = None,
        serve: Annotated[
            bool,
            typer.Option("--serve", help="The unit of 'cronctl serve' (the HTTP API and "
                         "dashboard) instead of the scheduler's."),
        ] = False,
    ) -> None:
        """Print a systemd unit file (Type=notify) for this installation; with --serve, the
        unit of 'cronctl serve'."""
        options = global_options(ctx)
        config = options.config.absolute() if options.config is not None else None
        if config is not None:
            _representable("--config", str(config))
            config = config.resolve()
        workdir = config.parent if config is not None else Path("/var/lib/cronctl")
        jobs_dir = options.jobs_dir.absolute() if options.jobs_dir is not None else None
        database = _database(options.database) if options.database else None
        sqlite_dir = _sqlite_dir(options, database)
        if serve:  # no executions to let finish: shutdown_timeout is not its concern
            stop_timeout = SERVE_STOP_TIMEOUT if stop_timeout is None else stop_timeout
            if user is None and sqlite_dir is not None:
                typer.echo("warning: the serve unit runs as a dynamic user, which cannot read "
                           "a SQLite state file only its scheduler's user may read: give "
                           "--user that user (not root), or use PostgreSQL", err=True)
        else:
            stop_timeout = _stop_timeout(options, stop_timeout)
        typer.echo(
            render_unit(
                _executable(),
                config,
                user,
                workdir,
                stop_timeout,
                after="postgresql.service" if postgres else "",
                jobs_dir=jobs_dir,
                database=database,
                # `man:` finds nothing a venv installed (its share/man is not on systemd's
                # MANPATH): the installed pages themselves, by file name, and `man:` links
                # only where man finds them
                docs=tuple(p for p in map(man_page, MAN_PAGES) if p is not None),
                man_links=man_finds_pages(),
                serve=serve,
                watchdog=_watchdog(options),
                sqlite_dir=sqlite_dir,
            ),
            nl=False,
        )
