"""A single send's CPU, the library's share apart: ``Queue.send_message`` of a 200 B body, next
to the same work written out with ``sqlite3`` alone on the same file, in one process, the two in
turn, best of the rounds, CPU µs a send (``time.process_time``, so the checkpoint thread's work
counts).

    python -m benchmarks.single_send               # 5 rounds of 20,000 sends each way
    python -m benchmarks.single_send --rounds 3 --sends 5000

*written out* is what a send must do, with nothing between: the writers' lock file taken
(``flock``), ``BEGIN IMMEDIATE``, ``PRAGMA data_version`` (the check behind the queue row kept
with the connection), the engine's own single-send INSERT (its uuid4 texts made before the loop), ``COMMIT``, the lock
let go; on a connection of its own with the engine's settings. The difference, *the
library*, is the Python of a send: the checks at the edge, the write transaction's bookkeeping,
the queue row, the message id, the result. To compare two commits, run it from each checkout in
turn, several times, and take the best of each (the machine's load moves both columns alike).
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import os
import sqlite3
import tempfile
import time
import uuid

import sqsqlite
from sqsqlite import defaults as D
from sqsqlite import queries as Q

from .systems import body_of

_SENDER = D.DEFAULT_ACCOUNT_ID  # the sender id a send of the default account stores


def _written_out(path: str, queue_id: int, body: str, n: int) -> float:
    """CPU µs a send of n sends made with sqlite3 alone, as the engine makes one."""
    lock = os.open(path + "-lock", os.O_RDWR)
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    try:
        for pragma in ("synchronous=NORMAL", "foreign_keys=OFF", "temp_store=MEMORY", "journal_size_limit=67108864"):
            conn.execute(f"PRAGMA {pragma}")
        cursor = conn.cursor()
        insert = Q.INSERT_PLAIN_ROWS[1]
        ids = [str(uuid.uuid4()) for _ in range(n)]
        start = time.process_time()
        for message_id in ids:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            cursor.execute("BEGIN IMMEDIATE")
            cursor.execute("PRAGMA data_version").fetchone()
            now = time.time_ns() // 1_000_000
            cursor.execute(
                insert,
                {
                    "queue_id": queue_id,
                    "message_id_0": message_id,
                    "body_0": body,
                    "sender_id": _SENDER,
                    "sent_at": now,
                    "visible_at_0": now,
                },
            )
            cursor.execute("COMMIT")
            fcntl.flock(lock, fcntl.LOCK_UN)
        return (time.process_time() - start) / n * 1e6
    finally:
        conn.close()
        os.close(lock)


def _sends(queue: sqsqlite.Queue, body: str, n: int) -> float:
    start = time.process_time()
    for _ in range(n):
        queue.send_message(body)
    return (time.process_time() - start) / n * 1e6


def run(rounds: int, sends: int) -> tuple[float, float]:
    """Best of ``rounds`` of each: (Queue.send_message, written out), CPU µs a send."""
    body = body_of(200)
    engine: list[float] = []
    written: list[float] = []
    with tempfile.TemporaryDirectory() as directory:
        path = os.path.join(directory, "single.db")
        db = sqsqlite.connect(path)
        with contextlib.closing(db):
            queue = db.create_queue("single")
            for _ in range(500):  # a warm connection, statement cache and queue row
                queue.send_message(body)
            with contextlib.closing(sqlite3.connect(path)) as c:
                [(queue_id,)] = c.execute("SELECT id FROM queues WHERE name = 'single'").fetchall()
            for _ in range(rounds):
                engine.append(_sends(queue, body, sends))
                written.append(_written_out(path, queue_id, body, sends))
    return min(engine), min(written)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--sends", type=int, default=20_000)
    args = ap.parse_args()
    engine, written = run(args.rounds, args.sends)
    print(f"CPU µs a single send (200 B), best of {args.rounds} rounds of {args.sends:,}")
    print(f"Queue.send_message   {engine:6.2f}")
    print(f"written out          {written:6.2f}")
    print(f"the library          {engine - written:6.2f}  ({(engine - written) / engine:.0%})")


if __name__ == "__main__":
    main()
