"""Transactions: the outbox and the exactly-once consume against their floor and today's way,
what a long transaction costs other processes, and effects applied twice under random kills.

    python -m benchmarks.transactions                # 3,000 operations a figure, best of 3
    python -m benchmarks.transactions --ops 5000 --runs 5 --warm 20000

Figures, each system on a fresh file in the same run, in turn:

- outbox (insert an application row + send its message, committed together), one at a time:
  ``floor``: raw sqlite3, the same two inserts (the application's row, a plain message row) in
  one BEGIN IMMEDIATE .. COMMIT on a WAL file at synchronous=NORMAL, sqsqlite's settings;
  ``floor@layout``: the same, the message row inserted as the engine inserts it (sqsqlite's
  table and indexes): what the table layout costs, apart from what the library costs;
  ``outbox``: ``with db.transaction() as tx: tx.execute(insert); queue.send_message(body)``;
  ``two commits``: the insert committed on the application's connection, then send_message.
  Each twice: on a new file, and after ``--warm`` operations (10,000; untimed) of its own on the
  file. A new file's first operations grow its WAL file to its working size, each append
  extending the file: SQLite's own checkpoint keeps the floor's WAL at about 1,000 pages (4 MB),
  sqsqlite's checkpoint thread lets it reach D.WAL_BACKSTOP_PAGES (10,000, 40 MB) first, about
  5,000 outbox transactions. After that the WAL is written over in place, as in a running
  application, and the warm figure measures that.
- consume (receive, write a row for the message, delete), one message a receive:
  ``transactional``: consume(queue, handler, transaction=True), the row and the delete in one
  transaction; ``two commits``: today's consume, the handler committing the row on the
  application's connection before the consumer's delete.
- a long transaction's cost to another process: a process sending one message at a time, and
  receiving and deleting one, its latencies (p50, p99, max) while this one holds transactions
  of 50 and 200 ms, every 100 ms, against none.
- under faults: 600 payments applied by 3 consumer processes while 30 SIGKILLs land at random
  (fault_run, which tests/processes/test_transaction_crashes.py also runs), transactional and with two commits:
  effects applied twice, and whether the balances equal the sums sent.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import random
import signal
import sqlite3
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable

import sqsqlite

FORK = mp.get_context("fork")


def _fresh(directory: str, name: str) -> str:
    return os.path.join(directory, f"{name}-{time.monotonic_ns()}.db")


def _timed(run: Callable[[int], None], ops: int, warm: int) -> float:
    """Operations a second of ``run(ops)``, after ``run(warm)`` untimed on the same file."""
    run(warm)
    started = time.perf_counter()
    run(ops)
    return ops / (time.perf_counter() - started)


def floor(directory: str, ops: int, warm: int = 0) -> float:
    conn = sqlite3.connect(_fresh(directory, "floor"), isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute("CREATE TABLE orders (id INTEGER PRIMARY KEY, item TEXT)")
    conn.execute("CREATE TABLE messages (id INTEGER PRIMARY KEY, body TEXT, sent_at INTEGER)")

    def run(n: int) -> None:
        for i in range(n):
            conn.execute("BEGIN IMMEDIATE")
            conn.execute("INSERT INTO orders (item) VALUES (?)", (f"item{i}",))
            conn.execute("INSERT INTO messages (body, sent_at) VALUES (?, ?)", (f"order {i}", i))
            conn.execute("COMMIT")

    rate = _timed(run, ops, warm)
    conn.close()
    return rate


def floor_on_layout(directory: str, ops: int, warm: int = 0) -> float:
    """The floor's transaction with the message row as the engine writes it: sqsqlite's own
    INSERT into its messages table and indexes (a message id, the sender, visible_at)."""
    from sqsqlite import queries as Q

    db, _ = _outbox_db(directory, "layout")
    path = db.path
    db.close()
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA synchronous=NORMAL")
    queue_id = conn.execute("SELECT id FROM queues WHERE name = 'outbox'").fetchone()[0]
    insert = Q.INSERT_SHARED_ROWS[1]

    def run(n: int) -> None:
        for i in range(n):
            now = int(time.time() * 1000)
            conn.execute("BEGIN IMMEDIATE")
            conn.execute("INSERT INTO orders (item) VALUES (?)", (f"item{i}",))
            shared = {"queue_id": queue_id, "sender_id": "000000000000", "sent_at": now, "visible_at": now}
            conn.execute(insert, shared | {"message_id_0": str(uuid.uuid4()), "body_0": f"order {i}"})
            conn.execute("COMMIT")

    rate = _timed(run, ops, warm)
    conn.close()
    return rate


def _outbox_db(directory: str, name: str) -> tuple[sqsqlite.Database, sqsqlite.Queue]:
    db = sqsqlite.connect(_fresh(directory, name))
    q = db.create_queue("outbox")
    with db.transaction() as tx:
        tx.execute("CREATE TABLE orders (id INTEGER PRIMARY KEY, item TEXT)")
    return db, q


def outbox(directory: str, ops: int, warm: int = 0) -> float:
    db, q = _outbox_db(directory, "outbox")

    def run(n: int) -> None:
        for i in range(n):
            with db.transaction() as tx:
                tx.execute("INSERT INTO orders (item) VALUES (?)", (f"item{i}",))
                q.send_message(f"order {i}")

    rate = _timed(run, ops, warm)
    db.close()
    return rate


def two_commits(directory: str, ops: int, warm: int = 0) -> float:
    db, q = _outbox_db(directory, "two")
    conn = sqlite3.connect(db.path, isolation_level=None, timeout=60)
    conn.execute("PRAGMA synchronous=NORMAL")

    def run(n: int) -> None:
        for i in range(n):
            conn.execute("BEGIN IMMEDIATE")
            conn.execute("INSERT INTO orders (item) VALUES (?)", (f"item{i}",))
            conn.execute("COMMIT")
            q.send_message(f"order {i}")

    rate = _timed(run, ops, warm)
    conn.close()
    db.close()
    return rate


def consume(directory: str, ops: int, transactional: bool) -> float:
    db = sqsqlite.connect(_fresh(directory, "consume"))
    q = db.create_queue("inbox")
    with db.transaction() as tx:
        tx.execute("CREATE TABLE effects (message TEXT)")
    for start in range(0, ops, 10):
        q.send_message_batch([{"Id": str(j), "MessageBody": f"m{start + j}"} for j in range(10)])
    if transactional:

        def handle(message, tx):
            tx.execute("INSERT INTO effects (message) VALUES (?)", (message.body,))

    else:
        conn = sqlite3.connect(db.path, isolation_level=None, timeout=60)
        conn.execute("PRAGMA synchronous=NORMAL")

        def handle(message):  # type: ignore[misc]
            conn.execute("BEGIN IMMEDIATE")
            conn.execute("INSERT INTO effects (message) VALUES (?)", (message.body,))
            conn.execute("COMMIT")

    started = time.perf_counter()
    outcome = sqsqlite.consume(q, handle, transaction=transactional, max_number_of_messages=1, wait_time_seconds=0, stop_when_empty=True)
    rate = outcome.processed / (time.perf_counter() - started)
    db.close()
    return rate


def _other_process(path: str, seconds: float, out: str) -> None:
    """Another process's sends and receives (each with its delete), one at a time, timed."""
    db = sqsqlite.connect(path)
    q = db.queue("outbox")
    sends, receives = [], []
    ends = time.monotonic() + seconds
    while time.monotonic() < ends:
        t = time.perf_counter()
        q.send_message("x")
        sends.append((time.perf_counter() - t) * 1000)
        t = time.perf_counter()
        for m in q.receive_message(wait_time_seconds=0):
            m.delete()
        receives.append((time.perf_counter() - t) * 1000)
    db.close()
    with open(out, "w") as f:
        json.dump({"send": sends, "receive + delete": receives}, f)


def _figures(latencies: list[float]) -> dict:
    latencies = sorted(latencies)
    return {
        "calls": len(latencies),
        "p50_ms": round(statistics.median(latencies), 3),
        "p99_ms": round(latencies[int(len(latencies) * 0.99) - 1], 3),
        "max_ms": round(latencies[-1], 3),
    }


def long_transactions(directory: str, hold_ms: int, seconds: float = 3.0) -> dict:
    """Another process's send and receive latencies (ms) while this one holds a transaction of
    ``hold_ms`` every 100 ms (none for 0)."""
    db, _ = _outbox_db(directory, f"hold{hold_ms}")
    out = db.path + ".json"
    child = FORK.Process(target=_other_process, args=(db.path, seconds, out))
    child.start()
    ends = time.monotonic() + seconds
    while hold_ms and time.monotonic() < ends:
        with db.transaction() as tx:
            tx.execute("INSERT INTO orders (item) VALUES ('long')")
            time.sleep(hold_ms / 1000)
        time.sleep(0.1)
    child.join()
    db.close()
    with open(out) as f:
        measured = json.load(f)
    return {kind: _figures(values) for kind, values in measured.items()}


ACCOUNTS = 5


def _worker(path: str, transactional: bool) -> None:
    db = sqsqlite.connect(path)
    q = db.queue("payments")
    if transactional:

        def handle(message, tx):
            account, amount = message.body.split(":")
            tx.execute("UPDATE balances SET total = total + ? WHERE account = ?", (int(amount), int(account)))
            tx.execute("INSERT INTO applied (message) VALUES (?)", (message.message_id,))

    else:
        conn = sqlite3.connect(path, timeout=60, isolation_level=None)

        def handle(message):  # type: ignore[misc]  # today's way: the effect's commit, then the delete's
            account, amount = message.body.split(":")
            conn.execute("BEGIN IMMEDIATE")
            conn.execute("UPDATE balances SET total = total + ? WHERE account = ?", (int(amount), int(account)))
            conn.execute("INSERT INTO applied (message) VALUES (?)", (message.message_id,))
            conn.execute("COMMIT")

    sqsqlite.consume(q, handle, transaction=transactional, visibility_timeout=3, wait_time_seconds=1)


def fault_run(path: str, transactional: bool, messages: int = 600, workers: int = 3, kills: int = 30, seed: int = 7) -> dict:
    """Send ``messages`` payments, apply them with ``workers`` consumer processes while ``kills``
    SIGKILLs land at random, then drain: the balances, the sums sent, and the effects applied
    more than once. Bounded: about 20 s."""
    rng = random.Random(seed)
    db = sqsqlite.connect(path)
    q = db.create_queue("payments")
    with db.transaction() as tx:
        tx.execute("CREATE TABLE balances (account INTEGER PRIMARY KEY, total INTEGER NOT NULL)")
        tx.execute("CREATE TABLE applied (message TEXT NOT NULL)")
        tx.executemany("INSERT INTO balances VALUES (?, 0)", [(a,) for a in range(ACCOUNTS)])
    sums = [0] * ACCOUNTS
    entries = []
    for i in range(messages):
        account, amount = rng.randrange(ACCOUNTS), rng.randrange(1, 1000)
        sums[account] += amount
        entries.append({"Id": str(i % 10), "MessageBody": f"{account}:{amount}"})
        if len(entries) == 10:
            q.send_message_batch(entries)
            entries = []
    procs = [FORK.Process(target=_worker, args=(path, transactional)) for _ in range(workers)]
    for p in procs:
        p.start()
    deadline = time.monotonic() + 60
    for _ in range(kills):
        time.sleep(rng.uniform(0.02, 0.15))
        i = rng.randrange(workers)
        os.kill(procs[i].pid, signal.SIGKILL)
        procs[i].join()
        procs[i] = FORK.Process(target=_worker, args=(path, transactional))
        procs[i].start()
    while time.monotonic() < deadline:
        stats = db.stats(["payments"])[0]
        if stats.visible + stats.in_flight + stats.delayed == 0:
            break
        time.sleep(0.2)
    for p in procs:
        p.kill()
        p.join()
    with sqlite3.connect(path) as conn:
        balances = [r[0] for r in conn.execute("SELECT total FROM balances ORDER BY account")]
        applied = conn.execute("SELECT count(*), count(DISTINCT message) FROM applied").fetchone()
    left = db.stats(["payments"])[0]
    db.close()
    return {
        "balances": balances,
        "sums": sums,
        "applied": applied[0],
        "twice": applied[0] - applied[1],
        "left": left.visible + left.in_flight + left.delayed,
    }


def faults(directory: str) -> dict:
    out = {}
    for name, transactional in (("transactional", True), ("two commits", False)):
        result = fault_run(_fresh(directory, "faults"), transactional)
        out[name] = {
            "applied twice": result["twice"],
            "balances equal the sums": result["balances"] == result["sums"],
            "messages left": result["left"],
        }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--ops", type=int, default=3000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--warm", type=int, default=10_000, help="untimed operations before a warm figure")
    args = parser.parse_args()
    outboxes = (("floor", floor), ("floor@layout", floor_on_layout), ("outbox", outbox), ("two commits", two_commits))
    with tempfile.TemporaryDirectory() as directory:
        best: dict[str, float] = {}
        for _ in range(args.runs):  # in turn, so that a slow moment of the machine hits them all
            for warm, file in ((0, "new file"), (args.warm, "warm")):
                for name, fn in outboxes:
                    key = f"{name}, {file}"
                    best[key] = max(best.get(key, 0.0), fn(directory, args.ops, warm))
            for name, transactional in (("consume, transactional", True), ("consume, two commits", False)):
                best[name] = max(best.get(name, 0.0), consume(directory, args.ops, transactional))
        for name, rate in best.items():
            print(f"{name:<28} {rate:>10,.0f} a second")
        for file in ("new file", "warm"):
            outbox_rate = best[f"outbox, {file}"]
            print(
                f"{file}: outbox / floor {outbox_rate / best[f'floor, {file}']:.3f}, "
                f"/ floor@layout {outbox_rate / best[f'floor@layout, {file}']:.3f}, "
                f"/ two commits {outbox_rate / best[f'two commits, {file}']:.3f}"
            )
        print(f"consume: transactional / two commits {best['consume, transactional'] / best['consume, two commits']:.3f}")
        for hold in (0, 50, 200):
            print(f"another process, transactions of {hold} ms every 100 ms: {long_transactions(directory, hold)}")
        print(f"under faults: {faults(directory)}")


if __name__ == "__main__":
    main()
