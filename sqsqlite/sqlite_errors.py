"""SQLite's errors, what they mean and how sqsqlite says them: ``explain``, an error on a
database file in one sentence naming the file and what to do; ``readonly`` and ``busy``, what
an error says about the connection; ``retrying``, a statement tried again while the database is
busy; ``foreign``, whether a SQLite file is someone else's; and the errors of a transaction that
can't go on (``doomed``, ``undone``). Used by :mod:`sqsqlite.store`, which runs every statement."""

from __future__ import annotations

import errno
import os
import random
import shutil
import sqlite3
import time
from collections.abc import Callable
from typing import Any

from . import defaults as D
from .errors import DatabaseError, TransactionError

resource: Any
try:
    import resource
except ImportError:  # not a POSIX system
    resource = None


def readonly(exc: BaseException) -> bool:
    """Whether SQLite's error says the connection can't write (any SQLITE_READONLY code)."""
    name = getattr(exc, "sqlite_errorname", None)
    if name is None:  # Python 3.10's sqlite3 errors carry SQLite's text alone
        return "readonly database" in str(exc)
    return name.startswith("SQLITE_READONLY")


def explain(path: str, exc: Exception) -> str:
    """SQLite's error on the database at ``path`` as one sentence naming the file and what to do."""
    text = str(exc)
    name = getattr(exc, "sqlite_errorname", None) or ""  # Python 3.11's sqlite3 errors have it
    if "file is not a database" in text or "file is encrypted" in text:
        return f"{path!r} is not a SQLite database (SQLite said: {text})."
    if name.startswith("SQLITE_READONLY") or "readonly" in text or "read-only" in text:
        return f"{path!r} is read-only; sqsqlite needs to write to it and its -wal/-shm files (SQLite said: {text})."
    # Without a name (Python 3.10), any "disk I/O error" may be one of _WRITE_FAILED's.
    failed_write = name in _WRITE_FAILED or (not name and "disk I/O error" in text)
    if name == "SQLITE_FULL" or "disk is full" in text or (failed_write and _disk_full(path)):
        return f"The disk holding {path!r} is full; the operation changed nothing (SQLite said: {text})."
    if name.startswith("SQLITE_CANTOPEN") or "unable to open" in text:
        if os.path.isdir(path):
            return f"Can't open database {path!r}: it is a directory; give the path of a file in it."
        if _out_of_descriptors():
            limit = resource.getrlimit(resource.RLIMIT_NOFILE)[0] if resource is not None else "?"
            return (
                f"Can't open database {path!r}: this process has no file descriptors left (its limit, "
                f"RLIMIT_NOFILE / ulimit -n, is {limit}); raise it, or close what it holds (SQLite said: {text})."
            )
        return f"Can't open database {path!r} (SQLite said: {text})."
    return f"Database error on {path!r}: {text}."


# SQLite's "disk I/O error"s of a write that found no room: a full disk gives these rather than
# SQLITE_FULL when the -shm can't grow (SHMSIZE) or a write or truncate of the WAL fails.
_WRITE_FAILED = frozenset({"SQLITE_IOERR_SHMSIZE", "SQLITE_IOERR_WRITE", "SQLITE_IOERR_TRUNCATE"})
# Less free than this is full: the -shm grows 32 KiB at a time, a WAL frame is a page and more.
_FULL_BELOW = 64 * 1024


def _disk_full(path: str) -> bool:
    try:
        return shutil.disk_usage(os.path.dirname(os.path.realpath(path)) or ".").free < _FULL_BELOW
    except OSError:
        return False


def _out_of_descriptors() -> bool:
    """Whether this process can't open a file now for want of descriptors (EMFILE, ENFILE)."""
    try:
        os.close(os.open(os.devnull, os.O_RDONLY))
    except OSError as exc:
        return exc.errno in (errno.EMFILE, errno.ENFILE)
    return False


_RETRYABLE = ("database is locked", "database is busy", "database table is locked")


def busy(exc: Exception) -> bool:
    """Whether SQLite's error says another connection holds a lock it needs: worth trying again."""
    text = str(exc)
    return any(s in text for s in _RETRYABLE)


def retrying(path: str, fn: Callable[[], Any], started: float | None = None, conn: Any = None, failed: Exception | None = None) -> Any:
    """fn() until the database at ``path`` is not busy, for one busy timeout in all from ``started``,
    the first try's start (that try's wait in SQLite's busy handler counts); ``failed``: how the
    caller's own first try failed (the loop's set-up stays off an uncontended BEGIN's and
    COMMIT's path). On ``conn``, each try's own wait in the busy handler is cut to the time left,
    then put back. Anything else, or out of time: DatabaseError."""
    delay, timeout = 0.001, D.BUSY_TIMEOUT_SECONDS
    deadline, cut = (started or time.monotonic()) + timeout, False
    try:
        while True:
            if failed is not None:
                left = deadline - time.monotonic()
                if not busy(failed) or left <= 0:
                    raise DatabaseError(explain(path, failed)) from None
                time.sleep(min(left, delay * (0.5 + random.random())))
                delay = min(delay * 2, 0.05)
                if conn is not None:
                    cut = True
                    conn.execute(f"PRAGMA busy_timeout={max(1, int((deadline - time.monotonic()) * 1000))}")
            try:
                return fn()
            except sqlite3.OperationalError as exc:
                failed = exc
    finally:
        if cut:  # the connection's own again: its reads wait with it (for a WAL recovery, say)
            conn.execute(f"PRAGMA busy_timeout={int(timeout * 1000)}")


# The tables every revision of sqsqlite's schema has had. An alembic_version table alone says
# nothing: every Alembic-managed application's database has one.
OWN_TABLES = frozenset({"alembic_version", "meta", "queues", "queue_tombstones", "messages"})


def foreign(conn: sqlite3.Connection) -> bool:
    """Whether the database on ``conn`` is someone else's: it has tables, and not sqsqlite's. One
    with no table but an empty alembic_version is sqsqlite's, downgraded to base (and nobody's data)."""
    names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'") if not r[0].startswith("sqlite_")}
    if not names or OWN_TABLES <= names:
        return False
    return names != {"alembic_version"} or conn.execute("SELECT version_num FROM alembic_version").fetchone() is not None


def not_ours(path: str) -> str:
    return f"{path!r} is a SQLite database but not a sqsqlite one (it has tables, and not sqsqlite's); refusing to change it."


def doomed() -> TransactionError:
    """An application's transaction that can't be committed: SQLite undid it, or a call failed
    after it had written part of its work (Store.begin_transaction)."""
    return TransactionError(
        "The transaction can't go on: a call inside it failed after it had written part of its work, or SQLite undid it "
        "(a full disk, an I/O error), or a statement ended it (a COMMIT or ROLLBACK on its connection). What sqsqlite "
        "did in it is rolled back at the block's end; a COMMIT run inside it committed what came before that COMMIT."
    )


def undone() -> DatabaseError:
    """A write of a Group whose transaction SQLite undid."""
    return DatabaseError("The grouped writes were undone: a statement of one of them failed the transaction.")
