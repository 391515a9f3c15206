"""The seams of issue 8, read from the source: every ``import`` statement, including the
ones inside functions and under ``TYPE_CHECKING`` (a lazy import is still a dependency)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "cronctl"


def _imports(path: Path) -> list[tuple[int, str]]:
    """``(line, module)`` for every import in the file; ``from a import b`` gives both
    ``a`` and ``a.b`` (``b`` may be a submodule)."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.lineno, node.module))
            found.extend((node.lineno, f"{node.module}.{alias.name}") for alias in node.names)
    return found


def _under(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def offending(files: list[Path], *, allowed: tuple[str, ...] = (),
              forbidden: tuple[str, ...] = ()) -> list[str]:
    """``file:line: module`` for each ``cronctl.*`` import outside ``allowed`` (when
    given) or inside ``forbidden``."""
    bad: set[str] = set()
    for path in files:
        for line, module in _imports(path):
            if not module.startswith("cronctl."):
                continue
            outside = bool(allowed) and not any(_under(module, a) for a in allowed)
            if outside or any(_under(module, f) for f in forbidden):
                bad.add(f"{path.name}:{line}: {module}")
    return sorted(bad)


def files_of(package: str) -> list[Path]:
    return sorted((PACKAGE / package).rglob("*.py"))


def test_config_imports_nothing_from_the_cli() -> None:
    assert offending([PACKAGE / "config.py"], forbidden=("cronctl.cli",)) == []


def test_jobs_import_no_other_layer() -> None:
    forbidden = ("cronctl.core", "cronctl.runtime", "cronctl.dispatch", "cronctl.store",
                 "cronctl.cli", "cronctl.config")
    assert offending(files_of("jobs"), forbidden=forbidden) == []


def test_cron_imports_only_itself_and_the_leaf_modules() -> None:
    allowed = ("cronctl.cron", "cronctl.errors", "cronctl.durations")
    assert offending(files_of("cron"), allowed=allowed) == []


def test_explain_does_not_import_the_expression() -> None:
    explain = PACKAGE / "cron" / "explain.py"
    assert offending([explain], forbidden=("cronctl.cron.expression",)) == []


@pytest.mark.parametrize("path", sorted((PACKAGE / "cli").glob("cmd_*.py")),
                         ids=lambda path: path.stem)
def test_commands_do_not_import_each_other(path: Path) -> None:
    commands = [m for _, m in _imports(path) if m.startswith("cronctl.cli.cmd_")]
    assert commands == []


def test_a_planted_lazy_import_is_caught(tmp_path: Path) -> None:
    copy = tmp_path / "loader.py"
    copy.write_text((PACKAGE / "jobs" / "loader.py").read_text(encoding="utf-8")
                    + "\n\ndef _late() -> None:\n    from cronctl.config import Config\n",
                    encoding="utf-8")
    line = len(copy.read_text(encoding="utf-8").splitlines())
    assert offending([copy], forbidden=("cronctl.config",)) == [
        f"loader.py:{line}: cronctl.config", f"loader.py:{line}: cronctl.config.Config"]
