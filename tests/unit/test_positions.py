"""A message's id, its position, is never given out twice, whatever deleted the newest message.

messages.id is a plain rowid (migration 0013), from a range of ids per queue (0014): a message
arriving in a queue, sent or moved in, takes the next id of the queue's range above its highest
row and above the range's message_positions mark, which every deletion of messages keeps
(statements keep_high_water after it, raise_high_water before a bulk one). Each case deletes the
queue's newest message by one path, then sends: the new message's position must be above it.
"""

import re
import sqlite3

import pytest

import sqsqlite
from sqsqlite import queries as Q
from sqsqlite.errors import ReceiptHandleIsInvalid

FIFO = {"FifoQueue": "true", "ContentBasedDeduplication": "true"}


def _positions(path):
    with sqlite3.connect(path) as conn:
        return [row[0] for row in conn.execute("SELECT id FROM messages")]


def _received(q, body, **kwargs):
    [m] = [m for m in q.receive_message(max_number_of_messages=10, **kwargs) if m.body == body]
    return m


def _by_claim(db, db_path, clock, q):
    _received(q, "m2").delete()


def _by_handle_text_elsewhere(db, db_path, clock, q):
    handle = _received(q, "m2").receipt_handle
    other = sqsqlite.connect(db_path, clock=clock)  # another process: none of its handles remembered
    try:
        other.queue(q.name).delete_message(handle)
    finally:
        other.close()


def _by_batch(db, db_path, clock, q):
    got = q.receive_message(max_number_of_messages=10)
    q.delete_message_batch([{"Id": str(i), "ReceiptHandle": m.receipt_handle} for i, m in enumerate(got)])


def _by_batch_elsewhere(db, db_path, clock, q):
    got = q.receive_message(max_number_of_messages=10)
    other = sqsqlite.connect(db_path, clock=clock)
    try:
        other.queue(q.name).delete_message_batch([{"Id": str(i), "ReceiptHandle": m.receipt_handle} for i, m in enumerate(got)])
    finally:
        other.close()


def _by_buffered_consumer(db, db_path, clock, q):
    with q.buffered(prefetch=20) as b:
        for _ in range(3):
            b.receive_message()[0].delete()


def _by_buffered_claims(db, db_path, clock, q):
    with q.buffered(prefetch=20) as b:
        got = [b.receive_message()[0] for _ in range(3)]
        b.delete_message_batch([{"Id": str(i), "ReceiptHandle": m} for i, m in enumerate(got)])


def _by_purge(db, db_path, clock, q):
    q.purge_queue()


def _by_purge_visible(db, db_path, clock, q):
    q.purge_visible()


def _by_deleting_the_queue(db, db_path, clock, q):
    db.delete_queue(q.url)
    clock.advance(61)
    db.create_queue(q.name, attributes={"FifoQueue": "true"} if q.fifo else {})


def _by_expiry_on_receive(db, db_path, clock, q):
    clock.advance(61)
    other = sqsqlite.connect(db_path, clock=clock)  # its first receive prunes the expired
    try:
        assert other.queue(q.name).receive_message() == []
    finally:
        other.close()


def _by_prune(db, db_path, clock, q):
    clock.advance(61)
    assert db.prune() == 3


STANDARD = [
    _by_claim,
    _by_handle_text_elsewhere,
    _by_batch,
    _by_batch_elsewhere,
    _by_buffered_consumer,
    _by_buffered_claims,
    _by_purge,
    _by_purge_visible,
    _by_deleting_the_queue,
    _by_expiry_on_receive,
    _by_prune,
]
FIFO_WAYS = [_by_claim, _by_handle_text_elsewhere, _by_batch, _by_batch_elsewhere, _by_purge, _by_expiry_on_receive, _by_prune]


@pytest.mark.parametrize(
    ("fifo", "delete"),
    [(False, d) for d in STANDARD] + [(True, d) for d in FIFO_WAYS],
    ids=lambda v: ("fifo" if v else "standard") if isinstance(v, bool) else v.__name__[4:].replace("_", " "),
)
def test_a_message_sent_after_the_newest_was_deleted_gets_a_position_above_it(db, db_path, clock, fifo, delete):
    name = "q.fifo" if fifo else "q"
    q = db.create_queue(name, attributes={**(FIFO if fifo else {}), "VisibilityTimeout": "30", "MessageRetentionPeriod": "60"})
    for i in range(3):
        if fifo:
            q.send_message(f"m{i}", message_group_id=f"g{i}")
        else:
            q.send_message(f"m{i}")
    before = _positions(db_path)
    delete(db, db_path, clock, q)
    assert max(_positions(db_path), default=0) < max(before)  # the newest is gone
    q = db.queue(name)
    if fifo:
        q.send_message("next", message_group_id="g")
    else:
        q.send_message("next")
    assert max(_positions(db_path)) > max(before)


def test_a_deletion_below_the_newest_message_writes_no_mark(db, db_path):
    q = db.create_queue("q")
    q.send_message_batch([{"Id": str(i), "MessageBody": f"m{i}"} for i in range(3)])
    for m in q.receive_message(max_number_of_messages=10):
        if m.body != "m2":
            m.delete()
    with sqlite3.connect(db_path) as conn:
        assert conn.execute("SELECT highest_removed FROM message_positions").fetchall() == [(0,)]


def test_every_statement_that_deletes_messages_is_one_the_engine_keeps_the_mark_after():
    # A new one must be followed by rules.keep_high_water (returning the ids it took) or
    # preceded by rules.raise_high_water, and be listed here.
    deleting = {n for n in dir(Q) if isinstance(getattr(Q, n), Q.Sql) and re.match(r"\s*DELETE FROM messages\b", getattr(Q, n))}
    deleting |= {n for n in ("DELETE_CLAIMED_ROWS", "DELETE_CLAIMED_FIFO_ROWS") if re.match(r"DELETE FROM messages\b", getattr(Q, n)[1])}
    returning_ids = {
        "delete_expired_heads",
        "delete_message",
        "delete_by_handle",
        "prune_expired",
        "prune_all_expired",
        "DELETE_CLAIMED_FIFO_ROWS",
    }
    by_listed_ids = {"delete_standard_by_handle", "DELETE_CLAIMED_ROWS", "DELETE_CLAIMED_MANY"}
    bulk = {"delete_queue_messages", "purge_visible"}
    assert deleting == returning_ids | by_listed_ids | bulk
    for name in returning_ids - {"DELETE_CLAIMED_FIFO_ROWS"}:
        assert re.search(r"RETURNING id\b", getattr(Q, name)), name


def test_a_reader_of_a_dead_letter_queue_misses_no_message_that_arrives_after_its_last_position(db, db_path, clock):
    # The dead-letter queue is made first, so its range of ids is below its source's: a
    # message moved in takes a position of the dead-letter queue's own, above every one there.
    dlq = db.create_queue("dlq")
    source = db.create_queue("source", attributes={"RedrivePolicy": f'{{"deadLetterTargetArn": "{dlq.arn}", "maxReceiveCount": "1"}}'})
    dlq.send_message("sent first")
    source.send_message("poison")
    source.receive_message(visibility_timeout=0)
    assert source.receive_message() == []  # its second receive moved it
    read = list(dlq.message_records())
    assert [r["Body"] for _, r in read] == ["sent first", "poison"]
    dlq.send_message("sent after")
    assert [r["Body"] for _, r in dlq.message_records(after=read[-1][0])] == ["sent after"]


def test_a_handle_of_a_message_moved_to_the_dead_letter_queue_is_refused_and_leaves_it_there(db, clock):
    dlq = db.create_queue("dlq")
    source = db.create_queue("source", attributes={"RedrivePolicy": f'{{"deadLetterTargetArn": "{dlq.arn}", "maxReceiveCount": "1"}}'})
    source.send_message("poison")
    [m] = source.receive_message(visibility_timeout=0)
    assert source.receive_message() == []
    with pytest.raises(ReceiptHandleIsInvalid):
        source.delete_message(m.receipt_handle)
    assert [m.body for m in dlq.peek("all")] == ["poison"]


def test_a_move_task_leaves_a_message_dead_lettered_after_it_started_for_the_next_task(db, clock):
    dlq = db.create_queue("dlq")
    source = db.create_queue("source", attributes={"RedrivePolicy": f'{{"deadLetterTargetArn": "{dlq.arn}", "maxReceiveCount": "1"}}'})
    source.send_message("sent before the task")
    source.receive_message(visibility_timeout=0)
    dlq.send_message("sent to the dead-letter queue")
    task = db.start_message_move_task(dlq.arn, background=False)
    assert source.receive_message() == []  # moves the first message: after the task started
    db.run_message_move_task(task)
    assert sorted(m.body for m in dlq.peek("all")) == ["sent before the task", "sent to the dead-letter queue"]
    assert source.peek("all") == []
