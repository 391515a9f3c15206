"""``cronctl validate``: every violation of the configuration and the jobs, at once."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Annotated

import typer

from cronctl.cli.options import global_options
from cronctl.cli.shared import check_all

if TYPE_CHECKING:
    from cronctl.jobs.violation import Violation


def format_warning(warning: Violation) -> str:
    text = str(warning)
    if warning.source and text.startswith(warning.source):
        return f"{warning.source}: warning: {text[len(warning.source) + 2:]}"
    return f"warning: {text}"


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def _containment(setting: str) -> str:
    """Which mechanism ends a command's processes when ``run`` starts here (cgroups.py)."""
    from cronctl import cgroups

    found = cgroups.detect(setting)
    if setting not in (cgroups.AUTO, cgroups.OFF) and not found.cgroups:
        return f"warning: [scheduler] cgroup: {found.reason} (run refuses to start)"
    return f"a command's processes end with it: {found.describe()}"


def validate(
    ctx: typer.Context,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON document.")] = False,
    strict: Annotated[bool, typer.Option("--strict", help="Warnings fail too (exit 1).")
                      ] = False,
) -> None:
    """Check cronctl.toml, jobs.d/*.toml and the decorated jobs; report every problem."""
    options = global_options(ctx)
    checked = check_all(options)
    failed = bool(checked.violations) or (strict and bool(checked.warnings))
    if as_json:
        document = {
            "ok": not failed,
            "jobs": checked.result.defined,
            "violations": [v.to_json() for v in checked.violations],
            "warnings": [w.to_json() for w in checked.warnings],
        }
        typer.echo(json.dumps(document, indent=2))
    else:
        for violation in checked.violations:
            typer.echo(str(violation))
        for warning in checked.warnings:
            typer.echo(format_warning(warning))
        if not options.quiet or failed:
            jobs = _plural(checked.result.defined, "job")
            if checked.violations or checked.warnings:
                problems = ", ".join(
                    part for part in (
                        _plural(len(checked.violations), "violation") if checked.violations
                        else "",
                        _plural(len(checked.warnings), "warning") if checked.warnings else "",
                    ) if part
                )
                verdict = "invalid" if failed else "valid"
                typer.echo(f"{verdict}: {problems} in {jobs}")
            else:
                typer.echo(f"valid: {jobs}, no problems")
        if options.verbose:
            typer.echo(_containment(checked.config.cgroup))
    if failed:
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    app.command("validate")(validate)
