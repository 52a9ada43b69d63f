"""Transactions under SIGKILL: a process killed at every point of a transactional send or consume
leaves the application's row and the queue's change both or neither (220 kills in all), and N
consumers killed at random apply every effect exactly once. Real processes, bounded."""

import signal
import sqlite3
import time

import pytest

import sqsqlite
from benchmarks.transactions import fault_run
from sqsqlite import ManualClock
from tests.processes.killed import die, run

pytestmark = pytest.mark.slow

SEND_POINTS = ("before-insert", "between", "before-commit", "after-commit")
CONSUME_POINTS = ("before-handler", "mid-handler", "before-commit", "after-commit")


def _send(path: str, k: int, point: str) -> None:
    db = sqsqlite.connect(path)
    q = db.queue("outbox")
    with db.transaction() as tx:
        if point == "before-insert":
            die()
        tx.execute("INSERT INTO orders (id, item) VALUES (?, ?)", (k, f"item{k}"))
        if point == "between":
            die()
        q.send_message(str(k))
        if point == "before-commit":
            die()
    if point == "after-commit":
        die()


def _consume(path: str, point: str) -> None:
    db = sqsqlite.connect(path)
    q = db.queue("inbox")
    [m] = q.receive_message(visibility_timeout=60)

    def handle(message, tx):
        if point == "before-handler":
            die()
        tx.execute("INSERT INTO effects (message) VALUES (?)", (message.body,))
        if point == "mid-handler":
            die()
        if point == "before-commit":
            die()

    sqsqlite.Consumer(q, handle, transaction=True, visibility_timeout=60).process(m)
    if point == "after-commit":
        die()


def _bodies(path: str, queue: str) -> set[str]:
    db = sqsqlite.connect(path)
    try:
        return {m.body for m in db.queue(queue).peek(limit=1000)}
    finally:
        db.close()


def test_a_transactional_send_killed_at_any_point_leaves_both_or_neither(tmp_path):
    path = str(tmp_path / "t.db")
    db = sqsqlite.connect(path)
    db.create_queue("outbox")
    with db.transaction() as tx:
        tx.execute("CREATE TABLE orders (id INTEGER PRIMARY KEY, item TEXT)")
    db.close()
    kills = 0
    for k in range(120):
        point = SEND_POINTS[k % len(SEND_POINTS)]
        assert run(_send, path, k, point) == -signal.SIGKILL
        kills += 1
    with sqlite3.connect(path) as conn:
        ids = {str(r[0]) for r in conn.execute("SELECT id FROM orders")}
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert ids == _bodies(path, "outbox")  # each order with its message, no message without its order
    assert ids == {str(k) for k in range(120) if SEND_POINTS[k % 4] == "after-commit"}
    assert kills == 120


def test_a_transactional_consume_killed_at_any_point_applies_the_effect_with_the_delete_or_neither(tmp_path):
    path = str(tmp_path / "c.db")
    db = sqsqlite.connect(path)
    q = db.create_queue("inbox")
    with db.transaction() as tx:
        tx.execute("CREATE TABLE effects (message TEXT)")
    for k in range(100):
        q.send_message(str(k))
    db.close()
    for k in range(100):
        assert run(_consume, path, CONSUME_POINTS[k % len(CONSUME_POINTS)]) == -signal.SIGKILL
    with sqlite3.connect(path) as conn:
        effects = [r[0] for r in conn.execute("SELECT message FROM effects")]
    assert len(effects) == len(set(effects)) == 25  # only the kills after the commit
    left = _bodies(path, "inbox")
    assert left.isdisjoint(effects) and left | set(effects) == {str(k) for k in range(100)}
    # The messages of the killed handlers come back when their leases end, receive count 2.
    later = sqsqlite.connect(path, clock=ManualClock(int(time.time() * 1000) + 61_000))
    back = []
    while got := later.queue("inbox").receive_message(max_number_of_messages=10):
        back += got
    assert {m.body for m in back} == left and {m.receive_count for m in back} == {2}
    later.close()


# ---------------------------------------------------------------- exactly once under random kills


def test_consumers_killed_at_random_apply_every_payment_exactly_once_in_transactions(tmp_path):
    result = fault_run(str(tmp_path / "x.db"), transactional=True)
    assert result["left"] == 0
    assert result["twice"] == 0
    assert result["balances"] == result["sums"]
