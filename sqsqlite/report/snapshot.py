"""One consistent copy of what the report reads, taken without blocking anyone.

Why a copy: Spark reads a JDBC table in partitions, each through its own connection, each in
its own transaction, one after another. Reading the live file that way would see each id range
at a different instant: a batch sent (one transaction) across two partitions could be counted
half, and a queue's depth and its dead-letter queue's depth could come from different moments.
One JDBC transaction around "every table" cannot help, because the partitions never share a
connection. So the report first copies the columns it needs inside *one* SQLite read
transaction on the source (every SELECT in it sees the same committed state) into a private
temporary file, and Spark reads only that immutable file. In WAL mode (which sqsqlite always
uses) a read transaction never blocks writers and no writer blocks it; the copy leaves bodies
and receipt tokens behind, so it is small and quick.

The copy numbers the messages 1, 2, 3... in the source's id order (``id`` in the copy is that
number, not the source's id): a queue's messages take ids from a range of their own (queue q's
from q << QUEUE_ID_SHIFT on), next to the small ids of messages sent before that layout, so
the source's ids are spread over billions with huge gaps, and JDBC partitions over them (equal
slices of min..max) would hand nearly every row to one or two partitions. Over 1..n each
partition is an equal rowid range of the copy, and every row falls in exactly one. The order is
kept, so the report's one use of the id, a tie-break in send order, is unchanged.

The copy declares every epoch-millisecond column BIGINT; the Spark job also forces the types
(``customSchema``), because the SQLite JDBC driver reports an INTEGER column as a 32-bit int and
Spark would silently keep only the low 32 bits of a timestamp.
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import os
import shutil
import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import quote

from ..store import HEAD_REVISION
from . import archive as A
from .figures import MESSAGE_COLUMNS, QUEUE_COLUMNS
from .history import DEFAULT_WINDOW_MS, HISTORY_COLUMNS, history_retention, rows_start

_SCHEMA = (
    """CREATE TABLE queues (
        id BIGINT PRIMARY KEY, name TEXT NOT NULL, fifo INTEGER NOT NULL,
        retention_period BIGINT NOT NULL, dead_letter_target TEXT)""",
    """CREATE TABLE messages (
        id INTEGER PRIMARY KEY, queue_id BIGINT NOT NULL, message_id TEXT NOT NULL,
        sent_at BIGINT NOT NULL, visible_at BIGINT NOT NULL, receive_count BIGINT NOT NULL,
        group_id TEXT, sequence_number BIGINT, dead_letter_source_arn TEXT)""",
    # The window's minute rows of the per-minute history, numbered (id) so Spark can read them
    # in ranges.
    """CREATE TABLE queue_history (
        id INTEGER PRIMARY KEY, minute BIGINT NOT NULL, queue_id BIGINT NOT NULL,
        sent BIGINT, received BIGINT, redelivered BIGINT, deleted BIGINT, dead_lettered BIGINT,
        expired BIGINT, purged BIGINT, moved BIGINT, moved_in BIGINT,
        visible BIGINT, in_flight BIGINT, delayed BIGINT, oldest_age BIGINT)""",
    # The archived rows deleted in the window's hours (archive.py), numbered (id) the same way;
    # empty for a file older than the archive.
    """CREATE TABLE message_archive (
        id INTEGER PRIMARY KEY, queue_id BIGINT NOT NULL, sent_at BIGINT NOT NULL,
        deleted_at BIGINT NOT NULL, receive_count BIGINT NOT NULL, how TEXT NOT NULL)""",
)


# The copy's messages, numbered in the source's id order (see above). row_number() states the
# order outright; over the source's rowid order it needs no sort.
_NUMBERED_MESSAGES = ", ".join("row_number() OVER (ORDER BY id)" if c == "id" else c for c in MESSAGE_COLUMNS.split(", "))

_BUSY_TIMEOUT_MS = 60_000  # how long the copy waits for a connection that locks the file out


class SnapshotError(Exception):
    """The database can't be read (missing, not a sqsqlite database, locked)."""


class DestinationError(SnapshotError):
    """The snapshot's own file can't be created or written (its directory full, unwritable or
    gone); ``reason`` says why, in the OS's words where SQLite passes them on."""

    def __init__(self, dest: str, reason: str):
        super().__init__(f"cannot write the snapshot {dest}: {reason}")
        self.reason = reason


# SQLite's (extended) result codes for a failed write to a file. It reports the OS's ENOSPC
# as SQLITE_FULL and any other failed write (a quota, EFBIG, EIO) as one of these I/O errors,
# without the OS's own error.
_SQLITE_FULL = 13
_SQLITE_WRITE_ERRORS = {778: "write", 1034: "fsync", 1546: "truncate"}


def _write_failure(exc: sqlite3.Error) -> str | None:
    """Why writing the snapshot failed, when ``exc`` is a failed write; else None."""
    code = getattr(exc, "sqlite_errorcode", None)  # Python 3.11 on
    if code == _SQLITE_FULL or (code is None and str(exc).startswith("database or disk is full")):
        return os.strerror(errno.ENOSPC)
    if code in _SQLITE_WRITE_ERRORS:
        return f"{exc}: a {_SQLITE_WRITE_ERRORS[code]} failed"
    return None


def _unreadable(source: str, exc: sqlite3.Error) -> str:
    """One line on why the source could not be copied: not a database, another program's
    database (or an older sqsqlite's not yet upgraded), locked, or unreadable."""
    text = str(exc)
    if text.startswith("file is not a database"):
        return f"{source} is not a sqsqlite database ({text})"
    if text.startswith(("no such table", "no such column")):
        return f"{source} is not a sqsqlite database, or an older one not yet upgraded ({text}; `sqsqlite --db {source} db upgrade` upgrades one)"
    if "locked" in text or "busy" in text:
        return f"{source} is locked: another connection held it for over a minute ({text})"
    return f"cannot read {source} ({text})"


def _refuse_newer(conn: sqlite3.Connection, source: str) -> None:
    """A file of a newer sqsqlite (its schema revision past this one's) may hold its messages
    differently: refused, as every other command refuses it, rather than read as if it did not."""
    try:
        row = conn.execute("SELECT version_num FROM src.alembic_version").fetchone()
    except sqlite3.OperationalError:
        return  # no revision table: the copy's own error says what the file is
    revision = row and row["version_num"]
    if revision and len(revision) == len(HEAD_REVISION) and revision.isdigit() and revision > HEAD_REVISION:
        raise SnapshotError(
            f"{source!r} has schema revision {revision!r}, newer than this sqsqlite knows (up to {HEAD_REVISION!r}); upgrade sqsqlite to use it."
        )


@dataclass(frozen=True)
class Snapshot:
    path: str
    as_of_ms: int
    messages: int
    # The copy's message ids: 1..messages, in the source's id order (0, 0 when there are none).
    min_id: int
    max_id: int
    parquet: str | None = None  # where to_parquet wrote it, for executors on other machines
    # The history's window [since, until) and its minute rows copied (ids 1..history_rows).
    history_since_ms: int = 0
    history_until_ms: int = 0
    history_rows: int = 0
    # The file's history setting (its retention in seconds): 0, off, no history is kept.
    history_retention_s: int = 0
    # The archived rows copied (ids 1..archive_rows), and how many queues keep an archive.
    archive_rows: int = 0
    archive_queues: int = 0


# Parquet's types for the snapshot's columns (those the report reads, named once in figures):
# text where the copy holds text, every other column a 64-bit integer, as the copy declares them.
_TEXT_COLUMNS = {"name", "dead_letter_target", "message_id", "group_id", "dead_letter_source_arn", "how"}
_PARQUET_COLUMNS = {
    "queues": QUEUE_COLUMNS.split(", "),
    "messages": MESSAGE_COLUMNS.split(", "),
    "queue_history": ["id", *HISTORY_COLUMNS.split(", ")],
    "message_archive": ["id", *A.ARCHIVE_COLUMNS.split(", ")],
}
ROWS_PER_PARQUET_FILE = 1_000_000  # so the read splits across executors
# Rows held in Python at once while writing: a file is written in row groups of this many, so
# the writer's memory stays flat however large the snapshot (a million rows as Python tuples
# took about a gigabyte).
ROWS_PER_PARQUET_CHUNK = 100_000


def parquet_folder(snap: Snapshot, directory: str) -> str:
    """The path of a new folder for ``snap`` under ``directory`` (not yet created), so a caller
    can arrange its removal before anything is written there."""
    import secrets

    return os.path.join(os.path.abspath(directory), f"sqsqlite-snapshot-{snap.as_of_ms}-{secrets.token_hex(4)}")


def to_parquet(snap: Snapshot, directory: str) -> Snapshot:
    """Write the snapshot as Parquet into a new folder under ``directory`` (a path every Spark
    executor can read: a shared mount on a cluster) and return it with ``parquet`` set; on any
    failure the folder is removed and a write error is a SnapshotError."""
    folder = parquet_folder(snap, directory)
    try:
        return write_parquet(snap, folder)
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise


def write_parquet(snap: Snapshot, folder: str) -> Snapshot:
    """Write the snapshot as Parquet into ``folder`` (created here, with its parents) and return
    it with ``parquet`` set. The caller removes ``folder`` if this fails part-way.

    Executors on other machines cannot open this machine's SQLite file; they can read files on
    a shared path. The folder holds ``queues/`` and ``messages/`` (one file per million
    messages, so the read is split across executors). Both tables are read in one transaction
    of the copy, and streamed: at most ROWS_PER_PARQUET_CHUNK rows are in memory at a time.
    A folder that cannot be created or written is a SnapshotError of one line."""
    with contextlib.closing(sqlite3.connect(file_uri(snap.path, "ro"), uri=True, isolation_level=None)) as conn:
        conn.execute("BEGIN")  # the copy is private already; one transaction keeps it one instant regardless
        for table, columns in _PARQUET_COLUMNS.items():
            destination = os.path.join(folder, table)
            try:
                os.makedirs(destination)
                _stream_table(conn, table, columns, destination)
            except OSError as exc:  # pyarrow's I/O errors are OSErrors too
                raise SnapshotError(f"cannot write the snapshot to {folder}: {_reason(exc)}") from None
        conn.execute("COMMIT")
    return dataclasses.replace(snap, parquet=folder)


def _reason(exc: OSError) -> str:
    if exc.strerror:
        return f"{exc.strerror}: {exc.filename}" if exc.filename else exc.strerror
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__


def _stream_table(conn: sqlite3.Connection, table: str, columns: list[str], destination: str) -> None:
    """Write ``table`` into ``destination`` as part files of up to ROWS_PER_PARQUET_FILE rows,
    each written a chunk (one row group) at a time. An empty table still gets one file, which
    carries the schema Spark reads."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = pa.schema([(name, pa.string() if name in _TEXT_COLUMNS else pa.int64()) for name in columns])
    # Rows go to Arrow a column at a time (zip(*rows)) in the SELECT's order, which is the
    # schema's: no value is read out of a row by its position.
    cursor = conn.execute(f"SELECT {', '.join(columns)} FROM {table} ORDER BY id")
    part, in_part, writer = 0, 0, None
    try:
        while True:
            room = ROWS_PER_PARQUET_FILE - in_part if writer is not None else 0  # 0: a new file comes next
            rows = cursor.fetchmany(min(ROWS_PER_PARQUET_CHUNK, room) if room > 0 else ROWS_PER_PARQUET_CHUNK)
            if writer is None or (rows and in_part >= ROWS_PER_PARQUET_FILE):
                if writer is not None:
                    writer.close()
                writer = pq.ParquetWriter(os.path.join(destination, f"part-{part:05d}.parquet"), schema)
                part, in_part = part + 1, 0
            if not rows:
                break
            arrays = [pa.array(values, type=field.type) for values, field in zip(zip(*rows), schema)]
            writer.write_table(pa.Table.from_arrays(arrays, schema=schema))
            in_part += len(rows)
    finally:
        if writer is not None:
            writer.close()


def _holds_others(conn: sqlite3.Connection, scope: tuple[str, str]) -> bool:
    """Whether the attached source holds queues of another account or region than ``scope``
    (a file before migration 0012 has one name space, and no such columns)."""
    columns = {row["name"] for row in conn.execute("PRAGMA src.table_info(queues)")}
    if "account" not in columns:
        return False
    account, region = scope
    others = "SELECT 1 FROM src.queues WHERE account != :account OR region != :region LIMIT 1"
    return conn.execute(others, {"account": account, "region": region}).fetchone() is not None


def file_uri(path: str, mode: str | None = None) -> str:
    """A SQLite URI for any path (``?`` and ``#`` in names would otherwise cut it short)."""
    uri = "file:" + quote(os.path.abspath(path))
    return f"{uri}?mode={mode}" if mode else uri


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def take(
    source: str,
    dest: str,
    as_of_ms: int | None = None,
    while_open: Callable[[], None] | None = None,
    history_since_ms: int | None = None,
    history_until_ms: int | None = None,
    scope: tuple[str, str] | None = None,
) -> Snapshot:
    """Copy queues and message metadata from ``source`` to a new file ``dest`` in one read
    transaction, with the per-minute history's rows of the window [history_since_ms,
    history_until_ms) (by default the 24 hours before the snapshot's instant). Without
    ``as_of_ms`` the instant is read inside that transaction, so every message committed before
    the snapshot was sent at or before it. ``while_open`` runs inside the transaction, after the
    copy (tests use it to show writers carry on). ``scope``: (account, region) whose queues are
    copied, of a file holding others' too (migration 0012); by default every queue."""
    if not os.path.isfile(source):
        raise SnapshotError(f"no database at {source}")
    try:  # made here, not by SQLite, so that a directory refusing it says why in the OS's words
        os.close(os.open(dest, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    except FileExistsError:
        raise SnapshotError(f"snapshot file {dest} already exists") from None
    except OSError as exc:
        raise DestinationError(dest, exc.strerror or str(exc)) from None
    # The copy is the main database; the source is attached read-only, so the report can
    # never write to it.
    conn: sqlite3.Connection | None = None
    try:
        try:
            conn = sqlite3.connect(file_uri(dest), uri=True, isolation_level=None)
            conn.row_factory = sqlite3.Row
            conn.execute(f"PRAGMA busy_timeout={_BUSY_TIMEOUT_MS}")
            conn.execute("PRAGMA journal_mode=OFF")  # a private scratch file: nothing to recover
            conn.execute("PRAGMA synchronous=OFF")
            for ddl in _SCHEMA:
                conn.execute(ddl)
        except sqlite3.Error as exc:  # the source is not attached yet: this is the copy's file
            raise DestinationError(dest, _write_failure(exc) or str(exc)) from None
        try:
            conn.execute("ATTACH DATABASE :uri AS src", {"uri": file_uri(source, "ro")})
            conn.execute("BEGIN")
            # The first read of src starts its snapshot; everything below sees that state.
            conn.execute("SELECT count(*) FROM src.queues").fetchone()
            _refuse_newer(conn, source)
            if as_of_ms is None:
                as_of_ms = now_ms()
            scoped = scope is not None and _holds_others(conn, scope)
            if scope is not None and scoped:
                # One account's queues in one region: names are unique only within one, and
                # the report goes by name. A file holding no other is copied whole, unfiltered.
                account, region = scope
                conn.execute(
                    f"INSERT INTO queues SELECT {QUEUE_COLUMNS} FROM src.queues WHERE account = :account AND region = :region",
                    {"account": account, "region": region},
                )
                conn.execute(
                    f"INSERT INTO messages SELECT {_NUMBERED_MESSAGES} FROM src.messages WHERE queue_id IN (SELECT id FROM queues)"
                )
            else:
                conn.execute(f"INSERT INTO queues SELECT {QUEUE_COLUMNS} FROM src.queues")
                conn.execute(f"INSERT INTO messages SELECT {_NUMBERED_MESSAGES} FROM src.messages")
            retention = history_retention(conn, "src.")
            until = as_of_ms if history_until_ms is None else history_until_ms
            since = until - DEFAULT_WINDOW_MS if history_since_ms is None else history_since_ms
            conn.execute(
                f"INSERT INTO queue_history ({HISTORY_COLUMNS}) SELECT {HISTORY_COLUMNS} FROM src.queue_history "
                "WHERE minute >= :low AND minute < :until"
                + (" AND queue_id IN (SELECT id FROM queues)" if scoped else "")
                + " ORDER BY minute, queue_id",
                {"low": rows_start(since, until), "until": until},
            )
            archiving = A.archiving_queues(conn, "src.", copied_only=scoped)
            if A.kept(conn, "src."):
                conn.execute(
                    f"INSERT INTO message_archive ({A.ARCHIVE_COLUMNS}) SELECT {A.ARCHIVE_COLUMNS} FROM src.message_archive "
                    "WHERE deleted_at >= :low AND deleted_at < :until"
                    + (" AND queue_id IN (SELECT id FROM queues)" if scoped else "")
                    + " ORDER BY deleted_at, id",
                    {"low": A.first_hour(since), "until": until},
                )
            if while_open is not None:
                while_open()
            conn.execute("COMMIT")
        except sqlite3.Error as exc:
            # The source is attached read-only: a failed write is the copy's, not the source's.
            failure = _write_failure(exc)
            if failure is not None:
                raise DestinationError(dest, failure) from None
            raise SnapshotError(_unreadable(source, exc)) from None
        messages = conn.execute("SELECT count(*) AS n, min(id) AS lo, max(id) AS hi FROM messages").fetchone()
        history_rows = conn.execute("SELECT count(*) AS n FROM queue_history").fetchone()["n"]
        archive_rows = conn.execute("SELECT count(*) AS n FROM message_archive").fetchone()["n"]
    except BaseException:
        try:
            if conn is not None and conn.in_transaction:
                conn.execute("ROLLBACK")
        finally:
            if conn is not None:
                conn.close()
            with contextlib.suppress(OSError):
                os.remove(dest)  # a failed snapshot leaves nothing behind
        raise
    conn.close()
    return Snapshot(
        dest,
        as_of_ms,
        messages["n"],
        messages["lo"] or 0,
        messages["hi"] or 0,
        None,
        since,
        until,
        history_rows,
        retention,
        archive_rows,
        archiving,
    )
