"""An application's transaction: its own SQL and the queue's operations on one SQLite file,
committed together or not at all (``Database.transaction``).

The transaction belongs to the thread that opened it: every call that thread makes on the
database while the block is open (send, receive, delete, change visibility, any queue's, any
mix) is part of it, each a savepoint that a failing call undoes alone; other threads and
processes write after it ends, as they do after any write. The store does the SQLite work
(``Store.begin_transaction``); this module takes what the application hands in (its own sqlite3
connection, a SQLAlchemy Connection or Session) and gives it ``execute`` with sqlite3's semantics.
"""

from __future__ import annotations

import re
import sqlite3
import threading
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from ..errors import TransactionError
from ..sqlite_errors import doomed
from .queue import Queue

if TYPE_CHECKING:
    from ..store import Store


class Transaction:
    """``with db.transaction() as tx:``: one write transaction (BEGIN IMMEDIATE) on the
    database's file, committed when the block ends, rolled back when it raises.

    ``tx.execute(sql, parameters)`` and ``tx.executemany`` run the application's own statements in
    it, as sqlite3's do (its parameter styles, its cursors; rows as tuples on sqsqlite's own
    connection, as the connection's row factory makes them on one given); ``tx.queue(name)`` is a
    queue whose operations are part of it, as are this thread's calls on any queue of the
    database. ``tx.connection`` is the sqlite3 connection it runs on. It belongs to the thread
    that opened it."""

    def __init__(self, store: Store, queue: Callable[[str], Queue], connection: Any = None):
        # The store holds the transaction: every operation of this thread, given any queue's
        # context (context.py), runs inside it. ``queue``: the database's Database.queue.
        self.store = store
        self._queue = queue
        self._given = connection
        self._group: Any = None
        self._conn: sqlite3.Connection | None = None
        self._thread = 0

    def __enter__(self) -> Transaction:
        if self._group is not None:
            raise TransactionError("This transaction is open already: open a new db.transaction() for another block.")
        given = self._given
        conn, owned = (None, True) if given is None else driver_connection(given)
        store = self.store
        group = store.begin_transaction(conn, owned)
        try:
            self._conn = group.writer.conn  # the connection it runs on: sqsqlite's own, or the one given
            self._thread = threading.get_ident()
            self._group = group
        except BaseException:  # an interrupt here would leave the transaction, and the lock, open
            store.end_transaction(group, False)
            raise
        return self

    def __exit__(self, kind: Any, exc: Any, tb: Any) -> None:
        group = self._group
        try:
            self.store.end_transaction(group, kind is None)
        finally:
            self._group = None

    @property
    def connection(self) -> sqlite3.Connection:
        """The sqlite3 connection the transaction runs on (sqsqlite's own, or the one given).
        Statements run on it are not seen by sqsqlite: once it is asked for, each call of the
        transaction reads the rows it keeps again (a ROLLBACK TO run there may have undone them)."""
        conn = self._open()
        self._group.forgetful = True
        return conn

    def _open(self) -> sqlite3.Connection:
        if self._group is None or self._conn is None:
            raise TransactionError("The transaction is not open: use it inside its with block.")
        if threading.get_ident() != self._thread:
            raise TransactionError("The transaction belongs to the thread that opened it: use it from that thread.")
        self.store.refuse_forked(self._group)
        return self._conn

    def execute(self, sql: str, parameters: Any = ()) -> sqlite3.Cursor:
        """The application's statement, in the transaction: sqlite3's Connection.execute. A
        statement that fails is undone alone, as SQLite undoes it; one that makes SQLite roll the
        whole transaction back (a full disk) dooms it: every later call raises. The block begins
        and ends the transaction: BEGIN, COMMIT, END and ROLLBACK are refused (SAVEPOINT,
        RELEASE and ROLLBACK TO are yours to use)."""
        # Written out, not shared with executemany through a callable: an outbox's insert runs
        # here, and each call saved is about a tenth of a microsecond of its overhead.
        cursor, kind = self._cursor(sql)
        try:
            cursor.execute(sql, parameters)
        except sqlite3.Error:
            self._check_alive()
            raise
        if kind == _ROLLS_BACK_TO:
            self.store.forget_state()  # the queue rows and reservations it read may be undone
        return cursor

    def executemany(self, sql: str, seq_of_parameters: Iterable[Any]) -> sqlite3.Cursor:
        """sqlite3's Connection.executemany, in the transaction (see execute)."""
        cursor, kind = self._cursor(sql)
        try:
            cursor.executemany(sql, seq_of_parameters)
        except sqlite3.Error:
            self._check_alive()
            raise
        if kind == _ROLLS_BACK_TO:
            self.store.forget_state()
        return cursor

    def queue(self, name_or_url: str) -> Queue:
        """A queue of the database (QueueDoesNotExist otherwise, as of this transaction), whose
        operations are part of the transaction."""
        self._open()
        return self._queue(name_or_url)

    def _cursor(self, sql: str) -> tuple[sqlite3.Cursor, int]:
        """A cursor for the application's statement, once it is known not to begin or end the
        transaction and the transaction to be usable, and what the statement does (_kind)."""
        group, conn = self._group, self._conn
        if group is None or conn is None or threading.get_ident() != self._thread or group.forked:
            self._open()  # raises what is wrong
        assert group is not None and conn is not None
        kind = _PLAIN
        if isinstance(sql, str):  # else sqlite3 says what it takes
            known = _KINDS.get(sql)
            kind = _kind(sql) if known is None else known
            if kind == _ENDS:
                raise TransactionError(
                    "BEGIN, COMMIT, END and ROLLBACK are the block's own: its end commits, an exception rolls back "
                    "(a nested db.transaction() block, or SAVEPOINT and ROLLBACK TO, undo a part)."
                )
        if group.broken or not conn.in_transaction or (group.marked and self.store.ended_under(group)):
            group.broken = True
            raise doomed()
        cursor = conn.cursor()
        # Rows as tuples on sqsqlite's own connection, as sqlite3 gives them; as the connection's
        # row factory makes them on one given (whatever its cursor() sets).
        cursor.row_factory = None if self._given is None else conn.row_factory
        return cursor, kind

    def _check_alive(self) -> None:
        conn = self._conn
        if conn is not None and not conn.in_transaction:
            self._group.broken = True  # SQLite rolled it back: its end raises rather than commit nothing


# A statement's leading keyword when it begins or ends a transaction, or rolls back to a
# savepoint (group 2), after any comments: one match a statement.
_LEADING = re.compile(r"(?:\s|--[^\n]*(?:\n|$)|/\*.*?\*/)*(BEGIN|COMMIT|END|ROLLBACK)\b(\s+(?:TRANSACTION\s+)?TO\b)?", re.I | re.S)

# What each statement text does to the transaction, matched once: an application runs the same
# few texts again and again, and a dictionary look-up is a tenth of the match. Short texts only,
# and a bounded number of them: an application building its SQL with values in it makes new ones.
_PLAIN, _ROLLS_BACK_TO, _ENDS = 0, 1, 2
_KINDS: dict[str, int] = {}
_KINDS_KEPT = 1024
_KIND_TEXT_KEPT = 512  # characters


def _kind(sql: str) -> int:
    leading = _LEADING.match(sql)
    kind = _PLAIN if leading is None else _ROLLS_BACK_TO if leading.group(2) is not None else _ENDS
    if len(sql) <= _KIND_TEXT_KEPT:
        if len(_KINDS) >= _KINDS_KEPT:
            _KINDS.clear()
        _KINDS[sql] = kind
    return kind


def driver_connection(given: Any) -> tuple[sqlite3.Connection | None, bool]:
    """The sqlite3 connection an application hands in, and whether sqsqlite may own the
    transaction on it (begin and end it when none is open). SQLAlchemy's Connection and Session
    own theirs: sqsqlite joins it, and their commit commits both."""
    if given is None or isinstance(given, sqlite3.Connection):
        return given, True
    module = type(given).__module__
    if module.startswith("sqlalchemy."):
        return _sqlalchemy_connection(given), False
    raise TypeError(
        f"db.transaction() takes a sqlite3.Connection, a SQLAlchemy Connection or Session, or nothing; got {type(given).__name__}."
    )


def _sqlalchemy_connection(given: Any) -> sqlite3.Connection:
    from sqlalchemy.engine import Connection
    from sqlalchemy.orm import Session, scoped_session

    if isinstance(given, scoped_session):  # Flask-SQLAlchemy's db.session, say: this thread's Session
        given = given()
    if isinstance(given, Session):
        given = given.connection()  # begins the session's transaction if it has none
    if not isinstance(given, Connection):
        raise TypeError(f"db.transaction() takes a SQLAlchemy Connection or Session; got {type(given).__name__}.")
    if not given.in_transaction() and given.get_execution_options().get("isolation_level") != "AUTOCOMMIT":
        # A connection not used yet has not begun SQLAlchemy's transaction: its commit() would
        # then commit nothing (and the pool's reset roll the queue's work back). Begin it, so
        # that its commit commits both.
        given.begin()
    driver = given.connection.driver_connection
    # AUTOCOMMIT isolation is the driver's isolation_level None: no transaction of its own.
    # (SQLAlchemy's recipe for SAVEPOINTs on pysqlite sets it None too, and begins one itself: fine.)
    autocommit = getattr(driver, "isolation_level", "") is None and not getattr(driver, "in_transaction", False)
    if given.get_execution_options().get("isolation_level") == "AUTOCOMMIT" or autocommit:
        raise TransactionError(
            "The SQLAlchemy connection is in AUTOCOMMIT isolation: each of its statements commits alone, so none would "
            "commit together with the queue's. Use the engine's default isolation level."
        )
    if not isinstance(driver, sqlite3.Connection):
        raise TransactionError(
            f"The SQLAlchemy connection runs on {type(driver).__name__}, not Python's sqlite3 (the pysqlite dialect, "
            "sqlite:///path): sqsqlite's statements run on a sqlite3 connection."
        )
    return driver
