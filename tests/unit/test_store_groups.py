"""Grouped writes (store.Group): one thread's writes made as one transaction, as the endpoint
makes the engine calls of one turn of its event loop."""

from __future__ import annotations

import pytest

import sqsqlite
from sqsqlite.errors import DatabaseError, QueueDoesNotExist


def _count(path: str, queue: str) -> int:
    with sqsqlite.connect(path) as other:  # another connection: it sees committed work only
        return int(other.queue(queue).get_queue_attributes(["ApproximateNumberOfMessages"])["ApproximateNumberOfMessages"])


def _undone_group(db, q):
    """A group with one send whose transaction SQLite then undid, as it may on a full disk or an
    I/O error."""
    group = db.store.begin_group()
    q.send_message("one")
    db.store.connection().execute("ROLLBACK")
    return group


def test_grouped_writes_are_seen_by_other_connections_only_once_the_group_commits(db_path):
    db = sqsqlite.connect(db_path)
    q = db.create_queue("orders")
    group = db.store.begin_group()
    q.send_message("one")
    q.send_message_batch([{"Id": "a", "MessageBody": "two"}, {"Id": "b", "MessageBody": "three"}])
    assert q.get_queue_attributes(["ApproximateNumberOfMessages"])["ApproximateNumberOfMessages"] == "3"  # the group sees its own
    assert _count(db_path, "orders") == 0
    db.store.end_group(group)
    assert _count(db_path, "orders") == 3
    db.close()


def test_a_write_that_fails_inside_a_group_is_undone_alone(db_path):
    db = sqsqlite.connect(db_path)
    q = db.create_queue("orders")
    group = db.store.begin_group()
    q.send_message("kept")
    with pytest.raises(QueueDoesNotExist):
        db.queue("missing").send_message("lost")
    with pytest.raises(RuntimeError), db.store.write() as tx:
        tx.c.execute("UPDATE queues SET name = 'renamed' WHERE name = 'orders'")
        raise RuntimeError("the caller gave up halfway")
    q.send_message("kept too")
    db.store.end_group(group)
    assert _count(db_path, "orders") == 2
    assert [m.body for m in sqsqlite.connect(db_path).queue("orders").receive_message(max_number_of_messages=10)] == ["kept", "kept too"]
    db.close()


def test_what_a_grouped_write_defers_runs_after_the_commit_and_nothing_is_deferred_outside_a_group(db_path):
    db = sqsqlite.connect(db_path)
    q = db.create_queue("orders")
    ran: list[int] = []
    assert db.store.after_commit(lambda: ran.append(0)) is False  # no group: the caller runs it now
    group = db.store.begin_group()
    assert db.store.after_commit(lambda: ran.append(1)) is False  # nothing written yet: nothing to wait for
    q.send_message("one")
    assert db.store.after_commit(lambda: ran.append(_count(db_path, "orders"))) is True
    assert ran == []
    db.store.end_group(group)
    assert ran == [1]  # ran after the commit: another connection saw the message
    db.close()


def test_a_group_whose_transaction_sqlite_undid_keeps_nothing_and_says_so(db_path):
    db = sqsqlite.connect(db_path)
    q = db.create_queue("orders")
    group = _undone_group(db, q)
    ran: list[bool] = []
    group.after.append(lambda: ran.append(True))
    with pytest.raises(DatabaseError, match="undone"):
        db.store.end_group(group)
    assert ran == [] and _count(db_path, "orders") == 0
    q.send_message("after")  # the thread writes on its own again, the writers' lock let go
    assert _count(db_path, "orders") == 1
    db.close()


def test_a_thread_can_open_one_group_at_a_time(db_path):
    db = sqsqlite.connect(db_path)
    group = db.store.begin_group()
    with pytest.raises(RuntimeError, match="grouped already"):
        db.store.begin_group()
    db.store.end_group(group)
    db.store.end_group(db.store.begin_group())  # a group with no write commits nothing
    db.close()


def test_after_sqlite_undid_a_group_its_later_writes_fail_instead_of_committing_on_their_own(db_path):
    db = sqsqlite.connect(db_path)
    q = db.create_queue("orders")
    group = _undone_group(db, q)
    with pytest.raises(DatabaseError, match="undone"):
        q.send_message("two")  # a savepoint here would have begun (and committed) a transaction of its own
    with pytest.raises(DatabaseError, match="undone"):
        db.store.end_group(group)
    assert _count(db_path, "orders") == 0
    db.close()


def test_a_failing_step_after_a_grouped_commit_does_not_stop_the_others_or_undo_the_commit(db_path, caplog):
    db = sqsqlite.connect(db_path)
    q = db.create_queue("orders")
    ran: list[str] = []
    group = db.store.begin_group()
    q.send_message("one")
    db.store.after_commit(lambda: 1 / 0)
    db.store.after_commit(lambda: ran.append("second"))
    db.store.end_group(group)
    assert ran == ["second"] and _count(db_path, "orders") == 1
    assert "after a grouped commit failed" in caplog.text
    db.close()
