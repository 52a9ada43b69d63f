"""A layout measured, not adopted: the messages table with its never-received, undelayed messages
left out of ``ix_messages_visible`` and a queue's messages in a range of ids of its own. The
figures behind docs/performance.md's "A layout with fewer pages a send".

    python -m benchmarks.fresh_layout            # 5 rounds, best of each

A message that was never received, has no delay and no group is visible in send order, so it
needs no entry in the visibility index: a claim can take such messages by id, from the queue's
range (ids ``queue_id << 36`` on), and the rest from the index, oldest first across both. The
index's predicate names what it holds, and every query that walks it repeats it (SQLite uses a
partial index only where the query implies its predicate). The claim keeps, per connection, the
lowest id that may still be a never-received message of the queue (every row below it has been
received, or was sent with a delay), so it steps over the messages in flight once, not at each
claim.

Both layouts run through sqlite3 alone (synchronous=NORMAL, temp_store=MEMORY) on a copy of one
file whose queue holds ``STORED`` messages (200 B bodies), each statement in its own
transaction (BEGIN IMMEDIATE ... COMMIT); CPU µs, best of the rounds:

- ``send``: a single send, the engine's statement (``as migrated``) or the same insert taking
  its id from the queue's range (``fresh``);
- ``receive + delete``: a claim of one message, oldest first among the next 1 + 16 visible
  (``as migrated``: from the index; ``fresh``: from the index and the queue's range), then its
  delete in a transaction of its own; neither runs the fair queues' windows, so the two differ
  only by the layout (``engine claim`` is the engine's own claim on the layout as migrated);
- ``claim beside 20,000 in flight``: the same claim, after 20,000 messages were claimed and
  kept in flight (a connection that steps over them once is ``first claim``);
- ``count``: the queue's visible messages counted exactly.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import sqlite3
import tempfile
import time
import uuid

from sqsqlite import queries as Q

from .harness import commit, keep_best, one_queue_file
from .systems import body_of, remove_files

STORED, SENDS, CYCLES, IN_FLIGHT = 30_000, 3_000, 2_000, 20_000
SHIFT = 36  # a queue's ids: queue_id << SHIFT up to the next queue's
_SENDER = "000000000000"
_LOOKAHEAD = 16
# The rows the partial index holds; a query that walks it states this term.
INDEXED = "(receive_count > 0 OR visible_at <> sent_at OR group_id IS NOT NULL OR (id >> 36) <> queue_id)"
_FRESH = "receive_count = 0 AND visible_at = sent_at AND group_id IS NULL"

_SEND_RANGE = (
    "INSERT INTO messages (id, queue_id, message_id, body, sender_id, sent_at, visible_at) VALUES ("
    "max(coalesce((SELECT max(id) FROM messages WHERE id >= ?1 << 36 AND id < (?1 + 1) << 36), ?1 << 36), "
    "(SELECT highest_removed FROM queue_marks WHERE queue_id = ?1)) + 1, ?1, ?5, ?6, ?2, ?3, ?4)"
)
_CLAIMED = "visible_at = ?1, receive_count = receive_count + 1, first_received_at = coalesce(first_received_at, ?2), received_at = ?2, receipt_token = ?3"
_RETURNED = "id, message_id, body, attributes, sender_id, sent_at, receive_count, first_received_at"
# ?1 lease end, ?2 now, ?3 token, ?4 queue, ?5 retention cutoff, ?6 n; ?7 the fresh cursor.
_INDEX_STREAM = (
    "SELECT id, sent_at FROM messages WHERE queue_id = ?4 AND visible_at <= ?2 AND sent_at > ?5{extra} "
    f"ORDER BY visible_at LIMIT ?6 + {_LOOKAHEAD}"
)
CLAIM_PLAIN = (
    f"UPDATE messages SET {_CLAIMED} WHERE id IN (SELECT id FROM ({_INDEX_STREAM.format(extra='')}) "
    f"ORDER BY sent_at, id LIMIT ?6) AND ?7 IS NOT NULL RETURNING {_RETURNED}"
)
CLAIM_FRESH = (
    f"UPDATE messages SET {_CLAIMED} WHERE id IN (SELECT id FROM ("
    f"SELECT * FROM ({_INDEX_STREAM.format(extra=' AND ' + INDEXED)}) UNION ALL "
    f"SELECT * FROM (SELECT id, sent_at FROM messages WHERE id >= ?7 AND id < (?4 + 1) << 36 AND {_FRESH} "
    "AND visible_at <= ?2 AND sent_at > ?5 ORDER BY id LIMIT ?6)"
    f") ORDER BY sent_at, id LIMIT ?6) RETURNING {_RETURNED}"
)
# Where the connection's cursor goes next: the first never-received message at or after it.
NEXT_FRESH = f"SELECT coalesce(min(id), ?1) FROM messages WHERE id >= ?1 AND id < (?2 + 1) << 36 AND {_FRESH}"
COUNT_PLAIN = "SELECT count(*) FROM messages WHERE queue_id = ?1 AND visible_at <= ?2 AND sent_at > ?3"
COUNT_FRESH = (
    f"SELECT (SELECT count(*) FROM messages WHERE queue_id = ?1 AND visible_at <= ?2 AND sent_at > ?3 AND {INDEXED}) "
    f"+ (SELECT count(*) FROM messages WHERE id >= ?1 << 36 AND id < (?1 + 1) << 36 AND {_FRESH} AND sent_at > ?3)"
)
LAYOUTS = ("as migrated", "fresh")


def _convert(conn: sqlite3.Connection) -> None:
    """The layout as migrated, made the fresh one."""
    (sql,) = conn.execute("SELECT sql FROM sqlite_master WHERE name = 'ix_messages_visible'").fetchone()
    conn.execute("DROP INDEX ix_messages_visible")
    conn.execute(f"{sql} WHERE {INDEXED}")
    conn.execute("CREATE TABLE queue_marks (queue_id INTEGER PRIMARY KEY, highest_removed INTEGER NOT NULL)")
    conn.execute("INSERT INTO queue_marks VALUES (1, 1 << 36)")


def check_plans(conn: sqlite3.Connection) -> None:
    """The fresh layout's statements walk the partial index and the queue's range, never the
    whole table (SQLite would scan it where a query did not imply the index's predicate)."""
    for sql, values in ((CLAIM_FRESH, (1, 1, b"", 1, 0, 1, 1)), (COUNT_FRESH, (1, 1, 0)), (NEXT_FRESH, (1, 1))):
        plan = [row[3] for row in conn.execute(f"EXPLAIN QUERY PLAN {sql}", values)]
        if any(step.startswith("SCAN messages") for step in plan):
            raise RuntimeError(f"a statement scans the table: {plan}")


def _open(template: str, work: str, layout: str) -> sqlite3.Connection:
    path = os.path.join(work, "part.db")
    remove_files(path)
    shutil.copy(template, path)
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute("PRAGMA temp_store=MEMORY")
    if layout == "fresh":
        _convert(conn)
        check_plans(conn)
    send = Q.INSERT_SHARED_ROWS[1] if layout == "as migrated" else _SEND_RANGE
    now = time.time_ns() // 1_000_000
    body = body_of(200)
    conn.execute("BEGIN IMMEDIATE")
    conn.executemany(send, [(1, _SENDER, now, now, str(uuid.uuid4()), body) for _ in range(STORED)])
    conn.execute("COMMIT")
    return conn


class _Claimer:
    """One connection's claims on one layout (the fresh one keeps its cursor)."""

    def __init__(self, conn: sqlite3.Connection, layout: str, engine: bool = False):
        self.conn, self.layout, self.engine = conn, layout, engine
        self.cursor = 1 << SHIFT

    def claim(self, n: int, now: int, lease: int) -> list:
        execute = self.conn.execute
        if self.engine:
            return execute(Q.claim_standard, (now + lease, now, os.urandom(16), 1, 0, n)).fetchall()
        if self.layout == "as migrated":
            return execute(CLAIM_PLAIN, (now + lease, now, os.urandom(16), 1, 0, n, 0)).fetchall()
        (self.cursor,) = execute(NEXT_FRESH, (self.cursor, 1)).fetchone()
        return execute(CLAIM_FRESH, (now + lease, now, os.urandom(16), 1, 0, n, self.cursor)).fetchall()


def _sends(conn: sqlite3.Connection, layout: str) -> float:
    send = Q.INSERT_SHARED_ROWS[1] if layout == "as migrated" else _SEND_RANGE
    body, now = body_of(200), time.time_ns() // 1_000_000
    start = time.process_time()
    for _ in range(SENDS):
        conn.execute("BEGIN IMMEDIATE")
        conn.execute(send, (1, _SENDER, now, now, str(uuid.uuid4()), body))
        conn.execute("COMMIT")
    return (time.process_time() - start) / SENDS * 1e6


def _cycles(claimer: _Claimer, now: int) -> float:
    """Receive one, then delete it, each in its own transaction; CPU µs a cycle."""
    execute = claimer.conn.execute
    start = time.process_time()
    for k in range(CYCLES):
        execute("BEGIN IMMEDIATE")
        [row] = claimer.claim(1, now + k, 300_000)
        execute("COMMIT")
        execute("BEGIN IMMEDIATE")
        execute("DELETE FROM messages WHERE id = ?", (row[0],))
        execute("COMMIT")
    return (time.process_time() - start) / CYCLES * 1e6


def _claims(claimer: _Claimer, now: int, n: int) -> float:
    """n single claims kept in flight; CPU µs a claim."""
    start = time.process_time()
    for k in range(n):
        claimer.conn.execute("BEGIN IMMEDIATE")
        if len(claimer.claim(1, now + k, 3_600_000)) != 1:
            raise RuntimeError("a claim took nothing")
        claimer.conn.execute("COMMIT")
    return (time.process_time() - start) / n * 1e6


def _count(conn: sqlite3.Connection, layout: str, now: int) -> float:
    sql = COUNT_PLAIN if layout == "as migrated" else COUNT_FRESH
    start = time.process_time()
    for _ in range(5):
        (visible,) = conn.execute(sql, (1, now, 0)).fetchone()
    if visible != STORED:
        raise RuntimeError(f"counted {visible}, not {STORED}")
    return (time.process_time() - start) / 5 * 1e6


def _round(template: str, work: str) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    for layout in LAYOUTS:
        parts = out.setdefault(layout, {})
        with contextlib.closing(_open(template, work, layout)) as conn:
            now = time.time_ns() // 1_000_000 + 1_000
            parts["count"] = _count(conn, layout, now)
            parts["send"] = _sends(conn, layout)
            now += 10_000  # every message sent is visible
            parts["receive + delete"] = _cycles(_Claimer(conn, layout), now)
            # Claim and keep IN_FLIGHT, then time claims beside them on another connection: its
            # first (which steps over them) and the next 500.
            _claims(_Claimer(conn, layout), now + 10_000, IN_FLIGHT)
            other = _Claimer(conn, layout)
            parts["first claim beside 20,000 in flight"] = _claims(other, now + 20_000, 1)
            parts["claim beside 20,000 in flight"] = _claims(other, now + 30_000, 500)
        if layout == "as migrated":
            with contextlib.closing(_open(template, work, layout)) as conn:
                parts["engine claim: receive + delete"] = _cycles(_Claimer(conn, layout, engine=True), time.time_ns() // 1_000_000 + 10_000)
    remove_files(os.path.join(work, "part.db"))
    return out


def measure(rounds: int = 5) -> dict[str, dict[str, float]]:
    with tempfile.TemporaryDirectory(prefix="sqsqlite-fresh-") as work:
        template = one_queue_file(work)  # queue id 1
        best: dict[str, dict[str, float]] = {}
        for _ in range(rounds):
            for layout, parts in _round(template, work).items():
                keep_best(best, layout, parts)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description="The messages table without its never-received messages in the visibility index.")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    print(f"commit {commit()}, load average {os.getloadavg()}")
    print(f"CPU us, a queue of {STORED:,} (best of {args.rounds})")
    res = measure(args.rounds)
    for part in res["as migrated"]:
        print(f"{part:38s} {res['as migrated'][part]:10.2f} {res['fresh'].get(part, float('nan')):10.2f}")
    print(f"load average {os.getloadavg()}")


if __name__ == "__main__":
    main()
