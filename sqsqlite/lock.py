"""sqsqlite's writers' lock as one state machine. Every writer takes an exclusive ``flock`` on
``<file>-lock`` before its BEGIN IMMEDIATE, so sqsqlite's writers queue in the kernel (SQLite's
busy handler polls, and lets one kind of process starve another); SQLite's lock stays the real
exclusion. A write (WriteLock) goes through State by the transitions named here, which
docs/explanation/architecture.md ("The writers' lock") draws and explains. Also: the waiting mark,
the fork gate, what this thread holds, and WritersLock (a reclaim step's, a vacuum's)."""

from __future__ import annotations

import enum
import os
import sqlite3
import struct
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from . import defaults as D
from .errors import TransactionError

fcntl: Any
try:
    import fcntl
except ImportError:  # not a POSIX system: no lock file, SQLite's busy handler alone orders the writers
    fcntl = None


class State(enum.Enum):
    """Where one write stands (WriteLock.state)."""

    FREE = "free"  # holds nothing: not begun, or released
    TAKING = "taking"  # the lock file is another's: waiting for it, marked as waiting
    HELD = "held"  # holds the lock file (flock on its connection's descriptor)
    SQLITE_ONLY = "sqlite only"  # takes no lock file: SQLite's lock alone orders it
    WRITING = "writing"  # counted in progress (a fork waits for it), BEGIN IMMEDIATE next
    IN_SQLITE = "in sqlite"  # BEGIN IMMEDIATE returned: SQLite's write lock held too


# The states as plain names: State.FREE costs an enum look-up (~0.2 us), and a write sets four.
FREE, TAKING, HELD, SQLITE_ONLY, WRITING, IN_SQLITE = State


def open_lock_file(path: str) -> int | None:
    """A descriptor of the lock file ``path`` (made if need be), or None where it can't be opened
    (out of descriptors, a directory not writable, a read-only file system): SQLite's own locking
    still holds, and the caller tries again later (D.LOCK_RETRY_SECONDS)."""
    try:
        return None if fcntl is None else os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    except OSError:
        return None


# A writer that finds the writers' lock file taken marks that it waits, for as long as it waits:
# a shared lock on one byte of the lock file, an open file description lock (Linux), so it belongs
# to the writer's descriptor and every other descriptor sees it, in this process or another. The
# background reclaim step looks for it between pages and ends early (space.Reclaimer): a writer
# then waits for one page, not for the rest of the step. flock and these locks never meet, and
# the uncontended writer makes no extra call: it takes the lock at once and marks nothing.
_WAITING = (0, 1)  # (start, length) of the byte marked
_FLOCK_LAYOUT = "hhqqi4x"  # struct flock: type, whence, start, length, pid (Linux, 64-bit offsets)
_MARKS = fcntl is not None and hasattr(fcntl, "F_OFD_SETLK")


def _mark(fd: int, kind: int) -> None:
    try:
        fcntl.fcntl(fd, fcntl.F_OFD_SETLK, struct.pack(_FLOCK_LAYOUT, kind, os.SEEK_SET, *_WAITING, 0))
    except OSError:  # a file system without such locks: the writer waits unmarked
        pass


def mark_waiting(fd: int) -> None:
    """Mark that this descriptor's writer waits for the writers' lock; inside a ``try`` whose
    ``finally`` calls unmark_waiting: a mark left behind (an interrupt in between) would end
    every reclaim step before its first page for as long as the descriptor stays open."""
    if _MARKS:
        _mark(fd, fcntl.F_RDLCK)


def unmark_waiting(fd: int) -> None:
    """Take the mark away (none made: nothing changes)."""
    if _MARKS:
        _mark(fd, fcntl.F_UNLCK)


def writers_waiting(fd: int | None) -> bool:
    """Whether a writer, on any descriptor of the lock file but ``fd``, is marked as waiting."""
    if not _MARKS or fd is None:
        return False
    try:
        asked = struct.pack(_FLOCK_LAYOUT, fcntl.F_WRLCK, os.SEEK_SET, *_WAITING, 0)
        kind = struct.unpack(_FLOCK_LAYOUT, fcntl.fcntl(fd, fcntl.F_OFD_GETLK, asked))[0]
    except OSError:
        return False
    return bool(kind != fcntl.F_UNLCK)


def take_marked(fd: int, gate: int | None = None) -> None:
    """TAKING -> HELD: wait for the lock file ``fd`` as long as it takes, marked as waiting; for
    a send, behind the senders' gate ``gate`` first (there too it is a writer waiting)."""
    try:
        mark_waiting(fd)
        if gate is not None:
            fcntl.flock(gate, fcntl.LOCK_EX)
        fcntl.flock(fd, fcntl.LOCK_EX)
    finally:
        unmark_waiting(fd)


def take_bounded(fd: int, seconds: float, marked: bool = True) -> bool:
    """TAKING -> HELD within ``seconds``, marked as waiting (unless not ``marked``) once it found
    it taken: whether it is held. False is give_up: the bound ran out, and nothing is held."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # free: no mark to set and clear
        return True
    except BlockingIOError:
        pass
    try:
        if marked:
            mark_waiting(fd)
        start = time.monotonic()
        deadline, pause = start + seconds, 0.0001
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return True
            except BlockingIOError:
                now = time.monotonic()
                if now >= deadline:
                    return False  # give_up
                # Polled often for the few ms another writer's transaction takes; past that
                # (an endpoint request's deadline, seconds long) less often, so that a request
                # waiting out a long transaction costs next to no CPU.
                if now - start >= D.WAIT_FREE_SECONDS:
                    pause = min(pause * 2, D.LOCK_POLL_MAX_SECONDS)
                time.sleep(min(pause, deadline - now))
    finally:
        if marked:
            unmark_waiting(fd)


_THREAD = threading.local()  # what this thread holds: the facts pass_by and refuse look at


def held_by_thread() -> set:
    """The writers' lock files this thread holds (their real paths)."""
    try:
        return _THREAD.paths
    except AttributeError:
        _THREAD.paths = set()
        return _THREAD.paths


def thread_transactions() -> set:
    """The writers' lock files of the files this thread has an application's transaction open on
    (sqsqlite's own connection, or an application's that it began; its lock file held)."""
    try:
        return _THREAD.transactions
    except AttributeError:
        _THREAD.transactions = set()
        return _THREAD.transactions


# The application's connections joined by a transaction (their write lock taken by sqsqlite), by
# thread and writers' lock file, until a write of that thread finds them committed: while one is
# still in its transaction, a write of the same thread on another connection would wait for it.
# (sqlite3 connections take no weak reference: those found committed or closed are dropped.)
JOINED: dict[tuple[int, str], sqlite3.Connection] = {}


def still_in_transaction(conn: sqlite3.Connection) -> bool:
    try:
        return conn.in_transaction
    except sqlite3.Error:  # closed
        return False


def note_joined(key: str, conn: sqlite3.Connection) -> None:
    """This thread's transaction joined ``conn``'s, on the file of lock file ``key``."""
    for held, other in list(JOINED.items()):
        if not still_in_transaction(other):
            JOINED.pop(held, None)
    JOINED[(_get_ident(), key)] = conn


def refuse_if_joined(key: str, path: str) -> None:
    """refuse, when a connection this thread joined still holds the file's write lock."""
    conn = JOINED.get((_get_ident(), key))
    if conn is not None and not still_in_transaction(conn):
        JOINED.pop((_get_ident(), key), None)
    elif conn is not None:
        raise TransactionError(
            f"This thread's own connection to {path!r} holds the file's write lock: its transaction, which a "
            "db.transaction(connection) block joined, is still open. Commit or roll it back first, or make this call inside "
            "a block on that connection; from here it would wait for itself."
        )


# Threads inside SQLite hold its state of the file (its mutexes; its locks, kept per process): a
# child would inherit them held by threads it lacks and wait for ever. So a fork closes the fork
# gate (a write or read that would enter yields_to_fork), waits for this process's transactions in
# progress (_IN_PROGRESS: the threads of the WriteLocks, and of the reads, in it), then forks; the
# gate opens after it. CLEAR says whether the last fork found none but the forker's own: only then
# may the child close the connections it inherited (Store's fork hook), no mutex held by a thread it lacks.
_FORK_GATE = threading.Lock()
_IN_PROGRESS: dict[Any, int] = {}
_get_ident = threading.get_ident
CLEAR = True
_FORKER: int | None = None  # the thread holding the gate: what it enters (a finalizer's close) goes on


def close_fork_gate() -> None:
    """Before a fork: no transaction enters, and those in progress (but the forker's own) end first."""
    global CLEAR, _FORKER
    mine = _get_ident()
    _FORK_GATE.acquire()
    _FORKER, CLEAR = mine, False  # set at once: a finalizer's close on this thread must not wait for itself
    deadline = time.monotonic() + D.FORK_WAIT_SECONDS
    while not (CLEAR := all(t == mine for t in list(_IN_PROGRESS.values()))) and time.monotonic() < deadline:
        time.sleep(D.FORK_WAIT_STEP_SECONDS)


def open_fork_gate() -> None:
    global _FORKER
    _FORKER = None
    _FORK_GATE.release()


def forked() -> None:
    """In a forked child: the parent's transactions and held lock files are not its own (the store
    closes their descriptors; the forker's own write ends as any, at release)."""
    global _FORK_GATE, _FORKER
    _FORK_GATE, _THREAD.paths, _FORKER = threading.Lock(), set(), None
    _IN_PROGRESS.clear()


def writes_in_progress() -> list[WriteLock]:
    return [write for write in list(_IN_PROGRESS) if isinstance(write, WriteLock)]


def enter(token: Any) -> None:
    """A read, or a connection opening or closing, counted in progress (a fork waits for it):
    unless a fork waits at the gate, then after it (one inside another of its thread, or on the
    forker's, enters all the same)."""
    ident = _IN_PROGRESS[token] = _get_ident()
    while _FORK_GATE.locked() and ident != _FORKER and list(_IN_PROGRESS.values()).count(ident) == 1:
        del _IN_PROGRESS[token]
        with _FORK_GATE:
            pass
        _IN_PROGRESS[token] = ident


def leave(token: Any) -> None:
    _IN_PROGRESS.pop(token, None)


@contextmanager
def in_progress() -> Iterator[None]:
    """enter and leave around a block (for the calls that are not the hot path)."""
    token = object()
    try:  # entered inside: an interrupt landing just after must not leave the token counted
        enter(token)
        yield
    finally:
        leave(token)


class WriteLock:
    """One write's way through the writers' lock: its state, and the transitions but the
    store's begin (BEGIN IMMEDIATE). The store's write gives senders_gate and named."""

    __slots__ = ("state", "fd", "gate", "holding", "key")

    def __init__(self, key: str):
        self.state = FREE
        self.key = key  # the lock file's real path: what held_by_thread holds
        self.fd: int | None = None  # the descriptor it holds, while it holds one
        self.gate: int | None = None  # the senders' gate descriptor, while it may hold the gate
        self.holding: Any = None  # this thread's held_by_thread() set, set with fd

    def senders_gate(self) -> int | None:  # the connection's descriptor of it (None: none now)
        raise NotImplementedError

    def named(self) -> str:  # the database file as its user named it, for refuse's message
        raise NotImplementedError

    def take(self, fd: int | None, sending: bool, seconds: float | None) -> bool:
        """FREE -> HELD or SQLITE_ONLY, then enter: WRITING (one call on the hot path), on the
        connection's lock file descriptor ``fd`` (None: none now); a contended send waits behind
        the senders' gate. Whether it is taken: False only when another held the lock file
        ``seconds`` (None: as long as it takes) and it gave up (give_up: FREE, nothing held)."""
        while True:
            if fd is None:
                self.state = SQLITE_ONLY  # pass_by: no lock file of its own, this once
            else:
                try:
                    holding = _THREAD.paths
                except AttributeError:
                    holding = held_by_thread()
                key = self.key
                if key not in holding:
                    # Noted before it is taken: an interrupt from here on (even right after flock) lets it go.
                    self.holding, self.fd = holding, fd
                    try:
                        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # take_at_once
                    except BlockingIOError:
                        self.state = TAKING  # find_taken
                        if seconds is not None:
                            if not take_bounded(fd, seconds):
                                self.holding = self.fd = None
                                self.state = FREE  # give_up
                                return False
                        elif sending and (gate := self.senders_gate()) is not None:
                            self.gate = gate  # noted first, so that release lets it go whatever interrupts
                            take_marked(fd, gate)
                            self.release_gate()  # held: the next sender waits for it while this one writes
                        else:  # a send with no gate file now waits in no order
                            take_marked(fd)
                    holding.add(key)
                    self.state = HELD
                elif key in thread_transactions():
                    # refuse: SQLite would make this write wait for its own transaction for the whole
                    # busy timeout, then say "database is locked".
                    raise TransactionError(
                        f"This thread has a transaction open on {self.named()!r} through another Database object or "
                        "connection: a write here would wait for it. Make the call inside that transaction "
                        "(db.transaction(tx.connection), or the same Database), or after it ends."
                    )
                else:  # pass_by: another Database on the file, or a write inside a write: SQLite refuses
                    self.state = SQLITE_ONLY  # or times out as without the lock file
            # enter: counted in progress, unless a fork waits at its gate (a write inside another
            # write of its thread enters all the same: the fork waits for that one; so does one on
            # the forking thread itself, a finalizer's, which would wait for its own gate).
            ident = _IN_PROGRESS[self] = _get_ident()
            if not _FORK_GATE.locked() or ident == _FORKER or list(_IN_PROGRESS.values()).count(ident) > 1:
                self.state = WRITING
                return True
            self.release()  # yield_to_fork: let go, wait for the fork, take again
            with _FORK_GATE:
                pass

    def release_gate(self) -> None:
        gate, self.gate = self.gate, None
        if gate is not None:
            fcntl.flock(gate, fcntl.LOCK_UN)

    def release(self) -> None:
        """any -> FREE: uncounted, the senders' gate and the lock file let go."""
        _IN_PROGRESS.pop(self, None)
        if self.gate is not None:
            self.release_gate()
        fd = self.fd
        if fd is not None:
            # Forgotten first: interrupted in between, this thread's next write takes the lock
            # again (on its own descriptor at once) and lets it go; noted but unlocked, every
            # later write of this thread would pass it by.
            self.holding.discard(self.key)
            self.fd = None
            try:
                fcntl.flock(fd, fcntl.LOCK_UN)
            except OSError:  # closed (Store.close inside a transaction): the lock went with it
                pass
        self.state = FREE


class WritersLock:
    """The writers' lock taken by a descriptor of its own for one step or one command (a reclaim
    step, a vacuum), and let go explicitly (a forked child sharing the descriptor can't keep it
    held). No lock file (fd None): SQLite's lock alone. Not marked as waiting while it waits:
    a step that meets another's mark gives way, and two steps must not cut each other short."""

    def __init__(self, lock_path: str | None):
        self.fd = None if lock_path is None else open_lock_file(lock_path)

    def take(self, seconds: float | None = None) -> bool:
        """Wait for it (at most ``seconds``, None: as long as it takes): whether it is held."""
        if self.fd is None:
            return True
        if seconds is None:
            fcntl.flock(self.fd, fcntl.LOCK_EX)
            return True
        return take_bounded(self.fd, seconds, marked=False)

    def close(self) -> None:
        fd, self.fd = self.fd, None
        if fd is not None:
            try:
                fcntl.flock(fd, fcntl.LOCK_UN)
            finally:
                os.close(fd)
