"""The report's archive figures: how long deleted messages lived and how often they were received,
per queue and hour, read from the queues' archives of deleted messages (message_archive).

Both the Spark job and the oracle reduce the archived rows to the same integers (per queue and
hour, and per queue over the window); :func:`finish` derives the rest in plain Python, so the
two agree exactly. Definitions, for the history's window [``since``, ``until``) (epoch ms):

- An archived row counts when its ``deleted_at`` is in [``since`` rounded down to a whole hour,
  ``until``), in the hour its delete falls in. Only queues whose archive is on keep rows, so
  only they appear; rows of a queue deleted since are left out, as in the history.
- *Deletes*: rows deleted by a consumer (``how`` is delete, batch or buffered); *purged*: rows a
  purge removed. A purge says nothing about how long work took, so every figure below is over
  the deletes only.
- *Time to delete*: ``deleted_at - sent_at``, from the original enqueue (kept through a move to
  a dead-letter queue) to the delete; p50/p90/p99 are nearest-rank, as the backlog's ages
  (figures.py): the value at 1-based rank ``(p*n + 99) // 100`` of the n sorted times.
- *Receives before the delete*: the message's receive count when it was deleted; the mean is
  the sum over the deletes divided by their number (two decimals), the max the largest.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field
from typing import Any, NamedTuple

HOUR_MS = 3_600_000
PERCENTILES = (50, 90, 99)
PURGE = "purge"  # the archive's ``how`` of a purge's rows; every other is a consumer's delete

ARCHIVE_COLUMNS = "queue_id, sent_at, deleted_at, receive_count, how"


class ArchiveRow(NamedTuple):
    """An archived message as the report reads it (ARCHIVE_COLUMNS)."""

    queue_id: int
    sent_at: int
    deleted_at: int
    receive_count: int
    how: str


class Reduced(NamedTuple):
    """A queue's hour (``at`` its start), or its whole window (``at`` None), reduced from its rows."""

    queue_id: int
    at: int | None
    deletes: int
    purged: int
    receives: int  # summed over the deletes
    max_receives: int | None
    p50_ms: int | None
    p90_ms: int | None
    p99_ms: int | None


@dataclass
class ArchiveFigures:
    deletes: int = 0
    purged: int = 0
    p50_ms: int | None = None
    p90_ms: int | None = None
    p99_ms: int | None = None
    mean_receives: float | None = None
    max_receives: int | None = None


@dataclass
class ArchiveHour(ArchiveFigures):
    start_ms: int = 0


@dataclass
class QueueArchive(ArchiveFigures):
    queue: str = ""
    hours: list[ArchiveHour] = field(default_factory=list)


def first_hour(since_ms: int) -> int:
    return since_ms - since_ms % HOUR_MS


def nearest_rank(p: int, n: int) -> int:
    return (p * n + 99) // 100


def _fill(f: ArchiveFigures, r: Reduced | None) -> None:
    if r is None:
        return
    f.deletes, f.purged = int(r.deletes), int(r.purged)
    f.p50_ms, f.p90_ms, f.p99_ms = r.p50_ms, r.p90_ms, r.p99_ms
    f.max_receives = r.max_receives
    f.mean_receives = round(int(r.receives) / int(r.deletes), 2) if r.deletes else None


def finish(names: dict[int, str], rows: list[Reduced], since_ms: int, until_ms: int) -> list[QueueArchive]:
    """Each queue's figures over the window and per hour (every hour of the window, empty ones
    too), from the reduced rows; queues with a row in the window only, by name."""
    start = first_hour(since_ms)
    n = -(-(until_ms - start) // HOUR_MS)
    hours: dict[int, dict[int, Reduced]] = {}
    totals: dict[int, Reduced] = {}
    for r in rows:
        if r.at is None:
            totals[r.queue_id] = r
        else:
            hours.setdefault(r.queue_id, {})[r.at] = r
    out = []
    for queue_id, total in totals.items():
        if queue_id not in names:
            continue  # a queue deleted since
        q = QueueArchive(queue=names[queue_id])
        _fill(q, total)
        for k in range(n):
            h = ArchiveHour(start_ms=start + k * HOUR_MS)
            _fill(h, hours.get(queue_id, {}).get(h.start_ms))
            q.hours.append(h)
        out.append(q)
    return sorted(out, key=lambda q: q.queue)


def reduce(rows: list[ArchiveRow], since_ms: int, until_ms: int) -> list[Reduced]:
    """The oracle's reduction of archived rows (deleted in [first_hour(since), until)) to
    finish's rows, in plain Python."""
    start = first_hour(since_ms)
    keyed: dict[tuple[int, int | None], list[ArchiveRow]] = {}
    for r in rows:
        if not start <= r.deleted_at < until_ms:
            continue
        hour = start + (r.deleted_at - start) // HOUR_MS * HOUR_MS
        keyed.setdefault((r.queue_id, hour), []).append(r)
        keyed.setdefault((r.queue_id, None), []).append(r)
    out = []
    for (queue_id, at), group in keyed.items():
        deleted = [r for r in group if r.how != PURGE]
        times = sorted(r.deleted_at - r.sent_at for r in deleted)
        ranked = [times[nearest_rank(p, len(times)) - 1] if times else None for p in PERCENTILES]
        out.append(
            Reduced(
                queue_id,
                at,
                len(deleted),
                len(group) - len(deleted),
                sum(r.receive_count for r in deleted),
                max((r.receive_count for r in deleted), default=None),
                *ranked,
            )
        )
    return out


def _archive_row(cursor: sqlite3.Cursor, values: tuple[Any, ...]) -> ArchiveRow:
    return ArchiveRow(*values)  # the SELECT's columns are ArchiveRow's fields, in order


def kept(conn: sqlite3.Connection, schema: str = "") -> bool:
    """Whether the file has the archive at all (its schema is migration 0016's or later)."""
    found = f"SELECT 1 AS found FROM {schema}sqlite_master WHERE type = 'table' AND name = 'message_archive'"
    return conn.execute(found).fetchone() is not None


def archiving_queues(conn: sqlite3.Connection, schema: str = "", copied_only: bool = False) -> int:
    """How many queues keep an archive now (``copied_only``: of those in the snapshot's own
    queues table); 0 for a file older than the archive, and for a snapshot, whose copy of the
    queues keeps no setting (the snapshot counted them in its source when it was taken)."""
    if "archive_retention" not in {r[1] for r in conn.execute(f"PRAGMA {schema}table_info(queues)")}:
        return 0
    cursor = conn.cursor()
    cursor.row_factory = sqlite3.Row
    among = " AND id IN (SELECT id FROM main.queues)" if copied_only else ""
    return int(cursor.execute(f"SELECT count(*) AS n FROM {schema}queues WHERE archive_retention IS NOT NULL{among}").fetchone()["n"])


def read_rows(conn: sqlite3.Connection, since_ms: int, until_ms: int) -> list[ArchiveRow]:
    """The archived rows deleted in the window's hours; none for a file older than the archive."""
    if not kept(conn):
        return []
    cursor = conn.cursor()
    cursor.row_factory = _archive_row
    window = {"low": first_hour(since_ms), "until": until_ms}
    return cursor.execute(
        f"SELECT {ARCHIVE_COLUMNS} FROM message_archive WHERE deleted_at >= :low AND deleted_at < :until", window
    ).fetchall()


def oracle(conn: sqlite3.Connection, names: dict[int, str], since_ms: int, until_ms: int) -> list[QueueArchive]:
    return finish(names, reduce(read_rows(conn, since_ms, until_ms), since_ms, until_ms), since_ms, until_ms)


def spark_rows(F, Window, frame, since_ms: int, until_ms: int) -> list[Reduced]:
    """Spark's reduction of the archived rows (a DataFrame of ARCHIVE_COLUMNS) to finish's rows:
    counts and sums by groupBy, the percentiles by rank in a window, as the backlog's ages."""
    from pyspark import StorageLevel

    start = first_hour(since_ms)
    rows = frame.where((F.col("deleted_at") >= start) & (F.col("deleted_at") < until_ms)).select(
        "queue_id",
        (F.lit(start) + F.floor((F.col("deleted_at") - F.lit(start)) / F.lit(HOUR_MS)).cast("long") * F.lit(HOUR_MS)).alias("at"),
        (F.col("deleted_at") - F.col("sent_at")).alias("took"),
        "receive_count",
        (F.col("how") == PURGE).alias("purge"),
    )
    rows = rows.persist(StorageLevel.MEMORY_AND_DISK)  # read over JDBC once, for the four reductions
    try:
        return [r for hourly in (True, False) for r in _reduced(F, Window, rows, hourly)]
    finally:
        rows.unpersist()


def _reduced(F, Window, rows, hourly: bool) -> list[Reduced]:
    """The rows reduced per queue and hour (``hourly``), or per queue over the window."""
    out: list[Reduced] = []
    keys = ["queue_id", "at"] if hourly else ["queue_id"]
    deleted = rows.where(~F.col("purge"))
    counts = rows.groupBy(*keys).agg(
        F.sum(F.when(~F.col("purge"), 1).otherwise(0)).alias("deletes"),
        F.sum(F.when(F.col("purge"), 1).otherwise(0)).alias("purged"),
        F.sum(F.when(~F.col("purge"), F.col("receive_count")).otherwise(0)).alias("receives"),
        F.max(F.when(~F.col("purge"), F.col("receive_count"))).alias("max_receives"),
    )
    n = deleted.groupBy(*keys).agg(F.count(F.lit(1)).alias("n"))
    ranks = n.select(*keys, *[F.expr(f"(n * {p} + 99) div 100").alias(f"k{p}") for p in PERCENTILES])
    ranked = deleted.select(*keys, "took", F.row_number().over(Window.partitionBy(*keys).orderBy("took")).alias("rn")).join(ranks, keys)
    hits: dict[tuple, dict[int, int]] = {}
    for r in ranked.where(F.col("rn").isin(*[F.col(f"k{p}") for p in PERCENTILES])).collect():
        found = hits.setdefault((r["queue_id"], r["at"] if hourly else None), {})
        for p in PERCENTILES:
            if r["rn"] == r[f"k{p}"]:
                found[p] = r["took"]
    for r in counts.collect():
        key = (r["queue_id"], r["at"] if hourly else None)
        found = hits.get(key, {})
        out.append(Reduced(*key, r["deletes"], r["purged"], r["receives"], r["max_receives"], *(found.get(p) for p in PERCENTILES)))
    return out
