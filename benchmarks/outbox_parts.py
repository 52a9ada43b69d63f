"""What an outbox transaction is made of, and what a new file's WAL costs it: the figures behind
docs/performance.md's "Transactions".

    python -m benchmarks.outbox_parts                 # 5 rounds, best of each
    python -m benchmarks.outbox_parts --dir /dev/shm  # CPU with no disk in it

**Parts** (CPU µs a transaction of the main thread alone, ``time.thread_time``: the checkpoint
thread works on the other core; 20,000 transactions, each system on a fresh file in ``--dir``):

- ``floor``: raw sqlite3, BEGIN IMMEDIATE, the application's INSERT, a plain message INSERT, COMMIT
  (benchmarks.transactions' floor).
- ``engine statements``: on sqsqlite's own connection, the statements an outbox runs, written out
  with no library code: BEGIN IMMEDIATE, the application's INSERT, ``PRAGMA data_version`` (which
  proves the connection's cached queue row current), the engine's INSERT of a plain message
  (``queries.INSERT_PLAIN_ROWS[1]``), COMMIT.
- ``+ lock file``: the same inside the writers' lock (``flock`` before BEGIN, after COMMIT).
- ``outbox``: ``with db.transaction() as tx: tx.execute(insert); queue.send_message(body)``.

**WAL growth** (transactions a second, wall clock): the engine statements' loop, 5,000
transactions, against the floor on a new file; on a new file and once its WAL has grown (after
15,000 untimed transactions), with sqsqlite's checkpoint backstop (``defaults.WAL_BACKSTOP_PAGES``)
at 10,000 pages and at 4,000.
"""

from __future__ import annotations

import argparse
import fcntl
import os
import sqlite3
import tempfile
import time
import uuid
from collections.abc import Callable

import sqsqlite
from sqsqlite import defaults as D
from sqsqlite import queries as Q

PARTS_OPS = 20_000
GROWTH_OPS = 5_000
GROWN_AFTER = 15_000


def _fresh(directory: str, name: str) -> str:
    return os.path.join(directory, f"{name}-{time.monotonic_ns()}.db")


def _floor_conn(directory: str) -> sqlite3.Connection:
    conn = sqlite3.connect(_fresh(directory, "floor"), isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute("CREATE TABLE orders (id INTEGER PRIMARY KEY, item TEXT)")
    conn.execute("CREATE TABLE messages (id INTEGER PRIMARY KEY, body TEXT)")
    return conn


def _floor_run(conn: sqlite3.Connection) -> Callable[[int], None]:
    cursor = conn.cursor()

    def run(n: int) -> None:
        for _ in range(n):
            cursor.execute("BEGIN IMMEDIATE")
            cursor.execute("INSERT INTO orders (item) VALUES (?)", ("item",))
            cursor.execute("INSERT INTO messages (body) VALUES (?)", ("order",))
            cursor.execute("COMMIT")

    return run


def _outbox_db(directory: str) -> tuple[sqsqlite.Database, sqsqlite.Queue]:
    db = sqsqlite.connect(_fresh(directory, "outbox"))
    queue = db.create_queue("outbox")
    with db.transaction() as tx:
        tx.execute("CREATE TABLE orders (id INTEGER PRIMARY KEY, item TEXT)")
    return db, queue


def _statements_run(db: sqsqlite.Database, locked: bool) -> Callable[[int], None]:
    cursor = db.store.connection().cursor()
    insert = Q.INSERT_PLAIN_ROWS[1]
    queue_id = cursor.execute("SELECT id FROM queues WHERE name = 'outbox'").fetchone()[0]
    lock = os.open(db.path + "-benchlock", os.O_RDWR | os.O_CREAT)
    ids = [str(uuid.uuid4()) for _ in range(1000)]
    now = int(time.time() * 1000)

    def run(n: int) -> None:
        for i in range(n):
            if locked:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            cursor.execute("BEGIN IMMEDIATE")
            cursor.execute("INSERT INTO orders (item) VALUES (?)", ("item",))
            cursor.execute("PRAGMA data_version").fetchone()
            row = {"queue_id": queue_id, "message_id_0": ids[i % 1000], "body_0": "order", "sender_id": "000000000000"}
            cursor.execute(insert, row | {"sent_at": now, "visible_at_0": now})
            cursor.execute("COMMIT")
            if locked:
                fcntl.flock(lock, fcntl.LOCK_UN)

    return run


def _outbox_run(db: sqsqlite.Database, queue: sqsqlite.Queue) -> Callable[[int], None]:
    def run(n: int) -> None:
        for _ in range(n):
            with db.transaction() as tx:
                tx.execute("INSERT INTO orders (item) VALUES (?)", ("item",))
                queue.send_message("order")

    return run


def _cpu_us(run: Callable[[int], None], ops: int) -> float:
    run(100)  # statements prepared, the connection's cache filled
    started = time.thread_time()
    run(ops)
    return (time.thread_time() - started) / ops * 1e6


def _rate(run: Callable[[int], None], ops: int, grown: int) -> float:
    run(grown)
    started = time.perf_counter()
    run(ops)
    return ops / (time.perf_counter() - started)


def parts(directory: str, ops: int = PARTS_OPS) -> dict[str, float]:
    out = {}
    conn = _floor_conn(directory)
    out["floor"] = _cpu_us(_floor_run(conn), ops)
    conn.close()
    for name, locked in (("engine statements", False), ("+ lock file", True)):
        db, _ = _outbox_db(directory)
        out[name] = _cpu_us(_statements_run(db, locked), ops)
        db.close()
    db, queue = _outbox_db(directory)
    out["outbox"] = _cpu_us(_outbox_run(db, queue), ops)
    db.close()
    return out


def growth(directory: str, ops: int = GROWTH_OPS, grown_after: int = GROWN_AFTER) -> dict[str, float]:
    out = {}
    conn = _floor_conn(directory)
    out["floor, new file"] = _rate(_floor_run(conn), ops, 0)
    conn.close()
    kept = D.WAL_BACKSTOP_PAGES
    try:
        for pages in (10_000, 4_000):
            D.WAL_BACKSTOP_PAGES = pages  # read as each connection opens
            for state, after in (("new file", 0), ("grown", grown_after)):
                db, _ = _outbox_db(directory)
                out[f"engine statements, backstop {pages:,}, {state}"] = _rate(_statements_run(db, True), ops, after)
                db.close()
    finally:
        D.WAL_BACKSTOP_PAGES = kept
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--dir", default=None, help="where the files go (default: a temporary directory)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(dir=args.dir) as directory:
        cpu: dict[str, float] = {}
        rates: dict[str, float] = {}
        for _ in range(args.rounds):  # in turn, so that a slow moment of the machine hits them all
            for name, us in parts(directory).items():
                cpu[name] = min(cpu.get(name, us), us)
            for name, rate in growth(directory).items():
                rates[name] = max(rates.get(name, rate), rate)
        print(f"CPU µs a transaction, main thread, best of {args.rounds}:")
        for name, us in cpu.items():
            print(f"  {name:<20} {us:7.2f}  ({cpu['floor'] / us:.3f} of the floor)")
        print(f"transactions a second, best of {args.rounds}:")
        for name, rate in rates.items():
            print(f"  {name:<46} {rate:9,.0f}  ({rate / rates['floor, new file']:.3f} of the floor)")


if __name__ == "__main__":
    main()
