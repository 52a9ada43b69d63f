"""WAL checkpoints on a thread of their own, so a writer seldom waits inside its COMMIT for the
fsync of the whole WAL (see Checkpointer); the same thread gives free pages back to the file
system (space.Reclaimer). Used by :mod:`sqsqlite.store`, one per Store."""

from __future__ import annotations

import logging
import os
import sqlite3
import threading
import time
from typing import Any

from . import defaults as D
from .dbfile import FileIdentity
from .space import Reclaimer, lock_path

log = logging.getLogger("sqsqlite.store")

# This process's id, kept by the fork hook below: every committing writer asks (a thread
# belongs to the process that started it), and os.getpid() is a system call.
_PID = os.getpid()


def _after_fork_in_child() -> None:
    global _PID
    _PID = os.getpid()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


class Checkpointer:
    """Runs one Store's WAL checkpoints on a thread of its own.

    SQLite checkpoints inside the COMMIT that takes the WAL past 1,000 pages: that writer,
    still holding the writers' lock, waits for the fsync of the whole WAL, 10-15 ms every few
    hundred operations, longer the larger the file. Here a passive checkpoint runs a few
    milliseconds behind the writers instead (D.CHECKPOINT_GATHER). It takes no write lock, so
    no writer waits for it, and it changes nothing about durability: SQLite syncs the WAL
    before it copies a page back, as in its own checkpoints. SQLite's checkpoint stays as the
    backstop, at D.WAL_BACKSTOP_PAGES (the store sets it on its connections while this thread
    runs): a pass can't complete while writers keep appending, so under a sustained load a
    writer's checkpoint completes one every that many pages, with all but the newest already
    synced, and the WAL starts again from its beginning.

    After commits, at most every D.RECLAIM_LOOK_SECONDS, it looks at the file's free pages and,
    past the threshold, returns them in short steps under the writers' lock (space.Reclaimer).

    The thread holds no reference to its Store, so a Store dropped without close() is still
    collected; its finalizer (also run at exit) stops the thread."""

    def __init__(self, path: str, synchronous: str, enabled: bool, file: FileIdentity | None = None):
        self.path, self.synchronous = path, synchronous
        self.lock_path = lock_path(path)  # the writers' lock file, which a reclaim step takes
        self.reclaimer: Reclaimer | None = None  # the running thread's
        self.file = file  # the store's: a pass looks whether the file was deleted or replaced
        self.closed = not enabled  # a disabled one is closed from the start
        # Read by every committing writer, so the common case is one attribute load: True
        # while a checkpoint is due already, and for good once closed.
        self.wanted = self.closed
        self.pid: int | None = None  # the process whose thread runs: a forked child starts its own
        self.lock = threading.Lock()
        # Held by the thread while it is inside SQLite, and by a fork (pause/resume).
        self.in_sqlite = threading.Lock()
        self.wake: Any = None  # events of the running thread's, made fresh by each start
        self.stop: Any = None
        self.thread: threading.Thread | None = None
        self.passes = 0  # checkpoints run, for anyone watching
        self.conn: sqlite3.Connection | None = None  # the running thread's

    def pause(self) -> None:
        """Before a fork: wait for the thread to leave SQLite, and keep it out."""
        self.in_sqlite.acquire()

    def resume(self) -> None:
        """After a fork, in the parent."""
        self.in_sqlite.release()

    def after_fork(self) -> sqlite3.Connection | None:
        """In a forked child: the thread stayed in the parent, and its locks may be held there.
        Gives the thread's connection, for the child to close (the store's fork hook)."""
        self.lock = threading.Lock()
        self.in_sqlite = threading.Lock()
        self.thread, self.pid = None, None
        self.wanted = self.closed
        conn, self.conn = self.conn, None
        return conn

    def want(self) -> None:
        """A writer committed: checkpoint soon."""
        if self.pid != _PID and not self._start():
            return
        self.wanted = True
        self.wake.set()

    def _start(self) -> bool:
        with self.lock:
            if self.pid == _PID:
                return True
            if self.closed:
                self.wanted = True
                return False
            # Fresh events: a parent's thread may have held theirs at the fork.
            self.wake, self.stop = threading.Event(), threading.Event()
            thread = threading.Thread(target=self._run, args=(self.wake, self.stop), name="sqsqlite-checkpoint", daemon=True)
            try:
                thread.start()
            except RuntimeError:  # no more threads: SQLite's own checkpoints go on as before
                self.closed = self.wanted = True
                return False
            self.thread, self.pid = thread, _PID
            return True

    def _run(self, wake: threading.Event, stop: threading.Event) -> None:
        conn = None
        try:
            with self.in_sqlite:
                if self.look(None):  # SQLite would create a new, empty file at the path
                    raise sqlite3.Error()
                conn = self.conn = sqlite3.connect(self.path, timeout=D.BUSY_TIMEOUT_SECONDS, isolation_level=None, check_same_thread=False)
                # The writers' setting (NORMAL): a checkpoint syncs the WAL, then the database file.
                conn.execute(f"PRAGMA synchronous={self.synchronous}")
                # Its reclaim steps' commits are checkpointed by this thread after the step, not
                # inside the step's COMMIT while the writers' lock is held; and a step waits for
                # a program outside sqsqlite only briefly, holding the writers' lock.
                conn.execute("PRAGMA wal_autocheckpoint=0")
                conn.execute(f"PRAGMA busy_timeout={int(D.RECLAIM_BUSY_SECONDS * 1000)}")
        except sqlite3.Error:
            if conn is not None:
                with self.in_sqlite:
                    self.conn = None
                    conn.close()
            self.closed = self.wanted = True  # SQLite's own checkpoints go on as before
            return
        reclaimer = self.reclaimer = Reclaimer(self.path, self.lock_path)
        try:
            done, last = 0, time.monotonic()
            looked = True  # no commit since the last look at the free pages
            while True:
                # Idle after commits, it still wakes for the next look at the free pages: a queue
                # drained by its last commits gives its space back without another one.
                timeout = None if looked else max(0.0, reclaimer.next_look - time.monotonic())
                woken = wake.wait(timeout)
                if stop.is_set():
                    return
                wait = 0.0
                if woken:
                    wake.clear()
                    self.wanted = False
                    if stop.wait(D.CHECKPOINT_GATHER):
                        return
                    self.passes += 1
                    looked = False
                    try:
                        with self.in_sqlite:
                            _, _, copied = conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
                    except Exception:
                        # e.g. another connection's checkpoint running, or a disk error the writers
                        # will meet and report themselves: the next commit wakes us again.
                        continue
                    # copied counts from the WAL's last restart, so it can fall back to a few.
                    fresh, done = (copied - done if copied >= done else copied), copied
                    now = time.monotonic()
                    self.look(now)
                    rate = fresh / max(now - last, 1e-3)  # WAL pages a second since the last pass
                    last = now
                    if rate < D.CHECKPOINT_BUSY_RATE:
                        wait = D.CHECKPOINT_LIGHT_WAIT
                    else:
                        # Busy: every pass costs two fsyncs whatever it copies, so the next one waits
                        # until about CHECKPOINT_PAGES more pages have come.
                        wait = min(D.CHECKPOINT_LIGHT_WAIT, D.CHECKPOINT_PAGES / rate) - D.CHECKPOINT_GATHER
                if not looked and reclaimer.looks_due(time.monotonic()):
                    if self._reclaim(conn, reclaimer, stop):
                        return
                    looked = not reclaimer.gave_way
                if wait > 0 and stop.wait(wait):
                    return
        finally:
            with self.in_sqlite:
                self.conn = None
                conn.close()

    def _reclaim(self, conn: sqlite3.Connection, reclaimer: Reclaimer, stop: threading.Event) -> bool:
        """Give free pages back if they are past the threshold: whether the thread is to stop."""
        try:
            with self.in_sqlite:
                if self.look(None) or not reclaimer.due(conn):
                    return False
            log.info("%s: returning free pages to the file system", self.path)
            while True:
                left = reclaimer.step(conn, self.in_sqlite)
                if left <= 0:
                    break
                if reclaimer.figures.steps % 8 == 0:  # the steps' WAL copied back as they go
                    with self.in_sqlite:
                        conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
                if stop.wait(reclaimer.pause()):
                    return True
            with self.in_sqlite:
                # The file is cut short when a checkpoint has copied the whole WAL back. The WAL
                # itself is left as it is: truncating it holds the write lock 20-50 ms for a
                # 60 MB log (measured), against a step's 1 ms; SQLite cuts it back to the
                # journal_size_limit (64 MiB) when the log starts again, and removes it when the
                # last connection closes; `sqsqlite vacuum` empties it.
                conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
        except Exception:
            # A disk error the writers will meet and report themselves, a file gone: the next
            # look tries again; the queue goes on either way.
            log.debug("a reclaim step failed", exc_info=True)
        return False

    def look(self, now: float | None) -> bool:
        """Whether the file was deleted or replaced (at most once a second): said in the log once,
        and the store's writers refuse at once, not only at their own next look."""
        return self.file is not None and self.file.look(now)

    def close(self) -> None:
        """Stop the thread (after the checkpoint it may be running) and never start another."""
        with self.lock:
            self.closed = self.wanted = True
            thread, self.thread = self.thread, None
            mine, self.pid = self.pid == _PID, None
        if thread is not None and mine:
            self.stop.set()
            self.wake.set()
            if thread is not threading.current_thread():
                thread.join(D.BUSY_TIMEOUT_SECONDS)
