"""What a thread keeps about its SQLite connection, and Tx: the statements run inside one open
transaction. ``store.py`` opens and ends the transactions (locks, BEGIN, COMMIT, groups); the
engine gets a Tx and never sees SQL, only the compiled statements of ``queries.py``. SQLite's
errors, what they mean and how they are said, are :mod:`sqsqlite.sqlite_errors`'.
:func:`immediate` is the write transaction of a connection the store does not keep (the
checkpoint thread's, returning free pages: :mod:`sqsqlite.space`)."""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Callable, Iterator
from typing import Any

from . import defaults as D
from . import queries as Q


@contextlib.contextmanager
def immediate(conn: sqlite3.Connection) -> Iterator[sqlite3.Cursor]:
    """A write transaction on ``conn``, whose caller holds the writers' lock: BEGIN IMMEDIATE,
    the block's statements on the cursor it is given, then COMMIT; ROLLBACK if the block (or the
    COMMIT) raises."""
    cursor = conn.cursor()
    cursor.execute("BEGIN IMMEDIATE")
    try:
        yield cursor
        cursor.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            with contextlib.suppress(sqlite3.Error):
                conn.execute("ROLLBACK")
        raise
    finally:
        cursor.close()


class Group:
    """One thread's write transactions made as one (Store.begin_group .. end_group).

    Each write of the group is a savepoint of one transaction, begun by its first write (or up
    front: Store.lock_group) and committed by end_group: concurrent requests served by one event
    loop pay for one lock, BEGIN and COMMIT, and write each page they share to the WAL once. A
    write that fails is undone alone. Nothing a group's write did is visible to other
    connections, or may be reported as done, before end_group returns. One call's group
    (``lone``) and an application's transaction spare the savepoints where they can (Store's
    _enter_group says when)."""

    __slots__ = (
        "writer",
        "after",
        "broken",
        "transaction",
        "joined",
        "marked",
        "forgetful",
        "calls",
        "local",
        "saved",
        "nested",
        "nested_broken",
        "nested_after",
        "tx",
        "error",
        "forked",
        "lone",
        "changes",
    )

    def __init__(self) -> None:
        self.writer: Any = None  # the write (store's _Write) that took the lock and began
        self.after: list[Callable[[], None]] = []  # run once the group has committed
        self.broken = False  # SQLite undid the transaction: end_group reports it
        # The first DatabaseError a write of it raised (a full disk's): why SQLite undid it.
        self.error: Exception | None = None
        # Seen in a forked child: the parent's, open at the fork. Its connection and lock are the
        # parent's; the child neither ends nor uses them (Store.refuse_forked).
        self.forked = False
        # An application's transaction (Store.begin_transaction), not the endpoint's grouping.
        self.transaction = False
        # One call's writes with the lock taken up front (Store.call_with_lock), and the
        # connection's total_changes when it began: its first write takes no savepoint.
        self.lone = False
        self.changes = 0
        # It joined a transaction open on an application's connection: a savepoint of it, which
        # the application commits (its end neither commits nor lets a lock of sqsqlite's go).
        self.joined = False
        # A joined transaction's marker, PRAGMA defer_foreign_keys ON, which SQLite turns off at
        # every COMMIT and ROLLBACK: off at a call, the application ended the transaction the
        # block joined (Store.joined_alive). 0: none (its foreign keys are enforced and not
        # deferred, which the marker would change); 1: set by the join, put back at its end;
        # 2: the application's own.
        self.marked = 0
        # Its connection runs statements sqsqlite does not see (the application's own, or ones
        # on tx.connection): a ROLLBACK TO among them may undo rows this thread's connection
        # keeps (queue rows, in-flight reservations). Each call counts itself in a TEMP table,
        # which that ROLLBACK TO undoes too, and begins without them when the count is not the
        # one its last call left (Store.count_call).
        self.forgetful = False
        self.calls: int | None = None  # the count the group's last call left
        # The ConnectionState of the thread that opened it, which its end works on: Store.close
        # inside the block gives the store a new one.
        self.local: Any = None
        # This thread's own connection state while an application's connection stands in for it.
        self.saved: tuple | None = None
        self.nested = 0  # transaction blocks open inside it (savepoints of their own)
        self.nested_broken: list[bool] = []  # whether it was doomed as each of them began
        # len(after) as each of them began: one rolled back drops the steps deferred inside it.
        self.nested_after: list[int] = []
        # The Tx of an application's transaction, made by its first call and used by the others:
        # what it keeps (Tx.checked) holds until the transaction ends, as nothing else commits.
        self.tx: Any = None

    def failed(self, error: Exception) -> Exception:
        """``error``, kept as the group's if it is the first a write of it raised."""
        if self.error is None:
            self.error = error
        return error


class ThreadEnd:
    """Kept in a thread's ConnectionState (ending) and nowhere else: it goes when the thread
    ends, and its finalizer (the store's) closes the thread's connection and lock descriptors."""

    __slots__ = ("fds", "__weakref__")

    def __init__(self) -> None:
        self.fds: list[int] = []  # the lock descriptors the thread opened (Store._open_lock)


class ConnectionState:
    """What one thread keeps about its connection (the Store's, per thread: Store._local finds
    it through a threading.local once a call). A plain object: a field of a threading.local is a
    look-up in the thread's own dictionary at every read, about four times a plain object's, and
    a send reads a dozen."""

    conn: sqlite3.Connection | None
    pid: int | None
    # Queue rows read by this connection, valid while no other connection has committed
    # (PRAGMA data_version unchanged) and this one has not written them (forget_queues).
    version: int | None
    # This connection's descriptor of the writers' lock file (sqsqlite.lock): None until its
    # first write, and while it can't be opened (no fcntl, a URI, a read-only file system, out of
    # descriptors: Store._open_lock tries again a second on). One per connection, never inherited: flock belongs to the open file, so a descriptor
    # shared across fork or between threads would let both sides "hold" the lock at once.
    lockfd: int | None
    # Its descriptor of the senders' gate file, the same way; opened on its first contended send.
    gatefd: int | None
    # A cursor of the connection kept for the transactions' own statements (BEGIN, COMMIT,
    # PRAGMA data_version) and Tx's positional statements: conn.execute makes a cursor each
    # time, 1,000-2,000 instructions. Any: None until the connection opens, then always set.
    cursor: Any
    # The Group this thread's writes join, while one is open (Store.begin_group).
    group: Group | None
    # The store's ThreadEnd for this thread's connection: it goes with the thread.
    ending: ThreadEnd | None
    # Whether the connection's busy timeout is now a bounded BEGIN's (True: busy_seconds) or its
    # own (BUSY_TIMEOUT_SECONDS: False); None: not known (a change was cut short, or
    # sqlite_errors.retrying changed it). Kept so that it is set only when it must change: a loop
    # serving writes leaves it short, a thread pool's connections never shorten it.
    busy_short: bool | None
    busy_seconds: float
    # Whether this connection's SQLite checkpoint is the checkpoint thread's backstop
    # (PRAGMA wal_autocheckpoint=WAL_BACKSTOP_PAGES) rather than SQLite's default.
    backstop: bool
    # A write found the connection read-only (SQLite opened the file so when it or its directory
    # was not writable): it is closed once the write is over, and the next call opens it again.
    reopen: bool
    # What Tx runs its statements on when that is not ``conn``: while an application's connection
    # stands in for this thread's (a transaction on it), one that reads rows as sqlite3.Rows on
    # cursors of its own, so that the connection's own row factory stays the application's.
    rows: Any
    # Inside an application's transaction, once its first read of a queue row checked
    # data_version: no other connection can commit before it ends (Tx.queue).
    fresh: bool

    def __init__(self) -> None:
        # Every field set here, in one order: CPython reads such an object's fields as fast as slots.
        self.conn = None
        self.pid = None
        self.version = None
        self.lockfd = None
        self.gatefd = None
        self.cursor = None
        self.group = None
        self.ending = None
        self.busy_short = False
        self.busy_seconds = 0.0
        self.backstop = False
        self.reopen = False
        self.rows = None
        self.fresh = False
        self.queues: dict = {}
        # Per-connection engine state that must not outlive a rolled-back write (see core).
        self.state: dict = {}

    def set_busy_timeout(self, bounded: float | None) -> None:
        """Set the busy timeout of the connection: a bounded BEGIN's (``bounded`` seconds, what its
        wait for the lock file left of its bound), or (None) the connection's own."""
        self.busy_short = None  # until it is set: an interrupt in between leaves it to be set again
        seconds = D.BUSY_TIMEOUT_SECONDS if bounded is None else bounded
        self.cursor.execute(f"PRAGMA busy_timeout={max(1, int(seconds * 1000))}")
        self.busy_short, self.busy_seconds = bounded is not None, seconds


class Tx:
    """One open transaction. Methods are named after what they do, never take SQL."""

    __slots__ = ("c", "local", "writing", "checked", "state")

    def __init__(self, conn: sqlite3.Connection, local: Any = None, writing: bool = False):
        self.c = conn
        self.local = local  # the connection's ConnectionState; None for a read
        self.writing = writing
        # This transaction compared data_version (Tx.queue): the connection's cache holds.
        self.checked = False
        # The connection's per-transaction notes (prunes due, in-flight reservations): the same
        # dict for the transaction's length (a joined connection's stand-in has its own).
        self.state: dict = {} if local is None else local.state

    def queue(self, name: str, account: str, region: str):
        """The queue row named ``name`` of ``account`` in ``region`` (or None). In a write
        transaction it comes from this connection's cache when nothing was committed by another
        connection since it was read: data_version, read under the write lock, proves that.
        Saves a lookup per operation."""
        local = self.local
        if not self.writing or local is None:
            return self.c.execute(Q.queue_by_name, {"name": name, "account": account, "region": region}).fetchone()
        if not local.fresh:
            version = local.cursor.execute("PRAGMA data_version").fetchone()[0]
            if version != local.version:
                local.queues.clear()
                local.version = version
            self.checked = True
            group = local.group
            if group is not None and group.transaction:
                local.fresh = True  # no other connection commits before the transaction ends
        key = (name, account, region)  # three items: never a meta_setting's key
        row = local.queues.get(key)
        if row is None:
            row = self.c.execute(Q.queue_by_name, {"name": name, "account": account, "region": region}).fetchone()
            if row is not None:
                # Kept as a dict: sqlite3.Row finds a name by a case-insensitive scan of its
                # columns (up to 0.5 us for the queue row's last ones), and every operation
                # reads a dozen of them.
                row = local.queues[key] = dict(zip(row.keys(), row))
        return row

    def _check_version(self, local: Any) -> None:
        """Drop the connection's cache if another connection committed since it was filled."""
        version = local.cursor.execute("PRAGMA data_version").fetchone()[0]
        if version != local.version:
            local.queues.clear()
            local.version = version
        self.checked = True  # under the writers' lock: nothing else commits before this ends
        group = local.group
        if group is not None and group.transaction:
            local.fresh = True  # no other connection commits before the transaction ends

    def meta_setting(self, key: tuple[str, str], now: int, recheck_ms: int, parse: Callable[[bytes | None], Any]) -> Any:
        """The meta table's value for ``key`` (("meta", its key)) in a write transaction, as
        ``parse`` makes it of the stored bytes (None: no such key), cached
        with the queue rows (keyed by three items, this by two), so that a write pays a dictionary
        look-up: valid once this transaction compared data_version (Tx.queue), else for
        ``recheck_ms`` of ``now``'s clock since one did, after which this compares it itself
        (one PRAGMA): a write that reads no queue row (a delete by a remembered handle) sees
        another connection's change within that time."""
        local = self.local
        cached = local.queues.get(key)
        if cached is not None:
            if self.checked or local.fresh:
                if not 0 <= now - cached[1] < recheck_ms // 2:
                    local.queues[key] = (cached[0], now)  # proved right at now
                return cached[0]
            if 0 <= now - cached[1] < recheck_ms:
                return cached[0]
            self._check_version(local)
            cached = local.queues.get(key)
            if cached is not None:  # nothing committed elsewhere: still right, from now
                local.queues[key] = (cached[0], now)
                return cached[0]
        elif not self.checked and not local.fresh:
            self._check_version(local)
        row = self.c.execute(Q.get_meta, Q.get_meta.bind({"key": key[1]})).fetchone()
        value = parse(None if row is None else bytes(row["value"]))
        local.queues[key] = (value, now)
        return value

    def forget_queues(self) -> None:
        """This transaction wrote to the queues table: cached rows may be stale."""
        if self.local is not None:
            self.local.queues.clear()

    def one(self, sql: Q.Sql, **params: Any):
        return self.c.execute(sql.runs, sql.order(params)).fetchone()

    def all(self, sql: Q.Sql, **params: Any) -> list:
        return self.c.execute(sql.runs, sql.order(params)).fetchall()

    def all_bound(self, sql: Q.Sql, params: dict) -> list[tuple]:
        """Rows as plain tuples (the write cursor has no row factory), for a caller that makes
        its own row class of them; ``params`` a hot path's dict, built without keywords. Write
        transactions only."""
        return self.local.cursor.execute(sql.runs, sql.order(params)).fetchall()

    def run(self, sql: Q.Sql, **params: Any) -> int:
        return self.c.execute(sql.runs, sql.order(params)).rowcount

    def run_bound(self, sql: Q.Sql, params: dict) -> int:
        """Rows changed, ``params`` a hot path's dict, built without keywords.
        Write transactions only (on the kept cursor, like all_bound)."""
        return self.local.cursor.execute(sql.runs, sql.order(params)).rowcount

    def run_many_bound(self, sql: Q.Sql, rows: list[dict]) -> int:
        """Rows changed in all (what sqlite3's executemany rowcount sums). Write transactions only."""
        return self.local.cursor.executemany(sql.runs, map(sql.order, rows)).rowcount

    def scalar(self, sql: Q.Sql, **params: Any):
        row = self.c.execute(sql.runs, sql.order(params)).fetchone()
        return None if row is None else row[0]
