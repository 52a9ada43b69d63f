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
- ``+visible``: and ``ix_messages_visible``, the index claims and counts walk.
- ``+partial``: and the four partial indexes (fair queues, FIFO), which hold no plain message.
- ``engine``: the layout as migrated: and the send reads its id above the high-water mark
  (``message_positions``).
- ``autoincrement``: the layout before migration 0013: the table AUTOINCREMENT, no mark.

Then what keeping the mark costs a delete, one message a transaction: ``engine`` runs the
engine's ``queries.keep_high_water`` after each delete, ``autoincrement`` the delete alone;
deleting the oldest message (the mark stays) and the newest (the mark is written: a queue
whose consumer keeps up deletes the newest).
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

import sqsqlite
from sqsqlite import queries as Q

from .harness import commit
from .systems import FLOOR_INSERT, FLOOR_SCHEMA, body_of, remove_files

STORED, SENDS, DELETES = 20_000, 3_000, 2_000
LAYOUTS = {
    "floor": "the floor's plain table and insert",
    "row": "the engine's table, no index, SQLite's max + 1 ids",
    "+visible": "and ix_messages_visible",
    "+partial": "and the four partial indexes (fair queues, FIFO)",
    "engine": "and the id read above the high-water mark (as migrated)",
    "autoincrement": "the engine's layout before 0013: AUTOINCREMENT, no mark",
}
_SENDER = "000000000000"


def _plain_insert() -> str:
    """The engine's single send without its id expression: SQLite then hands out max + 1."""
    sql = str(Q.INSERT_SHARED_ROWS[1])
    head, values = sql.split(" VALUES (", 1)
    first, rest = values.split("), ?", 1)
    assert head.startswith("INSERT INTO messages (id, ") and first.startswith("(max("), sql
    return head.replace("(id, ", "(", 1) + " VALUES (?" + rest


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
    if layout == "engine":
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
    kept = {"row": (), "+visible": ("ix_messages_visible",)}.get(layout)
    for name, sql in indexes:
        if kept is None or name in kept:
            conn.execute(sql)
    conn.execute("COMMIT")
    return conn, _plain_insert()


def _values(layout: str, body: str, now: int) -> tuple:
    if layout == "floor":
        return (1, body, now, now)
    return (1, _SENDER, now, now, str(uuid.uuid4()), body)  # queue, sender, sent_at, visible_at, id, body


def _sends(conn: sqlite3.Connection, sql: str, layout: str, n: int) -> float:
    body = body_of(200)
    now = time.time_ns() // 1_000_000
    start = time.process_time()
    for k in range(n):
        conn.execute("BEGIN IMMEDIATE")
        conn.execute(sql, _values(layout, body, now + k))
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
            conn.execute(Q.keep_high_water, (i,))
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
        template = os.path.join(work, "queue.db")
        db = sqsqlite.connect(template)
        db.create_queue("parts")  # queue id 1
        db.close()
        with contextlib.closing(sqlite3.connect(template)) as conn:
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # everything in the file, which is what is copied
        best: dict[str, dict[str, float]] = {}
        for _ in range(rounds):
            for layout in LAYOUTS:
                for part, spent in _one(template, work, layout).items():
                    best.setdefault(layout, {})[part] = min(best.get(layout, {}).get(part, float("inf")), spent)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description="A single send's CPU, layout by layout.")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    print(f"commit {commit()}, load average {os.getloadavg()}")
    print(f"CPU us a send, {SENDS:,} single sends into a queue of {STORED:,}, commit included (best of {args.rounds})")
    res = measure(args.rounds)
    for layout, parts in res.items():
        print(f"{layout:14s} {parts['send']:6.2f}  {LAYOUTS[layout]}")
    print(f"CPU us a delete, one a transaction, {DELETES:,} of them")
    for layout in ("engine", "autoincrement"):
        print(f"{layout:14s} oldest {res[layout]['delete oldest']:6.2f}  newest {res[layout]['delete newest']:6.2f}")
    print(f"load average {os.getloadavg()}")


if __name__ == "__main__":
    main()
