"""Disk space: what the database file holds and gives back (docs/explanation/reliability.md, "Disk space").

A queue's file grows with its largest backlog; rows deleted leave free pages that SQLite reuses
but never returns. A file made with ``auto_vacuum=INCREMENTAL`` (every new one, see
:func:`prepare_new`) can return them a few at a time with ``PRAGMA incremental_vacuum``: the
checkpoint thread does so in short steps (:class:`Reclaimer`), each under the writers' lock as a
write is. An older file is converted once by ``sqsqlite vacuum`` (:func:`vacuum`), or copied
compact with ``vacuum --into`` (:func:`vacuum_into`). Used by :mod:`sqsqlite.checkpoint`,
:mod:`sqsqlite.store`, the console and the CLI.
"""

from __future__ import annotations

import logging
import os
import random
import shutil
import sqlite3
import tempfile
import time
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext, suppress
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from . import defaults as D
from .errors import DatabaseError
from .lock import WritersLock, in_progress, writers_waiting
from .tx import immediate

log = logging.getLogger("sqsqlite.space")

AUTO_VACUUM_MODES = {0: "none", 1: "full", 2: "incremental"}
_INCREMENTAL = 2


@dataclass(frozen=True)
class Space:
    """The database file's figures: its size, its free pages (reusable, and returnable when the
    file is incremental), its WAL's size, and its auto_vacuum mode."""

    file_bytes: int
    wal_bytes: int
    page_size: int
    pages: int
    free_pages: int
    auto_vacuum: str

    @property
    def free_bytes(self) -> int:
        return self.free_pages * self.page_size

    @property
    def live_bytes(self) -> int:
        """The pages that hold data: about what a compact copy takes."""
        return (self.pages - self.free_pages) * self.page_size

    def as_dict(self) -> dict[str, Any]:
        return {
            "FileBytes": self.file_bytes,
            "FreePages": self.free_pages,
            "FreeBytes": self.free_bytes,
            "WalBytes": self.wal_bytes,
            "AutoVacuum": self.auto_vacuum,
        }


def lock_path(path: str) -> str:
    """The writers' lock file of the database at ``path`` (every writer's flock)."""
    return os.path.realpath(path) + "-lock"


def _size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def measure(conn: sqlite3.Connection, path: str) -> Space:
    """The figures of the file at ``path``, read through ``conn`` (a connection to it)."""
    pragma = lambda name: conn.execute(f"PRAGMA {name}").fetchone()[0]  # noqa: E731
    with in_progress():  # a fork waits for it
        return Space(
            file_bytes=_size(path),
            wal_bytes=_size(path + "-wal"),
            page_size=pragma("page_size"),
            pages=pragma("page_count"),
            free_pages=pragma("freelist_count"),
            auto_vacuum=AUTO_VACUUM_MODES.get(pragma("auto_vacuum"), "unknown"),
        )


def prepare_new(conn: sqlite3.Connection) -> None:
    """Make a file with no pages yet incremental: SQLite fixes the mode with the first page
    written (after that only a whole VACUUM changes it)."""
    if conn.execute("PRAGMA page_count").fetchone()[0] == 0:
        conn.execute("PRAGMA auto_vacuum=INCREMENTAL")


def _return_pages(conn: sqlite3.Connection, until: float, writer_waits: Callable[[], bool], clock: Callable[[], float]) -> tuple[int, bool]:
    """Return free pages one at a time in one transaction until ``until`` (on ``clock``), none
    is left, or ``writer_waits`` says a writer waits (asked every RECLAIM_WAITERS_SECONDS): (pages
    returned, whether it ended for that writer). PRAGMA incremental_vacuum(1): one page whether the driver
    steps the statement once (Python's sqlite3 does for a statement without columns) or to its end."""
    with immediate(conn) as cursor:
        (free,) = cursor.execute("PRAGMA freelist_count").fetchone()
        returned, yielded = 0, False
        look = clock() + D.RECLAIM_WAITERS_SECONDS
        while returned < free:
            cursor.execute("PRAGMA incremental_vacuum(1)")
            returned += 1
            now = clock()
            if now >= until:
                break
            if now >= look:
                if writer_waits():
                    yielded = True
                    break
                look = now + D.RECLAIM_WAITERS_SECONDS
    return returned, yielded


@dataclass
class StepFigures:
    """What the reclaim steps did so far (for anyone watching: a benchmark, a log)."""

    steps: int = 0
    longest_hold: float = 0.0  # seconds: the longest one step held the writers' lock
    yielded: int = 0  # steps ended early (or not begun) for a writer waiting


class Reclaimer:
    """Returns an incremental file's free pages to the file system in short steps.

    ``due`` looks at the free pages (at most every RECLAIM_LOOK_SECONDS); ``step`` returns some,
    under the writers' lock and BEGIN IMMEDIATE, one page at a time for at most
    RECLAIM_STEP_SECONDS, and ends early when a writer is marked as waiting for the lock
    (lock.take_marked); ``pause`` is the wait before the next step that keeps the steps' share
    of the time at RECLAIM_DUTY. Thresholds given to the constructor replace the defaults (tests
    inject small ones), and so do ``clock`` (the looks' time), ``step_clock`` (a step's time),
    ``waiting`` (whether a writer waits, given the step's descriptor of the lock file) and
    ``jitter`` (0 to 1, the pause's random share)."""

    def __init__(
        self,
        path: str,
        lock_path: str | None,
        *,
        free_fraction: float | None = None,
        min_free_bytes: int | None = None,
        clock: Callable[[], float] = time.monotonic,
        step_clock: Callable[[], float] = time.perf_counter,
        waiting: Callable[[int | None], bool] = writers_waiting,
        jitter: Callable[[], float] = random.random,
    ):
        self.path, self.lock_path = path, lock_path
        self.free_fraction, self.min_free_bytes = free_fraction, min_free_bytes
        self.clock, self.step_clock, self.waiting, self.jitter = clock, step_clock, waiting, jitter
        self.next_look = 0.0
        self.figures = StepFigures()
        self.last_hold = 0.0
        self.yielded = False  # the last step ended early (or did not begin) for a writer waiting
        self.incremental: bool | None = None  # known after the first look
        # The last step found SQLite's lock held by a program outside sqsqlite (Litestream's
        # checkpoint, the sqlite3 shell) and gave way: look again, commits or not.
        self.gave_way = False

    def looks_due(self, now: float) -> bool:
        return now >= self.next_look

    def due(self, conn: sqlite3.Connection, now: float | None = None) -> bool:
        """Whether free pages are past the threshold (looked at once per RECLAIM_LOOK_SECONDS)."""
        now = self.clock() if now is None else now
        if now < self.next_look:
            return False
        self.next_look = now + D.RECLAIM_LOOK_SECONDS
        return self.wanted(conn)

    def wanted(self, conn: sqlite3.Connection) -> bool:
        """Whether the free pages are past the threshold now."""
        if self.incremental is None:
            self.incremental = conn.execute("PRAGMA auto_vacuum").fetchone()[0] == _INCREMENTAL
        if not self.incremental:
            return False
        fraction = D.RECLAIM_FREE_FRACTION if self.free_fraction is None else self.free_fraction
        least = D.RECLAIM_MIN_FREE_BYTES if self.min_free_bytes is None else self.min_free_bytes
        pages = conn.execute("PRAGMA page_count").fetchone()[0]
        free = conn.execute("PRAGMA freelist_count").fetchone()[0]
        size = conn.execute("PRAGMA page_size").fetchone()[0]
        return free > 0 and free >= fraction * pages and free * size >= least

    def step(self, conn: sqlite3.Connection, inside: AbstractContextManager | None = None) -> int:
        """Return free pages for at most RECLAIM_STEP_SECONDS: how many are left free (0: done,
        or -1: SQLite's lock held by a program outside sqsqlite, try at the next look). A writer
        marked as waiting for the lock ends it after the page in hand, or before the first one
        if it waits already when the step has the lock. ``inside``: held while in SQLite (the
        checkpoint thread's fork guard), taken after the writers' lock, as a fork waits for this
        process's writers while holding it."""
        lock = WritersLock(self.lock_path)
        clock = self.step_clock
        returned, yielded = 0, False
        try:
            # Briefly: a long transaction holding it (an application's, another process's) would
            # keep this thread, and a close() waiting for it, as long; it tries at the next look.
            if not lock.take(D.RECLAIM_LOCK_WAIT_SECONDS):
                self.gave_way = True
                return -1
            held, cpu = clock(), time.thread_time()
            # A writer that lined up while this thread took the lock goes first.
            yielded = self.waiting(lock.fd)
            if not yielded:
                with inside if inside is not None else nullcontext():
                    try:
                        returned, yielded = _return_pages(conn, held + D.RECLAIM_STEP_SECONDS, lambda: self.waiting(lock.fd), clock)
                    except sqlite3.OperationalError as exc:
                        if "locked" in str(exc) or "busy" in str(exc):
                            self.gave_way = True
                            return -1
                        raise
            took, cpu = clock() - held, time.thread_time() - cpu
        finally:
            lock.close()
        with inside if inside is not None else nullcontext():
            left = conn.execute("PRAGMA freelist_count").fetchone()[0]
        self.gave_way = False
        self.yielded = yielded
        figures = self.figures
        figures.steps += 1
        figures.yielded += yielded
        figures.longest_hold = max(figures.longest_hold, took)
        # A step far longer than its CPU time waited (for a core, the disk, or SQLite's lock held
        # by Litestream's checkpoint): such a wait takes no turn from writers that they would have
        # had, so the pause counts at most four steps' worth (else one 50 ms wait for Litestream
        # would pause the steps for a second).
        self.last_hold = min(took, 4 * D.RECLAIM_STEP_SECONDS)
        log.debug(
            "reclaim step: %d pages returned, %d free left, lock held %.3f ms, cpu %.3f ms%s",
            returned,
            left,
            took * 1000,
            cpu * 1000,
            ", ended early for a writer waiting" if yielded else "",
        )
        return left

    def pause(self) -> float:
        """Seconds to wait before the next step: the steps' share of time at RECLAIM_DUTY, times
        a random 0.5-1.5 (steps at a fixed pace would meet a writer at a fixed pace every time, or
        never: the share met depends on luck); after a step that ended early for a writer, at
        least a whole step's (the writer may have more to write: its next transaction, others
        behind it)."""
        hold = max(self.last_hold, D.RECLAIM_STEP_SECONDS) if self.yielded else self.last_hold
        return hold * (1 / D.RECLAIM_DUTY - 1) * (0.5 + self.jitter())


# ---------------------------------------------------------------------- sqsqlite vacuum


class VacuumRefused(DatabaseError):
    """What vacuum needs is missing (the write lock, free disk): nothing was changed."""


def _connect(path: str) -> sqlite3.Connection:
    conn = sqlite3.connect(path, timeout=D.RECLAIM_BUSY_SECONDS, isolation_level=None, check_same_thread=False)
    conn.execute("PRAGMA temp_store=FILE")  # VACUUM's copy goes to a temporary file, not to memory
    return conn


def _temp_dir() -> str:
    # Where SQLite puts its temporary files on Unix, as it picks them.
    for name in ("SQLITE_TMPDIR", "TMPDIR"):
        value = os.environ.get(name)
        if value and os.path.isdir(value):
            return value
    for folder in ("/var/tmp", "/usr/tmp", "/tmp"):
        if os.path.isdir(folder) and os.access(folder, os.W_OK | os.X_OK):
            return folder
    return tempfile.gettempdir()


def _free_disk(folder: str) -> int:
    return shutil.disk_usage(folder).free


def _bytes(n: float) -> str:
    return f"{n / 1048576:,.1f} MiB"


def disk_needed(space: Space, folder: str, temp: str) -> str | None:
    """Why there is not disk enough for a VACUUM of this file in place, or None. It writes a
    compact copy to a temporary file, then the copy back through the WAL: the file's live pages
    twice, on one disk or two."""
    need = space.live_bytes
    same = os.stat(folder).st_dev == os.stat(temp).st_dev
    if same:
        have = _free_disk(folder)
        if have < 2 * need:
            return f"vacuum needs about {_bytes(2 * need)} free on the disk of {folder} (a temporary copy and the WAL), and it has {_bytes(have)}"
        return None
    for where in (folder, temp):
        have = _free_disk(where)
        if have < need:
            return f"vacuum needs about {_bytes(need)} free in {where}, and it has {_bytes(have)}"
    return None


def _file_growth(prefix: str) -> int:
    """The bytes this process's open, deleted SQLite temporary files hold (Linux: /proc), 0 elsewhere."""
    total = 0
    try:
        entries = os.listdir("/proc/self/fd")
    except OSError:
        return 0
    for entry in entries:
        try:
            target = os.readlink(f"/proc/self/fd/{entry}")
            if prefix in target:
                total += os.fstat(int(entry)).st_size
        except (OSError, ValueError):
            continue
    return total


def vacuum(
    path: str,
    lock_path: str,
    *,
    wait_seconds: float = D.VACUUM_WAIT_SECONDS,
    progress: Callable[[float, str], None] = lambda fraction, note: None,
) -> tuple[Space, Space]:
    """Compact the file at ``path`` and leave it incremental: (figures before, after).

    An incremental file is compacted in steps (Reclaimer's, paced as in the background): writers
    wait at most one step at a time. Any other file gets SQLite's VACUUM, which makes it incremental:
    it holds the write lock for its whole run and needs free disk of about twice the live pages;
    both are checked first (VacuumRefused, nothing changed). An interrupt (Ctrl-C) stops it
    between pages: what was done is committed (steps) or undone (VACUUM); the file stays sound."""
    conn = _connect(path)
    try:
        before = measure(conn, path)
        if before.auto_vacuum == "incremental":
            _compact_in_steps(conn, path, lock_path, before, wait_seconds, progress)
        else:
            _vacuum_whole(conn, path, lock_path, before, wait_seconds, progress)
        _truncate_wal(conn, lock_path, wait_seconds)
        return before, measure(conn, path)
    except sqlite3.DatabaseError as exc:
        raise DatabaseError(f"vacuum of {path!r} failed: {exc}; the file is as it was before the step that failed.") from None
    finally:
        conn.close()


def _truncate_wal(conn: sqlite3.Connection, lock_path: str, wait_seconds: float) -> None:
    # The file shrinks when a checkpoint copies the whole WAL back; TRUNCATE also empties the
    # WAL. Another connection's checkpoint or a reader on an older snapshot make it busy, and a
    # writer may hold the lock past --wait: tried again for a while, then left to the checkpoint
    # thread of the next writer.
    deadline = time.monotonic() + wait_seconds
    for _ in range(D.VACUUM_TRUNCATE_TRIES):
        lock = WritersLock(lock_path)
        try:
            if not lock.take(max(0.0, deadline - time.monotonic())):
                return
            busy = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0]
        except sqlite3.OperationalError:
            busy = 1
        finally:
            lock.close()
        if not busy:
            return
        time.sleep(0.05)


def _compact_in_steps(
    conn: sqlite3.Connection, path: str, lock_path: str, before: Space, wait_seconds: float, progress: Callable[[float, str], None]
) -> None:
    reclaimer = Reclaimer(path, lock_path, free_fraction=0.0, min_free_bytes=0)
    total = max(before.free_pages, 1)
    left = before.free_pages
    # A step gives way to a lock held by someone else (a writer's transaction; Litestream's
    # checkpoint or the sqlite3 shell, which hold SQLite's lock without sqsqlite's lock file):
    # vacuum refuses only when no step got through for wait_seconds.
    through = time.monotonic()
    while left > 0:
        step = reclaimer.step(conn)
        if step < 0:
            if time.monotonic() - through >= wait_seconds:
                raise VacuumRefused(
                    f"another program held {path!r}'s write lock for {wait_seconds:g} s; what was returned is kept: "
                    "try again when it ends, or wait longer (--wait)."
                )
            time.sleep(D.RECLAIM_LOCK_WAIT_SECONDS)
            continue
        left, through = step, time.monotonic()
        progress(1 - left / total, f"{_bytes((total - left) * before.page_size)} of {_bytes(total * before.page_size)} returned")
        # Every few steps a checkpoint, so the WAL the steps write stays small; between steps the
        # background's pause, so writers get their turns (an flock is not handed over in order).
        if reclaimer.figures.steps % 16 == 0:
            conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
        if left > 0:
            time.sleep(reclaimer.pause())


def _run_watched(
    conn: sqlite3.Connection, sql: str, args: tuple, written: Callable[[], tuple[int, int]], progress: Callable[[float, str], None]
) -> None:
    """Run one long statement (a VACUUM), saying how far it is every half second. SQLite calls the
    handler every few thousand instructions; Ctrl-C arriving meanwhile is raised inside it, and
    Python's sqlite3 would only log it: it is kept, SQLite told to stop (which undoes the
    statement), and raised again once SQLite has."""
    last, stopped = [0.0], []

    def tick() -> int:
        try:
            now = time.monotonic()
            if now - last[0] >= 0.5:
                last[0] = now
                done, total = written()
                progress(min(done / total, 0.99), f"{_bytes(done)} of about {_bytes(total)} written")
        except BaseException as exc:  # KeyboardInterrupt above all
            stopped.append(exc)
            return 1
        return 0

    conn.set_progress_handler(tick, 20_000)
    try:
        conn.execute(sql, args)
    except sqlite3.OperationalError:
        if stopped:
            raise stopped[0] from None
        raise
    finally:
        conn.set_progress_handler(None, 0)


def _vacuum_whole(
    conn: sqlite3.Connection, path: str, lock_path: str, before: Space, wait_seconds: float, progress: Callable[[float, str], None]
) -> None:
    folder = os.path.dirname(os.path.abspath(path))
    short = disk_needed(before, folder, _temp_dir())
    if short is not None:
        raise VacuumRefused(f"{short}; nothing was changed (or use --into PATH on a disk with room).")
    lock = WritersLock(lock_path)
    deadline = time.monotonic() + wait_seconds  # one --wait for sqsqlite's lock and SQLite's together
    try:
        if not lock.take(wait_seconds):
            raise VacuumRefused(
                f"another process is writing to {path!r} (it held the write lock for {wait_seconds:g} s); "
                "vacuum needs it for its whole run: stop the writers, wait longer (--wait), or use --into PATH."
            )
        conn.execute("PRAGMA auto_vacuum=INCREMENTAL")  # VACUUM makes the file so
        total = 2 * max(before.live_bytes, 1)
        wal = path + "-wal"
        start_wal = _size(wal)

        def written() -> tuple[int, int]:
            return _file_growth("etilqs_") + max(0, _size(wal) - start_wal), total

        # SQLite's lock held without sqsqlite's lock file (Litestream's checkpoint, the sqlite3
        # shell) makes VACUUM busy before it changes anything: tried again until the deadline.
        while True:
            try:
                _run_watched(conn, "VACUUM", (), written, progress)
                break
            except sqlite3.OperationalError as exc:
                if not ("locked" in str(exc) or "busy" in str(exc)):
                    raise
                if time.monotonic() >= deadline:
                    raise VacuumRefused(
                        f"another program held {path!r}'s SQLite lock (without sqsqlite's lock file) for {wait_seconds:g} s; "
                        "nothing was changed: try again when it ends, or wait longer (--wait)."
                    ) from None
                time.sleep(D.RECLAIM_LOCK_WAIT_SECONDS)
        progress(1.0, "done")
    finally:
        lock.close()


def vacuum_into(
    path: str,
    target: str,
    *,
    progress: Callable[[float, str], None] = lambda fraction, note: None,
) -> tuple[Space, int]:
    """Write a compact, incremental copy of ``path`` to ``target`` (SQLite's VACUUM INTO), which
    must not exist: (the source's figures, the copy's size). It reads one snapshot and takes no
    write lock, so writers go on; the copy holds what was committed when it began. Interrupted,
    the partial copy is removed."""
    if os.path.lexists(target):
        raise VacuumRefused(f"{target!r} exists already; vacuum --into writes a new file and never replaces one.")
    conn = _connect(path)
    try:
        space = measure(conn, path)
        folder = os.path.dirname(os.path.abspath(target))
        if not os.path.isdir(folder):
            raise VacuumRefused(f"there is no directory {folder!r} to write {target!r} in.")
        have = _free_disk(folder)
        if have < space.live_bytes:
            raise VacuumRefused(
                f"the copy needs about {_bytes(space.live_bytes)} free in {folder}, and it has {_bytes(have)}; nothing was written."
            )
        conn.execute("PRAGMA auto_vacuum=INCREMENTAL")  # the copy is made so
        total = max(space.live_bytes, 1)
        try:
            _run_watched(conn, "VACUUM INTO ?", (target,), lambda: (_size(target), total), progress)
        except BaseException:
            for suffix in ("", "-journal", "-wal"):
                with suppress(OSError):
                    os.unlink(target + suffix)
            raise
        progress(1.0, "done")
        return space, _size(target)
    except sqlite3.DatabaseError as exc:
        raise DatabaseError(f"vacuum --into {target!r} failed: {exc}; nothing was written.") from None
    finally:
        conn.close()


def file_space(path: str) -> Space:
    """The figures of the database file at ``path``, read on a connection of their own."""
    try:
        # mode=rw: a mistyped path is an error, never a new empty file.
        conn = sqlite3.connect(
            f"file:{quote(os.path.abspath(path))}?mode=rw", uri=True, timeout=D.BUSY_TIMEOUT_SECONDS, isolation_level=None
        )
    except sqlite3.Error as exc:
        raise DatabaseError(f"can't open {path!r}: {exc}") from None
    try:
        return measure(conn, path)
    except sqlite3.DatabaseError as exc:
        raise DatabaseError(f"can't read {path!r}'s figures: {exc}") from None
    finally:
        conn.close()
