"""CloudWatch's per-minute counters kept in the file, once the file's history is on: they equal
the operations performed, move with the transaction that did them, and are kept exactly the
history's retention. Off (the default), nothing is written."""

import json
import sqlite3

import pytest

import sqsqlite
from sqsqlite import defaults as D

MINUTE = D.HISTORY_MINUTE_MS
COUNTERS = (
    "sent",
    "bytes_sent",
    "received",
    "redelivered",
    "empty_receives",
    "deleted",
    "dead_lettered",
    "moved_in",
    "expired",
    "purged",
    "moved",
)


@pytest.fixture(autouse=True)
def history_on(db):
    """The counting tests run on a file whose history is on, as a user turns it on."""
    db.set_history_retention(D.HISTORY_RETENTION_SECONDS)


def totals(db, name):
    """The queue's counters summed over the history kept (and its pruned totals)."""
    return {k: v for k, v in db.history_totals().get(name, dict.fromkeys(COUNTERS, 0)).items() if v}


def test_sends_receives_deletes_and_empty_receives_are_counted_as_done(db, queue, clock):
    queue.send_message("a")  # 1 byte
    queue.send_message("bb", message_attributes={"k": {"DataType": "String", "StringValue": "v"}})
    queue.send_message_batch([{"Id": str(i), "MessageBody": "ccc"} for i in range(5)])
    first = queue.receive_message(max_number_of_messages=10, visibility_timeout=30)
    assert len(first) == 7
    queue.delete_message(first[0])
    queue.delete_message(first[0])  # again: deletes nothing, counts nothing
    queue.delete_message_batch([{"Id": str(i), "ReceiptHandle": m.receipt_handle} for i, m in enumerate(first[1:3])])
    assert queue.receive_message() == []  # an empty receive
    clock.advance(31)
    again = queue.receive_message(max_number_of_messages=10)  # the four left, redelivered
    assert len(again) == 4
    buffered = queue.buffered()
    clock.advance(31)
    got = [buffered.receive_message()[0] for _ in range(4)]
    for m in got:
        buffered.delete_message(m)
    buffered.close()
    size_bb = len("bb") + len("k") + len("String") + len("v")
    assert totals(db, "orders") == {
        "sent": 7,
        "bytes_sent": 1 + size_bb + 15,
        "received": 7,
        "redelivered": 8,
        "empty_receives": 1,
        "deleted": 7,
    }


def test_a_delete_batch_counts_every_message_it_deletes_when_one_of_its_handles_deletes_nothing(db, db_path, queue, clock):
    other = sqsqlite.connect(db_path, clock=clock)  # holds text handles only: no remembered claims
    for deleter in (queue, other.queue("orders")):
        queue.send_message_batch([{"Id": str(i), "MessageBody": f"m{i}"} for i in range(3)])
        handles = [m.receipt_handle for m in queue.receive_message(max_number_of_messages=10)]
        deleter.delete_message(handles[0])
        result = deleter.delete_message_batch([{"Id": str(i), "ReceiptHandle": h} for i, h in enumerate(handles)])
        assert (len(result.successful), result.failed) == (3, [])
    other.close()
    assert queue.peek() == []
    assert totals(db, "orders")["deleted"] == 6


def test_a_long_poll_that_ends_empty_is_one_empty_receive_however_many_rounds_it_took(db, queue, clock):
    queue.send_message("later", delay_seconds=5)  # wakes the poll once, before its end
    assert [m.body for m in queue.receive_message(wait_time_seconds=10)] == ["later"]
    assert queue.receive_message(wait_time_seconds=3) == []
    assert totals(db, "orders") == {"sent": 1, "bytes_sent": 5, "received": 1, "empty_receives": 1}


def test_each_minute_has_its_own_row_with_the_backlog_sampled_at_its_first_operation(db, queue, clock):
    start = clock.now_ms() - clock.now_ms() % MINUTE
    clock.set(start + 1000)
    queue.send_message_batch([{"Id": str(i), "MessageBody": "m"} for i in range(3)])
    queue.receive_message(visibility_timeout=600)
    clock.set(start + MINUTE + 5000)
    queue.send_message("n", delay_seconds=60)
    rows = db.history(start)
    assert [(r["minute"], r["sent"], r["received"]) for r in rows] == [(start, 3, 1), (start + MINUTE, 1, 0)]
    # The first minute's sample follows its first operation (the batch); the second's its send.
    assert [(r["visible"], r["in_flight"], r["delayed"], r["oldest_age"]) for r in rows] == [(3, 0, 0, 0), (2, 1, 1, 64)]


def test_a_rolled_back_transaction_leaves_the_counters_as_they_were(db, queue):
    queue.send_message("kept")
    with pytest.raises(RuntimeError), db.transaction():
        queue.send_message_batch([{"Id": "1", "MessageBody": "gone"}])
        [m] = queue.receive_message(max_number_of_messages=1)
        queue.delete_message(m)
        raise RuntimeError("undo")
    assert totals(db, "orders") == {"sent": 1, "bytes_sent": 4}
    with db.transaction():
        [m] = queue.receive_message()
        queue.delete_message(m)
    assert totals(db, "orders") == {"sent": 1, "bytes_sent": 4, "received": 1, "deleted": 1}


def test_a_dead_letter_move_counts_on_the_source_and_arrives_on_the_dead_letter_queue(db, queue, clock):
    dlq = db.create_queue("orders-dlq")
    queue.set_queue_attributes({"RedrivePolicy": json.dumps({"deadLetterTargetArn": dlq.arn, "maxReceiveCount": "1"})})
    queue.send_message_batch([{"Id": str(i), "MessageBody": "x"} for i in range(3)])
    assert len(queue.receive_message(max_number_of_messages=10, visibility_timeout=0)) == 3
    assert queue.receive_message(max_number_of_messages=10) == []  # all three moved: not an empty receive's round
    assert totals(db, "orders") == {"sent": 3, "bytes_sent": 3, "received": 3, "dead_lettered": 3, "empty_receives": 1}
    assert totals(db, "orders-dlq") == {"moved_in": 3}
    # A move task sends them back: moved from the dead-letter queue, arrived at the source.
    db.start_message_move_task(dlq.arn, background=False)
    [task] = db.list_message_move_tasks(dlq.arn)
    db.run_message_move_task(task.task_handle)
    assert totals(db, "orders-dlq") == {"moved_in": 3, "moved": 3}
    assert totals(db, "orders") == {"sent": 3, "bytes_sent": 3, "received": 3, "dead_lettered": 3, "empty_receives": 1, "moved_in": 3}


def test_a_purge_counts_the_live_messages_purged_and_the_expired_ones_as_expired(db, queue, clock):
    queue.set_queue_attributes({"MessageRetentionPeriod": "60"})
    queue.send_message("old")
    clock.advance(61)
    queue.send_message_batch([{"Id": str(i), "MessageBody": "new"} for i in range(2)])
    queue.purge_queue()
    assert totals(db, "orders") == {"sent": 3, "bytes_sent": 9, "purged": 2, "expired": 1}


def test_messages_past_their_retention_are_counted_expired_when_removed_by_a_receive_or_prune(db, clock):
    standard = db.create_queue("s", {"MessageRetentionPeriod": "60"})
    fifo = db.create_queue("f.fifo", {"FifoQueue": "true", "ContentBasedDeduplication": "true", "MessageRetentionPeriod": "60"})
    other = db.create_queue("p", {"MessageRetentionPeriod": "60"})
    standard.send_message_batch([{"Id": str(i), "MessageBody": str(i)} for i in range(4)])
    fifo.send_message_batch([{"Id": str(i), "MessageBody": str(i), "MessageGroupId": "g"} for i in range(3)])
    other.send_message("p")
    clock.advance(61)
    assert standard.receive_message() == [] and fifo.receive_message() == []
    assert db.prune() == 1
    assert totals(db, "s") == {"sent": 4, "bytes_sent": 4, "expired": 4, "empty_receives": 1}
    assert totals(db, "f.fifo") == {"sent": 3, "bytes_sent": 3, "expired": 3, "empty_receives": 1}
    assert totals(db, "p") == {"sent": 1, "bytes_sent": 1, "expired": 1}


def test_a_fifo_send_deduplicated_is_not_sent_again(db):
    q = db.create_queue("f.fifo", {"FifoQueue": "true"})
    for _ in range(2):
        q.send_message("x", message_group_id="g", message_deduplication_id="d")
    q.send_message_batch([{"Id": str(i), "MessageBody": "yy", "MessageGroupId": "g", "MessageDeduplicationId": "e"} for i in range(3)])
    assert totals(db, "f.fifo") == {"sent": 2, "bytes_sent": 3}


def test_pruning_keeps_exactly_the_retention_and_the_totals(db, queue, clock):
    db.set_history_retention(3600)
    assert db.history_retention == 3600
    start = clock.now_ms() - clock.now_ms() % MINUTE
    for k in range(70):  # one send in each of 70 minutes
        clock.set(start + k * MINUTE)
        queue.send_message("m")
    before = totals(db, "orders")
    now = start + 69 * MINUTE + 30_000
    clock.set(now)
    db.prune()
    kept = [r["minute"] for r in db.history(1)]
    # A minute stays while any of it is within the last hour: it ends after now - 3600 s.
    assert kept == [m for m in (start + k * MINUTE for k in range(70)) if m + MINUTE > now - 3_600_000]
    assert len(kept) == 61
    assert totals(db, "orders") == before  # the pruned minutes' counts are in the totals row
    with sqlite3.connect(db.store.path) as conn:
        assert conn.execute("SELECT count(*) FROM queue_history WHERE minute = 0").fetchone() == (1,)


def test_a_connection_prunes_old_minutes_as_it_counts_a_new_one(db, queue, clock):
    db.set_history_retention(3600)
    start = clock.now_ms() - clock.now_ms() % MINUTE
    clock.set(start)
    queue.send_message("a")
    clock.set(start + 62 * MINUTE)
    queue.send_message("b")
    assert [r["minute"] for r in db.history(1)] == [start + 62 * MINUTE]
    assert totals(db, "orders")["sent"] == 2


def test_the_history_retention_is_refused_outside_its_range_changing_nothing(db):
    with pytest.raises(sqsqlite.errors.InvalidParameterValue):
        db.set_history_retention(3599)
    with pytest.raises(sqsqlite.errors.InvalidParameterValue):
        db.set_history_retention(-1)
    assert db.history_retention == D.HISTORY_RETENTION_SECONDS


def test_an_old_file_counts_from_its_upgrade(tmp_path, clock):
    from sqsqlite import migrate
    from sqsqlite.store import Store

    path = str(tmp_path / "old.db")
    store = Store(path)
    store.close()
    db = sqsqlite.connect(path, clock=clock)
    db.set_history_retention(D.HISTORY_RETENTION_SECONDS)
    db.create_queue("q").send_message("before")
    db.close()
    store = Store(path)
    migrate.downgrade(store, "0010")  # the history is statistics: dropped without --force
    store.close()
    db = sqsqlite.connect(path, clock=clock)  # upgraded again: the history starts empty
    assert db.history_totals() == {}
    db.queue("q").send_message("after")
    assert totals(db, "q") == {"sent": 1, "bytes_sent": 5}
    db.close()


def test_an_import_counts_as_messages_moved_in_and_an_export_counts_nothing(db, queue):
    queue.send_message_batch([{"Id": str(i), "MessageBody": "x"} for i in range(3)])
    records = list(queue.export_messages())
    other = db.create_queue("copy")
    assert other.import_messages(records) == 3
    assert totals(db, "copy") == {"moved_in": 3}
    assert totals(db, "orders") == {"sent": 3, "bytes_sent": 3}
