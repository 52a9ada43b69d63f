"""The database file itself, apart from SQLite: created readable by its owner only, and watched
for being deleted or replaced at its path while this process has it open (FileIdentity). Its
writers' lock file is :mod:`sqsqlite.lock`'s. Used by :mod:`sqsqlite.store` and
:mod:`sqsqlite.checkpoint`."""

from __future__ import annotations

import contextlib
import errno
import logging
import math
import os

from .errors import DatabaseError

log = logging.getLogger("sqsqlite.store")

# How often, at most, a writer looks at the file's identity (one stat).
CHECK_SECONDS = 1.0


def has_file(path: str) -> bool:
    """Whether ``path`` names a file of its own (not ``:memory:``, a temporary database or a URI)."""
    return path not in (":memory:", "") and not path.startswith("file:")


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
        with contextlib.suppress(OSError):
            os.close(fd)


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

    def refuse(self, reason: str) -> None:
        """Refuse every connection and write from now on, saying ``reason``."""
        self.gone, self.next = reason, -math.inf

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
