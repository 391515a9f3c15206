"""The ``cronctl`` command. Each subcommand lives in its own ``cmd_*`` module with a
``register(app)`` function, imported only when its command runs (:data:`COMMANDS`); heavy
imports (SQLAlchemy, alembic, psycopg) stay inside the command bodies so that ``next``,
``validate`` and ``list`` start fast."""

from __future__ import annotations

import contextlib
import sys
from dataclasses import replace
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer
import typer.core
import typer.main

from cronctl.errors import CronctlError
from cronctl.options import GlobalOptions

# Each command and the module that defines it, in the order of `cronctl --help` (the
# everyday commands first). A command's module is imported when that command is run (or
# when help or completion lists them all): `cronctl next` must not pay for the imports
# and the typer signatures of seventeen other commands.
COMMANDS: dict[str, str] = {
    "validate": "cmd_validate",
    "list": "cmd_list",
    "next": "cmd_next",
    "run": "cmd_run",
    "trigger": "cmd_trigger",
    "cancel": "cmd_cancel",
    "logs": "cmd_logs",
    "history": "cmd_history",
    "why": "cmd_why",
    "replay": "cmd_replay",
    "pause": "cmd_pause",
    "resume": "cmd_pause",
    "status": "cmd_status",
    "spread": "cmd_spread",
    "serve": "cmd_serve",
    "audit": "cmd_audit",
    "token": "cmd_token",
    "prune": "cmd_prune",
    "init": "cmd_init",
    "import-crontab": "cmd_import_crontab",
    "systemd-unit": "cmd_systemd",
    "db": "cmd_db",
    "man": "cmd_man",
}


def _load_commands(module_name: str) -> dict[str, Any]:
    """The click commands one ``cmd_*`` module registers, by name."""
    import importlib

    module = importlib.import_module(f"cronctl.cli.{module_name}")
    holder = typer.Typer(add_completion=False, pretty_exceptions_enable=False)
    holder.callback()(_no_options)  # always a group, even for a module with one command
    module.register(holder)
    group: Any = typer.main.get_command(holder)
    commands: dict[str, Any] = group.commands
    return commands


def _no_options() -> None:
    return None


class _CommandGroup(typer.core.TyperGroup):
    """The root group: commands registered on :data:`app` are there from the start (tests
    register some), the others of :data:`COMMANDS` are built when first asked for."""

    def list_commands(self, ctx: Any) -> list[str]:
        return [*COMMANDS, *(name for name in self.commands if name not in COMMANDS)]

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        command = self.commands.get(cmd_name)
        if command is None and cmd_name in COMMANDS:
            for name, loaded in _load_commands(COMMANDS[cmd_name]).items():
                _with_global_options(loaded)
                _checked_job_ids(loaded)
                _tidy_help(loaded)
                self.commands.setdefault(name, loaded)
            command = self.commands.get(cmd_name)
        return command


app = typer.Typer(
    name="cronctl",
    cls=_CommandGroup,
    help="A cron scheduler you run as a service.",
    no_args_is_help=True,
    add_completion=True,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def version() -> str:
    """The installed distribution's version; the package's own when not installed."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as dist_version

    try:
        return dist_version("cronctl")
    except PackageNotFoundError:
        from cronctl import __version__

        return __version__


def _print_version(value: bool) -> None:
    if value:
        typer.echo(f"cronctl {version()}")
        raise typer.Exit()


# One description of each global option, before the command and after it.
CONFIG_HELP = "Config file (else $CRONCTL_CONFIG, ./cronctl.toml, /etc/cronctl/cronctl.toml)."
DATABASE_HELP = ("Database URL (sqlite:///PATH, postgresql+psycopg://...), or 'none' (state "
                 "in a temporary file, gone at exit).")
JOBS_DIR_HELP = "Directory of *.toml job files."


@app.callback()
def _globals(
    ctx: typer.Context,
    config: Annotated[
        Path | None,
        typer.Option("--config", "-c", metavar="PATH", help=CONFIG_HELP),
    ] = None,
    database: Annotated[
        str | None, typer.Option("--database", metavar="URL", help=DATABASE_HELP)
    ] = None,
    jobs_dir: Annotated[
        Path | None, typer.Option("--jobs-dir", metavar="PATH", help=JOBS_DIR_HELP)
    ] = None,
    verbose: Annotated[int, typer.Option(
        "--verbose", "-v", count=True, metavar="", show_default=False,
        help="More output (run: DEBUG log lines); repeat for more.")] = 0,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Less output.")] = False,
    no_color: Annotated[bool, typer.Option("--no-color", help="No colours.")] = False,
    allow_insecure: Annotated[bool, typer.Option(
        "--allow-insecure", help="As root, load config, job files and modules that other "
        "users can write (refused otherwise).")] = False,
    show_version: Annotated[bool, typer.Option(
        "--version", callback=_print_version, is_eager=True, expose_value=False,
        help="Print the version and exit.")] = False,
) -> None:
    ctx.obj = GlobalOptions(
        config=config,
        database=database,
        jobs_dir=jobs_dir,
        verbose=verbose,
        quiet=quiet,
        no_color=no_color,
        allow_insecure=allow_insecure,
    )


_registered = False


def _register_commands() -> None:
    """Register every command on :data:`app` now, not when it is run (the documentation
    tests read them all from ``typer.main.get_command(app)``). Once per process: a second
    call would register every command again."""
    import importlib

    global _registered
    if _registered:
        return
    _registered = True
    for module_name in dict.fromkeys(COMMANDS.values()):
        importlib.import_module(f"cronctl.cli.{module_name}").register(app)


_GLOBAL_PANEL = "Global options (also accepted before the command)"


def _merge_global(ctx: typer.Context, param: typer.CallbackParam, value: Any) -> None:
    """A global option given after the command name: fold it into the root's options."""
    if value is None or value is False or value == 0 or param.name is None:
        return
    root = ctx.find_root()
    options = root.obj if isinstance(root.obj, GlobalOptions) else GlobalOptions()
    changes: dict[str, Any] = {param.name: value}
    if param.name == "verbose":
        changes = {"verbose": options.verbose + int(value)}
    elif param.name in ("config", "jobs_dir"):
        changes = {param.name: Path(value)}
    root.obj = replace(options, **changes)


def _global_params() -> list[typer.core.TyperOption]:
    def option(*decls: str, help: str, **kwargs: Any) -> typer.core.TyperOption:
        return typer.core.TyperOption(param_decls=list(decls), help=help, expose_value=False,
                                      callback=_merge_global, rich_help_panel=_GLOBAL_PANEL,
                                      **kwargs)

    return [
        option("--config", "-c", "config", type=str, metavar="PATH", help=CONFIG_HELP),
        option("--database", "database", type=str, metavar="URL", help=DATABASE_HELP),
        option("--jobs-dir", "jobs_dir", type=str, metavar="PATH", help=JOBS_DIR_HELP),
        option("--verbose", "-v", "verbose", count=True, default=0, metavar="",
               show_default=False, help="More output (run: DEBUG log lines)."),
        option("--quiet", "-q", "quiet", is_flag=True, default=False, help="Less output."),
        option("--no-color", "no_color", is_flag=True, default=False, help="No colours."),
        option("--allow-insecure", "allow_insecure", is_flag=True, default=False,
               help="As root, load files other users can write."),
    ]


_JOB_PARAMS = ("job", "job_id", "job_option")  # the parameters that name a job, in every command


def _checked_job_ids(command: Any) -> None:
    """Every parameter that names a job goes through :func:`cronctl.argtypes.job_argument`:
    ``cancel --job $'\\xff'`` was a traceback from the database driver."""
    from cronctl.argtypes import job_argument

    def check(ctx: Any, param: Any, value: Any) -> Any:
        shown = "--job" if param.opts and param.opts[0].startswith("-") else "JOB"
        return job_argument(value, what=shown) if isinstance(value, str) else value

    for param in command.params:
        if param.name in _JOB_PARAMS and param.callback is None:
            param.callback = check
    for sub in getattr(command, "commands", {}).values():
        _checked_job_ids(sub)


_UNESCAPED_BRACKET = r"(?<!\\)\["


def escape_markup(text: str) -> str:
    """``text`` with every ``[`` escaped for rich: ``--help`` renders help as rich markup,
    and ``(default: [api] listen)`` came out as ``(default:  listen)``. Once only: a
    bracket already escaped stays as it is."""
    import re

    return re.sub(_UNESCAPED_BRACKET, r"\\[", text)


def _one_line_paragraphs(text: str) -> str:
    """A docstring's paragraphs, each on one line: the list of commands in
    ``cronctl --help`` kept the docstring's line breaks ("... calendars, next" / "fire and
    last status."), in mid-sentence."""
    import inspect

    paragraphs = inspect.cleandoc(text).split("\n\n")
    return "\n\n".join(" ".join(p.split()) for p in paragraphs)


def _tidy_help(command: Any) -> None:
    """How ``command``, its options and its subcommands show in ``--help``: brackets
    escaped (:func:`escape_markup`), so that a help string may say ``[api]`` or
    ``after = [...]`` as the files do; a description's lines joined; every argument
    named in capitals in the usage line (``JOB``, ``[JOB]`` when it may be left out;
    typer wrote ``{job}``, ``[job]`` and ``{JOB}``)."""
    if getattr(command, "_help_tidied", False):
        return
    command._help_tidied = True
    for name in ("help", "short_help", "epilog"):
        text = getattr(command, name, None)
        if isinstance(text, str):
            setattr(command, name, escape_markup(_one_line_paragraphs(text)))
    for param in command.params:
        if isinstance(getattr(param, "help", None), str):
            param.help = escape_markup(param.help)
        if getattr(param, "param_type_name", "") == "argument":
            _capital_metavar(param)
    for sub in getattr(command, "commands", {}).values():
        _tidy_help(sub)


def _capital_metavar(param: Any) -> None:
    """An argument's metavar is shown as written (``JOB`` where the job may also come as
    ``--job``); without one, its name in capitals, in brackets when it may be left out."""
    written = param.metavar
    shown = (written or param.name or "").upper()
    optional = written or f"[{shown}]"

    def make_metavar(ctx: Any = None, *, usage: bool = False) -> str:
        return optional if usage and not param.required else shown.strip("[]")

    param.make_metavar = make_metavar


def _with_global_options(command: Any) -> None:
    """docs/behaviour.md#the-command-line: the global options work on every command, after its name
    too (``cronctl validate -c x.toml``), not only before it: on ``command`` and on each of
    its subcommands (``db upgrade``)."""
    command.params.extend(_global_params())
    for sub in getattr(command, "commands", {}).values():
        _with_global_options(sub)


def main(argv: list[str] | None = None) -> None:
    """Console entry point: run the app, turning user errors into one line and an exit code."""
    _tolerant_output()
    errors = _click_errors()
    command: Any = typer.main.get_command(app)  # a _CommandGroup
    for sub in command.commands.values():  # the commands registered on app beforehand
        _with_global_options(sub)
        _checked_job_ids(sub)
        _tidy_help(sub)
    try:
        _completion_for_shell(sys.argv[1:] if argv is None else argv)
        code = command.main(args=argv, standalone_mode=False)
    except CronctlError as exc:
        _fail(str(exc), exc.exit_code)
    except errors.UsageError as exc:
        _fail(_usage_message(exc, errors), exc.exit_code)
    except errors.ClickException as exc:
        _fail(" ".join(exc.format_message().split()), exc.exit_code)
    except typer.Abort:
        print("error: aborted", file=sys.stderr)
        raise SystemExit(1) from None
    except ImportError as exc:
        # An import the guard refused outside a job's own load (a module cronctl itself
        # imports later, from a place another user can write: docs/trust.md). The guard
        # exists only once cronctl.trust is loaded.
        trust = sys.modules.get("cronctl.trust")
        if trust is None or not isinstance(exc, trust.UntrustedFile):
            raise
        _fail(str(exc), 1)
    raise SystemExit(code if isinstance(code, int) else 0)


SHELLS = ("bash", "zsh", "fish", "powershell", "pwsh")
_COMPLETION_FLAGS = ("--show-completion", "--install-completion")


def _completion_for_shell(args: list[str]) -> None:
    """``--show-completion SHELL`` / ``--install-completion SHELL`` for the shell named.
    Typer detects the shell and takes these as flags, so the name was read as a command
    and every shell got the detected one's script; without a name, typer detects it."""
    flag = next((a for a in args if a in _COMPLETION_FLAGS), None)
    if flag is None or args.index(flag) + 1 >= len(args):
        return
    shell = args[args.index(flag) + 1]
    if shell.startswith("-"):
        return
    if shell not in SHELLS:
        from cronctl.errors import UsageError

        raise UsageError(f"{flag}: unknown shell {shell!r}; one of {', '.join(SHELLS)}")
    from typer._completion_shared import get_completion_script, install

    var = "_CRONCTL_COMPLETE"
    if flag == "--show-completion":
        typer.echo(get_completion_script(prog_name="cronctl", complete_var=var, shell=shell))
    else:
        name, path = install(shell=shell, prog_name="cronctl", complete_var=var)
        typer.echo(f"{name} completion installed in {path}; it takes effect in a new shell")
    raise SystemExit(0)


def _tolerant_output() -> None:
    """Text that is not valid Unicode (file names and arguments whose bytes are not UTF-8
    reach Python as lone surrogates) is written as ``\\udcff`` instead of failing.

    Found by fuzzing: in a UTF-8 locale stdout is strict, so ``cronctl --database
    $'sqlite:///\\xff' status`` died with UnicodeEncodeError while printing. Streams
    that already cope (``surrogateescape`` under the C locale) are left as they are.
    """
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if getattr(stream, "errors", None) == "strict" and reconfigure is not None:
            with contextlib.suppress(ValueError, OSError):  # a stream that cannot change
                reconfigure(errors="backslashreplace")


def _fail(message: str, code: int) -> NoReturn:
    """The one ``error:`` line, with what the user typed escaped where it could break the
    line or the terminal (control characters, surrogates from non-UTF-8 argv bytes)."""
    from cronctl.escaping import printable
    from cronctl.redaction import redact

    print(f"error: {printable(redact(message))}", file=sys.stderr)  # never a password
    raise SystemExit(code) from None


def _click_errors() -> Any:
    """The exceptions module of the click typer parses with (typer 0.28 vendors its own)."""
    import typer.core

    vendored = getattr(typer.core, "_click", None)
    if vendored is not None:
        return vendored.exceptions
    import click

    return click.exceptions


def _usage_message(exc: Any, errors: Any) -> str:
    """A usage error on one line, with the help to read. An unknown option suggests only
    options that are really close (click's default cutoff offers --verbose for --bogus)."""
    import difflib

    text = exc.format_message()
    if isinstance(exc, errors.NoSuchOption):
        close = difflib.get_close_matches(exc.option_name, exc.possibilities or [], n=3,
                                          cutoff=0.75)
        text = f"no such option: {exc.option_name}"
        if close:
            text += f" (did you mean {' or '.join(close)}?)"
        elif exc.option_name[1:2].isdigit():  # "-5m": a time before now
            text += " (a time before now is written without the minus: 5m, not -5m)"
    elif text.startswith("No such command") and exc.ctx is not None:
        name = text.split("'")[1] if text.count("'") >= 2 else ""
        known = exc.ctx.command.list_commands(exc.ctx)
        close = [c for c in known if name and c.startswith(name)] or (
            difflib.get_close_matches(name, known, n=3, cutoff=0.75))
        text = f"no such command: {name}"
        if close:
            text += f" (did you mean {' or '.join(close)}?)"
    where = exc.ctx.command_path if exc.ctx is not None else "cronctl"
    return f"{' '.join(text.split()).rstrip('.')}; see '{where} --help'"
