"""The systems measured side by side: sqsqlite, the SQLite floor beneath it, and two peers.

Every system gets the same calls: send (one per call or batches of 10), and receive + delete (or
its peer equivalent: get + ack, pop + done), one at a time or in batches of 10. A run starts on
a fresh file so no run pays for another's leftovers.

The floor is what Python's sqlite3 alone needs for the same lifecycle, with no library around
it: one INSERT per message; a claim as one ``UPDATE ... RETURNING`` whose subselect walks an
index on (queue_id, visible_at) with LIMIT; a DELETE by id and receipt token. The same pragmas
as sqsqlite (WAL, the same synchronous setting, temp_store in memory), autocommit off with
``BEGIN IMMEDIATE`` ... ``COMMIT`` around every operation, as sqsqlite does; its checkpoints are
SQLite's own at 1,000 pages (sqsqlite's run on a thread, SQLite's own at 10,000 as a backstop).
"""

from __future__ import annotations

import glob
import os
import shutil
import sqlite3
import time
import uuid

from sqsqlite.defaults import QUEUE_ID_SHIFT as SHIFT
from sqsqlite.schema import INDEXED

from .harness import Run

SMALL_BODY = 200
LARGE_BODY = 64 * 1024


def body_of(size: int) -> str:
    """A printable body of exactly ``size`` bytes (ASCII, so bytes = characters)."""
    unit = "sqsqlite-benchmark-body-0123456789abcdefghijklmnopqrstuvwxyz "
    return (unit * (size // len(unit) + 1))[:size]


def remove_files(path: str) -> None:
    """A database file and those SQLite and sqsqlite keep beside it, where they exist."""
    for suffix in ("", "-wal", "-shm", "-journal", "-lock", "-sendlock"):
        try:
            os.remove(path + suffix)
        except FileNotFoundError:
            pass


def settle(path: str) -> None:
    """After a fill, before a timed receive: copy the file's WAL back into it (a FULL checkpoint
    on a connection of its own, tried again while another checkpoint runs), so that no system's
    timed run copies its fill's pages. A fill leaves them in the WAL: the floor's, one
    transaction of a few hundred pages, under SQLite's 1,000-page checkpoint; sqsqlite's, a
    commit a batch, for its checkpoint thread to copy during the timed run. ``path``: a
    system's file, or its directory (persist-queue's, whose files end in .db)."""
    files = sorted(glob.glob(os.path.join(path, "*.db"))) if os.path.isdir(path) else [path]
    if not files:
        raise RuntimeError(f"{path}: no database file to settle")
    deadline = time.monotonic() + 60
    for file in files:
        c = sqlite3.connect(file, timeout=60, isolation_level=None)
        try:
            while True:
                # SQLite answers busy at once, without its busy handler, while another
                # connection (sqsqlite's checkpoint thread) is checkpointing.
                busy, log, done = c.execute("PRAGMA wal_checkpoint(FULL)").fetchone()
                if not busy or time.monotonic() > deadline:
                    break
                time.sleep(0.005)
        finally:
            c.close()
        if busy or done < log:
            raise RuntimeError(f"{file}: the checkpoint after the fill copied {done} of {log} WAL frames")


def filled(system, n: int, body: str) -> None:
    """A system's file holding n messages of body, settled: what every timed receive starts from."""
    system.fill(n, body)
    settle(system.path)


# ---------------------------------------------------------------------- sqsqlite


class Engine:
    name = "sqsqlite"

    _templates: dict[str, str] = {}

    def __init__(self, path: str, synchronous: str = "NORMAL", visibility_timeout: int = 300, **queue_attrs):
        import sqsqlite

        remove_files(path)
        # Migrating a new file with alembic takes a fraction of a second; copy a migrated empty
        # file instead, so short runs measure messages, not schema creation.
        template = self._template(os.path.dirname(path))
        shutil.copyfile(template, path)
        self.path = path
        self.db = sqsqlite.connect(path, synchronous=synchronous)
        self.q = self.db.create_queue("bench", visibility_timeout=visibility_timeout, **queue_attrs)

    @classmethod
    def _template(cls, directory: str) -> str:
        import sqsqlite

        path = cls._templates.get(directory)
        if path is None or not os.path.exists(path):
            path = os.path.join(directory, "template-empty.db")
            remove_files(path)
            sqsqlite.connect(path).close()
            cls._templates[directory] = path
        return path

    def close(self) -> None:
        self.db.close()
        remove_files(self.path)

    def send(self, calls: int, batch: int, body: str) -> Run:
        q = self.q
        lat = []
        perf = time.perf_counter
        if batch == 1:
            start = perf()
            for _ in range(calls):
                t = perf()
                q.send_message(body)
                lat.append(perf() - t)
        else:
            entries = [{"Id": str(i), "MessageBody": body} for i in range(batch)]
            start = perf()
            for _ in range(calls):
                t = perf()
                q.send_message_batch(entries)
                lat.append(perf() - t)
        return Run(calls * batch, perf() - start, lat)

    def fill(self, n: int, body: str) -> None:
        entries = [{"Id": str(i), "MessageBody": body} for i in range(10)]
        for _ in range(n // 10):
            self.q.send_message_batch(entries)
        for _ in range(n % 10):
            self.q.send_message(body)

    # How a Queue API user deletes what a receive returned: by the received messages
    # themselves (msg.delete(); a batch entry's ReceiptHandle given the Message), which makes no
    # handle's text. EngineByHandle presents the handles' texts instead.
    by_handle = False

    def receive_delete(self, n: int, batch: int, message_attribute_names: list[str] | None = None) -> Run:
        """Receive and delete n messages; one latency per receive + delete pair (batches: asking
        for message_attribute_names)."""
        q = self.q
        if batch == 1:
            return _one_at_a_time_by_handle(q, n) if self.by_handle else _one_at_a_time(q, n)
        lat = []
        perf = time.perf_counter
        done = 0
        by_handle = self.by_handle
        start = perf()
        while done < n:
            t = perf()
            msgs = q.receive_message(max_number_of_messages=batch, message_attribute_names=message_attribute_names)
            if msgs:
                q.delete_message_batch([{"Id": str(i), "ReceiptHandle": m.receipt_handle if by_handle else m} for i, m in enumerate(msgs)])
            done += len(msgs)
            lat.append(perf() - t)
        return Run(done, perf() - start, lat)

    def received(self, n: int) -> list:
        """n messages received (in batches of 10), held for a timed run of deletes alone."""
        held: list = []
        while len(held) < n:
            got = self.q.receive_message(max_number_of_messages=min(10, n - len(held)))
            if not got:
                break
            held += got
        return held

    def delete(self, held: list, batch: int) -> Run:
        """Delete the messages ``held`` (received already), one a call or in batches of 10: the
        deletes alone, timed."""
        q = self.q
        lat = []
        perf = time.perf_counter
        start = perf()
        if batch == 1:
            for m in held:
                t = perf()
                m.delete()
                lat.append(perf() - t)
        else:
            for k in range(0, len(held), batch):
                t = perf()
                q.delete_message_batch([{"Id": str(i), "ReceiptHandle": m} for i, m in enumerate(held[k : k + batch])])
                lat.append(perf() - t)
        return Run(len(held), perf() - start, lat)


class EngineWithHistory(Engine):
    """The Queue API on a file whose per-minute history is on (docs/howto/history.md): what counting
    costs, beside Engine's row (the history off, the default)."""

    name = "sqsqlite history on"

    def __init__(self, path: str, *args, **kwargs):
        super().__init__(path, *args, **kwargs)
        self.db.set_history_retention(14 * 86_400)


class EngineWithArchive(Engine):
    """The Queue API on a queue whose archive is on (a week): each delete also copies its
    messages into the archive, in the same transaction; beside Engine's row (the archive off,
    the default)."""

    name = "sqsqlite archive on"

    def __init__(self, path: str, *args, **kwargs):
        super().__init__(path, *args, **kwargs)
        self.db.set_archive(self.q.url, 7 * 86_400)


class EngineByHandle(Engine):
    """The Queue API receiving as Engine does, and deleting by the receipt handles' texts (as
    a caller holding handles rather than messages does): each handle made and signed when
    read, and found again by its text. Not a target; it shows what the texts cost."""

    name = "sqsqlite by handle"
    by_handle = True


def _one_at_a_time(q, n: int, close: bool = False) -> Run:
    """Receive one message and delete it, n times, through q (a Queue or a BufferedQueue); one
    latency per pair. ``close``: q.close() runs inside the timed run."""
    lat = []
    perf = time.perf_counter
    done = 0
    start = perf()
    receive = q.receive_message
    try:
        while done < n:
            t = perf()
            for m in receive():
                m.delete()
                done += 1
            lat.append(perf() - t)
    finally:
        if close:
            q.close()
    return Run(done, perf() - start, lat)


def _one_at_a_time_by_handle(q, n: int) -> Run:
    """_one_at_a_time deleting by each handle's text rather than by the message (a loop of its
    own, so the timed loop of the others stays as it was)."""
    lat = []
    perf = time.perf_counter
    done = 0
    start = perf()
    receive, delete = q.receive_message, q.delete_message
    while done < n:
        t = perf()
        for m in receive():
            delete(m.receipt_handle)
            done += 1
        lat.append(perf() - t)
    return Run(done, perf() - start, lat)


class BufferedEngine(Engine):
    """sqsqlite's BufferedQueue with its defaults: receive_message() and msg.delete() one
    message per call, as the peers take theirs, served by claims growing from 10 to 100 and
    deletes committed together. Its close(), which commits the last deletes, is inside the
    timed run. ``prefetch``: a subclass's other than the default (``with_prefetch``);
    ``max_batch_open_ms``: an instance's other than the default."""

    name = "sqsqlite buffered"
    prefetch: int | None = None
    max_batch_open_ms: int | None = None

    @classmethod
    def with_prefetch(cls, prefetch: int) -> type[BufferedEngine]:
        return type(cls.__name__, (cls,), {"prefetch": prefetch, "name": f"{cls.name} prefetch={prefetch}"})

    def receive_delete(self, n: int, batch: int) -> Run:
        assert batch == 1, "the buffer's point is one message per call"
        options = {k: v for k, v in (("prefetch", self.prefetch), ("max_batch_open_ms", self.max_batch_open_ms)) if v is not None}
        return _one_at_a_time(self.q.buffered(**options), n, close=True)


class ClientEngine(Engine):
    """The same work through ``sqsqlite.client()``, the boto3-shaped client, as a boto3 user
    writes it: keyword arguments in SQS's member names, response dicts, entries built per call
    from the messages received (the Queue API rows above take the same steps in their own shape)."""

    name = "sqsqlite client"

    def __init__(self, path: str, synchronous: str = "NORMAL", visibility_timeout: int = 300, **queue_attrs):
        import sqsqlite

        super().__init__(path, synchronous, visibility_timeout, **queue_attrs)
        self.db.close()
        self.client = sqsqlite.client(path, synchronous=synchronous)
        self.url = self.client.get_queue_url(QueueName="bench")["QueueUrl"]

    def close(self) -> None:
        self.client.close()
        remove_files(self.path)

    def send(self, calls: int, batch: int, body: str) -> Run:
        c, url = self.client, self.url
        lat = []
        perf = time.perf_counter
        if batch == 1:
            send = c.send_message
            start = perf()
            for _ in range(calls):
                t = perf()
                send(QueueUrl=url, MessageBody=body)
                lat.append(perf() - t)
        else:
            send_batch = c.send_message_batch
            entries = [{"Id": str(i), "MessageBody": body} for i in range(batch)]
            start = perf()
            for _ in range(calls):
                t = perf()
                send_batch(QueueUrl=url, Entries=entries)
                lat.append(perf() - t)
        return Run(calls * batch, perf() - start, lat)

    def fill(self, n: int, body: str) -> None:
        entries = [{"Id": str(i), "MessageBody": body} for i in range(10)]
        for _ in range(n // 10):
            self.client.send_message_batch(QueueUrl=self.url, Entries=entries)
        for _ in range(n % 10):
            self.client.send_message(QueueUrl=self.url, MessageBody=body)

    def receive_delete(self, n: int, batch: int) -> Run:
        c, url = self.client, self.url
        receive, delete, delete_batch = c.receive_message, c.delete_message, c.delete_message_batch
        lat = []
        perf = time.perf_counter
        done = 0
        start = perf()
        while done < n:
            t = perf()
            msgs = receive(QueueUrl=url, MaxNumberOfMessages=batch).get("Messages", [])
            if batch == 1:
                for m in msgs:
                    delete(QueueUrl=url, ReceiptHandle=m["ReceiptHandle"])
            elif msgs:
                delete_batch(QueueUrl=url, Entries=[{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(msgs)])
            done += len(msgs)
            lat.append(perf() - t)
        return Run(done, perf() - start, lat)


class ResponseAlone(Engine):
    """Not a client and not a target: the Queue API's calls, each followed by the response a
    boto3-shaped client has to return for it, built with no check and no layer between: an MD5
    of each body sent, a receipt handle's text and an MD5 for each message received (the
    deletes present those texts), the entries, the request's metadata. No client that answers
    as SQS does can run faster than this on the same calls, so it bounds ``sqsqlite client``'s
    rows against the Queue API."""

    name = "response alone"

    def send(self, calls: int, batch: int, body: str) -> Run:
        from sqsqlite.client import response_metadata
        from sqsqlite.validation import md5_hex

        q = self.q
        lat = []
        perf = time.perf_counter
        start = perf()
        if batch == 1:
            for _ in range(calls):
                t = perf()
                response = {"MessageId": q.send_message(body).message_id, "MD5OfMessageBody": md5_hex(body.encode())}
                response["ResponseMetadata"] = response_metadata(200)
                lat.append(perf() - t)
        else:
            entries = [{"Id": str(i), "MessageBody": body} for i in range(batch)]
            for _ in range(calls):
                t = perf()
                ids, bodies, entry_ids = q.send_message_batch(entries).successful.columns()
                response = {
                    "Successful": [
                        {"Id": i, "MessageId": m, "MD5OfMessageBody": md5_hex(b.encode())} for i, m, b in zip(entry_ids, ids, bodies)
                    ]
                }
                response["ResponseMetadata"] = response_metadata(200)
                lat.append(perf() - t)
        return Run(calls * batch, perf() - start, lat)

    def receive_delete(self, n: int, batch: int) -> Run:
        from sqsqlite.actions import message_out
        from sqsqlite.client import response_metadata

        q = self.q
        lat = []
        perf = time.perf_counter
        done = 0
        start = perf()
        while done < n:
            t = perf()
            msgs = [message_out(m) for m in q.receive_message(max_number_of_messages=batch)]
            received = {"Messages": msgs} if msgs else {}
            received["ResponseMetadata"] = response_metadata(200)
            if batch == 1:
                for m in msgs:
                    q.delete_message(m["ReceiptHandle"])
                    deleted: dict = {}
                    deleted["ResponseMetadata"] = response_metadata(200)
            elif msgs:
                result = q.delete_message_batch([{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(msgs)])
                deleted = {"Successful": result.successful}
                deleted["ResponseMetadata"] = response_metadata(200)
            done += len(msgs)
            lat.append(perf() - t)
        return Run(done, perf() - start, lat)


# ---------------------------------------------------------------------- the floor

FLOOR_SCHEMA = """
CREATE TABLE messages (
    id INTEGER PRIMARY KEY,
    queue_id INTEGER NOT NULL,
    body TEXT NOT NULL,
    sent_at INTEGER NOT NULL,
    visible_at INTEGER NOT NULL,
    receive_count INTEGER NOT NULL DEFAULT 0,
    receipt BLOB
);
CREATE INDEX ix_messages_visible ON messages (queue_id, visible_at);
"""
FLOOR_INSERT = "INSERT INTO messages (queue_id, body, sent_at, visible_at) VALUES (?, ?, ?, ?)"
FLOOR_CLAIM = (
    "UPDATE messages SET visible_at = ?, receive_count = receive_count + 1, receipt = randomblob(16) "
    "WHERE id IN (SELECT id FROM messages WHERE queue_id = ? AND visible_at <= ? ORDER BY visible_at LIMIT ?) "
    "RETURNING id, body, receipt, receive_count"
)
FLOOR_DELETE = "DELETE FROM messages WHERE id = ? AND receipt = ?"


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


def _connect(path: str, synchronous: str) -> sqlite3.Connection:
    """Python's sqlite3 with sqsqlite's pragmas, autocommit off (each operation says BEGIN)."""
    c = sqlite3.connect(path, isolation_level=None, timeout=60)
    c.execute("PRAGMA journal_mode=WAL")
    c.execute(f"PRAGMA synchronous={synchronous}")
    c.execute("PRAGMA temp_store=MEMORY")
    c.execute("PRAGMA journal_size_limit=67108864")
    return c


class Floor:
    name = "floor"

    def __init__(self, path: str, synchronous: str = "NORMAL"):
        remove_files(path)
        self.path = path
        c = _connect(path, synchronous)
        c.executescript(FLOOR_SCHEMA)
        self.c = c

    def close(self) -> None:
        self.c.close()
        remove_files(self.path)

    def send(self, calls: int, batch: int, body: str) -> Run:
        c = self.c
        ex = c.execute
        lat = []
        perf = time.perf_counter
        start = perf()
        if batch == 1:
            for _ in range(calls):
                t = perf()
                now = _now_ms()
                ex("BEGIN IMMEDIATE")
                ex(FLOOR_INSERT, (1, body, now, now))
                ex("COMMIT")
                lat.append(perf() - t)
        else:
            for _ in range(calls):
                t = perf()
                now = _now_ms()
                ex("BEGIN IMMEDIATE")
                c.executemany(FLOOR_INSERT, [(1, body, now, now)] * batch)
                ex("COMMIT")
                lat.append(perf() - t)
        return Run(calls * batch, perf() - start, lat)

    def fill(self, n: int, body: str) -> None:
        now = _now_ms()
        self.c.execute("BEGIN IMMEDIATE")
        self.c.executemany(FLOOR_INSERT, [(1, body, now, now)] * n)
        self.c.execute("COMMIT")

    def receive_delete(self, n: int, batch: int) -> Run:
        c = self.c
        ex = c.execute
        lat = []
        perf = time.perf_counter
        done = 0
        start = perf()
        while done < n:
            t = perf()
            now = _now_ms()
            ex("BEGIN IMMEDIATE")
            rows = ex(FLOOR_CLAIM, (now + 300_000, 1, now, batch)).fetchall()
            ex("COMMIT")
            if rows:
                ex("BEGIN IMMEDIATE")
                if len(rows) == 1:
                    ex(FLOOR_DELETE, (rows[0][0], rows[0][2]))
                else:
                    c.executemany(FLOOR_DELETE, [(r[0], r[2]) for r in rows])
                ex("COMMIT")
            done += len(rows)
            lat.append(perf() - t)
        return Run(done, perf() - start, lat)

    def received(self, n: int) -> list:
        """n messages claimed (in batches of 10): (id, receipt token) pairs to delete."""
        c = self.c
        held: list = []
        while len(held) < n:
            now = _now_ms()
            c.execute("BEGIN IMMEDIATE")
            rows = c.execute(FLOOR_CLAIM, (now + 300_000, 1, now, min(10, n - len(held)))).fetchall()
            c.execute("COMMIT")
            if not rows:
                break
            held += [(r[0], r[2]) for r in rows]
        return held

    def delete(self, held: list, batch: int) -> Run:
        """Delete the claimed messages ``held``, a transaction a call of 1 or 10: timed."""
        c = self.c
        ex = c.execute
        lat = []
        perf = time.perf_counter
        start = perf()
        for k in range(0, len(held), batch):
            t = perf()
            ex("BEGIN IMMEDIATE")
            if batch == 1:
                ex(FLOOR_DELETE, held[k])
            else:
                c.executemany(FLOOR_DELETE, held[k : k + batch])
            ex("COMMIT")
            lat.append(perf() - t)
        return Run(len(held), perf() - start, lat)


class FloorOnLayout(Floor):
    """The floor's statements on sqsqlite's own table and indexes, filling the columns the
    engine fills (message id, sender, receipt token). Not a target: it splits the gap
    between sqsqlite and the floor into what the table layout costs and what the library costs."""

    name = "floor@layout"

    def __init__(self, path: str, synchronous: str = "NORMAL"):
        Engine(path).db.close()  # sqsqlite's schema and a queue 'bench' (id 1)
        c = _connect(path, synchronous)
        self.c, self.path = c, path
        self.queue_id = c.execute("SELECT id FROM queues WHERE name = 'bench'").fetchone()[0]
        from sqsqlite import queries as Q

        # A send as the engine makes one of bodies alone, one message or a batch: one statement
        # of as many rows as there are messages, queue, sender, send time and visible_at bound
        # once (the columns a standard send fills; receive_count and is_head keep their
        # defaults), so the rows match exactly; fill() uses it for one row with executemany.
        self._INSERT_SHARED = Q.INSERT_SHARED_ROWS
        self._MESSAGE_IDS, self._BODIES = Q.PER_ROW["message_id"], Q.PER_ROW["body"]

    # The floor's claim on that layout reads both places a queue's visible messages are: the
    # rows of ix_messages_visible (its predicate stated, or SQLite cannot use it) and the
    # never-received ones, in id order from the start of the queue's range of ids.
    _CLAIM = (
        "UPDATE messages SET visible_at = ?1, receive_count = receive_count + 1, "
        "first_received_at = coalesce(first_received_at, ?2), received_at = ?3, receipt_token = randomblob(16) "
        "WHERE id IN (SELECT id FROM ("
        f"SELECT * FROM (SELECT id, visible_at FROM messages WHERE queue_id = ?4 AND {INDEXED} "
        "AND visible_at <= ?5 AND sent_at > ?6 ORDER BY visible_at LIMIT ?7) UNION ALL "
        f"SELECT * FROM (SELECT id, visible_at FROM messages WHERE id >= ?4 << {SHIFT} AND id < (?4 + 1) << {SHIFT} "
        "AND queue_id = ?4 AND receive_count = 0 AND visible_at = sent_at AND group_id IS NULL "
        "AND visible_at <= ?5 AND sent_at > ?6 ORDER BY id LIMIT ?7)) ORDER BY visible_at LIMIT ?7) "
        "RETURNING id, message_id, body, receipt_token, receive_count"
    )
    _DELETE = "DELETE FROM messages WHERE id = ? AND receipt_token = ?"

    def _row(self, body: str, now: int) -> dict:
        return {
            "queue_id": self.queue_id,
            "message_id_0": str(uuid.uuid4()),
            "body_0": body,
            "sender_id": "000000000000",
            "sent_at": now,
            "visible_at": now,
        }

    def send(self, calls: int, batch: int, body: str) -> Run:
        c = self.c
        ex = c.execute
        lat = []
        perf = time.perf_counter
        start = perf()
        for _ in range(calls):
            t = perf()
            now = _now_ms()
            # As the engine sends messages of a body alone, one or a batch: queue, sender,
            # send time and visible_at bound once, and each row's id and body.
            values = {"queue_id": self.queue_id, "sender_id": "000000000000", "sent_at": now, "visible_at": now}
            values.update(zip(self._MESSAGE_IDS, [str(uuid.uuid4()) for _ in range(batch)]))
            values.update(zip(self._BODIES, [body] * batch))
            sql = self._INSERT_SHARED[batch]
            ex("BEGIN IMMEDIATE")
            ex(sql, values)
            ex("COMMIT")
            lat.append(perf() - t)
        return Run(calls * batch, perf() - start, lat)

    def fill(self, n: int, body: str) -> None:
        now = _now_ms()
        self.c.execute("BEGIN IMMEDIATE")
        self.c.executemany(self._INSERT_SHARED[1], [self._row(body, now) for _ in range(n)])
        self.c.execute("COMMIT")

    def receive_delete(self, n: int, batch: int) -> Run:
        c = self.c
        ex = c.execute
        lat = []
        perf = time.perf_counter
        done = 0
        start = perf()
        while done < n:
            t = perf()
            now = _now_ms()
            ex("BEGIN IMMEDIATE")
            rows = ex(self._CLAIM, (now + 300_000, now, now, self.queue_id, now, now - 345_600_000, batch)).fetchall()
            ex("COMMIT")
            if rows:
                ex("BEGIN IMMEDIATE")
                c.executemany(self._DELETE, [(r[0], r[3]) for r in rows])
                ex("COMMIT")
            done += len(rows)
            lat.append(perf() - t)
        return Run(done, perf() - start, lat)


# ---------------------------------------------------------------------- peers


def _at_durability(queue: object, synchronous: str) -> None:
    """Every SQLite connection a peer holds set to the row's ``synchronous``, and checked: a
    peer left at its own default runs at whatever the SQLite build defaults to (FULL here for
    persist-queue, which sets only the journal mode), not at the durability its row names."""
    conns = {id(v): v for v in vars(queue).values() if isinstance(v, sqlite3.Connection)}
    if not conns:
        raise RuntimeError(f"{type(queue).__name__} holds no sqlite3 connection the harness can see")
    level = {"OFF": 0, "NORMAL": 1, "FULL": 2, "EXTRA": 3}[synchronous]
    for c in conns.values():
        c.execute(f"PRAGMA synchronous={synchronous}")
        if c.execute("PRAGMA synchronous").fetchone()[0] != level:
            raise RuntimeError(f"{type(queue).__name__}'s connection refused synchronous={synchronous}")


class PersistQueue:
    """persist-queue's SQLiteAckQueue: put; get + ack. WAL and autocommit (its own settings),
    at the row's durability."""

    name = "persist-queue"

    def __init__(self, path: str, synchronous: str = "NORMAL"):
        import persistqueue

        shutil.rmtree(path, ignore_errors=True)
        self.path = path
        self.q = persistqueue.SQLiteAckQueue(path, auto_commit=True, multithreading=False)
        _at_durability(self.q, synchronous)

    def close(self) -> None:
        self.q.close() if hasattr(self.q, "close") else None
        shutil.rmtree(self.path, ignore_errors=True)

    def send(self, calls: int, batch: int, body: str) -> Run:
        assert batch == 1, "persist-queue has no batch put"
        put = self.q.put
        lat = []
        perf = time.perf_counter
        start = perf()
        for _ in range(calls):
            t = perf()
            put(body)
            lat.append(perf() - t)
        return Run(calls, perf() - start, lat)

    def fill(self, n: int, body: str) -> None:
        for _ in range(n):
            self.q.put(body)

    def receive_delete(self, n: int, batch: int) -> Run:
        assert batch == 1, "persist-queue has no batch get"
        q = self.q
        lat = []
        perf = time.perf_counter
        start = perf()
        for _ in range(n):
            t = perf()
            item = q.get(block=False)
            q.ack(item)
            lat.append(perf() - t)
        return Run(n, perf() - start, lat)


class LiteQueue:
    """litequeue: put; pop + done. WAL and autocommit (its own settings), at the row's
    durability (NORMAL is its own default)."""

    name = "litequeue"

    def __init__(self, path: str, synchronous: str = "NORMAL"):
        import litequeue

        remove_files(path)
        self.path = path
        self.q = litequeue.LiteQueue(path)
        _at_durability(self.q, synchronous)

    def close(self) -> None:
        self.q.close()
        remove_files(self.path)

    def send(self, calls: int, batch: int, body: str) -> Run:
        assert batch == 1, "litequeue has no batch put"
        put = self.q.put
        lat = []
        perf = time.perf_counter
        start = perf()
        for _ in range(calls):
            t = perf()
            put(body)
            lat.append(perf() - t)
        return Run(calls, perf() - start, lat)

    def fill(self, n: int, body: str) -> None:
        with self.q.transaction():
            for _ in range(n):
                self.q.put(body)

    def receive_delete(self, n: int, batch: int) -> Run:
        assert batch == 1, "litequeue has no batch pop"
        q = self.q
        lat = []
        perf = time.perf_counter
        start = perf()
        for _ in range(n):
            t = perf()
            m = q.pop()
            q.done(m.message_id)
            lat.append(perf() - t)
        return Run(n, perf() - start, lat)


class CommitCeiling:
    """Not a queue: the fastest any queue can go that commits each call, on this machine. Each
    call is the cheapest write transaction SQLite has (BEGIN IMMEDIATE, one UPDATE of a one-row
    table, COMMIT) with the same pragmas as the floor; a receive + delete is two of them, since a
    claim must commit before it returns (another process may receive next) and so must an
    acknowledgement. No queue that keeps those two commits can beat its rate, so it bounds
    what plain one-per-call calls can reach against the peers."""

    name = "2-commit ceiling"

    def __init__(self, path: str, synchronous: str = "NORMAL"):
        remove_files(path)
        self.path = path
        c = _connect(path, synchronous)
        c.execute("CREATE TABLE counter (id INTEGER PRIMARY KEY, n INTEGER NOT NULL)")
        c.execute("INSERT INTO counter VALUES (1, 0)")
        self.c = c

    def close(self) -> None:
        self.c.close()
        remove_files(self.path)

    def _commits(self, calls: int, per_call: int) -> Run:
        ex = self.c.execute
        lat = []
        perf = time.perf_counter
        start = perf()
        for _ in range(calls):
            t = perf()
            for _ in range(per_call):
                ex("BEGIN IMMEDIATE")
                ex("UPDATE counter SET n = n + 1 WHERE id = 1")
                ex("COMMIT")
            lat.append(perf() - t)
        return Run(calls, perf() - start, lat)

    def send(self, calls: int, batch: int, body: str) -> Run:
        assert batch == 1, "the ceiling is for one message per call"
        return self._commits(calls, 1)

    def fill(self, n: int, body: str) -> None:
        pass  # it stores nothing: that is what makes it a ceiling

    def receive_delete(self, n: int, batch: int) -> Run:
        assert batch == 1, "the ceiling is for one message per call"
        return self._commits(n, 2)


SYSTEMS = {s.name: s for s in (Engine, ClientEngine, BufferedEngine, Floor, FloorOnLayout, PersistQueue, LiteQueue, CommitCeiling)}
