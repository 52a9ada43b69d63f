"""The per-minute history is off unless the file's setting turns it on: off, no operation writes,
samples or prunes anything; the switch is the file's, seen by every connection's next write."""

import json
import sqlite3

import pytest

import sqsqlite
from sqsqlite import defaults as D


def history_rows(path: str) -> int:
    with sqlite3.connect(path) as conn:
        return conn.execute("SELECT count(*) FROM queue_history").fetchone()[0]


def every_counted_operation(db, clock) -> None:
    """A send, batches, receives (one empty), deletes, a dead-letter move, an expiry, a purge,
    an import and a move task: each a counted operation when the history is on."""
    dlq = db.create_queue("dead")
    q = db.create_queue("work", {"MessageRetentionPeriod": "60"})
    q.set_queue_attributes({"RedrivePolicy": json.dumps({"deadLetterTargetArn": dlq.arn, "maxReceiveCount": "1"})})
    q.send_message("a")
    q.send_message_batch([{"Id": str(i), "MessageBody": "b"} for i in range(3)])
    got = q.receive_message(max_number_of_messages=2, visibility_timeout=0)
    q.delete_message(got[0])
    q.receive_message(max_number_of_messages=10, visibility_timeout=30)  # the other one past maxReceiveCount
    assert q.receive_message() == []  # empty
    clock.advance(61)
    q.receive_message()  # their retention passed: removed as expired
    db.prune()
    q.send_message("c")
    q.purge_queue()
    q.send_message("d")
    q.purge_visible()
    copy = db.create_queue("copy")
    copy.import_messages(list(dlq.export_messages()))
    db.start_message_move_task(dlq.arn, background=False)
    [task] = db.list_message_move_tasks(dlq.arn)
    db.run_message_move_task(task.task_handle)


def test_the_history_is_off_by_default_and_no_operation_writes_a_row(db, clock):
    assert db.history_retention == 0
    every_counted_operation(db, clock)
    assert history_rows(db.store.path) == 0
    assert db.history(0) == [] and db.history_totals() == {}


def test_turned_on_the_same_operations_are_counted(db, clock):
    db.set_history_retention(D.HISTORY_RETENTION_SECONDS)
    every_counted_operation(db, clock)
    totals = db.history_totals()
    assert (totals["work"]["sent"], totals["work"]["dead_lettered"], totals["dead"]["moved"], totals["copy"]["moved_in"]) == (6, 1, 1, 1)


def test_off_a_write_runs_no_statement_for_the_history_not_even_to_read_the_setting(db, queue):
    # The connection reads the history's setting once, at its first write, and the archive's
    # at its first delete, and caches them.
    queue.send_message("warm")
    queue.delete_message(queue.receive_message()[0])
    statements: list[str] = []
    db.store.connection().set_trace_callback(statements.append)
    try:
        queue.send_message("a")
        queue.send_message_batch([{"Id": str(i), "MessageBody": "b"} for i in range(3)])
        for m in queue.receive_message(max_number_of_messages=10):
            queue.delete_message(m)
        assert queue.receive_message() == []
    finally:
        db.store.connection().set_trace_callback(None)
    assert statements
    assert not [s for s in statements if "queue_history" in s or "meta" in s]


def test_the_switch_is_seen_by_another_connections_next_write(db_path, clock):
    mine = sqsqlite.connect(db_path, clock=clock)
    other = sqsqlite.connect(db_path, clock=clock)  # as another process
    q = mine.create_queue("jobs")
    q.send_message("not counted")
    other.set_history_retention(14 * 86_400)
    q.send_message("counted")
    assert mine.history_totals()["jobs"]["sent"] == 1
    other.set_history_retention(0)
    q.send_message("not counted again")
    assert history_rows(db_path) == 0 and mine.history_retention == 0
    mine.close()
    other.close()


def test_a_delete_by_a_remembered_handle_sees_the_switch_within_a_second(db_path, clock):
    mine = sqsqlite.connect(db_path, clock=clock)
    other = sqsqlite.connect(db_path, clock=clock)
    q = mine.create_queue("jobs")
    q.send_message_batch([{"Id": str(i), "MessageBody": "m"} for i in range(2)])
    got = q.receive_message(max_number_of_messages=2, visibility_timeout=600)  # the setting read: off
    other.set_history_retention(3600)
    clock.advance(D.HISTORY_SETTING_RECHECK_MS / 1000)
    q.delete_message(got[0])  # reads no queue row: checks the setting once its cache is a second old
    assert mine.history_totals()["jobs"]["deleted"] == 1
    mine.close()
    other.close()


def test_turning_it_off_removes_the_rows_kept_a_bounded_number_a_transaction(db, queue, clock, monkeypatch):
    db.set_history_retention(3600)
    for _ in range(5):  # five minutes' rows
        queue.send_message("m")
        clock.advance(60)
    assert history_rows(db.store.path) == 5
    monkeypatch.setattr(D, "HISTORY_PRUNE_ROWS", 2)
    db.set_history_retention(0)
    assert history_rows(db.store.path) == 0 and db.history_retention == 0


def test_turned_on_again_while_its_rows_are_being_cleared_the_counts_made_since_stay(db_path, db, queue, clock, monkeypatch):
    import contextlib

    db.set_history_retention(3600)
    for _ in range(3):  # three minutes' rows, then it goes off
        queue.send_message("old")
        clock.advance(60)
    other = sqsqlite.connect(db_path, clock=clock)  # another process
    monkeypatch.setattr(D, "HISTORY_PRUNE_ROWS", 1)
    write, writes = db.store.write, []

    @contextlib.contextmanager
    def interleaved(*args, **kwargs):
        writes.append(1)
        if len(writes) == 3:  # between two of the clearing transactions
            other.set_history_retention(3600)
            clock.advance(60)
            other.queue("orders").send_message("new")
        with write(*args, **kwargs) as tx:
            yield tx

    monkeypatch.setattr(db.store, "write", interleaved)
    db.set_history_retention(0)
    assert db.history_retention == 3600
    assert [(r["sent"], r["bytes_sent"]) for r in db.history(0)] == [(1, 3)]  # the old rows gone, the new one kept
    other.close()


@pytest.mark.parametrize("seconds", [1, 3599, 10 * 366 * 86_400 + 1, True, "14d"])
def test_a_retention_out_of_range_is_refused_changing_nothing(db, seconds):
    with pytest.raises(sqsqlite.errors.InvalidParameterValue):
        db.set_history_retention(seconds)
    assert db.history_retention == 0
