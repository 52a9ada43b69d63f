"""Rebuilding a database from a replica (:func:`restore`): restored beside the path, checked,
then renamed into place, never over a file a process has open."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from .. import defaults as D
from ..errors import SQSError
from .litestream import Replica, ReplicationError, config_file, config_text, environment, litestream_program, open_unmigrated

_LITESTREAM_ERROR = re.compile(r"^\s*error:\s*", re.IGNORECASE)  # how Litestream starts the line saying why it failed


@dataclass(frozen=True)
class Restored:
    """What a restore produced: the file, and its integrity check's answer."""

    path: str
    integrity: str


def _remove_database(path: Path) -> None:
    """A database file and what SQLite and sqsqlite keep beside it, where they are."""
    for name in (path, *(Path(f"{path}{suffix}") for suffix in D.SIDE_SUFFIXES)):
        name.unlink(missing_ok=True)


# SQLite's locks on a database file (os_unix.c): byte ranges from its PENDING_BYTE on, the
# pending and reserved bytes and then the shared range. Every connection to a database in WAL
# mode holds a read lock on the shared range for as long as it is open, idle or not.
_SQLITE_LOCKS = (0x40000000, 2 + 510)


def _user_of(path: Path) -> str | None:
    """Which process has the database at ``path`` open ("process 123 (python3)"), or None.

    Asked of the kernel (F_OFD_GETLK: whether a write lock on SQLite's lock bytes could be taken,
    which takes nothing and, unlike a lock a process takes on its own, sees this process's own
    connections too); the file and the files beside it are not touched. Where there is no
    F_OFD_GETLK (not Linux), a connection of SQLite's own asks by taking an exclusive lock for a
    moment: that may also write a log a crash left beside the file back into it."""
    try:
        import fcntl
    except ImportError:
        return _user_by_sqlite(path)
    if not hasattr(fcntl, "F_OFD_GETLK"):
        return _user_by_sqlite(path)
    import struct

    layout = "hhqqi4x"  # struct flock: type, whence, start, length, pid (Linux, 64-bit offsets)
    fd = os.open(path, os.O_RDONLY)
    try:
        asked = struct.pack(layout, fcntl.F_WRLCK, os.SEEK_SET, *_SQLITE_LOCKS, 0)
        kind, _, _, _, pid = struct.unpack(layout, fcntl.fcntl(fd, fcntl.F_OFD_GETLK, asked))
    finally:
        os.close(fd)
    if kind == fcntl.F_UNLCK:
        return None
    if pid == os.getpid():
        return "this process"
    if pid <= 0:  # a lock of another kind, or of a process in another PID namespace
        return "another process"
    try:
        name = Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return f"process {pid}"
    return f"process {pid} ({name})"


def _user_by_sqlite(path: Path) -> str | None:
    import sqlite3
    from urllib.parse import quote

    with contextlib.closing(
        sqlite3.connect(f"file:{quote(str(path.resolve()))}?mode=rw", uri=True, timeout=0, isolation_level=None)
    ) as probe:
        probe.execute("PRAGMA locking_mode=EXCLUSIVE")  # then even a WAL database's readers exclude it
        try:
            probe.execute("BEGIN EXCLUSIVE")
        except sqlite3.OperationalError:
            return "another process"
        except sqlite3.DatabaseError:  # not a database (a corrupt file): nothing has it open as one
            return None
        probe.execute("ROLLBACK")
        return None


def _refuse_if_open(db_path: str, target: Path) -> None:
    import sqlite3

    try:
        user = _user_of(target)
    except (OSError, sqlite3.Error) as exc:  # e.g. a file this user may not read
        raise ReplicationError(f"can't tell whether a process has {db_path} open ({exc}): nothing was restored") from None
    if user is not None:
        raise ReplicationError(
            f"{db_path} is open in {user}: stop every process using it before restoring over it "
            "(what they wrote after the restore would go to the file it replaces, and be lost)"
        )


def restore(db_path: str, replica: Replica, timestamp: str | None = None, force: bool = False) -> Restored:
    """Rebuild ``db_path`` from ``replica``: its newest transaction, or the newest sync at or
    before ``timestamp`` (RFC 3339, e.g. ``2026-11-25T06:30:00Z``; Litestream stamps what it ships
    when it ships it, so up to a sync interval earlier than that instant). Refuses to overwrite an
    existing database unless ``force``. The result passes SQLite's integrity check or this
    raises ReplicationError. Refuses, changing nothing, while any process has the database open:
    its connections would go on writing to the file the restore replaces."""
    target = Path(db_path)
    if target.is_dir():
        raise ReplicationError(f"{db_path} is a directory: restore writes a database file (give its path)")
    if target.exists() and not force:
        raise ReplicationError(f"{db_path} exists: restore writes a new database (--force replaces it)")
    if target.exists():
        _refuse_if_open(db_path, target)
    # An earlier database's log beside the path would be replayed over the restored file when it
    # is first opened, silently giving back that database instead: removed once the restore is whole.
    sides = [Path(f"{db_path}-wal"), Path(f"{db_path}-shm")]
    leftovers = [side for side in sides if side.exists()]
    if leftovers and not force:
        raise ReplicationError(
            f"{leftovers[0]} is left from an earlier database, and would be replayed over the restore (--force removes it)"
        )
    # Litestream's record of the database it replicated from the path (the position it reached):
    # kept, a replicate after the restore would take the restored file for that database. Removed,
    # Litestream finds the restored file behind the replica and ships a new snapshot of it.
    state = target.with_name(f".{target.name}-litestream")
    if state.exists() and not force:
        raise ReplicationError(f"{state} is Litestream's record of an earlier database there (--force removes it)")
    text = config_text(db_path, [replica])  # a bad URL is said before anything is tried
    program = litestream_program()
    replica.check_reachable()
    # Restored beside the path and checked there, then renamed into place: a restore that fails
    # anywhere (no backup, a bad timestamp, a damaged file) leaves what the path held as it was.
    # (Litestream's own -force deletes the database before it finds out.)
    scratch = target.with_name(f".{target.name}.restoring")
    _remove_database(scratch)
    config = config_file(text)
    argv = [program, "restore", "-no-expand-env", "-config", config, "-o", str(scratch.resolve())]
    if timestamp:
        argv += ["-timestamp", timestamp]
    try:
        done = subprocess.run([*argv, str(target.resolve())], env=environment(), capture_output=True, text=True)
    except OSError as exc:
        raise ReplicationError(f"cannot run {program}: {exc.strerror or exc}") from None
    finally:
        os.unlink(config)
    try:
        if done.returncode != 0:
            said = (done.stderr or done.stdout).strip().splitlines()
            # Litestream starts its last line "Error: "; said after ours, it would be the second.
            reason = _LITESTREAM_ERROR.sub("", said[-1]) if said else f"it exited with status {done.returncode}"
            raise ReplicationError(f"litestream could not restore {db_path} from {replica.url}: {reason}")
        # Opened as sqsqlite opens it, but not migrated: a restore from an older sqsqlite is
        # brought to this schema by the first program that uses its queues, in its account and region.
        try:
            with contextlib.closing(open_unmigrated(str(scratch))) as store:
                integrity = store.integrity_check()
        except SQSError as exc:
            raise ReplicationError(f"{db_path} restored from {replica.url} cannot be opened: {exc.message}") from None
        if integrity != "ok":
            raise ReplicationError(f"{db_path} restored from {replica.url} fails SQLite's integrity check: {integrity}")
        if target.exists():
            _refuse_if_open(db_path, target)  # again: one may have opened it while Litestream ran
        try:
            if state.is_dir():
                shutil.rmtree(state)
            else:
                state.unlink(missing_ok=True)
        except OSError as exc:
            raise ReplicationError(f"cannot remove {state}: {exc.strerror or exc}") from None
        for side in sides:
            side.unlink(missing_ok=True)
        # Litestream writes the file under the umask (0644, or 0666 under umask 0); it holds
        # message bodies and the receipt-handle key, so it is 0600 as every database sqsqlite makes.
        os.chmod(scratch, 0o600)
        os.replace(scratch, target)
    finally:
        _remove_database(scratch)
    return Restored(str(target), integrity)
