"""Workloads beyond one system's send and receive: backlog scaling, many processes, long-poll
wake-up, churn (redelivery and dead-lettering) and FIFO groups. sqsqlite only."""

from __future__ import annotations

import multiprocessing as mp
import os
import random
import shutil
import sqlite3
import time
import uuid

from sqsqlite.defaults import QUEUE_ID_SHIFT

from .harness import Run
from .systems import Engine, body_of, remove_files

# ---------------------------------------------------------------------- backlog


def _backlog_insert_sql() -> str:
    """An INSERT naming the engine's own message columns (from its SQLAlchemy metadata), so the
    raw rows land in exactly the layout the engine reads: ids too, in the queue's own range, as a
    send gives them."""
    from sqsqlite.schema import messages

    cols = [c.name for c in messages.columns]
    return f"INSERT INTO messages ({', '.join(cols)}) VALUES ({', '.join(':' + c for c in cols)})", cols


def build_backlog(path: str, stored: int, in_flight: int, body_size: int = 200) -> None:
    """A sqsqlite file whose queue 'bench' holds ``stored`` messages, ``in_flight`` of them
    received (lease 12 hours), the rest visible, with values as the engine writes them:
    uuid4 message ids, the default sender, receipt tokens of 16 bytes, and the
    queue's in-flight bound raised by the receives, as receiving them would have.

    The in-flight bound only has to be at least the true number in flight (receives reserve it
    in blocks; only an exact recount lowers it and bumps ``inflight_epoch``), so the exact count
    under epoch 0 is what a recount would leave. The built file is checked through the engine's
    own counting statements before it is used."""
    e = Engine(path)
    sender = e.db.sender_id
    from sqsqlite import queries as Q

    with e.db.store.read() as tx:
        queue_id = tx.one(Q.queue_by_name, name="bench", **e.db.scope_params())["id"]
    e.db.close()
    sql, cols = _backlog_insert_sql()
    body = body_of(body_size)
    now = time.time_ns() // 1_000_000
    # Sent over the last hour, oldest first, so visible_at order is send order.
    start = now - 3_600_000
    lease_end = now + 12 * 3_600_000
    c = sqlite3.connect(path, isolation_level=None)
    c.execute("PRAGMA journal_mode=WAL")
    c.execute("PRAGMA synchronous=OFF")  # building a fixture, not measuring
    c.execute("BEGIN IMMEDIATE")
    chunk = 50_000

    def rows(lo, hi):
        for i in range(lo, hi):
            sent = start + (i * 3_000_000) // max(stored, 1)
            flying = i < in_flight  # the oldest were received first
            yield {
                "id": (queue_id << QUEUE_ID_SHIFT) + i + 1,
                "queue_id": queue_id,
                "message_id": str(uuid.uuid4()),
                "body": body,
                "attributes": None,
                "sender_id": sender,
                "sent_at": sent,
                "visible_at": lease_end if flying else sent,
                "receive_count": 1 if flying else 0,
                "first_received_at": now - 1000 if flying else None,
                "received_at": now - 1000 if flying else None,
                "receipt_token": os.urandom(16) if flying else None,
                "group_id": None,
                "dedup_id": None,
                "sequence_number": None,
                "dead_letter_source_arn": None,
                "is_head": 0,
                "moved_from": None,
            }

    for lo in range(0, stored, chunk):
        c.executemany(sql, rows(lo, min(stored, lo + chunk)))
    c.execute("UPDATE queues SET inflight_bound = ?, inflight_epoch = 0 WHERE id = ?", (in_flight, queue_id))
    c.execute("COMMIT")
    c.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    c.close()
    _check_backlog(path, stored, in_flight)


def _check_backlog(path: str, stored: int, in_flight: int) -> None:
    """The engine sees what was meant: ``stored - in_flight`` visible, ``in_flight`` in flight."""
    import sqsqlite

    db = sqsqlite.connect(path)
    try:
        got = db.queue("bench").get_queue_attributes(["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"])
    finally:
        db.close()
    want = {"ApproximateNumberOfMessages": str(stored - in_flight), "ApproximateNumberOfMessagesNotVisible": str(in_flight)}
    if got != want:
        raise RuntimeError(f"backlog file {path} reads as {got}, expected {want}")


BACKLOG_CACHE_MAX_AGE_S = 6 * 3600  # half the built leases' 12 hours


def backlog_file(cache_dir: str, work_dir: str, stored: int, in_flight: int) -> tuple[str, float]:
    """A working copy of a cached backlog file (built on first use); returns (path, build s)."""
    from sqsqlite.store import HEAD_REVISION

    os.makedirs(cache_dir, exist_ok=True)
    cached = os.path.join(cache_dir, f"backlog-{stored}-{in_flight}-rev{HEAD_REVISION}.db")
    built = 0.0
    # The file's times are its build's (sent over the hour before, leases ending 12 hours
    # after): an older copy would hold no message in flight, or none unexpired at all.
    if not os.path.exists(cached) or time.time() - os.path.getmtime(cached) > BACKLOG_CACHE_MAX_AGE_S:
        t = time.perf_counter()
        tmp = cached + ".building"
        remove_files(tmp)
        build_backlog(tmp, stored, in_flight)
        remove_files(cached)  # its -wal and -shm too: SQLite would read them beside the new file
        os.replace(tmp, cached)
        built = time.perf_counter() - t
    path = os.path.join(work_dir, f"backlog-{stored}.db")
    remove_files(path)
    shutil.copyfile(cached, path)
    # Flush the copy now: otherwise the kernel writes hundreds of MB back while the run is
    # timed, and the run measures the disk's writeback instead of the engine.
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
    return path, built


class BacklogEngine(Engine):
    """An Engine over an existing file (no template copy, no queue creation)."""

    def __init__(self, path: str):
        import sqsqlite

        self.path = path
        self.db = sqsqlite.connect(path)
        self.q = self.db.queue("bench")


# ---------------------------------------------------------------------- processes


def _producer(path, start_evt, seconds, out):
    import sqsqlite
    from sqsqlite.errors import SQSError

    db = sqsqlite.connect(path)
    q = db.queue("bench")
    entries = [{"Id": str(i), "MessageBody": body_of(200)} for i in range(10)]
    sent = errors = 0
    start_evt.wait()
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            q.send_message_batch(entries)
            sent += 10
        except SQSError as exc:  # DatabaseError included: a lock error would land here
            errors += 1 if ("locked" in str(exc) or "busy" in str(exc)) else 0
            if errors > 1000:
                break
    db.close()
    out.put(("producer", sent, 0, errors))


def _consumer(path, start_evt, seconds, out):
    import sqsqlite
    from sqsqlite.errors import SQSError

    db = sqsqlite.connect(path)
    q = db.queue("bench")
    received = deleted = errors = 0
    start_evt.wait()
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            msgs = q.receive_message(max_number_of_messages=10, wait_time_seconds=1)
            received += len(msgs)
            if msgs:
                r = q.delete_message_batch([{"Id": str(i), "ReceiptHandle": m} for i, m in enumerate(msgs)])
                deleted += len(r.successful)
        except SQSError as exc:
            errors += 1 if ("locked" in str(exc) or "busy" in str(exc)) else 0
            if errors > 1000:
                break
    db.close()
    out.put(("consumer", received, deleted, errors))


def processes(work_dir: str, pairs: int, seconds: float) -> Run:
    """``pairs`` producer processes and as many consumers on one file for ``seconds``."""
    path = os.path.join(work_dir, f"procs-{pairs}.db")
    e = Engine(path, visibility_timeout=60)
    e.db.close()
    ctx = mp.get_context("fork")
    start_evt, out = ctx.Event(), ctx.Queue()
    procs = [ctx.Process(target=_producer, args=(path, start_evt, seconds, out)) for _ in range(pairs)]
    procs += [ctx.Process(target=_consumer, args=(path, start_evt, seconds, out)) for _ in range(pairs)]
    for p in procs:
        p.start()
    time.sleep(0.3)  # let every process open the file before the clock starts
    t = time.perf_counter()
    start_evt.set()
    results = [out.get(timeout=seconds + 120) for _ in procs]
    elapsed = time.perf_counter() - t
    for p in procs:
        p.join(timeout=30)
    sent = sum(r[1] for r in results if r[0] == "producer")
    deleted = sum(r[2] for r in results if r[0] == "consumer")
    lock_errors = sum(r[3] for r in results)
    remove_files(path)
    return Run(deleted, elapsed, [], {"lock_errors": lock_errors, "sent_per_s": round(sent / elapsed), "processes": 2 * pairs})


# ---------------------------------------------------------------------- long-poll wake-up


def _long_poller(path, conn, samples, idle_seconds):
    import sqsqlite

    db = sqsqlite.connect(path)
    q = db.queue("bench")
    # Idle: one long poll on an empty queue; the CPU this process burns while it waits.
    t0, w0 = os.times(), time.monotonic()
    q.receive_message(wait_time_seconds=idle_seconds)
    t1, w1 = os.times(), time.monotonic()
    cpu = (t1.user - t0.user) + (t1.system - t0.system)
    conn.send(("idle", cpu, w1 - w0))
    got = 0
    while got < samples:
        for m in q.receive_message(wait_time_seconds=20):
            delay = time.monotonic_ns() - int(m.body)
            m.delete()
            got += 1
            conn.send(("delay", delay / 1e9))
    db.close()


def long_poll(work_dir: str, samples: int, idle_seconds: int) -> Run:
    """A consumer process long-polls; this process sends. The delay is from just before the
    send call (so it includes the send's commit) to the receive returning in the consumer.
    CLOCK_MONOTONIC is one clock for every process on the machine."""
    path = os.path.join(work_dir, "longpoll.db")
    e = Engine(path, visibility_timeout=60)
    ctx = mp.get_context("fork")
    parent, child = ctx.Pipe()
    e.db.close()
    import sqsqlite

    db = sqsqlite.connect(path)
    q = db.queue("bench")
    p = ctx.Process(target=_long_poller, args=(path, child, samples, idle_seconds))
    p.start()
    kind, cpu, wall = parent.recv()
    delays = []
    t = time.perf_counter()
    for _ in range(samples):
        time.sleep(random.uniform(0.01, 0.03))  # let the consumer settle into its wait
        q.send_message(str(time.monotonic_ns()))
        kind, delay = parent.recv()
        delays.append(delay)
    elapsed = time.perf_counter() - t
    p.join(timeout=30)
    db.close()
    remove_files(path)
    return Run(samples, elapsed, delays, {"idle_cpu_percent": round(100 * cpu / wall, 3), "idle_wait_s": round(wall, 2)})


# ---------------------------------------------------------------------- churn


def churn(work_dir: str, messages: int, max_receive_count: int = 3) -> Run:
    """Receive without deleting, let the visibility timeout lapse, receive again; after
    maxReceiveCount receives the next receive moves each message to the dead-letter queue.
    Time is a ManualClock (advanced 31 s per round), so the run measures the engine, not
    sleeping; everything else is real."""
    import json

    import sqsqlite

    path = os.path.join(work_dir, "churn.db")
    remove_files(path)
    shutil.copyfile(Engine._template(work_dir), path)
    clock = sqsqlite.ManualClock(time.time_ns() // 1_000_000)
    db = sqsqlite.connect(path, clock=clock)
    dlq = db.create_queue("bench-dlq")
    q = db.create_queue(
        "bench",
        visibility_timeout=30,
        attributes={"RedrivePolicy": json.dumps({"deadLetterTargetArn": dlq.arn, "maxReceiveCount": max_receive_count})},
    )
    entries = [{"Id": str(i), "MessageBody": body_of(200)} for i in range(10)]
    for _ in range(messages // 10):
        q.send_message_batch(entries)
    lat = []
    received = 0
    perf = time.perf_counter
    start = perf()
    for _ in range(max_receive_count + 1):
        while True:
            t = perf()
            got = q.receive_message(max_number_of_messages=10)
            lat.append(perf() - t)
            received += len(got)
            # A receive that only moved poison messages to the DLQ returns nothing while more
            # remain: the round ends when the queue has nothing visible, not at the first [].
            if not got and q.get_queue_attributes(["ApproximateNumberOfMessages"])["ApproximateNumberOfMessages"] == "0":
                break
        clock.advance(31)
    elapsed = perf() - start
    moved = int(dlq.get_queue_attributes(["ApproximateNumberOfMessages"])["ApproximateNumberOfMessages"])
    db.close()
    remove_files(path)
    return Run(received + moved, elapsed, lat, {"redelivered": received - messages // 10 * 10, "dead_lettered": moved})


# ---------------------------------------------------------------------- FIFO


# Two message attributes, as an application often sends them: a kind and a number.
ATTRIBUTES = {"kind": {"DataType": "String", "StringValue": "order.created"}, "tenant": {"DataType": "Number", "StringValue": "4207"}}


def fifo(work_dir: str, messages: int, groups: int | None, attributes: dict | None = None) -> tuple[Run, Run]:
    """Send in batches of 10, then receive + delete in batches of 10. ``groups=None`` is the
    standard queue, for comparison; ``attributes``: each message carries them, and each
    receive asks for all of them."""
    path = os.path.join(work_dir, "fifo.db")
    if groups is None:
        e = Engine(path)
    else:
        e = _fifo_engine(path)
    q = e.q
    perf = time.perf_counter
    lat = []
    seq = 0
    start = perf()
    for _ in range(messages // 10):
        entries = []
        for i in range(10):
            entry = {"Id": str(i), "MessageBody": body_of(200)}
            if attributes:
                entry["MessageAttributes"] = attributes
            if groups is not None:
                entry["MessageGroupId"] = f"g{seq % groups}"
                entry["MessageDeduplicationId"] = f"d{seq}"
            seq += 1
            entries.append(entry)
        t = perf()
        q.send_message_batch(entries)
        lat.append(perf() - t)
    send = Run(messages // 10 * 10, perf() - start, lat)
    recv = e.receive_delete(messages // 10 * 10, 10, ["All"] if attributes else None)
    e.close()
    return send, recv


def _fifo_engine(path: str) -> Engine:
    e = Engine.__new__(Engine)
    import sqsqlite

    remove_files(path)
    shutil.copyfile(Engine._template(os.path.dirname(path)), path)
    e.path = path
    e.db = sqsqlite.connect(path)
    e.q = e.db.create_queue("bench.fifo", attributes={"FifoQueue": "true", "VisibilityTimeout": "300"})
    return e
