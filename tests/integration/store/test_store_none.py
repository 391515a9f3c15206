"""``database = "none"``: the one SQL store on a private SQLite file, gone after close."""

from __future__ import annotations

import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

from cronctl.jobs.model import Origin
from cronctl.store import open_store
from cronctl.store.sql import SqlStore

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def _private_dir(store: SqlStore) -> Path:
    url = store.engine.url.database
    assert url is not None
    return Path(url).parent


def test_none_is_the_sql_store_on_a_private_file_removed_at_close() -> None:
    store = open_store("none", node_id="n1")
    assert isinstance(store, SqlStore)
    assert (store.kind, store.persistent, store.display_url) == ("memory", False, "none")
    folder = _private_dir(store)
    assert folder.is_dir()
    eid = store.try_insert_execution(job_id="j", occurrence_id="o", scheduled_at=T0,
                                     attempt=1, origin=Origin.CRON, node_id="n1",
                                     scope_node="n1")
    assert eid is not None and store.get_execution(eid) is not None
    other = open_store("none", node_id="n1")
    try:
        assert other.get_execution(eid) is None  # private: another store sees nothing
    finally:
        other.close()
    store.close()
    assert not folder.exists()


def test_none_file_is_removed_at_exit_without_close(tmp_path: Path) -> None:
    code = ("from cronctl.store import open_store\n"
            "s = open_store('none', node_id='n')\n"
            "print(s.engine.url.database)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert not Path(out.stdout.strip()).parent.exists()
