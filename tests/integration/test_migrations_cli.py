"""``cronctl db upgrade`` / ``db current`` through the real entry point ``main()``."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

from cronctl.cli import app as app_module
from cronctl.cli import cmd_db
from cronctl.store.schema import HEAD

SECRET = "hunter2-Secret"
_registered = False


@pytest.fixture(autouse=True)
def only_db_commands(monkeypatch: pytest.MonkeyPatch) -> None:
    """Register just ``db`` (once) so these tests do not depend on the other commands."""

    def register() -> None:
        global _registered
        if not _registered:
            cmd_db.register(app_module.app)
            _registered = True

    monkeypatch.setattr(app_module, "_register_commands", register)
    monkeypatch.delenv("CRONCTL_DATABASE_URL", raising=False)
    monkeypatch.delenv("CRONCTL_CONFIG", raising=False)


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    try:
        app_module.main(list(args))
        code = 0
    except SystemExit as exc:
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


def test_upgrade_then_current(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    url = f"sqlite:///{tmp_path / 'state.db'}"
    code, out, _ = cli(capsys, "--database", url, "db", "current")
    assert code == 0 and "current:  none" in out and "run `cronctl db upgrade`" in out
    assert not (tmp_path / "state.db").exists()  # looking does not create the file
    code, out, _ = cli(capsys, "--database", url, "db", "upgrade")
    assert code == 0 and out.strip() == f"upgraded {url} from an empty schema to {HEAD}"
    code, out, _ = cli(capsys, "--database", url, "db", "upgrade")
    assert code == 0 and "already at revision" in out
    code, out, _ = cli(capsys, "--database", url, "db", "current", "--json")
    assert code == 0
    assert json.loads(out) == {
        "database": url,
        "current": HEAD,
        "head": HEAD,
        "up_to_date": True,
        "newer_than_cronctl": False,
    }
    code, out, _ = cli(capsys, "--database", url, "db", "upgrade", "--json")
    assert json.loads(out)["changed"] is False


@pytest.mark.postgres
def test_upgrade_postgres(postgres_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = cli(capsys, "--database", postgres_url, "db", "upgrade", "--json")
    assert code == 0 and json.loads(out)["current"] == HEAD


def test_errors_are_one_line_without_the_password(capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"postgresql://cronctl:{SECRET}@127.0.0.1:{port}/cron"
    for command in ("upgrade", "current"):
        code, out, err = cli(capsys, "-v", "--database", url, "db", command)
        assert code == 1 and out == ""
        assert err.startswith("error: cannot reach database postgresql+psycopg://cronctl:***@")
        assert err.count("\n") == 1 and SECRET not in err


def test_memory_database_has_no_schema(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = cli(capsys, "--database", "none", "db", "upgrade")
    assert code == 1 and "no schema" in err
