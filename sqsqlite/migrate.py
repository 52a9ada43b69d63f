"""Alembic, driven from code: the migrations ship inside the package, no alembic.ini needed."""

from __future__ import annotations

import contextlib
import io
from importlib import resources
from typing import Any

from alembic import command
from alembic.config import Config
from alembic.script import ScriptDirectory
from sqlalchemy import create_engine, event
from sqlalchemy.exc import DBAPIError
from sqlalchemy.pool import StaticPool

from .errors import DatabaseError


def _config(buffer=None) -> Config:
    cfg = Config(stdout=buffer or io.StringIO())
    cfg.set_main_option("script_location", str(resources.files("sqsqlite.migrations")))
    return cfg


def known_revisions() -> set[str]:
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


def _run(store, fn, *args) -> str:
    out = io.StringIO()
    cfg = _config(out)
    try:
        with _engine(store) as engine, engine.begin() as connection:
            cfg.attributes["connection"] = connection
            fn(cfg, *args)
    except DBAPIError as exc:
        # SQLAlchemy's wrapper (two lines and a link) around SQLite's own error: said as every
        # other database failure is, naming the file.
        raise DatabaseError(store.explain(exc.orig)) from None
    return out.getvalue()


def _refuse_newer(store) -> None:
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
    _refuse_newer(store)
    return _run(store, command.upgrade, revision)


def downgrade(store, revision: str = "-1") -> str:
    _refuse_newer(store)
    return _run(store, command.downgrade, revision)


def current(store) -> str | None:
    return store.current_revision()


def history() -> list[tuple[str, Any, str]]:  # the down revision: None, one, or several (a merge)
    """(revision, down revision, first docstring line), newest first."""
    script = ScriptDirectory.from_config(_config())
    return [(s.revision, s.down_revision, (s.doc or "").strip()) for s in script.walk_revisions()]
