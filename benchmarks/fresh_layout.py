"""Migration 0014's layout against the one before it: the messages table with its
never-received, undelayed messages left out of ``ix_messages_visible`` (found by id in their
queue's own range instead) against the index holding every message.

    python -m benchmarks.fresh_layout            # 5 rounds, best of each

As migrated, a queue's messages take ids from a range of their own (``queue_id <<
QUEUE_ID_SHIFT`` on), and a message that was never received, has no delay and no group is
"fresh": visible in send order, it has no entry in ``ix_messages_visible`` (whose predicate,
``schema.INDEXED``, every query that walks it states: SQLite uses a partial index only where the
query implies it). Claims and counts read the fresh messages by id from ``queues.fresh_from``;
after a claim that comes back short, and every ``FRESH_SPAN`` messages claimed, ``fresh_from``
moves up past the messages in flight (``queries.advance_fresh``), as the engine's receive does.

Both layouts run through sqlite3 alone (synchronous=NORMAL, temp_store=MEMORY) on a copy of one
file whose queue holds ``STORED`` messages (200 B bodies), each statement in its own
transaction (BEGIN IMMEDIATE ... COMMIT); CPU µs, best of the rounds. ``before 0014`` is the
file as migrated with ``ix_messages_visible`` made full again (no predicate) and the statements
walking it as they did then; ``as migrated`` is the file as it is:

- ``send``: a single send, the engine's statement (``queries.INSERT_SHARED_ROWS[1]``) on both;
- ``receive + delete``: a claim of one message, oldest first among the next 1 + 16 visible
  (``before 0014``: from the index; ``as migrated``: from the index and the fresh messages, as
  the engine's claim reads them), then its delete in a transaction of its own; neither runs the
  fair queues' windows, so the two differ only by the layout (``engine claim`` is the engine's
  own claim, ``queries.claim_standard``, on the layout as migrated);
- ``claim beside 20,000 in flight``: the same claim, after 20,000 messages were claimed and
  kept in flight (``first claim``: the first claim after those, by a claimer of its own; the
  prototype of this layout kept its place among the fresh ids per connection, and its first
  claim stepped over every message in flight once; ``queues.fresh_from`` keeps it for all);
- ``count``: the queue's visible messages counted exactly (``as migrated``: the engine's
  ``queries.count_visible``).
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

from sqsqlite import defaults as D
from sqsqlite import queries as Q
from sqsqlite.schema import INDEXED

from .harness import commit, keep_best, one_queue_file
from .systems import body_of, remove_files

STORED, SENDS, CYCLES, IN_FLIGHT = 30_000, 3_000, 2_000, 20_000
SHIFT = D.QUEUE_ID_SHIFT
_SENDER = "000000000000"
_LOOKAHEAD = 16
_FRESH = "receive_count = 0 AND visible_at = sent_at AND group_id IS NULL"
# The queue's first id that may be fresh (?4: the queue), as the engine's statements read it.
_FRESH_START = f"(SELECT max(fresh_from, id << {SHIFT}) FROM queues WHERE id = ?4)"

_CLAIMED = "visible_at = ?1, receive_count = receive_count + 1, first_received_at = coalesce(first_received_at, ?2), received_at = ?2, receipt_token = ?3"
_RETURNED = "id, message_id, body, attributes, sender_id, sent_at, receive_count, first_received_at"
# ?1 lease end, ?2 now, ?3 token, ?4 queue, ?5 retention cutoff, ?6 n.
_INDEX_STREAM = (
    "SELECT id, sent_at FROM messages WHERE queue_id = ?4 AND visible_at <= ?2 AND sent_at > ?5{extra} "
    f"ORDER BY visible_at LIMIT ?6 + {_LOOKAHEAD}"
)
CLAIM_BEFORE = (
    f"UPDATE messages SET {_CLAIMED} WHERE id IN (SELECT id FROM ({_INDEX_STREAM.format(extra='')}) "
    f"ORDER BY sent_at, id LIMIT ?6) RETURNING {_RETURNED}"
)
# The first fresh ones from fresh_from, as the engine's claim.
CLAIM_MIGRATED = (
    f"UPDATE messages SET {_CLAIMED} WHERE id IN (SELECT id FROM ("
    f"SELECT * FROM ({_INDEX_STREAM.format(extra=' AND ' + INDEXED)}) UNION ALL "
    f"SELECT * FROM (SELECT id, sent_at FROM messages WHERE id >= {_FRESH_START} "
    f"AND id < (?4 + 1) << {SHIFT} AND queue_id = ?4 AND {_FRESH} "
    "AND visible_at <= ?2 AND sent_at > ?5 ORDER BY id LIMIT ?6)"
    f") ORDER BY sent_at, id LIMIT ?6) RETURNING {_RETURNED}"
)
COUNT_BEFORE = "SELECT count(*) FROM messages WHERE queue_id = ?1 AND visible_at <= ?2 AND sent_at > ?3"
LAYOUTS = ("before 0014", "as migrated")
_PARTIAL = f" WHERE {INDEXED}"


def _convert(conn: sqlite3.Connection) -> None:
    """The layout as migrated, made the one before 0014: ix_messages_visible holds every message."""
    (sql,) = conn.execute("SELECT sql FROM sqlite_master WHERE name = 'ix_messages_visible'").fetchone()
    if not sql.endswith(_PARTIAL):
        raise RuntimeError(f"ix_messages_visible is not the partial index as migrated: {sql}")
    conn.execute("DROP INDEX ix_messages_visible")
    conn.execute(sql.removesuffix(_PARTIAL))


def check_plans(conn: sqlite3.Connection) -> None:
    """The migrated layout's statements walk the partial index and the queue's range, never the
    whole table (SQLite would scan it where a query did not imply the index's predicate)."""
    count = {"queue_id": 1, "now": 1, "cutoff": 0}
    for sql, values in ((CLAIM_MIGRATED, (1, 1, b"", 1, 0, 1)), (Q.count_visible, count), (Q.advance_fresh, {"queue_id": 1})):
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
    if layout == "before 0014":
        _convert(conn)
    else:
        check_plans(conn)
    now = time.time_ns() // 1_000_000
    body = body_of(200)
    conn.execute("BEGIN IMMEDIATE")
    rows = (
        {"queue_id": 1, "sender_id": _SENDER, "sent_at": now, "visible_at": now, "message_id_0": str(uuid.uuid4()), "body_0": body}
        for _ in range(STORED)
    )
    conn.executemany(Q.INSERT_SHARED_ROWS[1], rows)
    conn.execute("COMMIT")
    return conn


class _Claimer:
    """One connection's claims on one layout."""

    def __init__(self, conn: sqlite3.Connection, layout: str, engine: bool = False):
        self.conn, self.layout, self.engine = conn, layout, engine
        self.claimed = 0

    def claim(self, n: int, now: int, lease: int) -> list:
        execute = self.conn.execute
        sql = Q.claim_standard if self.engine else CLAIM_BEFORE if self.layout == "before 0014" else CLAIM_MIGRATED
        values = (now + lease, now, os.urandom(16), 1, 0, n)
        if sql is Q.claim_standard:  # by name
            values = dict(zip(("lease_end", "now", "token", "queue_id", "cutoff", "n"), values))
        rows = execute(sql, values).fetchall()
        # fresh_from moves past the messages in flight after a short claim and every FRESH_SPAN
        # messages claimed (receiving.py).
        self.claimed += len(rows)
        if sql is not CLAIM_BEFORE and (len(rows) < n or self.claimed >= D.FRESH_SPAN):
            execute(Q.advance_fresh, {"queue_id": 1})
            self.claimed = 0
        return rows


def _sends(conn: sqlite3.Connection) -> float:
    send = Q.INSERT_SHARED_ROWS[1]
    body, now = body_of(200), time.time_ns() // 1_000_000
    start = time.process_time()
    for _ in range(SENDS):
        conn.execute("BEGIN IMMEDIATE")
        conn.execute(
            send,
            {"queue_id": 1, "sender_id": _SENDER, "sent_at": now, "visible_at": now, "message_id_0": str(uuid.uuid4()), "body_0": body},
        )
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
    sql, values = (COUNT_BEFORE, (1, now, 0)) if layout == "before 0014" else (Q.count_visible, {"queue_id": 1, "now": now, "cutoff": 0})
    start = time.process_time()
    for _ in range(5):
        (visible,) = conn.execute(sql, values).fetchone()
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
            parts["send"] = _sends(conn)
            now += 10_000  # every message sent is visible
            parts["receive + delete"] = _cycles(_Claimer(conn, layout), now)
            # Claim and keep IN_FLIGHT, then time claims beside them on another connection: its
            # first and the next 500.
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
    parser = argparse.ArgumentParser(description="Migration 0014's layout against the one before it.")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    print(f"commit {commit()}, load average {os.getloadavg()}")
    print(f"CPU us, a queue of {STORED:,} (best of {args.rounds})")
    res = measure(args.rounds)
    print(f"{'':38s} {LAYOUTS[0]:>12s} {LAYOUTS[1]:>12s}")
    for part in res["as migrated"]:
        print(f"{part:38s} {res['before 0014'].get(part, float('nan')):12.2f} {res['as migrated'][part]:12.2f}")
    print(f"load average {os.getloadavg()}")


if __name__ == "__main__":
    main()
