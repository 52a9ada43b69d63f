"""What a standard claim's CPU a row is made of, step by step: the figures behind
docs/performance.md's account of the buffered consumer's claim.

    python -m benchmarks.claim_parts            # 5 rounds, best of each

A queue of 60,000 messages (200 B bodies) is sent through sqsqlite once; each part then runs on
a fresh copy of that file through sqlite3 alone (synchronous=NORMAL, temp_store=MEMORY, and
SQLite's own checkpoints, where the engine has a checkpoint thread): 500 transactions (BEGIN
IMMEDIATE ... COMMIT) of 100 rows each. CPU µs a row, commit included.

- ``select``: the plain oldest-visible selection (the 100 oldest visible rows, without the fair
  claim's windows), read as the claim reads them: the walk of ``ix_messages_visible``, which
  states the partial index's predicate (``schema.INDEXED``) to use it, merged with the queue's
  fresh messages, read by id from ``queues.fresh_from`` (a never-received, undelayed message
  has no entry in that index). The rows read and nothing changed; the same rows every time, as
  nothing moves them. On this queue of sent messages all of them are fresh.
- ``unindexed`` and ``visible_at``: each sets, on the next 100 rows by id, a column no index
  holds (``received_at``) or ``visible_at``, which takes a fresh row out of the fresh ones and
  gives it its entry in ``ix_messages_visible``, as a claim does. Fresh rows in both, so their
  difference is what that index entry costs.
- ``claim``: the engine's own claim statement (``queries.claim_standard``), returning the
  messages' columns as the engine reads them, the fresh ones from the queue's ``fresh_from``
  on, which ``queries.advance_fresh`` moves up after each claim, as the engine's receive does
  every ``FRESH_SPAN`` messages it claims.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import sqlite3
import tempfile
import time

import sqsqlite
from sqsqlite import queries as Q
from sqsqlite.defaults import QUEUE_ID_SHIFT
from sqsqlite.schema import INDEXED

from .harness import commit
from .systems import body_of, remove_files

ROWS, CLAIMS, STORED = 100, 500, 60_000
# ?4: the queue, ?2: now, ?5: the retention cutoff, ?6: how many. Visible rows by
# ix_messages_visible (its predicate stated, or SQLite will not use it), and fresh ones by id
# from the queue's fresh_from (all visible: visible_at = sent_at), the oldest first.
_FRESH = f"""SELECT id, sent_at AS visible_at FROM messages
    WHERE id >= (SELECT max(fresh_from, id << {QUEUE_ID_SHIFT}) FROM queues WHERE id = ?4) AND id < (?4 + 1) << {QUEUE_ID_SHIFT}
    AND queue_id = ?4 AND receive_count = 0 AND visible_at = sent_at AND group_id IS NULL AND sent_at > ?5 AND visible_at <= ?2
    ORDER BY id LIMIT ?6"""
_INDEXED = f"""SELECT id, visible_at FROM messages WHERE queue_id = ?4 AND {INDEXED} AND visible_at <= ?2 AND sent_at > ?5
    ORDER BY visible_at LIMIT ?6"""
_SELECT = f"SELECT id FROM (SELECT * FROM ({_INDEXED}) UNION ALL SELECT * FROM ({_FRESH})) ORDER BY visible_at, id LIMIT ?6"
# ?7: the first id of this transaction's rows. Every part binds the same values, used or not.
_RANGE = "id >= ?7 AND id < ?7 + ?6 AND ?2 IS NOT NULL AND ?3 IS NOT NULL AND ?4 IS NOT NULL AND ?5 IS NOT NULL"
PARTS = {
    "select": (
        "the plain oldest-visible selection, the rows read",
        f"SELECT id FROM messages WHERE id IN ({_SELECT}) AND ?1 IS NOT NULL AND ?3 IS NOT NULL AND ?7 IS NOT NULL",
    ),
    "unindexed": ("a column no index holds set, fresh rows", f"UPDATE messages SET received_at = ?1 WHERE {_RANGE} RETURNING id"),
    "visible_at": ("visible_at set: each row enters the index", f"UPDATE messages SET visible_at = ?1 WHERE {_RANGE} RETURNING id"),
    "claim": ("the engine's claim statement, its columns returned", Q.claim_standard),
}


def _one(template: str, work: str, sql: str, claims: int) -> float:
    path = os.path.join(work, "part.db")
    shutil.copy(template, path)
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute("PRAGMA temp_store=MEMORY")
        queue_id, first = conn.execute("SELECT queue_id, min(id) FROM messages").fetchone()
        now = time.time_ns() // 1_000_000
        rows = 0
        start = time.process_time()
        for k in range(claims):
            conn.execute("BEGIN IMMEDIATE")
            # Lease end, now, token, queue, retention cutoff, count (the engine's claim by name).
            lease = (now + 300_000, now + k, bytearray(os.urandom(16)), queue_id, 0, ROWS)
            names = ("lease_end", "now", "token", "queue_id", "cutoff", "n")
            values = dict(zip(names, lease)) if sql is Q.claim_standard else (*lease, first + k * ROWS)
            taken = len(conn.execute(sql, values).fetchall())
            if sql is Q.claim_standard:  # 100 rows: at least FRESH_SPAN claimed (receiving.py)
                conn.execute(Q.advance_fresh, {"queue_id": queue_id})
            rows += taken
            conn.execute("COMMIT")
        spent = time.process_time() - start
    finally:
        conn.close()
        remove_files(path)
    if rows != claims * ROWS:
        raise RuntimeError(f"{rows} rows taken, not {claims * ROWS}")
    return spent / rows * 1e6


def measure(rounds: int = 5, stored: int = STORED, claims: int = CLAIMS) -> dict[str, float]:
    if claims * ROWS > stored:
        raise ValueError("each part takes fresh rows: store at least claims x 100 messages")
    with tempfile.TemporaryDirectory(prefix="sqsqlite-claim-") as work:
        template = os.path.join(work, "queue.db")
        db = sqsqlite.connect(template)
        queue = db.create_queue("parts")
        body = body_of(200)
        for _ in range(stored // 10):
            queue.send_message_batch([{"Id": str(i), "MessageBody": body} for i in range(10)])
        db.close()
        # Everything in the file itself, which is what is copied.
        with contextlib.closing(sqlite3.connect(template)) as conn:
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        best = {name: float("inf") for name in PARTS}
        for _ in range(rounds):
            for name, (_, sql) in PARTS.items():
                best[name] = min(best[name], _one(template, work, sql, claims))
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description="A standard claim's CPU a row, step by step.")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    print(f"commit {commit()}, load average {os.getloadavg()}")
    print(f"CPU us a row, {CLAIMS} transactions of {ROWS} rows on a copy of a queue of {STORED:,}, commit included (best of {args.rounds})")
    for name, spent in measure(args.rounds).items():
        print(f"{name:10s} {spent:6.2f}  {PARTS[name][0]}")


if __name__ == "__main__":
    main()
