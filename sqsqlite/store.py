"""With ``tx.py``, the one place that executes SQL: connections, pragmas, migrations, transactions.

Each thread gets its own sqlite3 connection (SQLite connections must not be shared between
threads or carried across fork). Writes run in ``BEGIN IMMEDIATE`` so the write lock is taken
up front: a transaction never upgrades from reader to writer halfway, which is what produces
"database is locked" under load. A busy database is waited for (busy_timeout) and BEGIN or COMMIT
retried with backoff, one busy timeout in all (sqlite_errors.retrying), so callers see a lock error only then.

Before BEGIN IMMEDIATE, a writer takes sqsqlite's writers' lock: the write transaction (_Write)
is a :class:`sqsqlite.lock.WriteLock`, going through its states.

Under synchronous=NORMAL, checkpoints run on a thread of each Store's own (checkpoint.Checkpointer), so
a writer seldom waits inside its COMMIT for the fsync of the WAL.
"""

from __future__ import annotations

import functools
import logging
import os
import sqlite3
import threading
import time
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from typing import Any

from . import defaults as D
from . import lock
from .checkpoint import Checkpointer
from .dbfile import FileIdentity, close_fds, create_private, has_file
from .errors import DatabaseError, TransactionError
from .lock import FREE, IN_SQLITE, JOINED, WriteLock
from .space import prepare_new
from .sqlite_errors import busy, doomed, explain, foreign, not_ours, readonly, retrying, undone
from .tx import ConnectionState, Group, ThreadEnd, Tx

HEAD_REVISION = "0016"
log = logging.getLogger("sqsqlite.store")


_STORES: weakref.WeakSet[Store] = weakref.WeakSet()
# This process's id, kept by the fork hook below: os.getpid() is a system call, and every
# operation asks (a connection belongs to the process that opened it).
_PID = os.getpid()
_monotonic = time.monotonic
_FORK_PAUSED: list[Store] = []  # the stores whose checkpoint thread a fork paused


def _before_fork() -> None:
    # Threads inside SQLite hold its state of the file (its mutexes; its locks, kept per process): a
    # child would inherit them held by threads it lacks and wait for ever (inside a write: the busy timeout
    # in its first write, every sqsqlite writer behind it). So this process's writes in progress end first
    # (new ones wait at the fork gate; the forker's own can't), then each checkpoint thread's pass.
    lock.close_fork_gate()
    _FORK_PAUSED[:] = _STORES  # resumed exactly, whatever opens meanwhile
    for store in _FORK_PAUSED:
        store._checkpointer.pause()


def _after_fork_in_parent() -> None:
    try:
        for store in _FORK_PAUSED:
            store._checkpointer.resume()
    finally:
        _FORK_PAUSED.clear()
        lock.open_fork_gate()


def _after_fork_in_child() -> None:
    global _PID
    _PID = os.getpid()
    _FORKED_MID_WRITE.update(write.key for write in lock.writes_in_progress())
    lock.forked()
    _FORK_PAUSED.clear()
    for store in list(_STORES):
        store._lock = threading.Lock()  # another thread of the parent may have held it
        state = getattr(store._threads, "state", None)  # this thread's, the forker's
        if state is not None and state.group is not None and state.group.writer is not None:
            state.group.forked = True  # begun: its connection's transaction is the parent's
            _FORKED_MID_WRITE.add(store._lock_key)
        store._refuse_if_forked_mid_write()
        # The parent's lock descriptors, closed (a duplicate's close leaves the parent's lock held): kept,
        # one would hold the lock of a parent dead inside a write. Connections open their own again.
        close_fds(store._lockfds)
        inherited, store._all = store._all, []
        conn = store._checkpointer.after_fork()
        if conn is not None:
            inherited.append(conn)
        _close_inherited(inherited)


# The connections a forked child inherited but must not close: kept, never collected, for good.
_KEPT: list[sqlite3.Connection] = []
# The files (lock keys) a write of the parent's was in progress on at a fork: in the child, SQLite
# believes the process holds their write lock for good (a connection kept above holds it).
_FORKED_MID_WRITE: set[str] = set()


def _close_inherited(conns: list[sqlite3.Connection]) -> None:
    """Close, in a forked child, the parent's connections. SQLite keeps the locks a process holds
    on a file in one record per process, which the child inherits: while an inherited connection
    is open, the child's own connections take no shared lock of their own (SQLite believes the
    process has one), and the parent's last close, finding no other lock, would checkpoint and
    delete the WAL under the running child. Closed only if no thread of the parent was inside
    SQLite at the fork (lock.CLEAR: a mutex it held would hang the close), and only when idle:
    closing one inside a transaction rolls it back, and a write's rollback clears the WAL index
    the parent shares. The others are kept, never closed, not even by the collector."""
    for conn in conns:
        try:
            idle = lock.CLEAR and not conn.in_transaction
        except sqlite3.Error:  # closed already
            continue
        if idle:
            with suppress(sqlite3.Error):
                conn.close()
        else:
            _KEPT.append(conn)


def _thread_ended(store_ref: Callable[[], Store | None], conn: sqlite3.Connection, fds: list[int], pid: int) -> None:
    # A forked child clears the parent's other threads before the fork hooks run: what they held is
    # the parent's, and taking the store's lock (held, maybe, by one of them) would hang the fork.
    store = store_ref()
    if store is not None and pid == os.getpid():  # else collected: its own finalizers closed everything
        store._drop(conn, fds)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(before=_before_fork, after_in_parent=_after_fork_in_parent, after_in_child=_after_fork_in_child)


class _Write(WriteLock):
    """The context manager of Store.write, a write transaction: a lock.WriteLock (taken, entered,
    released: the writers' lock's states) that begins with BEGIN IMMEDIATE. A class, not a
    generator: it runs twice per operation, and a generator-based one costs several times more.
    The common path, an uncontended lock and a BEGIN and COMMIT that succeed at once, is written
    out in __enter__, _begin and __exit__: each call it saves is about 1,000 instructions of
    CPython 3.11."""

    __slots__ = ("store", "conn", "local", "sending", "grouped", "refusable", "changes")

    def __init__(self, store: Store, conn: sqlite3.Connection, local: ConnectionState, sending: bool = False):
        # WriteLock's fields, set here: a call fewer a write (holding is set with fd, by take).
        self.state, self.key, self.fd, self.gate = FREE, store._lock_key, None, None
        self.store, self.conn, self.local = store, conn, local
        self.sending = sending
        self.grouped = False  # a savepoint of its thread's Group, not a transaction of its own
        # A call that may refuse after it has written (Store.write's refusable): in an
        # application's transaction it takes a savepoint all the same.
        self.refusable = False
        # In an application's transaction without a savepoint (see _enter_group), the
        # connection's total_changes when this write began; None otherwise.
        self.changes: int | None = None

    def senders_gate(self) -> int | None:
        local = self.local
        gate = local.gatefd
        if gate is None:
            # A failure to open is not remembered for long (it may pass, like running out of
            # descriptors): this send waits in no order, a later contended one tries again.
            gate = local.gatefd = self.store._open_lock(self.store._gate_key, local)
        return gate

    def named(self) -> str:
        return self.store.path

    def __enter__(self) -> Tx:
        local = self.local
        if local.group is not None:
            return self._enter_group(local.group)
        self._begin(None)
        try:  # an interrupt landing here would leave the transaction and the lock with no __exit__
            return Tx(self.conn, local, True)
        except BaseException:
            self.store._rollback(self.conn)
            self.release()
            raise

    def _begin(self, seconds: float | None) -> bool:
        """refuse if need be, take (and enter), then begin: BEGIN IMMEDIATE. ``seconds``: how long
        it may wait for the lock file and SQLite's lock in all (Store.lock_group's up-front take);
        None: the busy timeout. Whether it began: False only when bounded and the bound ran out
        (give_up), nothing held."""
        local = self.local
        fd = local.lockfd
        if fd is None:
            fd = local.lockfd = self.store._open_lock(self.store._lock_key, local)
        try:
            if JOINED:
                lock.refuse_if_joined(self.key, self.store.path)
            if seconds is None:
                self.take(fd, self.sending, None)
                if local.busy_short is not False:
                    local.set_busy_timeout(None)
                started = _monotonic()
            else:
                # Bounded, SQLite's busy handler too waits only what is left: a program that writes
                # with SQLite alone (the sqlite3 shell, a backup) holds SQLite's lock without
                # sqsqlite's lock file. Both waits share the bound, so an endpoint request's
                # deadline bounds them together; the loop's few ms are left as they are (no PRAGMA
                # a contended write).
                asked = _monotonic()
                if not self.take(fd, self.sending, seconds):
                    return False
                started = _monotonic()
                if started - asked > D.WAIT_FREE_SECONDS:  # the lock file took much of it
                    local.set_busy_timeout(max(0.0, seconds - (started - asked)))
                elif local.busy_short is not True or local.busy_seconds != seconds:
                    local.set_busy_timeout(seconds)
            file = self.store._file
            if started >= file.next:  # about once a second: is the file at the path still ours?
                file.check(started)
            try:
                local.cursor.execute("BEGIN IMMEDIATE")
            except sqlite3.OperationalError as exc:
                if seconds is not None and busy(exc):
                    self.release()  # give_up
                    return False
                local.busy_short = None  # retrying sets it as it goes
                local.reopen = local.reopen or readonly(exc)
                retrying(self.store.path, lambda: local.cursor.execute("BEGIN IMMEDIATE"), started, local.cursor, exc)
            self.state = IN_SQLITE
            return True
        except BaseException as exc:
            if not isinstance(exc, (sqlite3.Error, DatabaseError)):
                # An interrupt (KeyboardInterrupt) can land after BEGIN returned: an open
                # transaction would keep SQLite's write lock from every other process.
                self.store._rollback(self.conn)
            self.release()
            self._reopen_if(exc)
            raise

    def _enter_group(self, group: Group) -> Tx:
        if group.forked:
            self.store.refuse_forked(group)
        if group.writer is None:  # the group's first write: the transaction begins here
            self._begin(None)
            group.writer = self
        elif group.broken or not self.conn.in_transaction or (group.marked and self.store.ended_under(group)):
            # SQLite undid the group's transaction: a SAVEPOINT now would begin (and its RELEASE
            # commit) a transaction of this write's own, outside the group that fails. Or the
            # application ended the transaction on its connection, which may be in a new one
            # of its own already: this write would go into that, outside the block.
            group.broken = True
            raise doomed() if group.transaction else undone()
        if group.forgetful:
            self.store.count_call(self.local, group)
        if (group.transaction and not self.refusable) or (group.lone and self.conn.total_changes == group.changes):
            # No savepoint in an application's transaction: SAVEPOINT and RELEASE cost about
            # 9 us a call (a third of an outbox's send). A call that fails having changed no row
            # (every refusal) leaves the transaction as it was; one that fails after it changed
            # rows dooms it (_exit_group), as SQLite's own rules doom one on a full disk. Nor
            # in one call's group (call_with_lock) before anything is written: the transaction
            # is this write's alone, undone whole if it fails, as a write of its own would be.
            self.changes = self.conn.total_changes
            self.grouped = True
            tx = group.tx
            if tx is None:
                tx = group.tx = Tx(self.local.rows or self.conn, self.local, True)
            return tx
        self.changes = None
        try:
            self.local.cursor.execute("SAVEPOINT grouped")
        except sqlite3.Error as exc:
            group.broken = True
            raise group.failed(DatabaseError(self.store.explain(exc))) from None
        self.grouped = True
        return Tx(self.local.rows or self.conn, self.local, True)

    def _exit_group(self, kind, exc) -> bool:
        """Kept in the group's transaction; on an exception, only this write is undone."""
        local = self.local
        group = local.group
        if self.changes is not None:
            return self._exit_transaction_write(group, kind, exc)
        if kind is None:
            try:
                local.cursor.execute("RELEASE grouped")
            except sqlite3.Error as failed:
                error = DatabaseError(self.store.explain(failed))
                if group is not None:
                    group.broken = True
                    group.failed(error)
                raise error from None
            return False
        try:
            if self.conn.in_transaction:
                local.cursor.execute("ROLLBACK TO grouped")
                local.cursor.execute("RELEASE grouped")
            elif group is not None:
                group.broken = True  # SQLite undid the whole transaction (SQLITE_FULL does)
        except sqlite3.Error:
            if group is not None:
                group.broken = True
        local.queues.clear()
        local.state.clear()
        if issubclass(kind, sqlite3.DatabaseError):
            local.reopen = local.reopen or readonly(exc)  # once the group ends (end_group)
            error = DatabaseError(self.store.explain(exc))
            raise (error if group is None else group.failed(error)) from None
        return False

    def _exit_transaction_write(self, group: Group | None, kind, exc) -> bool:
        """The end of a call inside an application's transaction (no savepoint: _enter_group)."""
        if kind is None:
            return False
        local = self.local
        if group is not None and (self.conn.total_changes != self.changes or not self.conn.in_transaction):
            group.broken = True  # part of the call's work is written and can't be undone alone
        local.queues.clear()
        local.state.clear()
        if issubclass(kind, sqlite3.DatabaseError):
            local.reopen = local.reopen or readonly(exc)  # once the transaction ends (end_transaction)
            raise DatabaseError(self.store.explain(exc)) from None
        return False

    def __exit__(self, kind, exc, tb) -> bool:
        if self.grouped:
            if kind is None and self.changes is not None:  # _exit_transaction_write's common case
                return False
            return self._exit_group(kind, exc)
        try:
            if kind is None:
                started = _monotonic()
                try:
                    self.local.cursor.execute("COMMIT")
                except BaseException as failed:
                    self._commit_failed(failed, started)
                    return False
                self.store._checkpointed(self.local)
                return False
            return self._failed(kind, exc)
        finally:
            self.release()

    def _commit_failed(self, failed: BaseException, started: float) -> None:
        """COMMIT's first try, begun at ``started``, failed: retried while the database is busy;
        otherwise (or out of time) rolled back and reported."""
        try:
            if not isinstance(failed, sqlite3.OperationalError):
                raise failed
            cursor = self.local.cursor
            self.local.busy_short = None  # retrying sets it as it goes
            retrying(self.store.path, lambda: cursor.execute("COMMIT"), started, cursor, failed)
        except BaseException:
            self._rolled_back()
            self._reopen_if(failed)
            raise

    def _failed(self, kind, exc) -> bool:
        self._rolled_back()
        self._reopen_if(exc)
        if issubclass(kind, sqlite3.DatabaseError):
            # A statement failed inside the transaction (disk full, read-only file, I/O error):
            # all of it is undone; report the typed error, never a raw sqlite3 one.
            raise DatabaseError(self.store.explain(exc)) from None
        return False

    def _reopen_if(self, exc: BaseException) -> None:
        """After a write that found its connection read-only: let the lock go, and close the
        connection and lock descriptors, so that the thread's next call opens them again (a pool's
        thread would otherwise keep failing after the file was made writable)."""
        local = self.local
        if local.rows is not None:
            return  # an application's connection (Store.begin_transaction): never ours to close
        if readonly(exc) or local.reopen:
            local.reopen = True
            if local.group is None:  # a group's ends in end_group
                self.release()
                self.store._reopen(local)

    def _rolled_back(self) -> None:
        Store._rollback(self.conn)
        # Whatever this transaction read or reserved may not have happened.
        self.local.queues.clear()
        self.local.state.clear()


_COUNT_CALL = "UPDATE temp.sqsqlite_calls SET n = n + 1 RETURNING n"


class _Rows:
    """An application's connection as Tx reads it (ConnectionState.rows): each statement on a
    cursor of its own that makes sqlite3.Rows, the connection's own row factory left as it is."""

    __slots__ = ("conn",)

    def __init__(self, conn: sqlite3.Connection):
        self.conn = conn

    def execute(self, sql: str, params: Any = ()) -> sqlite3.Cursor:
        cursor = self.conn.cursor()
        cursor.row_factory = sqlite3.Row
        return cursor.execute(sql, params)


class Store:
    """A sqsqlite database file: opens it, migrates it, runs transactions on it."""

    def __init__(self, path: str, *, synchronous: str = "NORMAL", migrate: bool = True, owner: tuple[str, str] | None = None):
        self.path = os.fspath(path)
        # (account, region) a migration gives the queues of a file made before queues had them
        # (migration 0012): the opener's defaults.
        self.owner = owner or (D.DEFAULT_ACCOUNT_ID, D.DEFAULT_REGION)
        if self.path == ":memory:":
            # Each thread opens its own connection, and an in-memory database is one connection's.
            raise DatabaseError("sqsqlite needs a database file, not ':memory:': every thread and process opens its own connection to it.")
        self.synchronous = synchronous.upper()
        if self.synchronous not in ("OFF", "NORMAL", "FULL", "EXTRA"):
            raise ValueError(f"synchronous must be OFF, NORMAL, FULL or EXTRA, got {synchronous!r}")
        self._threads = threading.local()  # each thread's ConnectionState (_local)
        self._all: list[sqlite3.Connection] = []
        # Emptied in place, never replaced: the finalizer below holds this very list, so the
        # descriptors of a Store dropped without close() are closed when it is collected.
        self._lockfds: list[int] = []
        self._lock_retry_at = 0.0  # monotonic time before which _open_lock tries no lock file again
        weakref.finalize(self, close_fds, self._lockfds)
        self._lock_key = os.path.realpath(self.path) + "-lock"
        self._gate_key = os.path.realpath(self.path) + "-sendlock"
        # The file as every connection opens it, absolute: a thread (or the checkpoint thread)
        # opening its connection after the process changed directory opens this same file. The
        # path as given stays self.path, for messages.
        self._has_file = has_file(self.path)  # no file (":memory:", a "file:" URI): no lock file, ever
        self._opened = os.path.abspath(self.path) if self._has_file else self.path
        create_private(self._opened)
        self._file = FileIdentity(self._opened, self.path)  # what was opened, watched by writers and checkpoints
        self._refuse_if_forked_mid_write()
        # Only under NORMAL does a checkpoint carry the WAL's fsync: FULL syncs the WAL at every
        # commit (its checkpoints only copy pages back, and a thread's fsyncs would compete
        # with the commits'), OFF never syncs.
        self._checkpointer = Checkpointer(self._opened, self.synchronous, self.synchronous == "NORMAL" and has_file(self.path), self._file)
        weakref.finalize(self, self._checkpointer.close)
        _STORES.add(self)  # after every attribute the fork hook touches
        self._lock = threading.Lock()
        self.closed = False  # close() was called: a background thread (a buffer's flusher) stops
        if migrate:  # else opened for migration commands only: the file may have no schema yet
            self.ensure_schema()

    def _refuse_if_forked_mid_write(self) -> None:
        if self._lock_key in _FORKED_MID_WRITE:
            self._file.refuse(
                f"This process was forked while a write transaction on {self.path!r} was open (in the thread that "
                "forked, or in another that did not end in time), which its parent went on with: SQLite holds the "
                "file's write lock for this process for good, so it can't use the file. Fork outside transactions, "
                "or start the process with spawn or forkserver."
            )

    def refuse_forked(self, group: Group) -> None:
        """Refuse a forked child's use of a transaction its parent had open at the fork: its
        connection's state is the parent's (a rollback or commit from here would change the WAL
        index both share), and its lock descriptor was closed. The fork hook refused the file."""
        if group.forked:
            self._file.check(None)

    # ------------------------------------------------------------ connections

    @property
    def _local(self) -> ConnectionState:
        """This thread's ConnectionState: one read of a threading.local, then plain fields."""
        try:
            return self._threads.state
        except AttributeError:
            state = self._threads.state = ConnectionState()
            return state

    def connection(self) -> sqlite3.Connection:
        local = self._local
        conn = local.conn
        if conn is not None and local.pid == _PID:
            return conn
        self._file.check(None)  # else SQLite would create a new, empty file at the path
        with lock.in_progress():  # a fork waits for it
            conn = self.open_connection()
            with self._lock:
                self._all.append(conn)  # closed by a forked child, and by close()
            cursor = conn.cursor()
            cursor.row_factory = None  # Tx.all_bound's rows are plain tuples
            # The cursor first: an interrupt between the two must not leave a connection that
            # looks ready without its cursor.
            local.cursor = cursor
            local.busy_short = False  # the connection's own (open_connection's timeout)
            local.conn, local.pid = conn, _PID
            local.queues.clear()
            local.state.clear()
            local.version = None
            # While the checkpoint thread runs, SQLite's own checkpoint is only its backstop (see
            # defaults.WAL_BACKSTOP_PAGES); _checkpointed puts it back should the thread stop.
            local.backstop = not self._checkpointer.closed
            if local.backstop:
                cursor.execute(f"PRAGMA wal_autocheckpoint={D.WAL_BACKSTOP_PAGES}")
        # After a fork: the parent's lock descriptors, closed by the fork hook, their numbers maybe
        # another thread's by now: forgotten, not closed. This thread's own come with its first write.
        local.lockfd = local.gatefd = None
        # Goes with the thread's state when the thread ends, closing what it opened: else a program
        # starting a thread a task (a web server's a request) would keep each one's open till close().
        ending = local.ending = ThreadEnd()
        weakref.finalize(ending, _thread_ended, weakref.ref(self), conn, ending.fds, _PID).atexit = False
        return conn

    def open_connection(self) -> sqlite3.Connection:
        """A new connection with sqsqlite's pragmas, in WAL mode (the migrations run on one)."""
        try:
            conn = sqlite3.connect(
                self._opened,
                timeout=D.BUSY_TIMEOUT_SECONDS,
                isolation_level=None,  # we issue BEGIN/COMMIT ourselves
                check_same_thread=False,
                cached_statements=256,
            )
            conn.row_factory = sqlite3.Row
            mode = conn.execute("PRAGMA journal_mode").fetchone()[0]
            if mode.lower() != "wal":
                # Switching to WAL rewrites the file header: look before touching a file that
                # may belong to someone else.
                if foreign(conn):
                    conn.close()
                    raise DatabaseError(not_ours(self.path))
                prepare_new(conn)  # a new file gives free pages back (docs/explanation/reliability.md, "Disk space")
                retrying(self.path, lambda: conn.execute("PRAGMA journal_mode=WAL"))
            conn.execute(f"PRAGMA synchronous={self.synchronous}")
            conn.execute("PRAGMA foreign_keys=OFF")
            conn.execute("PRAGMA temp_store=MEMORY")
            # Keep the WAL from growing without bound after a long reader lets go.
            conn.execute("PRAGMA journal_size_limit=67108864")
        except sqlite3.DatabaseError as exc:
            raise DatabaseError(self.explain(exc)) from None
        return conn

    def _open_lock(self, path: str, local: ConnectionState) -> int | None:
        """This connection's descriptor of a lock file (the writers' lock, the senders' gate), or
        None for none now (tried again a second on, not at every write)."""
        if not self._has_file or _monotonic() < self._lock_retry_at:
            return None
        fd = lock.open_lock_file(path)
        if fd is None:
            self._lock_retry_at = _monotonic() + D.LOCK_RETRY_SECONDS
            return None
        with self._lock:
            self._lockfds.append(fd)
        if local.ending is not None:  # opened with the thread's connection, which comes first
            local.ending.fds.append(fd)
        return fd

    def _forget_lock_fds(self, local: ConnectionState) -> None:
        for fd in (local.lockfd, local.gatefd):
            if fd is not None:
                self._close_fd(fd)
        local.lockfd = local.gatefd = None

    def _close_fd(self, fd: int) -> None:
        with self._lock:
            if fd not in self._lockfds:
                return  # close() took it already
            self._lockfds.remove(fd)
        with suppress(OSError):
            os.close(fd)

    def explain(self, exc: Exception) -> str:
        """SQLite's error as one sentence naming the file and what to do."""
        return explain(self.path, exc)

    def close(self) -> None:
        # The checkpointer first, so that the last connection to close finds the WAL
        # checkpointed and removes it, as SQLite does.
        self._checkpointer.close()
        self.closed = True
        # Counted before the connections leave _all: a fork meanwhile finds them there or closed.
        with lock.in_progress():
            with self._lock:
                conns, self._all = self._all, []
                close_fds(self._lockfds)
            for conn in conns:
                with suppress(sqlite3.Error):
                    conn.close()
        self._threads = threading.local()

    # ------------------------------------------------------------ transactions

    def write(self, sending: bool = False, refusable: bool = False) -> _Write:
        """A write transaction, the write lock held from its start; ``sending``: behind other
        senders; ``refusable``: a call that may refuse after it has written (a receive's prune and
        in-flight recount come before its OverLimit), which inside an application's transaction
        takes a savepoint of its own, so that the refusal leaves the transaction usable."""
        local = self._local
        conn = local.conn
        if conn is None or local.pid != _PID:  # connection()'s own test: the thread's state read once
            conn = self.connection()
        write = _Write(self, conn, local, sending)
        if refusable:
            write.refusable = True
        return write

    @staticmethod
    def _rollback(conn: sqlite3.Connection) -> None:
        # SQLite may already have rolled back on its own (SQLITE_FULL does); the error that got
        # us here is the one worth reporting, not a failing ROLLBACK.
        if conn.in_transaction:
            with suppress(sqlite3.Error):
                conn.execute("ROLLBACK")

    def begin_group(self) -> Group:
        """Make this thread's writes one transaction until end_group (see Group); its first
        write takes its lock."""
        group = self.lock_group(None)
        assert group is not None  # nothing to wait for: always begun
        return group

    def lock_group(self, within: float | None, lone: bool = False) -> Group | None:
        """begin_group, its lock taken now, up front: the writers' lock file, then SQLite's,
        waiting at most ``within`` seconds in all (an event loop's thread must not stop long; an
        endpoint request gives up at its deadline). None when they could not be had by then:
        nothing taken, no group begun. ``lone``: one call's writes (call_with_lock), whose first
        takes no savepoint."""
        local = self._local
        conn = local.conn
        if conn is None or local.pid != _PID:  # connection()'s own test: the thread's state read once
            conn = self.connection()
        if local.group is not None:
            raise RuntimeError("this thread's writes are grouped already")
        group = Group()
        group.local = local
        if within is not None:
            writer = _Write(self, conn, local)
            if not writer._begin(within):
                return None
            try:  # an interrupt landing after BEGIN must not keep the lock from every other process
                group.writer = writer
                group.lone, group.changes = lone, conn.total_changes
            except BaseException:
                self._rollback(conn)
                writer.release()
                raise
        local.group = group
        return group

    def call_with_lock(self, within: float, call: Callable[[], Any]) -> tuple[bool, Any]:
        """(True, ``call()``) with the write lock taken up front, waiting at most ``within``
        seconds for it (lock_group), its writes one transaction committed before this returns;
        or (False, None) when the lock could not be had by then, call never run: run it where it
        may wait. A write of it that fails is undone alone, as a transaction of its own would be
        (its first has the whole transaction to itself, a later one a savepoint), whether call
        raises its error or answers with it. Inside a transaction of this thread (which holds
        the lock), call runs in it."""
        local = self._local
        if local.group is not None:
            return True, call()
        try:
            group = self.lock_group(within, True)
            if group is None:
                return False, None
            result = call()
        except BaseException as exc:
            group = local.group  # taken, even if an interrupt came before lock_group returned it
            if group is not None and group.lone:
                # What it wrote before a failing write stays; an interrupt's call is not reported done.
                self.end_transaction(group, isinstance(exc, Exception) and not group.broken)
            raise
        self.end_transaction(group, not group.broken)
        return True, result

    def end_group(self, group: Group) -> None:
        """Commit the group's writes, then run what they deferred (after_commit). Raises
        DatabaseError when they could not be committed: then none of them happened."""
        self.end_transaction(group, True)

    def begin_transaction(self, foreign: sqlite3.Connection | None = None, owned: bool = True) -> Group:
        """An application's transaction: every write and read of this thread on this store is part
        of it (each write a savepoint, undone alone when it fails) until end_transaction, which
        commits or rolls back. Its write lock is taken here, up front, as every write's is.

        ``foreign``: an application's sqlite3 connection to this file, which stands in for this
        thread's own until then. With no transaction open on it and ``owned``, sqsqlite takes its
        writers' lock, begins one (BEGIN IMMEDIATE) and ends it, as on its own connection. Else
        it joins the application's transaction, which the application commits: it begins one if
        none is open (BEGIN IMMEDIATE), takes SQLite's write lock now if that one has not (so that
        a refusal comes first, not halfway), and makes the block a savepoint of it. A joined
        transaction takes SQLite's lock without sqsqlite's lock file, which only the transaction's
        end could let go. Inside a transaction of this thread already, a nested block is a
        savepoint of it (end_transaction releases it or rolls back to it)."""
        local = self._local
        group = local.group
        if group is not None:
            if not group.transaction:
                raise RuntimeError("this thread's writes are grouped already")
            self.refuse_forked(group)
            if foreign is not None and foreign is not local.conn:
                raise TransactionError(
                    "This thread has a transaction open on the database through another connection; "
                    "a transaction inside it runs on that one."
                )
            if group.broken or local.conn is None or not local.conn.in_transaction or self.ended_under(group):
                # A SAVEPOINT now would begin a transaction of its own, and its RELEASE commit it.
                group.broken = True
                raise doomed()
            self._savepoint(local, f"SAVEPOINT sqsqlite_nested_{group.nested + 1}")
            group.nested += 1
            group.nested_broken.append(group.broken)
            group.nested_after.append(len(group.after))
            return group
        own = local.conn  # this thread's own, first: its lock descriptor is the one an owned transaction takes
        if own is None or local.pid != _PID:  # connection()'s own test, written out (an outbox pays it each time)
            own = self.connection()
        group = Group()
        group.local = local
        group.transaction = True
        if foreign is not None:
            group.saved = self._stand_in(local, foreign)
            group.forgetful = True
        conn = foreign or own
        writer = _Write(self, conn, local)
        already = conn.in_transaction  # one of the application's (joined), or none
        try:
            if foreign is None or (owned and not already):
                writer._begin(None)
                if writer.fd is not None:
                    lock.thread_transactions().add(self._lock_key)
            else:
                group.joined = True
                lock.enter(writer)  # in progress, as a write (its release leaves): a fork waits for it
                self._join(local, foreign)
                lock.note_joined(self._lock_key, foreign)
            if foreign is not None:
                group.marked = self._mark(local)
            group.writer = writer
            local.group = group
        except BaseException:
            # An interrupt can land after BEGIN returned: an owned transaction begun here must not
            # keep the write lock (and the writers' lock file) from every other process.
            if not group.joined and not already and conn.in_transaction:
                self._rollback(conn)
            writer.release()
            if group.saved is not None:
                self._stand_down(local, group.saved)
            raise
        return group

    def forget_state(self) -> None:
        """Drop what this thread's connection keeps of rows it read or reserved (queue rows, the
        in-flight block): an application's ROLLBACK TO may have undone the writes behind them."""
        self._local.queues.clear()
        self._local.state.clear()

    def count_call(self, local: ConnectionState, group: Group) -> None:
        """A call of ``group`` (Group.forgetful) begins: count it in the connection's TEMP table
        sqsqlite_calls, and drop the rows kept (forget_rows) if the count is not the one its last
        call left, that is if a ROLLBACK TO undid a call since. One statement, about 4 us."""
        cursor = local.cursor
        try:
            count = cursor.execute(_COUNT_CALL).fetchall()
        except sqlite3.OperationalError:  # none on this connection yet, or a ROLLBACK TO undid its creation
            count = []
        if not count:
            try:
                cursor.execute("CREATE TEMP TABLE IF NOT EXISTS sqsqlite_calls (n INTEGER NOT NULL)")
                cursor.execute("DELETE FROM temp.sqsqlite_calls")
                cursor.execute("INSERT INTO temp.sqsqlite_calls VALUES (0)")
            except sqlite3.Error as exc:
                group.broken = True
                raise DatabaseError(self.explain(exc)) from None
            count = [(0,)]
        if group.calls is not None and count[0][0] != group.calls + 1:
            self.forget_rows(local)
        group.calls = count[0][0]

    @staticmethod
    def forget_rows(local: ConnectionState) -> None:
        """Drop what a ROLLBACK TO sqsqlite did not see may have undone and a call would trust: the
        queue rows (and meta settings) read, and the in-flight reservations (receiving._under_cap).
        The prune schedule and history marks stay: stale, they only delay a prune or a sample."""
        queues = local.queues
        for key in [key for key in queues if len(key) == 3]:  # (name, account, region): a queue row
            del queues[key]
        state = local.state
        if state:
            for key in [key for key in state if key[0] == "inflight"]:
                del state[key]

    def in_joined_transaction(self) -> bool:
        """Whether this thread's calls are inside a block joined into an application's own
        transaction, which the application commits where sqsqlite does not see it."""
        group = self._local.group
        return group is not None and group.joined

    def in_transaction(self) -> bool:
        """Whether this thread's calls on this store are inside an application's transaction."""
        group = self._local.group
        return group is not None and group.transaction

    def end_transaction(self, group: Group, commit: bool) -> None:
        """Commit (``commit``) or roll back a transaction (begin_transaction; a group), then run
        what its writes deferred (after_commit) once it has committed. Raises DatabaseError when
        asked to commit writes that can't be: then none of them happened. A nested block's end
        releases its savepoint or rolls back to it; a joined transaction's, the block's savepoint
        (its application commits it). Closed inside the block, the store says so with DatabaseError;
        on an application's connection, what the block did is rolled back and the connection's
        settings put back."""
        local = group.local or self._local
        if group.forked:
            local.group = None
            self.refuse_forked(group)
        if group.nested:
            name = f"sqsqlite_nested_{group.nested}"
            group.nested -= 1
            self._end_savepoint(local, group, name, commit, group.nested_broken.pop(), group.nested_after.pop())
            return
        local.group = None
        local.fresh = False
        writer = group.writer
        if writer is None:  # no write happened
            return
        if self.closed:
            # Closed inside the block: its connection and lock went with it, uncommitted. An
            # application's connection stays open: the block's part of it is undone there.
            try:
                if group.joined:
                    self._end_savepoint(local, group, "sqsqlite_joined", False)
                elif group.saved is not None:
                    self._rollback(writer.conn)
            finally:
                lock.thread_transactions().discard(self._lock_key)
                writer.release()
                if group.saved is not None:
                    self._stand_down(local, group.saved)
            raise DatabaseError(
                f"The database {self.path!r} was closed inside the transaction: nothing of it was committed"
                + (" (what the block did is rolled back; your transaction goes on)." if group.joined else ".")
            )
        committed = False
        try:
            if group.joined:
                self._end_savepoint(local, group, "sqsqlite_joined", commit)
            elif not commit:
                self._rollback(writer.conn)
            elif group.broken or not writer.conn.in_transaction or (group.marked and self.ended_under(group)):
                self._rollback(writer.conn)
                raise doomed() if group.transaction else undone()
            else:
                started = _monotonic()
                try:
                    local.cursor.execute("COMMIT")
                except BaseException as failed:
                    writer._commit_failed(failed, started)
                committed = True
                self._checkpointed(local)  # before the release: its PRAGMA, if any, counted in progress by the write
        finally:
            if not committed:
                local.queues.clear()
                local.state.clear()
            if group.transaction:  # begin_transaction noted it
                lock.thread_transactions().discard(self._lock_key)
            writer.release()
            if group.saved is not None:
                self._stand_down(local, group.saved)
            elif local.reopen:
                self._reopen(local)
        if not committed:
            return  # a joined transaction's wake-ups come from its commit's data_version, seen by every poll
        for fn in group.after:
            try:
                fn()
            except Exception:  # committed all the same: one failing wake-up must not stop the others
                log.exception("a step after a grouped commit failed")

    def _savepoint(self, local: ConnectionState, statement: str) -> None:
        try:
            local.cursor.execute(statement)
        except sqlite3.Error as exc:
            raise DatabaseError(self.explain(exc)) from None

    def _end_savepoint(
        self, local: ConnectionState, group: Group, name: str, commit: bool, broken: bool = False, after: int | None = None
    ) -> None:
        """Release a block's savepoint, or roll back to it; TransactionError when its writes can't
        be kept (a call inside it failed after writing, or SQLite undid the transaction). Rolled
        back to, the transaction is as it was when the block began (``broken``: as doomed as then),
        and the steps deferred to its commit since (from ``after``, len(group.after) then) are dropped."""
        conn = local.conn
        # Ended under sqsqlite (the application's COMMIT or ROLLBACK), the transaction open now
        # is a new one of the application's: its savepoint is gone, and nothing of it is ours.
        alive = conn is not None and lock.still_in_transaction(conn) and not self.ended_under(group)
        if commit and not group.broken and alive:
            self._savepoint(local, f"RELEASE {name}")
            if name == "sqsqlite_joined":
                self._unmark(local, group)
            return
        local.queues.clear()
        local.state.clear()
        if after is not None:
            del group.after[after:]  # a move task started inside it, say: its row is undone
        if alive:
            try:
                local.cursor.execute(f"ROLLBACK TO {name}")
                local.cursor.execute(f"RELEASE {name}")
                group.broken = broken  # what the block did is undone, and only that
            except sqlite3.Error:
                group.broken = True
            if name == "sqsqlite_joined":
                self._unmark(local, group)
        else:
            group.broken = True
        if commit:
            raise doomed()

    def ended_under(self, group: Group) -> bool:
        """Whether the application ended the transaction of ``group`` (on its own connection)
        with a COMMIT or ROLLBACK of its own: SQLite turned the join's marker off (Group.marked).
        sqlite3 may have begun a new transaction since (at once with autocommit=False on Python
        3.12, at its next INSERT otherwise), so the connection being in a transaction says
        nothing. One PRAGMA read, about a microsecond, on groups on an application's connection."""
        if not group.marked:
            return False
        try:
            return not (group.local or self._local).cursor.execute("PRAGMA defer_foreign_keys").fetchone()[0]
        except sqlite3.Error:
            return True

    def _mark(self, local: ConnectionState) -> int:
        """Mark the transaction just begun or joined on an application's connection (Group.marked):
        PRAGMA defer_foreign_keys ON, which SQLite turns off at the transaction's end. It changes
        nothing while the connection enforces no foreign keys (sqlite3's and SQLAlchemy's default);
        on one that does and does not defer them, it would, so that one goes unmarked."""
        cursor = local.cursor
        try:
            if cursor.execute("PRAGMA defer_foreign_keys").fetchone()[0]:
                return 2
            if cursor.execute("PRAGMA foreign_keys").fetchone()[0]:
                return 0
            cursor.execute("PRAGMA defer_foreign_keys=ON")
        except sqlite3.Error as exc:
            raise DatabaseError(self.explain(exc)) from None
        return 1

    def _unmark(self, local: ConnectionState, group: Group) -> None:
        """The join's marker off again at the block's end: the application's transaction goes on."""
        if group.marked == 1:
            with suppress(sqlite3.Error):
                local.cursor.execute("PRAGMA defer_foreign_keys=OFF")

    def _stand_in(self, local: ConnectionState, conn: sqlite3.Connection) -> tuple:
        """Put an application's connection in place of this thread's own (begin_transaction),
        after checking that it is a connection to this file that can take part; returns what
        _stand_down puts back."""
        if conn.text_factory is not str:
            # sqsqlite's reads on it would decode bodies and names its way: wrong bytes, or none.
            raise TransactionError(
                f"The connection given has text_factory {getattr(conn.text_factory, '__name__', conn.text_factory)!r}: "
                "sqsqlite reads its text as str on it. Use the default text_factory for this connection."
            )
        try:
            cursor = conn.cursor()
            cursor.row_factory = None  # the application's may make anything of a row
            files = {row[1]: row[2] for row in cursor.execute("PRAGMA database_list")}
            mode = cursor.execute("PRAGMA journal_mode").fetchone()[0]
            busy = cursor.execute("PRAGMA busy_timeout").fetchone()[0]
        except sqlite3.Error as exc:
            raise TransactionError(f"The connection given can't be used: {exc}.") from None
        main = files.get("main") or ""
        if not main or os.path.realpath(main) != os.path.realpath(self._opened):
            raise TransactionError(
                f"The connection given is to {main or 'an in-memory database'!r}, not to {self.path!r}: "
                "a transaction spans one file, the one holding the queues."
            )
        if str(mode).lower() != "wal":
            raise TransactionError(
                f"The connection given is in journal mode {mode!r}: sqsqlite's file is in WAL mode, which every connection to it "
                "must keep (its readers and writers rely on it)."
            )
        saved = (local.conn, local.cursor, local.rows, local.queues, local.state, local.version, local.busy_short, local.backstop, busy)
        local.conn, local.cursor, local.rows = conn, cursor, _Rows(conn)
        local.queues, local.state, local.version = {}, {}, None
        local.busy_short = None  # set to sqsqlite's own busy timeout by the BEGIN or the join
        local.backstop = False  # its checkpoint settings are the application's
        return saved

    def _stand_down(self, local: ConnectionState, saved: tuple) -> None:
        """This thread's own connection back in place of the application's (_stand_in)."""
        cursor = local.cursor
        (local.conn, local.cursor, local.rows, local.queues, local.state, local.version, local.busy_short, local.backstop, busy) = saved
        try:
            cursor.execute(f"PRAGMA busy_timeout={int(busy)}")  # the application's own again
            cursor.close()
        except sqlite3.Error:
            pass  # a closed or broken connection: nothing of ours is left on it

    def _join(self, local: ConnectionState, conn: sqlite3.Connection) -> None:
        """Join the transaction open on an application's connection, beginning one if there is
        none, and take SQLite's write lock now: a statement that writes nothing takes it, and
        fails at once when the transaction began as a read and another connection wrote since
        (SQLITE_BUSY_SNAPSHOT, which no wait cures)."""
        local.set_busy_timeout(None)
        cursor = local.cursor
        try:
            if not conn.in_transaction:
                retrying(self.path, lambda: cursor.execute("BEGIN IMMEDIATE"))
            else:
                cursor.execute("UPDATE meta SET value = value WHERE 0")
            cursor.execute("SAVEPOINT sqsqlite_joined")
        except sqlite3.Error as exc:
            if conn.in_transaction and busy(exc):
                raise TransactionError(
                    "The application's transaction on this connection began as a read and can't write now: another "
                    "connection wrote since it began, or held the write lock past the busy timeout. Begin it with "
                    "BEGIN IMMEDIATE, or let sqsqlite begin it."
                ) from None
            raise DatabaseError(self.explain(exc)) from None

    def _checkpointed(self, local: ConnectionState) -> None:
        """After a commit on ``local``'s connection: wake the checkpoint thread. Without one (it
        could not start), SQLite's own checkpoint goes back to its default size: else the WAL
        would be synced only every WAL_BACKSTOP_PAGES pages, all at risk from a power cut."""
        checkpointer = self._checkpointer
        if not checkpointer.wanted:
            checkpointer.want()
        if checkpointer.closed and local.backstop:
            local.backstop = False
            local.cursor.execute(f"PRAGMA wal_autocheckpoint={D.SQLITE_AUTOCHECKPOINT_PAGES}")

    def after_commit(self, fn: Callable[..., None], *args: Any) -> bool:
        """Defer ``fn(*args)`` until this thread's open group commits: True if deferred, False if
        nothing of this thread is waiting to commit (call it now)."""
        group = self._local.group
        if group is None or group.writer is None:
            return False
        group.after.append(functools.partial(fn, *args))
        return True

    @contextmanager
    def read(self) -> Iterator[Tx]:
        """A read transaction: one consistent snapshot, never blocking writers (WAL)."""
        conn = self.connection()
        local = self._local
        group = local.group
        if group is not None and group.writer is not None:  # inside the group's transaction, which it sees
            self.refuse_forked(group)
            try:
                yield Tx(local.rows or conn)
            except sqlite3.DatabaseError as exc:
                if not conn.in_transaction:  # SQLite undid the group's transaction with it
                    group.broken = True
                raise DatabaseError(self.explain(exc)) from None
            return
        done, token = False, object()
        try:
            lock.enter(token)  # a fork waits for the read to end; inside, so that an interrupt can't leave it counted
            if local.busy_short is not False:  # a lock taken up front's before it: a read waits as any
                local.set_busy_timeout(None)
            # Inside the try: an interrupt landing just after BEGIN still ends the transaction.
            retrying(self.path, lambda: conn.execute("BEGIN DEFERRED"))
            yield Tx(conn)
            done = True
        except sqlite3.DatabaseError as exc:
            raise DatabaseError(self.explain(exc)) from None
        finally:
            try:
                if conn.in_transaction:
                    try:  # a damaged file can fail it too: said as any error is, never over one on its way
                        conn.execute("COMMIT")
                    except sqlite3.Error as exc:
                        self._rollback(conn)  # or the connection's next BEGIN would find it still open
                        if done:
                            raise DatabaseError(self.explain(exc)) from None
            finally:
                lock.leave(token)

    def integrity_check(self) -> str:
        """SQLite's ``PRAGMA integrity_check`` over the whole file: ``ok``, or what it found."""
        with self.read():
            return "\n".join(row[0] for row in self.connection().execute("PRAGMA integrity_check"))

    def seen_version(self) -> int | None:
        """PRAGMA data_version as this thread's last write read it, under the write lock: a long poll
        compares against it, so a commit between an empty claim and the wait still wakes it."""
        return self._local.version

    def _reopen(self, local: ConnectionState) -> None:
        """Close this thread's connection, found read-only, for its next call to open again."""
        local.reopen = local.backstop = False
        self.release_connection()

    def release_connection(self) -> None:
        """Close this thread's connection (a server thread whose client went away)."""
        local = self._local
        conn = local.conn
        if conn is None:
            return
        local.conn = local.cursor = None
        local.queues.clear()
        local.state.clear()
        local.version = None
        self._forget_lock_fds(local)
        self._drop(conn, [])

    def _drop(self, conn: sqlite3.Connection, fds: list[int]) -> None:
        """Close a thread's connection and lock descriptors, unless close() took them already."""
        with lock.in_progress():  # before it leaves _all: a fork meanwhile finds it there or closed
            with self._lock:
                try:
                    self._all.remove(conn)
                except ValueError:
                    return
            for fd in fds:
                self._close_fd(fd)
            with suppress(sqlite3.Error):
                conn.close()

    def writers_idle(self, wait: float) -> bool:
        """Whether SQLite's write lock could be taken within ``wait`` seconds: at that moment no
        write transaction of any connection or process was open (each was committed or rolled
        back). Taken and let go at once on a connection of its own, so that a long transaction
        elsewhere costs the caller ``wait``, not the busy timeout."""
        with lock.in_progress():
            try:
                conn = sqlite3.connect(self._opened, timeout=wait, isolation_level=None)
            except sqlite3.Error:
                return False
            try:
                conn.execute("BEGIN IMMEDIATE")
                conn.execute("ROLLBACK")
                return True
            except sqlite3.OperationalError:  # busy: a writer holds the lock
                return False
            finally:
                conn.close()

    def data_version(self) -> int:
        """Changes whenever another connection commits: the cheap cross-process wake-up signal."""
        conn = self.connection()
        with lock.in_progress():
            return conn.execute("PRAGMA data_version").fetchone()[0]

    # ------------------------------------------------------------ schema

    def current_revision(self) -> str | None:
        """The file's schema revision, None for none yet; someone else's file is refused."""
        conn = self.connection()
        try:
            if foreign(conn):  # a file already in WAL mode was opened without looking
                raise DatabaseError(not_ours(self.path))
            if not conn.execute("SELECT name FROM sqlite_master WHERE type='table' AND name='alembic_version'").fetchone():
                return None
            row = conn.execute("SELECT version_num FROM alembic_version").fetchone()
        except sqlite3.DatabaseError as exc:
            raise DatabaseError(self.explain(exc)) from None
        return row[0] if row else None

    def ensure_schema(self) -> None:
        """Bring the file to the schema this code knows; cheap when it is already there."""
        with lock.in_progress():  # a fork waits for it
            if self.current_revision() == HEAD_REVISION:
                return
            from .migrate import upgrade

            upgrade(self)  # which refuses a revision this sqsqlite does not know
