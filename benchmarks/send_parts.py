"""What a single send's CPU is made of, layout by layout: the figures behind docs/performance.md's
account of what each index and column of the messages table costs a send.

    python -m benchmarks.send_parts            # 5 rounds, best of each

Each layout is a fresh file holding one queue of 20,000 messages (200 B bodies), on which
sqlite3 alone (synchronous=NORMAL, temp_store=MEMORY, SQLite's own checkpoints) sends 3,000
messages one at a time, each in its own transaction (BEGIN IMMEDIATE ... COMMIT). CPU µs a
send, commit included; the layouts in turn, best of the rounds. Every layout but the floor
runs the engine's own single-send statement (``queries.INSERT_SHARED_ROWS[1]``), with the
message id and body bound as the engine binds them.

- ``floor``: the floor's plain table of 7 columns and its insert (benchmarks.systems).
- ``row``: the engine's messages table with no index, ids handed out by SQLite (max + 1).
- ``+visible (full)``: and ``ix_messages_visible`` as it was before migration 0014, holding every
  message: the index claims and counts walk.
- ``+partial``: and the four partial indexes (fair queues, FIFO), which hold no plain message.
- ``engine``: the layout as migrated, the engine's own statement: the send takes its id in its
  queue's range (``queue_id << QUEUE_ID_SHIFT`` on), above the high-water mark
  (``message_positions``), and ``ix_messages_visible`` is partial (``schema.INDEXED``): the
  never-received, undelayed message a send writes has no entry in it.
- ``+visible (full, before 0014)``: the same, but ``ix_messages_visible`` full, as before
  migration 0014: every send writes its entry. Its difference to ``engine`` is what 0014's
  partial index saves a send.
- ``autoincrement``: the layout before migration 0013: the table AUTOINCREMENT, no mark, and
  ``ix_messages_visible`` full (as it was then).
- ``minimal``: the least any send that keeps SQS's rules does, on the layout as migrated: the
  body's character check (``validation.message_body``), a message id (``handles.new_message_ids``)
  and one INSERT that takes its id as the engine does and reads the queue's delay, kind and size
  limit itself (``_MINIMAL_INSERT``), in its own transaction; no other Python. ``minimal, full
  visible (before 0014)``: the same with ``ix_messages_visible`` full. Their ratio to the floor
  bounds what a single send can reach on each.
- ``+history``: the layout as migrated, and each send's transaction also adds to its queue's row
  of the minute (``queries.COUNT_SENT``, what a send counts when the file's history is on): the
  floor under any counter kept exactly, in the operation's own transaction.

Then what keeping the mark costs a delete, one message a transaction: ``engine`` runs the
engine's ``queries.keep_high_water`` after each delete, ``autoincrement`` the delete alone;
deleting the oldest message (the mark stays) and the newest (the mark is written: a queue
whose consumer keeps up deletes the newest).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sqlite3
import tempfile
import time
import uuid

from sqsqlite import queries as Q
from sqsqlite import validation as V
from sqsqlite.core.handles import new_message_ids
from sqsqlite.defaults import QUEUE_ID_SHIFT
from sqsqlite.schema import INDEXED

from .harness import commit, keep_best, one_queue_file
from .systems import FLOOR_INSERT, FLOOR_SCHEMA, body_of, remove_files

STORED, SENDS, DELETES = 20_000, 3_000, 2_000
LAYOUTS = {
    "floor": "the floor's plain table and insert",
    "row": "the engine's table, no index, SQLite's max + 1 ids",
    "+visible (full)": "and ix_messages_visible holding every message (before 0014)",
    "+partial": "and the four partial indexes (fair queues, FIFO)",
    "engine": "as migrated: the id in the queue's range, ix_messages_visible partial",
    "+visible (full, before 0014)": "as migrated, but ix_messages_visible holding every message",
    "autoincrement": "the engine's layout before 0013: AUTOINCREMENT, no mark",
    "minimal": "the least a faithful send does, as migrated",
    "minimal, full visible (before 0014)": "the least a faithful send does, ix_messages_visible full",
    "+history": "as migrated, and the history's counter row in each send's transaction",
}
_SENDER = "000000000000"
# The queue's settings read by the insert itself (a send must read them in its transaction);
# its id as the engine's send takes it: in the queue's range, above its high-water mark.
_MINIMAL_INSERT = (
    "INSERT INTO messages (id, queue_id, message_id, body, sender_id, sent_at, visible_at) "
    f"SELECT max(coalesce((SELECT max(id) FROM messages WHERE id >= ?1 << {QUEUE_ID_SHIFT} AND id < (?1 + 1) << {QUEUE_ID_SHIFT}), "
    f"?1 << {QUEUE_ID_SHIFT}), coalesce((SELECT highest_removed FROM message_positions WHERE id = ?1), ?1 << {QUEUE_ID_SHIFT})) + 1, "
    "q.id, ?2, ?3, ?4, ?5, ?5 + q.delay_seconds * 1000 FROM queues AS q "
    "WHERE q.id = ?1 AND q.fifo = 0 AND q.max_message_size >= ?6"
)
_PARTIAL = f" WHERE {INDEXED}"
# The layouts whose ix_messages_visible holds every message, as before migration 0014.
_FULL_VISIBLE = ("+visible (full)", "+partial", "+visible (full, before 0014)", "autoincrement", "minimal, full visible (before 0014)")


def _full_visible(sql: str) -> str:
    """ix_messages_visible's CREATE INDEX as migrated, without its predicate."""
    if not sql.endswith(_PARTIAL):
        raise RuntimeError(f"ix_messages_visible is not the partial index as migrated: {sql}")
    return sql.removesuffix(_PARTIAL)


def _plain_insert() -> str:
    """The engine's single send without its id expression: SQLite then hands out max + 1."""
    sql = str(Q.INSERT_SHARED_ROWS[1])
    head, values = sql.split(" VALUES (", 1)
    first, rest = values.rsplit(" + 1), ", 1)  # the id expression ends at the last "+ 1)"
    assert head.startswith("INSERT INTO messages (id, ") and first.startswith("(max(") and rest.startswith(":"), sql
    return head.replace("(id, ", "(", 1) + " VALUES (" + rest


def _build(template: str, path: str, layout: str) -> tuple[sqlite3.Connection, str]:
    """A copy of the template laid out as ``layout``; the connection and its send statement."""
    remove_files(path)
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute("PRAGMA temp_store=MEMORY")
    if layout == "floor":
        conn.executescript(FLOOR_SCHEMA)
        return conn, FLOOR_INSERT
    conn.close()
    shutil.copy(template, path)
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute("PRAGMA temp_store=MEMORY")
    if layout in _FULL_VISIBLE:
        (sql,) = conn.execute("SELECT sql FROM sqlite_master WHERE name = 'ix_messages_visible'").fetchone()
        conn.execute("DROP INDEX ix_messages_visible")
        conn.execute(_full_visible(sql))
    if layout in ("engine", "+history", "+visible (full, before 0014)", "minimal", "minimal, full visible (before 0014)"):
        return conn, Q.INSERT_SHARED_ROWS[1]
    table = conn.execute("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'messages'").fetchone()[0]
    indexes = conn.execute(
        "SELECT name, sql FROM sqlite_master WHERE type = 'index' AND tbl_name = 'messages' AND sql IS NOT NULL"
    ).fetchall()
    conn.execute("BEGIN")
    conn.execute("DROP TABLE messages")
    if layout == "autoincrement":
        table = table.replace("(\n    id INTEGER NOT NULL,", "(\n    id INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,", 1)
        table = table.replace(",\n    PRIMARY KEY (id)", "")
    conn.execute(table)
    kept = {"row": (), "+visible (full)": ("ix_messages_visible",)}.get(layout)
    for name, sql in indexes:
        if kept is None or name in kept:
            conn.execute(sql)
    conn.execute("COMMIT")
    return conn, _plain_insert()


def _values(layout: str, body: str, now: int) -> tuple | dict:
    if layout == "floor":
        return (1, body, now, now)
    return {"queue_id": 1, "sender_id": _SENDER, "sent_at": now, "visible_at": now, "message_id_0": str(uuid.uuid4()), "body_0": body}


def _minimal_sends(conn: sqlite3.Connection, n: int) -> float:
    body = body_of(200)
    execute, message_body, new_ids, clock = conn.execute, V.message_body, new_message_ids, time.time_ns
    start = time.process_time()
    for _ in range(n):
        size = len(message_body(body))
        [message_id] = new_ids(1)
        now = clock() // 1_000_000
        execute("BEGIN IMMEDIATE")
        assert execute(_MINIMAL_INSERT, (1, message_id, body, _SENDER, now, size)).rowcount == 1
        execute("COMMIT")
    return (time.process_time() - start) / n * 1e6


def _sends(conn: sqlite3.Connection, sql: str, layout: str, n: int) -> float:
    if layout.startswith("minimal"):
        return _minimal_sends(conn, n)
    body = body_of(200)
    now = time.time_ns() // 1_000_000
    counted = layout == "+history"
    start = time.process_time()
    for k in range(n):
        conn.execute("BEGIN IMMEDIATE")
        conn.execute(sql, _values(layout, body, now + k))
        if counted:
            conn.execute(Q.COUNT_SENT, {"minute": now - now % 60_000, "queue_id": 1, "sent": 1, "bytes_sent": 200})
        conn.execute("COMMIT")
    return (time.process_time() - start) / n * 1e6


def _deletes(conn: sqlite3.Connection, newest: bool, n: int, mark: bool) -> float:
    order = "DESC" if newest else "ASC"
    ids = [r[0] for r in conn.execute(f"SELECT id FROM messages ORDER BY id {order} LIMIT ?", (n,))]
    start = time.process_time()
    for i in ids:
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("DELETE FROM messages WHERE id = ?", (i,))
        if mark:
            conn.execute(Q.keep_high_water, {"top": i})
        conn.execute("COMMIT")
    return (time.process_time() - start) / len(ids) * 1e6


def _one(template: str, work: str, layout: str) -> dict[str, float]:
    path = os.path.join(work, "part.db")
    conn, sql = _build(template, path, layout)
    try:
        body, now = body_of(200), time.time_ns() // 1_000_000
        conn.execute("BEGIN IMMEDIATE")
        conn.executemany(sql, [_values(layout, body, now) for _ in range(STORED)])
        conn.execute("COMMIT")
        out = {"send": _sends(conn, sql, layout, SENDS)}
        if layout in ("engine", "autoincrement"):
            out["delete oldest"] = _deletes(conn, False, DELETES, layout == "engine")
            out["delete newest"] = _deletes(conn, True, DELETES, layout == "engine")
        return out
    finally:
        conn.close()
        remove_files(path)


def measure(rounds: int = 5) -> dict[str, dict[str, float]]:
    with tempfile.TemporaryDirectory(prefix="sqsqlite-send-") as work:
        template = one_queue_file(work)  # queue id 1
        best: dict[str, dict[str, float]] = {}
        for _ in range(rounds):
            for layout in LAYOUTS:
                keep_best(best, layout, _one(template, work, layout))
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description="A single send's CPU, layout by layout.")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    print(f"commit {commit()}, load average {os.getloadavg()}")
    print(f"CPU us a send, {SENDS:,} single sends into a queue of {STORED:,}, commit included (best of {args.rounds})")
    res = measure(args.rounds)
    for layout, parts in res.items():
        print(f"{layout:36s} {parts['send']:6.2f}  {res['floor']['send'] / parts['send']:.3f} of the floor  {LAYOUTS[layout]}")
    print(f"CPU us a delete, one a transaction, {DELETES:,} of them")
    for layout in ("engine", "autoincrement"):
        print(f"{layout:36s} oldest {res[layout]['delete oldest']:6.2f}  newest {res[layout]['delete newest']:6.2f}")
    print(f"load average {os.getloadavg()}")


if __name__ == "__main__":
    main()
