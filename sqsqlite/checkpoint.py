"""WAL checkpoints on a thread of their own, so a writer seldom waits inside its COMMIT for the
fsync of the whole WAL (see Checkpointer). Used by :mod:`sqsqlite.store`, one per Store."""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from typing import Any

from . import defaults as D
from .dbfile import FileIdentity

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

    The thread holds no reference to its Store, so a Store dropped without close() is still
    collected; its finalizer (also run at exit) stops the thread."""

    def __init__(self, path: str, synchronous: str, enabled: bool, file: FileIdentity | None = None):
        self.path, self.synchronous = path, synchronous
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

    def pause(self) -> None:
        """Before a fork: wait for the thread to leave SQLite, and keep it out."""
        self.in_sqlite.acquire()

    def resume(self) -> None:
        """After a fork, in the parent."""
        self.in_sqlite.release()

    def after_fork(self) -> None:
        """In a forked child: the thread stayed in the parent, and its locks may be held there."""
        self.lock = threading.Lock()
        self.in_sqlite = threading.Lock()
        self.thread, self.pid = None, None
        self.wanted = self.closed

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
                conn = sqlite3.connect(self.path, timeout=D.BUSY_TIMEOUT_SECONDS, isolation_level=None, check_same_thread=False)
                # The writers' setting (NORMAL): a checkpoint syncs the WAL, then the database file.
                conn.execute(f"PRAGMA synchronous={self.synchronous}")
        except sqlite3.Error:
            if conn is not None:
                with self.in_sqlite:
                    conn.close()
            self.closed = self.wanted = True  # SQLite's own checkpoints go on as before
            return
        try:
            done, last = 0, time.monotonic()
            while True:
                wake.wait()
                if stop.is_set():
                    return
                wake.clear()
                self.wanted = False
                if stop.wait(D.CHECKPOINT_GATHER):
                    return
                self.passes += 1
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
                if wait > 0 and stop.wait(wait):
                    return
        finally:
            with self.in_sqlite:
                conn.close()

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
