"""Alembic, driven from code: the migrations ship inside the package, no alembic.ini needed.

Alembic logs at INFO as it loads (a "setup plugin" line for each of its plugins) and as it
migrates ("Context impl", "Running upgrade ..."): lines for a developer running alembic, which
in an application that logs at INFO (a Celery worker) would open its log on every new file.
Those are kept below WARNING while sqsqlite loads and runs alembic, in that thread only; a
migration that changes the file's schema is said in one line of sqsqlite's own instead
(logger ``sqsqlite.migrate``), and a file already at the schema logs nothing.
"""

from __future__ import annotations

import contextlib
import io
import logging
import threading
from importlib import resources
from typing import Any

from sqlalchemy import create_engine, event
from sqlalchemy.exc import DBAPIError
from sqlalchemy.pool import StaticPool

from .errors import DatabaseError

log = logging.getLogger("sqsqlite.migrate")

# The loggers alembic says its INFO lines through while sqsqlite loads and runs it.
_ALEMBIC_LOGGERS = ("alembic.runtime.plugins", "alembic.runtime.migration", "alembic.runtime.environment", "alembic.config")
_quiet = threading.local()


class _BelowWarning(logging.Filter):
    """Drops alembic's records below WARNING while this thread is inside sqsqlite's _quietly."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.levelno >= logging.WARNING or not getattr(_quiet, "on", False)


_FILTER = _BelowWarning()
for _name in _ALEMBIC_LOGGERS:  # before alembic is imported: its plugins log as they load
    logging.getLogger(_name).addFilter(_FILTER)


@contextlib.contextmanager
def _quietly():
    was = getattr(_quiet, "on", False)
    _quiet.on = True
    try:
        yield
    finally:
        _quiet.on = was


with _quietly():
    from alembic import command
    from alembic.config import Config
    from alembic.script import ScriptDirectory


def _config(buffer=None) -> Config:
    cfg = Config(stdout=buffer or io.StringIO())
    cfg.set_main_option("script_location", str(resources.files("sqsqlite.migrations")))
    return cfg


def known_revisions() -> set[str]:
    with _quietly():
        return {s.revision for s in ScriptDirectory.from_config(_config()).walk_revisions()}


@contextlib.contextmanager
def _engine(store):
    # Run alembic on a dedicated connection in BEGIN IMMEDIATE: two processes opening a new
    # file at once serialise here, and the second finds the schema already at head.
    engine = create_engine(
        "sqlite://",
        creator=lambda: store.open_connection(),
        poolclass=StaticPool,
    )

    @event.listens_for(engine, "begin")
    def _begin(conn):
        conn.exec_driver_sql("BEGIN IMMEDIATE")

    try:
        yield engine
    finally:
        engine.dispose()


class WouldDropData(DatabaseError):
    """A downgrade that would drop tables holding rows, refused: nothing was changed. ``tables``:
    their names; every queue and message go with "queues" and "messages" (a downgrade to base)."""

    def __init__(self, path: str, revision: str, tables: list[str]):
        self.tables = tables
        super().__init__(
            f"Downgrading {path!r} to {revision!r} would drop tables that hold data ({', '.join(tables)})"
            + (", every queue and message" if "queues" in tables else "")
            + "; nothing was changed."
        )


# Tables a downgrade may drop whatever they hold: the per-minute history is statistics about the
# queues, not their messages, and a file downgraded past it simply stops keeping it.
_STATISTICS = frozenset({"queue_history"})
# And those whose rows the downgrade that drops them carries elsewhere: message_positions' mark
# becomes the AUTOINCREMENT sequence again (0013).
_CARRIED = frozenset({"message_positions"})
# And those that only tell a receipt handle of a moved message from a deleted one's: a file
# downgraded past them answers such a handle as a deleted message's (0015).
_HANDLES_ONLY = frozenset({"message_moves"})
# And replays' progress, which means nothing without the archive they replay (0016).
_PROGRESS = frozenset({"replay_runs"})


def _tables(connection, holding_rows: bool = False) -> set[str]:
    """The schema's tables (not SQLite's own, nor alembic's); or those of them holding rows
    that a downgrade must not drop without being told (not statistics)."""
    names = {
        name
        for (name,) in connection.exec_driver_sql("SELECT name FROM sqlite_master WHERE type = 'table'")
        if not name.startswith("sqlite_") and name != "alembic_version"
    }
    if holding_rows:
        kept = names - _STATISTICS - _CARRIED - _HANDLES_ONLY - _PROGRESS
        return {name for name in kept if connection.exec_driver_sql(f'SELECT 1 FROM "{name}" LIMIT 1').first()}  # names from sqlite_master
    return names


def _revision(connection) -> str | None:
    """The file's schema revision as this transaction sees it (None: no schema yet)."""
    if not connection.exec_driver_sql("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'alembic_version'").first():
        return None
    row = connection.exec_driver_sql("SELECT version_num FROM alembic_version").first()
    return row[0] if row else None


def _run(store, fn, *args, keep_data: bool = False) -> str:
    out = io.StringIO()
    cfg = _config(out)
    try:
        with _quietly(), _engine(store) as engine, engine.begin() as connection:
            cfg.attributes["connection"] = connection
            cfg.attributes["owner"] = store.owner
            # Read inside the write lock: of two processes opening a new file, the second finds
            # the schema made, and says nothing.
            before = _revision(connection)
            holding = _tables(connection, holding_rows=True) if keep_data else set()
            fn(cfg, *args)
            dropped = sorted(holding - _tables(connection))
            if dropped:  # raised inside the transaction, which undoes the downgrade
                raise WouldDropData(store.path, args[0], dropped)
            after = _revision(connection)
    except DBAPIError as exc:
        # SQLAlchemy's wrapper (two lines and a link) around SQLite's own error: said as every
        # other database failure is, naming the file.
        raise DatabaseError(store.explain(exc.orig)) from None
    if before != after:
        if before is None:
            log.info("sqsqlite: created the schema of %s (revision %s)", store.path, after)
        else:
            log.info("sqsqlite: migrated %s from schema revision %s to %s", store.path, before, after or "none")
    return out.getvalue()


def refuse_newer(store) -> None:
    """A file of sqsqlite's (its tables: the store refuses any other) at a revision these
    migrations do not know: a newer sqsqlite's, or another application's that shares the file.
    Said so, where alembic would only say it can't locate the revision, whatever was asked."""
    current = store.current_revision()
    if current is not None and current not in known_revisions():
        head = ScriptDirectory.from_config(_config()).get_current_head()
        raise DatabaseError(
            f"{store.path!r} has unknown schema revision {current!r} (a newer sqsqlite's, or another application's; "
            f"this sqsqlite knows revisions up to {head!r}); a newer sqsqlite's file needs sqsqlite upgraded to use it."
        )


def upgrade(store, revision: str = "head") -> str:
    refuse_newer(store)
    return _run(store, command.upgrade, revision)


def downgrade(store, revision: str = "-1", force: bool = False) -> str:
    """Downgrade to ``revision``; one that would drop a table holding rows (to base: every queue
    and message) only with ``force``, else WouldDropData, nothing changed."""
    refuse_newer(store)
    return _run(store, command.downgrade, revision, keep_data=not force)


def current(store) -> str | None:
    return store.current_revision()


def history() -> list[tuple[str, Any, str]]:  # the down revision: None, one, or several (a merge)
    """(revision, down revision, first docstring line), newest first."""
    script = ScriptDirectory.from_config(_config())
    return [(s.revision, s.down_revision, (s.doc or "").strip()) for s in script.walk_revisions()]
