"""The archive of deleted messages: every deleting path keeps what it deletes while the queue's
archive is on, in the same transaction, and nothing while it is off; expiry and dead-lettering
are not deletes; retention prunes it. Timing by the injected clock."""

from __future__ import annotations

import sqlite3

import pytest

import sqsqlite
from sqsqlite.errors import InvalidParameterValue, QueueDoesNotExist

DAY = 86_400


def archived_rows(path) -> list[dict]:
    with sqlite3.connect(path) as conn:
        conn.row_factory = sqlite3.Row
        return [dict(r) for r in conn.execute("SELECT * FROM message_archive ORDER BY id")]


def send(queue, n, **extra):
    for i in range(n):
        queue.send_message(f"m{i}", **extra)


def receive_all(queue, n):
    got = []
    while len(got) < n:
        batch = queue.receive_message(max_number_of_messages=10)
        assert batch
        got += batch
    return got


def _single(db, queue, clock):
    send(queue, 3)
    for m in receive_all(queue, 3):
        m.delete()  # by its claim (the fast path)
    return "delete"


def _single_by_text(db, queue, clock):
    send(queue, 2)
    other = sqsqlite.connect(db.store.path, clock=clock)  # issued elsewhere: the exact path
    try:
        handles = [m.receipt_handle for m in receive_all(other.queue(queue.name), 2)]
    finally:
        other.close()
    for h in handles:
        queue.delete_message(h)
    return "delete"


def _batch(db, queue, clock):
    send(queue, 10)
    got = receive_all(queue, 10)
    queue.delete_message_batch([{"Id": str(i), "ReceiptHandle": m.receipt_handle} for i, m in enumerate(got)])
    return "batch"


def _batch_with_a_superseded_handle(db, queue, clock):
    send(queue, 3)
    got = receive_all(queue, 3)
    handles = [m.receipt_handle for m in got]
    clock.advance(31)
    [again, *_] = queue.receive_message(max_number_of_messages=1)  # supersedes one handle
    result = queue.delete_message_batch([{"Id": str(i), "ReceiptHandle": h} for i, h in enumerate(handles + [again.receipt_handle])])
    # The fast path falls short (one handle superseded); the exact path deletes the rest, and the
    # superseded handle finds its message deleted already: each message archived once.
    assert result.failed == []
    return "batch"


def _batch_by_text_with_the_newest_handle_before_a_superseded_one(db, queue, clock):
    send(queue, 1)
    [old] = queue.receive_message(visibility_timeout=0)
    [new] = queue.receive_message()  # supersedes old's handle
    other = sqsqlite.connect(db.store.path, clock=clock)  # handles it never issued: the exact path
    try:
        result = other.queue(queue.name).delete_message_batch(
            [{"Id": "new", "ReceiptHandle": new.receipt_handle}, {"Id": "old", "ReceiptHandle": old.receipt_handle}]
        )
    finally:
        other.close()
    # The row is deleted once, by the newest handle; the archived copy is the one that handle
    # took, not nothing because the superseded handle came last.
    assert result.failed == []
    return "batch"


def _buffered(db, queue, clock):
    send(queue, 25)
    with queue.buffered() as b:
        for _ in range(25):
            [m] = b.receive_message()
            b.delete_message(m)
    return "buffered"


def _transactional_consumer(db, queue, clock):
    send(queue, 3)
    outcome = sqsqlite.consume(queue, lambda m, tx: None, transaction=True, wait_time_seconds=0, stop_when_empty=True)
    assert outcome.processed == 3
    return "delete"


def _purge(db, queue, clock):
    send(queue, 4)
    queue.receive_message()  # one in flight goes too
    queue.purge_queue()
    return "purge"


def _purge_visible(db, queue, clock):
    send(queue, 3)
    assert queue.purge_visible() == 3
    return "purge"


PATHS = [
    _single,
    _single_by_text,
    _batch,
    _batch_with_a_superseded_handle,
    _batch_by_text_with_the_newest_handle_before_a_superseded_one,
    _buffered,
    _transactional_consumer,
    _purge,
    _purge_visible,
]


@pytest.mark.parametrize("on", [True, False], ids=["on", "off"])
@pytest.mark.parametrize("path", PATHS, ids=lambda p: p.__name__.strip("_"))
def test_every_deleting_path_archives_what_it_deletes_while_on_and_nothing_while_off(db, db_path, clock, path, on):
    queue = db.create_queue("jobs")
    if on:
        db.set_archive(queue.url, 7 * DAY)
    clock.advance(5)
    how = path(db, queue, clock)
    assert queue.peek("all") == []
    rows = archived_rows(db_path)
    if not on:
        assert rows == []
        return
    assert rows and {r["how"] for r in rows} == {how}
    assert len({r["message_id"] for r in rows}) == len(rows)  # each message once
    for r in rows:
        assert r["queue_name"] == "jobs" and r["body"].startswith("m")
        assert r["deleted_at"] == clock.now_ms()
        assert r["expires_at"] == r["deleted_at"] + 7 * DAY * 1000


@pytest.mark.parametrize("on", [True, False], ids=["on", "off"])
def test_a_fifo_queues_deletes_single_and_batch_keep_group_and_deduplication_ids(db, db_path, clock, on):
    q = db.create_queue("f.fifo", attributes={"FifoQueue": "true"})
    if on:
        db.set_archive(q.url, DAY)
    for i in range(2):
        q.send_message(f"f{i}", message_group_id=f"g{i}", message_deduplication_id=f"d{i}")
    [a, b] = q.receive_message(max_number_of_messages=10)
    a.delete()
    q.delete_message_batch([{"Id": "b", "ReceiptHandle": b.receipt_handle}])
    rows = archived_rows(db_path)
    if not on:
        assert rows == [] and q.peek("all") == []
        return
    assert [(r["body"], r["group_id"], r["dedup_id"], r["how"]) for r in rows] == [
        ("f0", "g0", "d0", "delete"),
        ("f1", "g1", "d1", "batch"),
    ]
    assert all(r["sequence_number"] for r in rows)


def test_an_archived_message_keeps_its_body_attributes_ids_counts_and_times(db, clock):
    q = db.create_queue("keep")
    db.set_archive(q.url, DAY)
    sent_at = clock.now_ms()
    q.send_message(
        "hello",
        message_attributes={"tenant": "acme"},
        message_system_attributes={"AWSTraceHeader": {"DataType": "String", "StringValue": "Root=1-abc"}},
    )
    clock.advance(2)
    [m] = q.receive_message(visibility_timeout=1)
    first = clock.now_ms()
    clock.advance(1)
    [m] = q.receive_message()
    clock.advance(3)
    m.delete()
    [a] = db.archived(q.url)
    assert (a.message_id, a.body, a.receive_count) == (m.message_id, "hello", 2)
    assert a.message_attributes["tenant"].string_value == "acme"
    assert a.aws_trace_header == "Root=1-abc"
    assert (a.sent_at, a.first_received_at, a.deleted_at) == (sent_at, first, clock.now_ms())
    assert a.queue_name == "keep" and a.how == "delete" and a.sender_id


def test_a_delete_rolled_back_with_its_transaction_leaves_no_archived_row(db, db_path):
    q = db.create_queue("tx")
    db.set_archive(q.url, DAY)
    q.send_message("x")
    [m] = q.receive_message()
    with pytest.raises(RuntimeError), db.transaction():
        m.delete()
        raise RuntimeError("handler failed")
    assert archived_rows(db_path) == []
    m.delete()
    assert len(archived_rows(db_path)) == 1


@pytest.mark.parametrize("on", [True, False], ids=["on", "off"])
def test_expired_and_dead_lettered_messages_are_not_archived_but_the_dead_letter_queues_own_deletes_are(db, db_path, clock, on):
    dlq = db.create_queue("dlq")
    src = db.create_queue(
        "src", attributes={"MessageRetentionPeriod": "60"}, redrive_policy={"deadLetterTargetArn": dlq.arn, "maxReceiveCount": 1}
    )
    db.set_archive(src.url, DAY)
    if on:
        db.set_archive(dlq.url, DAY)
    src.send_message("poison")
    src.receive_message(visibility_timeout=0)
    assert src.receive_message() == []  # dead-lettered: a move, not a delete
    src.send_message("expires")
    clock.advance(61)
    assert db.prune() == 1  # expired: not a delete either
    assert archived_rows(db_path) == []
    [m] = dlq.receive_message()
    m.delete()
    if not on:  # the source's archive is on, the dead-letter queue's off
        assert archived_rows(db_path) == []
        return
    [row] = archived_rows(db_path)
    assert (row["queue_name"], row["body"]) == ("dlq", "poison")


def test_a_purge_archives_the_live_messages_and_leaves_out_the_expired_ones(db, db_path, clock):
    q = db.create_queue("p", attributes={"MessageRetentionPeriod": "60"})
    db.set_archive(q.url, DAY)
    q.send_message("old")
    clock.advance(61)
    q.send_message("new")
    q.purge_queue()
    assert [r["body"] for r in archived_rows(db_path)] == ["new"]


def test_the_setting_is_no_sqs_attribute_and_reads_back_in_seconds(db):
    q = db.create_queue("s")
    assert db.archive_retention(q.url) is None
    db.set_archive(q.url, 3600)
    assert db.archive_retention(q.url) == 3600
    assert not any("rchive" in k for k in q.get_queue_attributes(["All"]))
    db.set_archive(q.url, None)
    assert db.archive_retention(q.url) is None


@pytest.mark.parametrize("bad", [0, 59, 367 * DAY, "soon", True, -1])
def test_a_retention_out_of_range_is_refused_typed_and_changes_nothing(db, bad):
    q = db.create_queue("r")
    with pytest.raises(InvalidParameterValue):
        db.set_archive(q.url, bad)
    assert db.archive_retention(q.url) is None


def test_setting_the_archive_of_a_queue_that_does_not_exist_is_queue_does_not_exist(db):
    with pytest.raises(QueueDoesNotExist):
        db.set_archive("nope", DAY)


def test_turned_off_new_deletes_are_not_archived_and_what_was_kept_stays_until_it_expires(db, db_path, clock):
    q = db.create_queue("o")
    db.set_archive(q.url, 3600)
    send(q, 2)
    [a, b] = receive_all(q, 2)
    a.delete()
    db.set_archive(q.url, None)
    b.delete()
    assert [r["body"] for r in archived_rows(db_path)] == ["m0"]
    clock.advance(3600)
    db.prune()
    assert archived_rows(db_path) == []


def test_retention_is_pruned_at_prune_and_once_a_minute_at_a_receive_in_bounded_steps(db, db_path, clock, monkeypatch):
    from sqsqlite import defaults as D

    q = db.create_queue("ret")
    db.set_archive(q.url, 60)
    send(q, 5)
    for m in receive_all(q, 5):
        m.delete()
    clock.advance(59)
    q.receive_message()
    db.prune()
    assert len(archived_rows(db_path)) == 5  # not yet
    clock.advance(1)
    monkeypatch.setattr(D, "ARCHIVE_PRUNE_ROWS", 2)
    for _ in range(300):  # a receive's scheduled prune comes every so many receives
        q.receive_message()
        if len(archived_rows(db_path)) < 5:
            break
    for _ in range(300):
        q.receive_message()
    assert len(archived_rows(db_path)) == 3  # one bounded step in the minute
    db.prune()  # the rest, two at a time
    assert archived_rows(db_path) == []


def test_deleting_a_queue_turns_its_archive_off_and_a_new_queue_of_its_name_starts_without_one(db, db_path, clock):
    q = db.create_queue("gone")
    db.set_archive(q.url, DAY)
    q.send_message("x")
    db.delete_queue(q.url)
    assert archived_rows(db_path) == []  # deleted with its queue: no one deleted it
    clock.advance(61)
    again = db.create_queue("gone")
    again.send_message("y")
    [m] = again.receive_message()
    m.delete()
    assert archived_rows(db_path) == []


def test_archived_lists_by_time_range_message_id_group_and_attribute(db, clock):
    q = db.create_queue("look")
    db.set_archive(q.url, DAY)
    q.send_message("a", message_attributes={"tenant": "acme"}, message_group_id="g1")
    q.send_message("b", message_attributes={"tenant": "other"}, message_group_id="g2")
    [ma, mb] = receive_all(q, 2)
    t0 = clock.now_ms()
    ma.delete()
    clock.advance(10)
    mb.delete()
    assert [a.body for a in db.archived(q.url)] == ["a", "b"]
    assert [a.body for a in db.archived(q.url, since=t0 + 1)] == ["b"]
    assert [a.body for a in db.archived(q.url, until=t0 + 1)] == ["a"]
    assert [a.body for a in db.archived(q.url, message_ids=[mb.message_id])] == ["b"]
    assert [a.body for a in db.archived(q.url, group_id="g1")] == ["a"]
    assert [a.body for a in db.archived(q.url, where="tenant=other")] == ["b"]
    assert [a.body for a in db.archived(q.url, limit=1)] == ["a"]
    with pytest.raises(InvalidParameterValue):
        db.archived(q.url, where="tenant")
    with pytest.raises(InvalidParameterValue):
        db.archived(q.url, since=5, until=5)
    with pytest.raises(InvalidParameterValue):
        db.archived(q.url, newest_first=1)
    assert [a.body for a in db.archived(q.url, newest_first=True)] == ["b", "a"]


def test_the_archives_pruning_listing_and_replay_walk_their_index_never_the_whole_table(db, db_path):
    from sqsqlite import queries as Q
    from tests.unit.test_queries import _plan

    db.create_queue("plans")
    with sqlite3.connect(db_path) as conn:
        for name in ("ARCHIVE_QUEUE_AFTER", "ARCHIVE_HEAD_EXPIRES", "PRUNE_ARCHIVE", "ARCHIVE_PAGE", "REPLAY_ORDER"):
            plan = " ".join(_plan(conn, getattr(Q, name)))
            assert "INDEX ix_message_archive_deleted (queue_id" in plan, (name, plan)
            assert "SCAN message_archive" not in plan, (name, plan)


def test_pruning_goes_queue_by_queue_and_a_queue_whose_oldest_has_not_expired_keeps_everything(db, db_path, clock):
    short, long = db.create_queue("short"), db.create_queue("long")
    db.set_archive(long.url, 3600)
    db.set_archive(short.url, 60)
    for q in (long, short):
        send(q, 3)
        for m in receive_all(q, 3):
            m.delete()
    clock.advance(60)
    db.prune()
    assert {r["queue_name"] for r in archived_rows(db_path)} == {"long"}
    db.set_archive(long.url, 60)  # shorter now: what it archives next waits for its older rows
    send(long, 1)
    [m] = receive_all(long, 1)
    m.delete()
    clock.advance(60)
    db.prune()
    assert len(archived_rows(db_path)) == 4
    clock.advance(3600)
    db.prune()
    assert archived_rows(db_path) == []


@pytest.mark.parametrize(
    "bad",
    [{"where": ("a",)}, {"where": 5}, {"where": ("a", 1)}, {"message_ids": None}, {"message_ids": [1]}, {"group_id": 5}],
    ids=repr,
)
def test_archived_and_replay_refuse_a_malformed_filter_as_invalid_parameter_value(db, bad):
    q = db.create_queue("orders")
    db.set_archive(q.url, DAY)
    send(q, 1)
    for m in receive_all(q, 1):
        m.delete()
    with pytest.raises(InvalidParameterValue):
        db.archived(q.url, **bad)
    with pytest.raises(InvalidParameterValue):
        db.replay(q.url, **bad)
    assert q.peek("all") == [] and len(db.archived(q.url)) == 1  # nothing sent


def test_a_replays_transaction_fetches_its_rows_by_id_and_sorts_nothing_under_the_write_lock(db, db_path):
    from sqsqlite import queries as Q
    from tests.unit.test_queries import _plan

    db.create_queue("plans")
    with sqlite3.connect(db_path) as conn:
        plan = " ".join(_plan(conn, Q.REPLAY_ROWS))
    assert "USING INTEGER PRIMARY KEY" in plan and "TEMP B-TREE" not in plan and "SCAN message_archive" not in plan, plan
