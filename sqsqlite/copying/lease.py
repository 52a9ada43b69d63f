"""One copy at a time to each queue there: the lease a copy to an endpoint holds on a queue
there, for as long as it runs.

Two copies to one queue at once would both start from the kept position and send the same
messages, each then writing its own position over the other's. So a copy takes, before it asks
anything of the endpoint, an exclusive ``flock`` on a file beside the database for each queue it
works on (``<file>-copy-`` and a digest of the key it is given: the queue's name and the
endpoint's URL, bookmark.copy_lease_key), without waiting: a queue another copy holds refuses
this one, which has then made, set and sent nothing there. An flock belongs to the open file, so
the kernel lets it go when the process ends however it ends (SIGKILL, a crash): a copy that dies
leaves no lease behind. The holder writes its process id into the file, for the refusal to name
it.

The file is removed by its holder before it lets go, so the directory keeps only the files of
copies running (and of copies killed, which the next copy to that queue takes and removes). A copy
that took the lock of a file removed meanwhile (its holder let go between the open and the lock)
opens the file anew: a lock counts only on the file the path names.

Without fcntl (not a POSIX system) there is no lease; the store has no writers' lock file there
either."""

from __future__ import annotations

import contextlib
import hashlib
import os
from typing import Any
from urllib.parse import unquote, urlsplit

fcntl: Any
try:
    import fcntl
except ImportError:
    fcntl = None


def lease_path(db_path: str, key: str) -> str:
    """The file whose lock is the lease named ``key``: beside the real file
    (through a symlink, as SQLite puts -wal and -shm), however the path was spelled."""
    if db_path.startswith("file:"):  # a URI SQLite was given: the file it names
        db_path = unquote(urlsplit(db_path).path)
    digest = hashlib.sha256(key.encode()).hexdigest()[:24]
    return f"{os.path.realpath(db_path)}-copy-{digest}"


class Leases:
    """The leases one copy holds: taken one by one, let go together by close() (or with the
    process)."""

    def __init__(self, db_path: str) -> None:
        self.db_path = db_path
        self.held: list[tuple[str, int]] = []

    def __enter__(self) -> Leases:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def take(self, key: str) -> int | None:
        """Take the lease named ``key``: None once taken, else the process
        id of the copy holding it (0 where it is not known). OSError where the file can't be
        made or locked."""
        if fcntl is None:
            return None
        path = lease_path(self.db_path, key)
        while True:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = _holder(fd)
                os.close(fd)
                return holder
            except BaseException:
                os.close(fd)
                raise
            try:
                named = os.stat(path)
            except FileNotFoundError:
                named = None
            mine = os.fstat(fd)
            if named is not None and (named.st_dev, named.st_ino) == (mine.st_dev, mine.st_ino):
                break
            os.close(fd)  # removed by a holder letting go after this open: that file is no lease
        self.held.append((path, fd))
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n{key}\n".encode(), 0)
        return None

    def close(self) -> None:
        """Let every lease go, each file removed first (while its lock still keeps others out)."""
        while self.held:
            path, fd = self.held.pop()
            with contextlib.suppress(OSError):  # gone already, or the directory no longer writable: the lock goes anyway
                os.unlink(path)
            os.close(fd)


def _holder(fd: int) -> int:
    """The process id the holder wrote into its lease's file; 0 while it has not yet."""
    try:
        first = os.pread(fd, 32, 0).split(b"\n", 1)[0]
        return int(first) if first.strip() else 0
    except (OSError, ValueError):
        return 0
