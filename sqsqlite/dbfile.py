"""The database file itself, apart from SQLite: created readable by its owner only, and watched
for being deleted or replaced at its path while this process has it open (FileIdentity); and its
writers' lock file, with the mark a writer waiting for it leaves (take_waiting, writers_waiting).
Used by :mod:`sqsqlite.store`, :mod:`sqsqlite.tx`, :mod:`sqsqlite.space` and
:mod:`sqsqlite.checkpoint`."""

from __future__ import annotations

import errno
import logging
import math
import os
import struct
from typing import Any

from .errors import DatabaseError

fcntl: Any
try:
    import fcntl
except ImportError:  # not a POSIX system: no writers' lock file
    fcntl = None

log = logging.getLogger("sqsqlite.store")

# How often, at most, a writer looks at the file's identity (one stat).
CHECK_SECONDS = 1.0


def has_file(path: str) -> bool:
    """Whether ``path`` names a file of its own (not ``:memory:``, a temporary database or a URI)."""
    return path not in (":memory:", "") and not path.startswith("file:")


def open_lock_file(path: str) -> int | None:
    """A descriptor of the lock file ``path`` (made if need be); None where it can't be opened
    for a passing reason (out of descriptors, a directory not writable now), -1 for good (a
    read-only file system): SQLite's own locking still holds either way."""
    try:
        return os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    except OSError as exc:
        return None if exc.errno in (errno.EMFILE, errno.ENFILE, errno.EACCES) else -1


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


def take_waiting(fd: int) -> None:
    """Take the writers' lock file ``fd`` (flock), marked as waiting until it is held: for a
    writer whose attempt without waiting found it taken."""
    try:
        mark_waiting(fd)
        fcntl.flock(fd, fcntl.LOCK_EX)
    finally:
        unmark_waiting(fd)


def writers_waiting(fd: int) -> bool:
    """Whether a writer, on any descriptor of the lock file but ``fd``, is marked as waiting."""
    if not _MARKS or fd < 0:
        return False
    try:
        asked = struct.pack(_FLOCK_LAYOUT, fcntl.F_WRLCK, os.SEEK_SET, *_WAITING, 0)
        kind = struct.unpack(_FLOCK_LAYOUT, fcntl.fcntl(fd, fcntl.F_OFD_GETLK, asked))[0]
    except OSError:
        return False
    return bool(kind != fcntl.F_UNLCK)


def create_private(path: str) -> None:
    """Create a new database file readable by its owner only; SQLite gives -wal and -shm the
    same mode."""
    if not has_file(path):
        return
    try:
        fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
    except FileExistsError:
        return
    except OSError as exc:
        if exc.errno in (errno.EMFILE, errno.ENFILE):
            return  # SQLite's open fails as well, and explain says why (out of descriptors)
        raise DatabaseError(f"Can't create database file {path!r}: {exc.strerror}.") from None
    os.close(fd)


def close_fds(fds: list[int]) -> None:
    """Close and forget these descriptors (the list is emptied in place)."""
    taken = list(fds)
    fds.clear()
    for fd in taken:
        try:
            os.close(fd)
        except OSError:
            pass


class FileIdentity:
    """The database file this process opened, by device and inode, and whether the file at its
    path is still that one.

    A file deleted under a running process (``rm app.db*``, a clean-up job, a deploy) stays open,
    and SQLite goes on writing to it: every write succeeds, and all of it is lost when the
    process ends; other processes meanwhile see a new, empty database at the path. So a writer
    looks at most once every CHECK_SECONDS (``next``: on the hot path, one comparison with the
    time it reads anyway), and once the file is gone every write is refused."""

    __slots__ = ("path", "named", "ident", "next", "gone")

    def __init__(self, path: str, named: str | None = None):
        self.path = path  # looked at: absolute, so that a change of directory changes nothing
        self.named = path if named is None else named  # as the caller gave it, for messages
        self.gone: str | None = None  # the refusal, once the file was found gone
        self.ident: tuple[int, int] | None = None
        if has_file(path):
            try:
                st = os.stat(path)
                self.ident = (st.st_dev, st.st_ino)
            except OSError:
                pass
        self.next = 0.0 if self.ident is not None else math.inf  # monotonic time of the next look

    def check(self, now: float | None) -> None:
        """Raise DatabaseError when the file at the path is not the one opened (looking again
        when ``now`` is CHECK_SECONDS past the last look, or None: now); else nothing."""
        if self.gone is None and not self.look(now):
            return
        raise DatabaseError(str(self.gone))

    def look(self, now: float | None) -> bool:
        """Whether the file is known gone, looking at it again if it is time (``now`` None: it
        is; the first time it is found gone, logged)."""
        if self.gone is not None:
            return True
        if self.ident is None:
            return False
        if now is not None:
            if now < self.next:
                return False
            self.next = now + CHECK_SECONDS
        try:
            st = os.stat(self.path)
            if (st.st_dev, st.st_ino) == self.ident:
                return False
        except FileNotFoundError:
            pass
        except OSError:  # can't tell (a directory made unreadable): not taken for gone
            return False
        self.gone = (
            f"The database file {self.named!r} was deleted or replaced since this process opened it; "
            "what is written now would be lost: open it again (restart the process)."
        )
        self.next = -math.inf  # every write from now on is refused at once
        log.warning("%s Writes are refused from now on; reads go on from the file still open.", self.gone)
        return True
