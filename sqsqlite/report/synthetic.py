"""Large synthetic databases for the report's tests and benchmark, built by raw inserts.

Queues are created through the engine (so the schema, migrations and queue rows are the real
ones); messages go in by ``executemany`` in large transactions straight into the engine's
``messages`` table, since a million API sends would take minutes. Every state is present:
visible, in flight, delayed, dead-lettered (with DeadLetterQueueSourceArn), expiring soon, and
expired but not yet pruned.
"""

from __future__ import annotations

import json
import random
import sqlite3
import uuid

import sqsqlite

# name, retention seconds, fifo, dead-letter target, share of the messages
QUEUES = (
    ("orders", 4 * 86_400, False, "orders-dlq", 0.45),
    ("events", 86_400, False, None, 0.25),
    ("jobs.fifo", 4 * 86_400, True, "jobs-dlq.fifo", 0.15),
    ("orders-dlq", 14 * 86_400, False, None, 0.10),
    ("jobs-dlq.fifo", 14 * 86_400, True, None, 0.05),
)
GROUPS = 1000  # message groups per FIFO queue
BATCH = 50_000

_INSERT = (
    "INSERT INTO messages (queue_id, message_id, body, sender_id, sent_at, visible_at, "
    "receive_count, first_received_at, received_at, group_id, sequence_number, dead_letter_source_arn, is_head) "
    "VALUES (:queue_id, :message_id, :body, 'AIDASYNTHETIC', :sent_at, :visible_at, "
    ":receive_count, :first_received_at, :received_at, :group_id, :sequence_number, :dead_letter_source_arn, :is_head)"
)


def build(path: str, messages: int, as_of_ms: int, seed: int = 7) -> dict[str, int]:
    """Create ``path`` with ``messages`` messages spread over the queues above, judged at
    ``as_of_ms``; returns how many rows went into each queue."""
    clock = sqsqlite.ManualClock(as_of_ms - 15 * 86_400_000)
    db = sqsqlite.connect(path, clock=clock)
    for name, retention, fifo, _, _ in reversed(QUEUES):  # dead-letter queues first
        attrs = {"MessageRetentionPeriod": str(retention)}
        if fifo:
            attrs["FifoQueue"] = "true"
        target = next(q[3] for q in QUEUES if q[0] == name)
        if target:
            attrs["RedrivePolicy"] = json.dumps({"deadLetterTargetArn": db.queue_arn(target), "maxReceiveCount": 5})
        db.create_queue(name, attributes=attrs)
    conn = sqlite3.connect(path, isolation_level=None)
    conn.row_factory = sqlite3.Row
    ids = {row["name"]: row["id"] for row in conn.execute("SELECT name, id FROM queues")}
    sources = {q[3]: db.queue_arn(q[0]) for q in QUEUES if q[3]}
    db.close()
    conn.execute("PRAGMA synchronous=OFF")
    conn.execute("PRAGMA cache_size=-262144")
    rnd = random.Random(seed)
    body = "x" * 64
    counts: dict[str, int] = {}
    seq = 0
    for name, retention, fifo, _, share in QUEUES:
        n = round(messages * share) if name != QUEUES[-1][0] else messages - sum(counts.values())
        counts[name] = n
        qid = ids[name]
        span = retention * 1000 * 21 // 20  # about 5% older than retention: expired, not pruned
        source = sources.get(name)
        heads: set[str] = set()
        # Oldest first, as a real queue fills: sent_at ascends with the row id.
        offsets = sorted((rnd.randrange(span) for _ in range(n)), reverse=True)
        rows = []
        for _k, off in enumerate(offsets):
            sent = as_of_ms - off
            r = rnd.random()
            base = 5 if source else 0  # moved after maxReceiveCount receives, count kept
            if r < 0.05 and not source:  # delayed, never received
                rc, visible = 0, as_of_ms + rnd.randrange(1, 900_000)
            elif r < 0.20:  # in flight
                rc, visible = base + rnd.randint(1, 4), as_of_ms + rnd.randrange(1, 3_600_000)
            else:  # visible: received a few times already, or never
                rc = base + min(int(rnd.expovariate(1.2)), 5)
                visible = min(sent, as_of_ms) + rnd.randrange(0, 1000) if rc == 0 else as_of_ms - rnd.randrange(0, 600_000)
                visible = min(visible, as_of_ms)
            received = None if rc == 0 else min(visible, as_of_ms)
            group = f"g{rnd.randrange(GROUPS):04d}" if fifo else None
            head = 0
            if group is not None:
                seq += 1
                if group not in heads:
                    heads.add(group)
                    head = 1
            rows.append(
                {
                    "queue_id": qid,
                    "message_id": str(uuid.UUID(int=rnd.getrandbits(128), version=4)),
                    "body": body,
                    "sent_at": sent,
                    "visible_at": visible,
                    "receive_count": rc,
                    "first_received_at": received,
                    "received_at": received,
                    "group_id": group,
                    "sequence_number": seq if fifo else None,
                    "dead_letter_source_arn": source,
                    "is_head": head,
                }
            )
            if len(rows) >= BATCH:
                _flush(conn, rows)
        _flush(conn, rows)
    conn.execute("UPDATE queues SET last_sequence = :seq WHERE fifo = 1", {"seq": seq})
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    return counts


def _flush(conn, rows: list, sql: str = _INSERT) -> None:
    if rows:
        conn.execute("BEGIN")
        conn.executemany(sql, rows)
        conn.execute("COMMIT")
        rows.clear()


_HISTORY_INSERT = (
    "INSERT INTO queue_history (minute, queue_id, sent, bytes_sent, received, redelivered, empty_receives, deleted, "
    "dead_lettered, moved_in, expired, purged, moved, visible, in_flight, delayed, oldest_age) "
    "VALUES (:minute, :queue_id, :sent, 0, :received, :redelivered, 0, :deleted, "
    ":dead_lettered, :moved_in, :expired, :purged, :moved, :visible, :in_flight, :delayed, :oldest_age)"
)


def build_history(path: str, queues: int, minutes: int, until_ms: int, seed: int = 11) -> None:
    """Create ``path`` with ``queues`` queues (q0000, ...) and a history of ``minutes`` minutes
    before ``until_ms`` for each, written straight into queue_history: random traffic, some
    queues growing, some draining, some idle minutes, bursts of dead-lettering and redeliveries,
    a backlog sample in most minutes."""
    clock = sqsqlite.ManualClock(until_ms - minutes * 60_000 - 60_000)
    db = sqsqlite.connect(path, clock=clock)
    db.set_history_retention(14 * 86_400)  # a file that keeps a history has it on
    for i in range(queues):
        db.create_queue(f"q{i:04d}")
    db.close()
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA synchronous=OFF")
    conn.execute("DELETE FROM queue_history")  # the queues' creation wrote none, but a clean start either way
    conn.row_factory = sqlite3.Row
    ids = [row["id"] for row in conn.execute("SELECT id FROM queues ORDER BY name")]
    rnd = random.Random(seed)
    first = until_ms - until_ms % 60_000 - (minutes - 1) * 60_000
    rows: list = []
    for qid in ids:
        rate = rnd.randint(0, 60)
        drift = rnd.choice((-1, 0, 1))
        backlog = rnd.randint(0, 5000)
        for k in range(minutes):
            if rnd.random() < 0.05:
                continue  # a minute with no operation: no row
            sent = max(0, rate + rnd.randint(-5, 5))
            deleted = max(0, sent - drift * rnd.randint(0, 3))
            burst = rnd.random() < 0.002
            dead = rnd.randint(20, 80) if burst else rnd.randint(0, 1)
            redelivered = rnd.randint(30, 90) if burst else rnd.randint(0, 2)
            expired, purged, moved, moved_in = rnd.randint(0, 1), 0, 0, 0
            backlog = max(0, backlog + sent - deleted - dead - expired)
            sampled = rnd.random() < 0.9
            rows.append(
                {
                    "minute": first + k * 60_000,
                    "queue_id": qid,
                    "sent": sent,
                    "received": deleted + rnd.randint(0, 2),
                    "redelivered": redelivered,
                    "deleted": deleted,
                    "dead_lettered": dead,
                    "moved_in": moved_in,
                    "expired": expired,
                    "purged": purged,
                    "moved": moved,
                    "visible": backlog if sampled else None,
                    "in_flight": rnd.randint(0, 50) if sampled else None,
                    "delayed": 0 if sampled else None,
                    "oldest_age": rnd.randint(0, 3600) if sampled else None,
                }
            )
            if len(rows) >= BATCH:
                _flush(conn, rows, _HISTORY_INSERT)
    _flush(conn, rows, _HISTORY_INSERT)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()


# One queue's archived rows, made by SQLite itself (a counter in a recursive query): deleted
# evenly over the window, each sent up to ten minutes before its delete, received once (one in
# eight twice, one in fifty times three or more), one in a hundred removed by a purge.
_ARCHIVE_INSERT = """
WITH RECURSIVE k(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM k WHERE n + 1 < :rows)
INSERT INTO message_archive (queue_id, queue_name, position, message_id, body, attributes, sender_id, group_id,
    dedup_id, sequence_number, dead_letter_source_arn, receive_count, sent_at, first_received_at, deleted_at, expires_at, how)
SELECT :queue_id, :queue_name, n, printf('%08x-0000-4000-8000-%012x', :queue_id, n), :body, NULL, 'AIDASYNTHETIC', NULL,
    NULL, NULL, NULL, receives, deleted - took, deleted - took + 1000, deleted, deleted + :retention,
    CASE WHEN n % 100 = 99 THEN 'purge' WHEN n % 3 = 0 THEN 'delete' ELSE 'batch' END
FROM (SELECT n, :first + n * :span / :rows AS deleted, abs(random()) % 600000 + 1000 AS took,
    CASE WHEN abs(random()) % 50 = 0 THEN 3 + abs(random()) % 5 WHEN abs(random()) % 8 = 0 THEN 2 ELSE 1 END AS receives
    FROM k)
"""


def build_archive(path: str, queues: int, hours: int, per_hour: int, until_ms: int) -> int:
    """Create ``path`` with ``queues`` queues (q0000, ...), each keeping an archive, and
    ``per_hour`` archived messages an hour for each over the ``hours`` before ``until_ms``,
    written straight into message_archive; returns the rows written."""
    first = until_ms - hours * 3_600_000
    clock = sqsqlite.ManualClock(first - 60_000)
    db = sqsqlite.connect(path, clock=clock)
    for i in range(queues):
        db.set_archive(db.create_queue(f"q{i:04d}").url, 366 * 86_400)
    db.close()
    conn = sqlite3.connect(path, isolation_level=None)
    conn.row_factory = sqlite3.Row
    conn.execute("PRAGMA synchronous=OFF")
    ids = [(row["id"], row["name"]) for row in conn.execute("SELECT id, name FROM queues ORDER BY name")]
    rows = hours * per_hour
    for queue_id, name in ids:
        conn.execute("BEGIN")
        conn.execute(
            _ARCHIVE_INSERT,
            {"rows": rows, "queue_id": queue_id, "queue_name": name, "body": "x" * 64, "first": first, "span": hours * 3_600_000}
            | {"retention": 366 * 86_400_000},
        )
        conn.execute("COMMIT")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    return rows * len(ids)
