"""What a standard claim's CPU a row is made of: the figures behind docs/performance.md's "the
claim's is mostly SQLite moving each claimed row's entry in the visibility index".

    python -m benchmarks.claim_parts            # 5 rounds, best of each

A queue of 60,000 messages (200 B bodies) is sent through sqsqlite once; each part then runs on
a fresh copy of that file through sqlite3 alone, with sqsqlite's pragmas: 500 transactions
(BEGIN IMMEDIATE ... COMMIT), each taking the 100 oldest visible rows as a claim does and doing
one part's work on them. CPU µs a row, commit included. The parts share the claim's selection
(the oldest visible rows of the queue, by ``ix_messages_visible``) and differ in what they do
to the rows, so their differences are the costs of those steps.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sqlite3
import tempfile
import time

import sqsqlite

from .systems import body_of

ROWS, CLAIMS, STORED = 100, 500, 60_000
SELECT = "SELECT id FROM messages WHERE queue_id = ?4 AND visible_at <= ?2 AND sent_at > ?5 ORDER BY visible_at LIMIT ?6"
CLAIM = (
    "UPDATE messages SET visible_at = ?1, receive_count = receive_count + 1, first_received_at = "
    f"coalesce(first_received_at, ?2), received_at = ?2, receipt_token = ?3 WHERE id IN ({SELECT}) "
)
# name: (what it shows, the statement). Each binds the same values (hence ?3 where it is not
# needed) and returns the ids of the rows it took, which are counted.
PARTS = {
    "read": (
        "the claim's selection, rows read and nothing changed",
        f"SELECT id FROM messages WHERE id IN ({SELECT}) AND ?1 AND ?3 IS NOT NULL",
    ),
    "unindexed": (
        "a column no index holds set",
        f"UPDATE messages SET received_at = ?1 WHERE id IN ({SELECT}) AND ?3 IS NOT NULL RETURNING id",
    ),
    "visible_at": (
        "visible_at set: the row's entry moves in ix_messages_visible",
        f"UPDATE messages SET visible_at = ?1 WHERE id IN ({SELECT}) AND ?3 IS NOT NULL RETURNING id",
    ),
    "claim": ("the claim's whole UPDATE, returning ids", CLAIM + "RETURNING id"),
    "claim+rows": (
        "the claim returning the messages' columns, as the engine's",
        CLAIM + "RETURNING id, message_id, body, attributes, sender_id, sent_at, receive_count, first_received_at, "
        "dead_letter_source_arn, coalesce(dedup_id, sequence_number, char(1) || group_id)",
    ),
}


def _one(template: str, work: str, sql: str, claims: int) -> float:
    path = os.path.join(work, "part.db")
    shutil.copy(template, path)
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute("PRAGMA temp_store=MEMORY")
        queue_id = conn.execute("SELECT id FROM queues").fetchone()[0]
        now = time.time_ns() // 1_000_000
        rows = 0
        start = time.process_time()
        for k in range(claims):
            conn.execute("BEGIN IMMEDIATE")
            rows += len(conn.execute(sql, (now + 300_000, now + k, bytearray(os.urandom(16)), queue_id, 0, ROWS)).fetchall())
            conn.execute("COMMIT")
        spent = time.process_time() - start
    finally:
        conn.close()
        for suffix in ("", "-wal", "-shm"):
            if os.path.exists(path + suffix):
                os.remove(path + suffix)
    if rows == 0:
        raise RuntimeError("no rows were claimed")
    return spent / rows * 1e6


def measure(rounds: int = 5, stored: int = STORED, claims: int = CLAIMS) -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="sqsqlite-claim-") as work:
        template = os.path.join(work, "queue.db")
        db = sqsqlite.connect(template)
        queue = db.create_queue("parts")
        body = body_of(200)
        for _ in range(stored // 10):
            queue.send_message_batch([{"Id": str(i), "MessageBody": body} for i in range(10)])
        db.close()
        with sqlite3.connect(template) as conn:  # all of it in the file itself, which is copied
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        best = {name: float("inf") for name in PARTS}
        for _ in range(rounds):
            for name, (_, sql) in PARTS.items():
                best[name] = min(best[name], _one(template, work, sql, claims))
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    print(f"load average {os.getloadavg()}")
    print(f"CPU us a row, claims of {ROWS} on a copy of a queue of {STORED:,}, commit included (best of {args.rounds})")
    for name, spent in measure(args.rounds).items():
        print(f"{name:11s} {spent:6.2f}  {PARTS[name][0]}")


if __name__ == "__main__":
    main()
