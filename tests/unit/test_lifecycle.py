"""The lifecycle rules of issue 2 section 5 (a-h), each on a ManualClock: no sleeps."""

import json
import sqlite3

import pytest

import sqsqlite
from sqsqlite import defaults as D
from sqsqlite.errors import (
    InvalidParameterValue,
    MessageNotInflight,
    OverLimit,
    ReceiptHandleIsInvalid,
    ResourceNotFoundException,
)

DAY = 86_400
COUNTS = ["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible", "ApproximateNumberOfMessagesDelayed"]


def counts(q):
    """(visible, in flight, delayed), read without receiving."""
    attrs = q.get_queue_attributes(COUNTS)
    return tuple(int(attrs[n]) for n in COUNTS)


def receive_one(q, **kw):
    got = q.receive_message(**kw)
    assert len(got) == 1, got
    return got[0]


def with_dlq(db, max_receive_count=2, source_attrs=None, dlq_attrs=None):
    dlq = db.create_queue("dead", attributes=dlq_attrs or {})
    policy = json.dumps({"deadLetterTargetArn": dlq.arn, "maxReceiveCount": max_receive_count})
    src = db.create_queue("work", attributes={"RedrivePolicy": policy, **(source_attrs or {})})
    return src, dlq


# ------------------------------------------------------------------ a. visibility


def test_a_received_message_is_hidden_until_its_timeout_then_returned_with_a_new_handle_and_count_plus_one(db, clock):
    q = db.create_queue("a", visibility_timeout=30)
    q.send_message("job")
    first = receive_one(q)
    assert first.receive_count == 1
    assert counts(q) == (0, 1, 0)
    clock.advance(29.999)
    assert q.receive_message() == []
    clock.advance(0.001)
    second = receive_one(q)
    assert second.message_id == first.message_id
    assert second.receive_count == 2
    assert second.receipt_handle != first.receipt_handle
    assert second.first_receive_timestamp == first.first_receive_timestamp


def test_one_receive_never_returns_the_same_message_to_two_receivers(db):
    q = db.create_queue("a2")
    for i in range(20):
        q.send_message(f"m{i}")
    seen = [m.message_id for _ in range(4) for m in q.receive_message(max_number_of_messages=10)]
    assert len(seen) == len(set(seen)) == 20


def test_the_visibility_timeout_starts_when_the_receive_returns_not_before_it_waited_for_the_lock(db, db_path, clock):
    import threading
    import time

    q = db.create_queue("waits", attributes={"VisibilityTimeout": "30"})
    q.send_message("m")
    other = sqsqlite.connect(db_path, clock=clock)
    holding, done = threading.Event(), threading.Event()

    def long_write():  # another writer holds the writers' lock for 20 s of the queue's time
        with other.store.write():
            holding.set()
            time.sleep(0.2)  # real time, bounded: let the receive start waiting for the lock
            clock.advance(20)
        done.set()

    t = threading.Thread(target=long_write)
    t.start()
    holding.wait(5)
    [m] = q.receive_message()
    t.join(5)
    assert done.is_set() and m.visible_at == clock.now_ms() + 30_000
    other.close()


# ------------------------------------------------------------------ b. receipt handles


def test_every_receive_issues_a_fresh_unguessable_handle(db):
    q = db.create_queue("b")
    q.send_message("x")
    handles = set()
    for _ in range(50):
        m = receive_one(q, visibility_timeout=0)
        handles.add(m.receipt_handle)
    assert len(handles) == 50
    # The handle carries a 16-byte random token and a MAC: far beyond 128 bits of guessing.
    raw = bytes.fromhex(m.receipt_handle)
    assert len(raw) >= 16 + 16


def test_a_superseded_handle_can_neither_delete_nor_extend_the_message(db, clock):
    q = db.create_queue("b2", visibility_timeout=30)
    q.send_message("x")
    old = receive_one(q)
    clock.advance(30)
    new = receive_one(q)
    with pytest.raises(ReceiptHandleIsInvalid) as err:
        q.delete_message(old.receipt_handle)
    assert "received again" in str(err.value)
    with pytest.raises(ReceiptHandleIsInvalid):
        q.change_message_visibility(old.receipt_handle, 0)
    # Untouched: still in flight under the new handle, which still works.
    assert counts(q) == (0, 1, 0)
    [peeked] = q.peek("in-flight")
    assert peeked.visible_at == clock.now_ms() + 30_000 and peeked.receive_count == 2
    q.change_message_visibility(new.receipt_handle, 5)
    q.delete_message(new.receipt_handle)
    assert counts(q) == (0, 0, 0)


def test_a_superseded_handle_is_refused_even_after_the_new_holder_lets_go(db, clock):
    q = db.create_queue("b3", visibility_timeout=30)
    q.send_message("x")
    old = receive_one(q)
    clock.advance(30)
    receive_one(q)
    clock.advance(30)  # nobody holds it now, but old was superseded
    with pytest.raises(ReceiptHandleIsInvalid):
        q.delete_message(old.receipt_handle)
    assert counts(q) == (1, 0, 0)


@pytest.mark.parametrize("attributes", [{}, {"FifoQueue": "true", "ContentBasedDeduplication": "true"}], ids=["standard", "fifo"])
def test_a_superseded_handle_of_a_deleted_message_reads_as_deleted_again_in_a_batch_too(db, clock, attributes):
    # The row is gone, so the last handle and a superseded one can't be told apart: both succeed
    # and change nothing, whether the newest deleted it in an earlier call or earlier in the batch.
    fifo = bool(attributes)
    q = db.create_queue("b5.fifo" if fifo else "b5", attributes={"VisibilityTimeout": "30", **attributes})
    group = {"message_group_id": "g"} if fifo else {}
    for body in ("x", "y"):
        q.send_message(body, **group)
        old = receive_one(q)
        clock.advance(30)
        new = receive_one(q)
        entries = [{"Id": "old", "ReceiptHandle": old.receipt_handle}, {"Id": "new", "ReceiptHandle": new.receipt_handle}]
        result = q.delete_message_batch(entries if body == "x" else entries[::-1])
        assert sorted(s["Id"] for s in result.successful) == ["new", "old"] and result.failed == []
        assert counts(q) == (0, 0, 0)


def _flip(handle: str, i: int) -> str:
    raw = bytearray.fromhex(handle)
    raw[i] ^= 0x01
    return raw.hex()


def test_a_forged_handle_is_refused_and_touches_nothing(db):
    q = db.create_queue("b4")
    q.send_message("x")
    m = receive_one(q)
    raw_len = len(bytes.fromhex(m.receipt_handle))
    forged = [
        "",
        "nonsense",
        "A" * 300,
        m.receipt_handle[:-2],
        m.receipt_handle + "AA",
        m.receipt_handle.upper(),
        m.receipt_handle[:-2] + " a",
    ]
    forged += [_flip(m.receipt_handle, i) for i in range(raw_len)]
    for handle in forged:
        with pytest.raises((ReceiptHandleIsInvalid, sqsqlite.errors.MissingParameter)):
            q.delete_message(handle)
        with pytest.raises((ReceiptHandleIsInvalid, sqsqlite.errors.MissingParameter)):
            q.change_message_visibility(handle, 0)
    assert counts(q) == (0, 1, 0)
    m.delete()


def test_a_handle_from_another_queue_or_another_database_is_refused(db, clock, tmp_path):
    a, b = db.create_queue("qa"), db.create_queue("qb")
    a.send_message("in a")
    b.send_message("in b")
    ma, mb = receive_one(a), receive_one(b)
    with pytest.raises(ReceiptHandleIsInvalid) as err:
        b.delete_message(ma.receipt_handle)
    assert "another queue" in str(err.value)
    other = sqsqlite.connect(tmp_path / "other.db", clock=clock)
    try:
        oa = other.create_queue("qa")  # same name, same ids, different secret
        oa.send_message("elsewhere")
        receive_one(oa)
        with pytest.raises(ReceiptHandleIsInvalid):
            oa.delete_message(ma.receipt_handle)
        assert counts(oa) == (0, 1, 0)
    finally:
        other.close()
    assert counts(a) == counts(b) == (0, 1, 0)
    ma.delete()
    mb.delete()


def test_the_latest_handle_still_deletes_after_the_timeout_if_nobody_received_it_again(db, clock):
    q = db.create_queue("b5", visibility_timeout=30)
    q.send_message("x")
    m = receive_one(q)
    clock.advance(3600)
    assert counts(q) == (1, 0, 0)
    m.delete()
    assert counts(q) == (0, 0, 0)
    assert q.receive_message() == []


def test_deleting_twice_with_the_last_handle_succeeds(db):
    q = db.create_queue("b6")
    q.send_message("x")
    q.send_message("y")
    m = receive_one(q)
    m.delete()
    m.delete()
    assert counts(q) == (1, 0, 0)


# ------------------------------------------------------------------ c. change visibility


def test_change_visibility_counts_from_the_call_not_from_the_receive(db, clock):
    q = db.create_queue("c", visibility_timeout=30)
    q.send_message("x")
    m = receive_one(q)
    clock.advance(20)
    m.change_visibility(30)
    clock.advance(29.999)  # 49.999 s after the receive, 29.999 s after the change
    assert q.receive_message() == []
    clock.advance(0.001)
    assert receive_one(q).message_id == m.message_id


def test_change_visibility_to_zero_makes_the_message_visible_at_once(db):
    q = db.create_queue("c2", visibility_timeout=300)
    q.send_message("x")
    m = receive_one(q)
    m.change_visibility(0)
    assert counts(q) == (1, 0, 0)
    assert receive_one(q).receive_count == 2


def test_change_visibility_past_12_hours_after_the_receive_is_refused_not_clamped(db, clock):
    q = db.create_queue("c3", visibility_timeout=3600)
    q.send_message("x")
    m = receive_one(q)
    clock.advance(1000)
    m.change_visibility(1000)
    with pytest.raises(InvalidParameterValue) as err:
        m.change_visibility(42_201)  # one second past receive + 43200
    assert "43200" in str(err.value) and "42201" in str(err.value)
    # Refused, not clamped: the earlier change still decides.
    [held] = q.peek("in-flight")
    assert held.visible_at == clock.now_ms() + 1_000_000
    m.change_visibility(42_200)  # exactly receive + 12 h is allowed
    clock.advance(42_199.999)
    assert q.receive_message() == []
    clock.advance(0.001)
    assert receive_one(q).receive_count == 2


def test_the_12_hour_limit_restarts_with_each_receive(db, clock):
    q = db.create_queue("c4", visibility_timeout=43_200)
    q.send_message("x")
    receive_one(q)
    clock.advance(43_200)
    m = receive_one(q)
    clock.advance(100)
    m.change_visibility(43_100)
    with pytest.raises(InvalidParameterValue):
        m.change_visibility(43_101)


def test_a_changed_visibility_is_not_remembered_by_the_next_receive(db, clock):
    q = db.create_queue("c5", visibility_timeout=30)
    q.send_message("x")
    m = receive_one(q)
    m.change_visibility(600)
    clock.advance(600)
    receive_one(q)
    clock.advance(30)  # the queue's 30 s again, not 600
    assert receive_one(q).receive_count == 3


def test_changing_visibility_of_a_message_not_in_flight_is_refused_and_changes_nothing(db, clock):
    q = db.create_queue("c6", visibility_timeout=30)
    q.send_message("x")
    m = receive_one(q)
    clock.advance(30)
    with pytest.raises(MessageNotInflight) as err:
        m.change_visibility(300)
    assert err.value.message == "The specified message isn't in flight."
    assert "visibility timeout has ended" in err.value.hint
    assert counts(q) == (1, 0, 0)
    m.delete()
    with pytest.raises(InvalidParameterValue):
        m.change_visibility(300)  # deleted: nothing to change, and nothing comes back
    assert counts(q) == (0, 0, 0)


# ------------------------------------------------------------------ d. queue VisibilityTimeout


def test_changing_the_queue_visibility_timeout_affects_only_later_receives(db, clock):
    q = db.create_queue("d", visibility_timeout=30)
    q.send_message("early")
    early = receive_one(q)
    q.set_queue_attributes({"VisibilityTimeout": "100"})
    q.send_message("late")
    late = receive_one(q)
    clock.advance(30)
    assert receive_one(q).message_id == early.message_id  # its 30 s stood
    clock.advance(69.999)
    assert q.receive_message() == []
    clock.advance(0.001)
    assert receive_one(q).message_id == late.message_id


# ------------------------------------------------------------------ e. dead-letter queues


def test_a_message_is_received_at_most_max_receive_count_times_then_moves_within_the_claim(db, clock):
    src, dlq = with_dlq(db, max_receive_count=2)
    sent_at = clock.now_ms()
    poison = src.send_message("poison", message_attributes={"kind": "bad"})
    for n in (1, 2):
        assert receive_one(src).receive_count == n
        clock.advance(30)
    src.send_message("healthy")
    # The third receive moves the poison message and still returns the healthy one.
    got = src.receive_message(max_number_of_messages=10)
    assert [m.body for m in got] == ["healthy"]
    assert counts(src) == (0, 1, 0)
    assert counts(dlq) == (1, 0, 0)  # visible in the DLQ at once
    [moved] = dlq.receive_message(message_system_attribute_names=["All"], message_attribute_names=["All"])
    assert moved.message_id == poison.message_id
    assert moved.body == "poison"
    assert moved.md5_of_message_attributes == poison.md5_of_message_attributes
    assert moved.message_attributes["kind"].string_value == "bad"
    assert moved.attributes["SentTimestamp"] == str(sent_at)
    assert moved.attributes["DeadLetterQueueSourceArn"] == src.arn
    # Its two receives in the source are kept; this DLQ receive is the third.
    assert moved.attributes["ApproximateReceiveCount"] == "3"
    # The DLQ is an ordinary queue.
    moved.delete()
    assert counts(dlq) == (0, 0, 0)


def test_a_receive_that_dead_letters_some_messages_returns_the_rest_with_handles_that_delete_them(db, clock):
    # The claim runs a second round after a dead-letter move, under a new token: the messages of
    # the first round must still get handles carrying the first round's token.
    src, dlq = with_dlq(db, max_receive_count=1)
    for i in range(3):
        src.send_message(f"poison {i}")
    assert len(src.receive_message(max_number_of_messages=10)) == 3
    clock.advance(30)
    for i in range(5):
        src.send_message(f"healthy {i}")
    got = src.receive_message(max_number_of_messages=10)
    assert sorted(m.body for m in got) == [f"healthy {i}" for i in range(5)]
    assert all(m.receive_count == 1 and m.visible_at == clock.now_ms() + 30_000 for m in got)
    result = src.delete_message_batch([{"Id": str(i), "ReceiptHandle": m.receipt_handle} for i, m in enumerate(got)])
    assert len(result.successful) == 5 and result.failed == []
    assert counts(src) == (0, 0, 0)
    assert counts(dlq) == (3, 0, 0)


def test_more_poison_messages_than_one_claim_moves_never_hide_a_good_one(db, clock, monkeypatch):
    monkeypatch.setattr(D, "CLAIM_CLEANUP_BUDGET", 3)  # the rule at any budget; 3 keeps it quick
    src, dlq = with_dlq(db, max_receive_count=1)
    for i in range(10):
        src.send_message(f"poison {i}")
    assert len(src.receive_message(max_number_of_messages=10)) == 10
    clock.advance(30)
    src.send_message("good")
    start = clock.now_ms()
    assert [m.body for m in src.receive_message(wait_time_seconds=20)] == ["good"]
    assert clock.now_ms() == start  # no wait while a message was receivable
    assert counts(dlq) == (10, 0, 0)


def test_the_handle_from_the_source_queue_is_invalid_once_the_message_moved(db, clock):
    src, dlq = with_dlq(db, max_receive_count=1)
    src.send_message("poison")
    m = receive_one(src)
    clock.advance(30)
    assert src.receive_message() == []
    with pytest.raises(ReceiptHandleIsInvalid) as err:
        m.delete()
    assert "dead-letter" in str(err.value)
    assert counts(dlq) == (1, 0, 0)


def _moved_there_and_back(db, clock):
    """A message received in its source queue (its handle kept), dead-lettered, then moved
    back by a move task: two moves."""
    src, dlq = with_dlq(db, max_receive_count=1)
    src.send_message("poison")
    first = receive_one(src)
    clock.advance(30)
    assert src.receive_message() == []  # moves it to the dead-letter queue
    in_dlq = receive_one(dlq, visibility_timeout=0)
    db.run_message_move_task(db.start_message_move_task(dlq.arn, background=False))
    return src, dlq, first, in_dlq


def test_a_handle_from_before_a_message_moved_twice_is_invalid_and_leaves_it_where_it_is(db, clock):
    src, dlq, first, in_dlq = _moved_there_and_back(db, clock)
    for stale in (first, in_dlq):
        with pytest.raises(ReceiptHandleIsInvalid) as err:
            stale.delete()
        assert "moved to another queue" in str(err.value)
        with pytest.raises(ReceiptHandleIsInvalid):
            stale.change_visibility(300)
    assert counts(src) == (1, 0, 0) and counts(dlq) == (0, 0, 0)
    assert receive_one(src).body == "poison"


def test_a_handle_from_before_every_one_of_three_moves_is_invalid(db, clock):
    src, dlq, first, in_dlq = _moved_there_and_back(db, clock)
    back = receive_one(src)
    clock.advance(30)
    assert src.receive_message() == []  # its second receive there: dead-lettered again
    assert counts(dlq) == (1, 0, 0)
    for stale in (first, in_dlq, back):
        with pytest.raises(ReceiptHandleIsInvalid):
            stale.delete()
    assert counts(dlq) == (1, 0, 0)


def test_once_a_message_moved_twice_is_deleted_a_handle_from_before_acts_as_a_deleted_ones(db, clock):
    src, _, first, _ = _moved_there_and_back(db, clock)
    receive_one(src).delete()
    first.delete()  # deleting a deleted message succeeds
    with pytest.raises(InvalidParameterValue):
        first.change_visibility(10)


def _kept_moves(db_path):
    with sqlite3.connect(db_path) as conn:
        return conn.execute("SELECT count(*) FROM message_moves").fetchone()[0]


def test_the_ids_messages_moved_from_go_once_their_messages_have_expired_at_the_next_move(db, db_path, clock):
    _moved_there_and_back(db, clock)
    assert _kept_moves(db_path) == 1
    clock.advance(D.MESSAGE_RETENTION_PERIOD.high + 1)
    _moved_there_and_back(db, clock)  # its own moves prune those past the longest retention
    assert _kept_moves(db_path) == 1


def test_the_ids_messages_moved_from_go_at_a_receives_prune_and_all_at_once_with_prune(db, db_path, clock):
    _moved_there_and_back(db, clock)
    clock.advance(D.MESSAGE_RETENTION_PERIOD.high + 1)
    db.create_queue("other").receive_message()  # the connection's first receive from a queue prunes
    assert _kept_moves(db_path) == 0
    _moved_there_and_back(db, clock)
    clock.advance(D.MESSAGE_RETENTION_PERIOD.high + 1)
    db.prune()
    assert _kept_moves(db_path) == 0


def test_a_message_moved_twice_after_the_clock_stepped_back_keeps_its_handles_refused_while_it_lives(db, clock):
    # Its moves come before its sent_at on the clock: what is kept goes by its sent_at, from
    # which its retention counts, not by when it moved.
    day = 86_400
    dlq = db.create_queue("dead", message_retention_period=14 * day)
    src = db.create_queue("work", message_retention_period=14 * day, redrive_policy={"deadLetterTargetArn": dlq.arn, "maxReceiveCount": 1})
    src.send_message("victim")
    first = receive_one(src, visibility_timeout=300)
    clock.advance(-2 * 3600)
    first.change_visibility(0)
    assert src.receive_message() == []  # dead-lettered
    db.run_message_move_task(db.start_message_move_task(dlq.arn, background=False))
    clock.advance(14 * day + 3600 - 60)  # a minute before it expires
    dlq2 = db.create_queue("dead2")
    src2 = db.create_queue("work2", redrive_policy={"deadLetterTargetArn": dlq2.arn, "maxReceiveCount": 1})
    src2.send_message("other")
    receive_one(src2, visibility_timeout=0)
    assert src2.receive_message() == []
    db.run_message_move_task(db.start_message_move_task(dlq2.arn, background=False))  # its move prunes
    with pytest.raises(ReceiptHandleIsInvalid):
        first.delete()
    assert [m.body for m in src.peek("all")] == ["victim"]


def test_list_dead_letter_source_queues_lists_every_queue_that_targets_it(db):
    src, dlq = with_dlq(db)
    other = db.create_queue("work2", attributes={"RedrivePolicy": json.dumps({"deadLetterTargetArn": dlq.arn, "maxReceiveCount": 5})})
    assert dlq.list_dead_letter_source_queues() == [src.url, other.url]
    assert src.list_dead_letter_source_queues() == []


def test_with_its_dead_letter_queue_deleted_a_source_keeps_its_messages(db, clock):
    # SQS can't move to a queue that is gone; the message stays and keeps being delivered.
    src, dlq = with_dlq(db, max_receive_count=1)
    src.send_message("x")
    receive_one(src)
    db.delete_queue(dlq.url)
    clock.advance(30)
    assert receive_one(src).receive_count == 2


def _poison(db, clock, src, n, max_receive_count=1):
    for i in range(n):
        src.send_message(f"p{i}")
    for _ in range(max_receive_count):
        while src.receive_message(max_number_of_messages=10):
            pass
        clock.advance(30)
    src.receive_message(max_number_of_messages=10)  # moves them all


def test_redrive_moves_every_message_back_to_its_source_queue(db, clock):
    src, dlq = with_dlq(db, max_receive_count=1)
    sent_at = clock.now_ms()
    _poison(db, clock, src, 5)
    assert counts(dlq) == (5, 0, 0) and counts(src) == (0, 0, 0)
    handle = db.start_message_move_task(dlq.arn, background=False)
    [task] = db.list_message_move_tasks(dlq.arn)
    assert task.status == "RUNNING" and task.approximate_number_of_messages_to_move == 5
    done = db.run_message_move_task(handle)
    assert done.status == "COMPLETED" and done.approximate_number_of_messages_moved == 5
    assert counts(dlq) == (0, 0, 0) and counts(src) == (5, 0, 0)
    back = src.receive_message(max_number_of_messages=10, message_system_attribute_names=["All"])
    assert sorted(m.body for m in back) == [f"p{i}" for i in range(5)]
    for m in back:
        # Redriven messages arrive as new in the source: receive count starts again (as in
        # SQS), the original SentTimestamp (and so the retention clock) is kept.
        assert m.attributes["SentTimestamp"] == str(sent_at)
        assert m.receive_count == 1
        assert "DeadLetterQueueSourceArn" not in m.attributes
    [listed] = db.list_message_move_tasks(dlq.arn)
    assert listed.status == "COMPLETED" and listed.task_handle is None


def test_redrive_to_an_explicit_destination(db, clock):
    src, dlq = with_dlq(db, max_receive_count=1)
    elsewhere = db.create_queue("elsewhere")
    _poison(db, clock, src, 3)
    db.run_message_move_task(db.start_message_move_task(dlq.arn, elsewhere.arn, background=False))
    assert counts(elsewhere) == (3, 0, 0) and counts(src) == (0, 0, 0)


def test_redrive_at_a_rate_shows_progress_and_paces_itself_on_the_clock(db, clock):
    src, dlq = with_dlq(db, max_receive_count=1)
    _poison(db, clock, src, 5)
    handle = db.start_message_move_task(dlq.arn, max_number_of_messages_per_second=2, background=False)
    start = clock.now_ms()
    seen = []

    def progress(task):
        [listed] = db.list_message_move_tasks(dlq.arn)
        seen.append((task.approximate_number_of_messages_moved, listed.status, listed.approximate_number_of_messages_moved))

    db.run_message_move_task(handle, progress)
    assert seen == [(2, "RUNNING", 2), (4, "RUNNING", 4), (5, "COMPLETED", 5)]
    # Two full batches of 2 at 2 per second: one second of (manual) clock each.
    assert clock.now_ms() - start == 2000


def test_a_move_tasks_rate_holds_however_many_processes_drive_it(db, db_path, clock):
    src, dlq = with_dlq(db, max_receive_count=1)
    _poison(db, clock, src, 6)
    handle = db.start_message_move_task(dlq.arn, max_number_of_messages_per_second=2, background=False)
    other = sqsqlite.connect(db_path, clock=clock)  # another process's connection, on the same clock
    moves: list[tuple[int, int]] = []  # (when, moved so far), each time the count grew

    def seen(task):
        if not moves or task.approximate_number_of_messages_moved > moves[-1][1]:
            moves.append((clock.now_ms(), task.approximate_number_of_messages_moved))

    def first_driver(task):
        seen(task)
        if len(moves) == 1:  # the second driver joins after the first step, and runs the task to its end
            other.run_message_move_task(handle, seen)

    try:
        assert db.run_message_move_task(handle, first_driver).status == "COMPLETED"
    finally:
        other.close()
    assert [n for _, n in moves] == [2, 4, 6]
    assert [later - earlier for (earlier, _), (later, _) in zip(moves, moves[1:])] == [1000, 1000]  # 2 a second, not 4


def test_a_receive_run_with_the_lock_up_front_moves_poison_messages_and_claims_in_one_go(db, clock):
    from sqsqlite import defaults

    src, dlq = with_dlq(db, max_receive_count=1, source_attrs={"VisibilityTimeout": "1"})
    src.send_message("poison")
    src.receive_message()
    src.send_message("good")
    clock.advance(2)  # received once: the next receive moves it, and then claims again
    ran, got = db.store.call_with_lock(defaults.WAIT_FREE_SECONDS, src.receive_message)  # as the endpoint's loop runs it
    assert ran and [m.body for m in got] == ["good"]
    assert counts(dlq) == (1, 0, 0)


def test_a_cancelled_move_task_stops_and_leaves_the_rest_in_the_dead_letter_queue(db, clock):
    src, dlq = with_dlq(db, max_receive_count=1)
    _poison(db, clock, src, 5)
    handle = db.start_message_move_task(dlq.arn, max_number_of_messages_per_second=2, background=False)
    cancelled = []

    def progress(task):
        if not cancelled:
            cancelled.append(db.cancel_message_move_task(handle))

    final = db.run_message_move_task(handle, progress)
    assert cancelled == [2]
    assert final.status == "CANCELLED"
    assert counts(src) == (2, 0, 0) and counts(dlq) == (3, 0, 0)
    with pytest.raises(ResourceNotFoundException, match="Task does not exist."):
        db.cancel_message_move_task(handle)


def test_a_move_task_keeps_saying_why_a_message_stayed_after_its_later_batches(db, clock):
    dlq = db.create_queue("dead")
    policy = json.dumps({"deadLetterTargetArn": dlq.arn, "maxReceiveCount": 1})
    gone, kept = (db.create_queue(name, attributes={"RedrivePolicy": policy}) for name in ("gone", "kept"))
    _poison(db, clock, gone, 1)
    _poison(db, clock, kept, 1)
    db.delete_queue(gone.url)
    final = db.run_message_move_task(db.start_message_move_task(dlq.arn, max_number_of_messages_per_second=1, background=False))
    assert final.status == "FAILED" and final.approximate_number_of_messages_moved == 1  # FailureReason goes with FAILED
    assert final.failure_reason == "AWS.SimpleQueueService.NonExistentQueue"  # as SQS says it
    assert final.failure_hint == f"The destination queue {gone.arn} does not exist."
    assert counts(dlq) == (1, 0, 0)


def test_a_move_task_leaves_a_message_a_consumer_holds_in_the_dead_letter_queue(db, clock):
    src, dlq = with_dlq(db, max_receive_count=1)
    _poison(db, clock, src, 2)
    [held] = dlq.receive_message(visibility_timeout=300)
    final = db.run_message_move_task(db.start_message_move_task(dlq.arn, background=False))
    assert final.status == "COMPLETED" and final.approximate_number_of_messages_moved == 1
    assert counts(dlq) == (0, 1, 0) and counts(src) == (1, 0, 0)
    held.delete()  # its consumer's handle still acts on it
    assert counts(dlq) == (0, 0, 0)


def test_a_move_task_never_moves_a_message_into_a_queue_of_the_other_kind(db, clock):
    src, dlq = with_dlq(db, max_receive_count=1)
    fifo = db.create_queue("orders.fifo", attributes={"FifoQueue": "true", "ContentBasedDeduplication": "true"})
    _poison(db, clock, src, 1)
    with db.store.write() as tx:  # a dead letter naming a FIFO source, as a hand-made import could
        tx.c.execute("UPDATE messages SET dead_letter_source_arn = ?", (fifo.arn,))
    final = db.run_message_move_task(db.start_message_move_task(dlq.arn, background=False))
    assert final.status == "FAILED" and final.approximate_number_of_messages_moved == 0
    assert final.failure_reason == f"The destination queue {fifo.arn} is a FIFO queue, unlike the source queue."
    assert counts(dlq) == (1, 0, 0) and counts(fifo) == (0, 0, 0)


def test_the_newest_move_task_is_listed_first_even_when_two_started_in_one_millisecond(db, clock):
    src, dlq = with_dlq(db, max_receive_count=1)
    _poison(db, clock, src, 1)
    db.run_message_move_task(db.start_message_move_task(dlq.arn, background=False))
    second = db.start_message_move_task(dlq.arn, background=False)  # the clock has not moved
    [newest] = db.list_message_move_tasks(dlq.arn, 1)
    assert newest.status == "RUNNING" and newest.task_handle == second
    assert [t.status for t in db.list_message_move_tasks(dlq.arn, 10)] == ["RUNNING", "COMPLETED"]


def test_a_move_task_into_its_own_dead_letter_queue_is_refused_and_the_messages_keep_their_source(db, clock):
    src, dlq = with_dlq(db, max_receive_count=1)
    _poison(db, clock, src, 2)
    with pytest.raises(InvalidParameterValue, match="The destination queue must be different from the source queue.") as refused:
        db.start_message_move_task(dlq.arn, dlq.arn, background=False)
    assert "leave DestinationArn out" in refused.value.hint
    assert db.list_message_move_tasks(dlq.arn) == []
    # Nothing moved: each message still names its source, so redrive to source takes it home.
    db.run_message_move_task(db.start_message_move_task(dlq.arn, background=False))
    assert counts(dlq) == (0, 0, 0) and counts(src) == (2, 0, 0)


def test_only_one_move_task_runs_per_queue_and_only_from_a_dead_letter_queue(db, clock):
    src, dlq = with_dlq(db, max_receive_count=1)
    _poison(db, clock, src, 1)
    db.start_message_move_task(dlq.arn, background=False)
    with pytest.raises(InvalidParameterValue, match="There is already a task running."):
        db.start_message_move_task(dlq.arn, background=False)
    with pytest.raises(InvalidParameterValue, match="Source queue must be configured as a Dead Letter Queue."):
        db.start_message_move_task(src.arn, background=False)


def test_a_background_move_task_finishes_on_its_own(db, clock):
    src, dlq = with_dlq(db, max_receive_count=1)
    _poison(db, clock, src, 3)
    db.start_message_move_task(dlq.arn)
    for t in db.tasks:
        t.join(timeout=10)
    [task] = db.list_message_move_tasks(dlq.arn)
    assert task.status == "COMPLETED" and counts(src) == (3, 0, 0)


# ------------------------------------------------------------------ f. retention


def _rows(db):
    with sqlite3.connect(db.path) as conn:
        return conn.execute("SELECT count(*) FROM messages").fetchone()[0]


def test_an_expired_message_is_never_returned_or_counted_even_before_removal(db, clock):
    q = db.create_queue("f", attributes={"MessageRetentionPeriod": "60"})
    q.send_message("old")
    clock.advance(30)
    q.send_message("young")
    clock.advance(30)
    assert counts(q) == (1, 0, 0)
    assert [m.body for m in q.peek()] == ["young"]
    assert _rows(db) == 2  # "old" is still on disk, yet invisible to every read
    assert [m.body for m in q.receive_message(max_number_of_messages=10)] == ["young"]
    # Receives remove expired rows of their queue on their way: every PRUNE_EVERY-th receive
    # of a connection looks at the head of the claim's index, where expired rows gather.
    _receive_nothing(q, sqsqlite.defaults.PRUNE_EVERY)
    assert _rows(db) == 1


def _receive_nothing(q, times: int) -> None:
    for _ in range(times):
        assert q.receive_message() == []


def test_receives_still_remove_expired_rows_after_a_long_run_of_receives_that_found_none(db, clock):
    q = db.create_queue("quiet", attributes={"MessageRetentionPeriod": "60"})
    _receive_nothing(q, 1000)  # nothing expires: each look at the index's head finds nothing
    q.send_message("old")
    clock.advance(61)
    _receive_nothing(q, sqsqlite.defaults.PRUNE_GAP_MAX)
    assert _rows(db) == 0


def test_receives_look_for_expired_rows_every_prune_every_receives_while_they_find_some(db, clock):
    q = db.create_queue("expiring", attributes={"MessageRetentionPeriod": "60"})
    q.send_message("first")
    clock.advance(61)
    assert q.receive_message() == [] and _rows(db) == 0  # a connection's first receive looks
    for _ in range(3):
        q.send_message("next")
        clock.advance(61)
        _receive_nothing(q, sqsqlite.defaults.PRUNE_EVERY)
        assert _rows(db) == 0


def test_prune_removes_every_expired_message_even_in_flight_ones(db, clock):
    q = db.create_queue("f-prune", attributes={"MessageRetentionPeriod": "60"}, visibility_timeout=600)
    q.send_message("held")
    q.send_message("waiting")
    receive_one(q)
    clock.advance(61)
    assert _rows(db) == 2
    assert db.prune() == 2
    assert _rows(db) == 0


def test_an_expired_in_flight_message_is_not_counted_and_its_handle_cannot_extend_it(db, clock):
    q = db.create_queue("f2", attributes={"MessageRetentionPeriod": "60"}, visibility_timeout=600)
    q.send_message("x")
    m = receive_one(q)
    clock.advance(60)
    assert counts(q) == (0, 0, 0)
    with pytest.raises(InvalidParameterValue):
        m.change_visibility(10)


def test_retention_in_the_dead_letter_queue_counts_from_the_original_enqueue_time(db, clock):
    # Seed 004: one day in the source, then a DLQ with 4 days retention removes it 3 days later.
    src, dlq = with_dlq(
        db,
        max_receive_count=1,
        source_attrs={"MessageRetentionPeriod": str(14 * DAY)},
        dlq_attrs={"MessageRetentionPeriod": str(4 * DAY)},
    )
    sent = clock.now_ms()
    src.send_message("slow poison")
    clock.advance(DAY - 30)
    receive_one(src)
    clock.advance(30)
    assert src.receive_message() == []  # moved, exactly one day after it was sent
    assert clock.now_ms() - sent == DAY * 1000
    clock.advance(3 * DAY - 0.001)
    assert counts(dlq) == (1, 0, 0)
    clock.advance(0.001)
    assert counts(dlq) == (0, 0, 0)
    assert _rows(db) == 1  # not yet removed, already gone for every reader
    assert dlq.receive_message() == []
    assert dlq.peek() == []
    db.prune()
    assert _rows(db) == 0


def test_prune_removes_only_expired_messages(db, clock):
    q = db.create_queue("f3", attributes={"MessageRetentionPeriod": "60"})
    for i in range(3):
        q.send_message(f"old{i}")
    clock.advance(59)
    q.send_message("young")
    clock.advance(1)
    assert db.prune() == 3
    assert [m.body for m in q.peek()] == ["young"]


# ------------------------------------------------------------------ g. in-flight cap


def test_the_receive_past_the_in_flight_cap_fails_with_over_limit(db, clock, monkeypatch):
    # The real cap is 120,000; holding that many messages would make this test slow without
    # testing anything more. The engine reads the cap from sqsqlite.defaults at each receive,
    # so a small cap exercises the same code path.
    monkeypatch.setattr(D, "MAX_IN_FLIGHT_STANDARD", 5)
    q = db.create_queue("g", visibility_timeout=30)
    for i in range(8):
        q.send_message(f"m{i}")
    assert len(q.receive_message(max_number_of_messages=3)) == 3
    # Only 2 more fit under the cap, so a receive of 10 gets 2.
    held = q.receive_message(max_number_of_messages=10)
    assert len(held) == 2
    with pytest.raises(OverLimit) as err:
        q.receive_message()
    # SQS's own text; which queue and how many are in flight is sqsqlite's hint.
    assert err.value.message == (
        "Too many messages have been received without being deleted.\n"
        "Please delete your received messages or let them timeout before receiving more."
    )
    assert "5 messages in flight" in err.value.hint
    assert counts(q) == (3, 5, 0)  # the refused receive claimed nothing
    held[0].delete()
    assert len(q.receive_message(max_number_of_messages=10)) == 1
    with pytest.raises(OverLimit):
        q.receive_message()
    # Messages whose visibility ended are no longer in flight and free the cap.
    clock.advance(30)
    assert len(q.receive_message(max_number_of_messages=10)) == 5


def test_delayed_messages_do_not_count_towards_the_in_flight_cap(db, monkeypatch):
    monkeypatch.setattr(D, "MAX_IN_FLIGHT_STANDARD", 2)
    q = db.create_queue("g2")
    for i in range(5):
        q.send_message(f"d{i}", delay_seconds=60)
    q.send_message("a")
    q.send_message("b")
    assert len(q.receive_message(max_number_of_messages=10)) == 2
    assert counts(q) == (0, 2, 5)


# ------------------------------------------------------------------ h. delays


def test_a_delayed_message_stays_hidden_until_its_delay_ends_and_is_counted_as_delayed(db, clock):
    q = db.create_queue("h")
    q.send_message("later", delay_seconds=90)
    assert counts(q) == (0, 0, 1)
    assert q.receive_message() == []
    assert [m.body for m in q.peek("delayed")] == ["later"]
    clock.advance(89.999)
    assert counts(q) == (0, 0, 1)
    clock.advance(0.001)
    assert counts(q) == (1, 0, 0)
    m = receive_one(q)
    assert m.receive_count == 1
    assert counts(q) == (0, 1, 0)


def test_redrive_leaves_messages_with_no_source_to_return_to_and_says_why(db, clock):
    # A message sent straight to the DLQ has no source; one whose source queue was deleted
    # has nowhere to go. Both stay in the DLQ; the task fails and names the missing queue.
    src, dlq = with_dlq(db, max_receive_count=1)
    _poison(db, clock, src, 1)
    dlq.send_message("sent to the DLQ directly")
    db.delete_queue(src.url)
    db.create_queue("work3", attributes={"RedrivePolicy": json.dumps({"deadLetterTargetArn": dlq.arn, "maxReceiveCount": 1})})
    task = db.run_message_move_task(db.start_message_move_task(dlq.arn, background=False))
    assert task.status == "FAILED" and task.approximate_number_of_messages_moved == 0
    assert task.failure_reason == "AWS.SimpleQueueService.NonExistentQueue" and src.arn in task.failure_hint
    assert counts(dlq) == (2, 0, 0)


def test_connections_reserving_in_flight_blocks_never_pass_the_cap_together(db_path, clock, monkeypatch):
    # Two connections reserve blocks of the in-flight bound (INFLIGHT_BLOCK at a time) and
    # claim from them; a small cap, patched in, makes them reach it quickly. Together they
    # must stop at exactly the cap, and the one that finds it full gets OverLimit.
    monkeypatch.setattr(D, "MAX_IN_FLIGHT_STANDARD", 95)
    monkeypatch.setattr(D, "INFLIGHT_BLOCK", 20)
    a = sqsqlite.connect(db_path, clock=clock)
    b = sqsqlite.connect(db_path, clock=clock)
    qa = a.create_queue("capped")
    qb = b.queue("capped")
    qa.send_message_batch([{"Id": str(i), "MessageBody": str(i)} for i in range(10)])
    for _ in range(14):
        qa.send_message_batch([{"Id": str(i), "MessageBody": str(i)} for i in range(10)])
    taken = 0
    with pytest.raises(OverLimit):
        for turn in range(40):
            taken += len((qa if turn % 2 else qb).receive_message(max_number_of_messages=7))
    assert taken == 95
    assert counts(qa) == (150 - 95, 95, 0)
    clock.advance(31)  # every lease ends: the bound is recounted and capacity comes back
    assert len(qb.receive_message(max_number_of_messages=10)) == 10
    a.close()
    b.close()


def test_a_message_moved_to_a_dead_letter_queue_it_has_outlived_is_gone_and_its_handles_act_as_for_a_deleted_one(db, clock):
    dlq = db.create_queue("short-dlq", message_retention_period=60)
    src = db.create_queue(
        "long-src",
        visibility_timeout=0,
        message_retention_period=600,
        redrive_policy={"deadLetterTargetArn": dlq.arn, "maxReceiveCount": 1},
    )
    src.send_message("old")
    clock.advance(61)
    [first] = src.receive_message()
    src.send_message("new")
    [second] = src.receive_message()  # "old" would come back a 2nd time: it moves instead
    assert second.body == "new"
    # In the DLQ its retention (60 s) counts from the original send, 61 s ago: gone at once.
    assert counts(dlq) == (0, 0, 0)
    assert counts(src) == (1, 0, 0)
    first.delete()  # like a deleted message's handle: deleting again succeeds
    with pytest.raises(InvalidParameterValue):
        first.change_visibility(10)


def test_list_dead_letter_source_queues_pages_by_name_so_a_queue_added_between_pages_shifts_nothing(db):
    from sqsqlite import Actions

    dlq = db.create_queue("dead")
    policy = json.dumps({"deadLetterTargetArn": dlq.arn, "maxReceiveCount": 1})
    for name in ("b", "d", "f"):
        db.create_queue(name, attributes={"RedrivePolicy": policy})
    actions = Actions(db)
    first = actions.call("ListDeadLetterSourceQueues", {"QueueUrl": "dead", "MaxResults": 2})
    assert [u.rsplit("/", 1)[1] for u in first["queueUrls"]] == ["b", "d"]
    db.create_queue("a", attributes={"RedrivePolicy": policy})  # sorts before the page already read
    rest = actions.call("ListDeadLetterSourceQueues", {"QueueUrl": "dead", "MaxResults": 2, "NextToken": first["NextToken"]})
    assert [u.rsplit("/", 1)[1] for u in rest["queueUrls"]] == ["f"] and "NextToken" not in rest


def test_a_call_run_with_the_lock_up_front_holds_it_to_its_end_so_no_write_of_it_waits(db, db_path):
    # Nothing of the call can be made twice: it never gives up once it began (the endpoint runs a
    # call again, on its pool, only when it could not begin).
    import fcntl
    import os

    q = db.create_queue("orders")
    other = os.open(db_path + "-lock", os.O_RDWR)  # another writer's descriptor of the writers' lock
    between: list[bool] = []

    def call():
        q.send_message("first")
        try:
            fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)
            between.append(True)
            fcntl.flock(other, fcntl.LOCK_UN)
        except BlockingIOError:
            between.append(False)
        q.send_message("second")
        return "done"

    try:
        assert db.store.call_with_lock(0.05, call) == (True, "done")
        assert between == [False]  # held between the call's writes
        fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)  # and let go at its end
    finally:
        os.close(other)
    assert sorted(m.body for m in q.peek("all", 10)) == ["first", "second"]


def test_a_call_that_fails_after_its_write_keeps_the_write_as_a_write_of_its_own_would(db):
    q = db.create_queue("orders")

    def call():
        q.send_message("kept")
        raise ValueError("after the write")

    with pytest.raises(ValueError):
        db.store.call_with_lock(0.05, call)
    assert [m.body for m in q.peek("all", 10)] == ["kept"]
    assert not db.store.connection().in_transaction
