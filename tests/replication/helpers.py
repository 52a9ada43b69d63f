"""What the replication tests share: the command line run in this process, a stand-in for the
litestream program, and a file an older sqsqlite left."""

from __future__ import annotations

import shutil
from pathlib import Path


def cli_here(*args: str):
    """The sqsqlite group in this process, as the console script runs it (exit codes included)."""
    from click.testing import CliRunner

    from sqsqlite.cli.main import cli

    result = CliRunner().invoke(cli, list(args))
    assert "Traceback" not in result.output and "unexpected error" not in result.output, result.output
    return result


def fake_litestream(tmp_path: Path, script: str, monkeypatch) -> Path:
    """``script`` as the litestream program this process finds."""
    program = tmp_path / "litestream"
    program.write_text(script)
    program.chmod(0o755)
    real = shutil.which  # other programs (an --exec command) are looked up as ever
    monkeypatch.setattr(shutil, "which", lambda name, path=None: str(program) if name == "litestream" else real(name, path=path))
    return program


def older_file(path: Path, queue: str) -> None:
    """A database at ``path`` holding the queue ``queue``, as a sqsqlite from before queues had an
    account and a region (schema revision 0011) left it."""
    import sqsqlite
    from sqsqlite import migrate
    from sqsqlite.store import Store

    with sqsqlite.connect(str(path)) as db:
        db.create_queue(queue)
    store = Store(str(path))
    try:
        migrate.downgrade(store, "0011")
    finally:
        store.close()


def scopes_of(path: Path) -> list[tuple[str, str, str]]:
    """(name, account, region) of every queue the file holds, once migrated."""
    import sqlite3

    with sqlite3.connect(str(path)) as conn:
        return sorted(conn.execute("SELECT name, account, region FROM queues"))
