"""BufferedQueue: one message per receive from claims of ten, deletes committed ten at a time,
and never a message lost for it (all timing on the manual clock)."""

import inspect
import json
import os
import threading

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import sqsqlite
from sqsqlite.core.buffered import BUFFERS_OWN, FORWARDED, BufferedQueue
from sqsqlite.core.queue import Queue
from sqsqlite.errors import InvalidParameterValue, SQSError


def counts(queue):
    a = queue.get_queue_attributes(["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"])
    return int(a["ApproximateNumberOfMessages"]), int(a["ApproximateNumberOfMessagesNotVisible"])


def stored(queue):
    return sorted(m.body for m in queue.peek("all", limit=1000))


def fill(queue, n):
    for start in range(0, n, 10):
        queue.send_message_batch([{"Id": str(i), "MessageBody": f"m{i:03d}"} for i in range(start, min(n, start + 10))])


def test_one_message_receives_are_served_from_one_claim_of_ten(queue):
    fill(queue, 40)
    b = queue.buffered()
    [first] = b.receive_message()
    assert first.body == "m000"
    assert counts(queue) == (30, 10)  # one claim took ten
    bodies = [first.body] + [b.receive_message()[0].body for _ in range(9)]
    assert bodies == [f"m{i:03d}" for i in range(10)]
    assert counts(queue) == (30, 10)  # the next nine came from the buffer
    b.receive_message()
    assert counts(queue) == (10, 30)  # a consumer this quick gets a claim twice as big next


def test_claims_double_up_to_prefetch_while_the_consumer_keeps_up(queue):
    fill(queue, 300)
    b = queue.buffered()
    sizes, in_flight = [], 0
    for _ in range(10 + 20 + 40 + 80 + 1):
        b.receive_message()[0].delete()
        now_in_flight = counts(queue)[1]
        if now_in_flight > in_flight:
            sizes.append(now_in_flight)
        in_flight = now_in_flight
    assert sizes == [10, 20, 40, 80, 100]  # deletes are committed before each claim


def test_a_wall_clock_stepped_forward_does_not_read_as_a_slow_consumer(db_path, stepping_clock):
    # The consumer's pace is timed on ticks (clock.ticks): an hour's step between two claims is
    # no hour of work, and must not shrink the next claim to one message.
    with sqsqlite.connect(db_path, clock=stepping_clock) as db:
        q = db.create_queue("stepped")
        fill(q, 60)
        b = q.buffered(visibility_timeout=40)
        for _ in range(10):
            b.receive_message()[0].delete()
        stepping_clock.offset = 3_600_000  # an hour on, the first claim's leases with it
        b.receive_message()
        assert counts(q)[1] == 20  # twice the last claim, as for any consumer this quick
        b.close()


def test_a_slow_consumer_gets_claims_it_can_handle_in_a_quarter_of_the_lease(queue, clock):
    fill(queue, 30)
    b = queue.buffered(visibility_timeout=40)
    for _ in range(10):
        b.receive_message()[0].delete()
        clock.advance(2)  # 10 messages in 20 s; a quarter of the lease is 10 s: 5 fit
    b.receive_message()
    assert counts(queue) == (15, 5)


def test_a_consumer_too_slow_for_its_lease_is_given_one_message_a_claim(queue, clock):
    fill(queue, 30)
    b = queue.buffered(visibility_timeout=10)
    handled = []
    while len(handled) < 5:
        handled += [m.body for m in b.receive_message()]
        clock.advance(2)
    assert handled == ["m000", "m001", "m002", "m003", "m004"]
    b.receive_message()  # the other five lapsed waiting and were dropped: 5 handled in 10 s
    assert counts(queue) == (29, 1)  # all ten lapsed (the five handled too, never deleted): a claim of one


def test_a_receive_of_several_takes_them_from_the_buffer_first(queue):
    fill(queue, 12)
    b = queue.buffered()
    b.receive_message()
    assert [m.body for m in b.receive_message(max_number_of_messages=3)] == ["m001", "m002", "m003"]
    assert len(b.receive_message(max_number_of_messages=10)) == 6  # what the buffer holds, without a claim
    assert counts(queue) == (2, 10)


def test_acknowledged_deletes_are_committed_together_when_prefetch_of_them_are_waiting(queue):
    fill(queue, 20)
    b = queue.buffered(prefetch=10, max_batch_open_ms=60_000)
    for _ in range(9):
        b.receive_message()[0].delete()
    assert len(stored(queue)) == 20  # nine deletes waiting
    b.receive_message()[0].delete()
    assert len(stored(queue)) == 10


def test_each_claims_waiting_deletes_are_committed_by_one_statement_however_many(queue, db):
    fill(queue, 100)
    b = queue.buffered(prefetch=100, max_batch_open_ms=60_000)
    statements = []
    db.store.connection().set_trace_callback(statements.append)
    try:
        for _ in range(70):  # claims of 10, 20 and 40
            b.receive_message()[0].delete()
        assert b.flush() == []
    finally:
        db.store.connection().set_trace_callback(None)
    deletes = [s for s in statements if s.startswith("DELETE") and "receipt_token" in s]
    assert len(deletes) == 3  # one a claim, the 20 and the 40 too
    assert counts(queue) == (30, 0)


def test_a_run_of_waiting_deletes_with_one_deleted_elsewhere_is_decided_handle_by_handle(queue, db, db_path, clock):
    fill(queue, 30)
    b = queue.buffered(prefetch=100, max_batch_open_ms=60_000)
    handed = [b.receive_message()[0] for _ in range(30)]  # claims of 10 and 20
    for m in handed:
        m.delete()
    # Another process's Database deletes one of the second claim's: the run's statement
    # deletes one row fewer than it has handles, and each handle is decided on its own.
    other = sqsqlite.connect(db_path, clock=clock)
    try:
        other.queue(queue.name).delete_message(handed[15].receipt_handle)
    finally:
        other.close()
    statements = []
    db.store.connection().set_trace_callback(statements.append)
    try:
        assert b.flush() == []  # deleting again is fine, as in SQS
    finally:
        db.store.connection().set_trace_callback(None)
    runs = [s for s in statements if s.startswith("DELETE") and "receipt_token" in s and " IN (" in s]
    assert len(runs) == 2  # the claim of 10 and the claim of 20, each by one statement
    singles = [s for s in statements if s.startswith("DELETE") and "messages.id = " in s]
    assert len(singles) == 30  # then, short of one, each handle on its own
    assert counts(queue) == (0, 0)


def test_waiting_deletes_are_committed_before_the_next_claim(queue):
    fill(queue, 15)
    b = queue.buffered(max_batch_open_ms=60_000)
    for m in b.receive_message(max_number_of_messages=10)[:3]:
        m.delete()
    assert len(stored(queue)) == 15
    b.receive_message()  # the buffer is empty: the three deletes go first, then a claim
    assert len(stored(queue)) == 12


def test_a_delete_that_waited_max_batch_open_ms_is_committed_at_the_next_receive(queue, clock):
    fill(queue, 10)
    b = queue.buffered(max_batch_open_ms=200)
    b.receive_message()[0].delete()
    clock.advance(0.199)
    b.receive_message()
    assert len(stored(queue)) == 10
    clock.advance(0.001)
    b.receive_message()
    assert len(stored(queue)) == 9


def test_max_batch_open_ms_of_zero_commits_every_delete_at_once(queue):
    fill(queue, 10)
    b = queue.buffered(max_batch_open_ms=0)
    b.receive_message()[0].delete()
    assert len(stored(queue)) == 9


def test_flush_and_close_commit_the_waiting_deletes(queue):
    fill(queue, 10)
    b = queue.buffered()
    b.receive_message()[0].delete()
    assert b.flush() == []
    assert len(stored(queue)) == 9
    b.receive_message()[0].delete()
    b.close()
    assert len(stored(queue)) == 8


def test_close_makes_the_fetched_messages_not_handed_out_visible_at_once(queue):
    fill(queue, 10)
    with queue.buffered() as b:
        [held] = b.receive_message()
    assert counts(queue) == (9, 1)  # only the one handed out stays in flight
    again = queue.receive_message(max_number_of_messages=10)
    assert held.body not in [m.body for m in again]
    assert {m.receive_count for m in again} == {2}  # their first receive still counts, as in SQS


def test_a_prefetched_message_whose_lease_ended_is_never_handed_out(queue, clock):
    fill(queue, 3)
    b = queue.buffered(visibility_timeout=30)
    b.receive_message()
    clock.advance(30)
    other = queue.receive_message(max_number_of_messages=10)  # visible again, to anyone
    assert sorted(m.body for m in other) == ["m000", "m001", "m002"]
    assert b.receive_message() == []  # the two it held had lapsed: dropped, then nothing to claim


def test_an_older_claims_delete_of_a_message_received_again_goes_at_once_and_is_refused(queue, clock):
    fill(queue, 1)
    b = queue.buffered(visibility_timeout=30)
    [old] = b.receive_message()
    clock.advance(30)
    [new] = b.receive_message()  # the same message, received again by the next claim
    assert new.message_id == old.message_id and new.receive_count == 2
    new.delete()  # waits
    with pytest.raises(SQSError) as err:
        old.delete()  # superseded: refused at once, as unbuffered
    assert err.value.code == "ReceiptHandleIsInvalid"
    assert stored(queue) == [new.body]  # new's delete still waits
    assert b.flush() == [] and stored(queue) == []


def test_a_process_that_dies_with_deletes_waiting_loses_no_message(db_path, clock):
    db = sqsqlite.connect(db_path, clock=clock)
    q = db.create_queue("jobs", visibility_timeout=30)
    fill(q, 10)
    pid = os.fork()
    if pid == 0:  # the consumer: it dies before its flusher is due (its clock never moves)
        handled = 0
        try:
            b = q.buffered()
            for _ in range(4):
                b.receive_message()[0].delete()
                handled += 1
        finally:
            os._exit(handled)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 4
    assert len(stored(q)) == 10  # the four deletes were never committed
    clock.advance(30)
    again = q.receive_message(max_number_of_messages=10)
    assert len(again) == 10  # the four come back (a duplicate, as SQS allows), none is lost
    db.close()


def test_a_deferred_delete_the_queue_refuses_is_reported_not_raised(queue, clock, caplog):
    fill(queue, 1)
    b = queue.buffered(visibility_timeout=30)
    [m] = b.receive_message()
    clock.advance(30)
    queue.receive_message()  # another consumer receives it: m's handle is superseded
    m.delete()
    failures = b.flush()
    assert [(f.receipt_handle, f.code) for f in failures] == [(m.receipt_handle, "ReceiptHandleIsInvalid")]
    assert list(b.failed_deletes) == failures
    assert "deferred delete" in caplog.text
    assert stored(queue) == ["m000"]


def test_deletes_whose_commit_failed_wait_for_the_next_flush_and_close_still_releases(queue, monkeypatch):
    from sqsqlite.core import buffered
    from sqsqlite.errors import DatabaseError

    queue.send_message_batch([{"Id": str(i), "MessageBody": f"m{i}"} for i in range(6)])
    b = queue.buffered()
    for _ in range(5):
        [m] = b.receive_message()
        m.delete()  # acknowledged, waiting

    def disk_full(queue, claims):
        raise DatabaseError("Database error: database or disk is full.")

    with monkeypatch.context() as patch:
        patch.setattr(buffered, "delete_claims", disk_full)
        with pytest.raises(DatabaseError):
            b.close()  # its flush fails ...
    assert counts(queue)[0] == 1  # ... and the message fetched, not handed out, is released anyway
    assert b.flush() == [] and not b.failed_deletes  # the five waited, and go now
    assert counts(queue) == (1, 0)


def test_a_handle_it_did_not_hand_out_is_deleted_at_once(queue):
    fill(queue, 2)
    [m] = queue.receive_message()
    b = queue.buffered()
    b.delete_message(m.receipt_handle)
    assert stored(queue) == ["m001"]


def test_a_handed_out_message_deleted_by_its_handle_waits_like_one_deleted_by_itself(queue, db):
    fill(queue, 12)
    b = queue.buffered()
    [first] = b.receive_message()
    [second] = b.receive_message()
    b.delete_message(first.receipt_handle)
    b.delete_message(second)
    assert counts(queue) == (2, 10)  # both deletes wait
    assert not db.handles._issued  # a handle whose delete waits is forgotten
    b.delete_message(first.receipt_handle)  # again, as SQS allows: no longer known, it goes through at once
    assert counts(queue) == (2, 9)
    assert b.flush() == [] and counts(queue) == (2, 8)


def test_a_message_of_a_claim_older_than_the_claims_kept_is_deleted_at_once(queue, monkeypatch):
    from sqsqlite import defaults

    monkeypatch.setattr(defaults, "BUFFER_CLAIMS_KEPT", 1)
    fill(queue, 30)
    b = queue.buffered()
    first_claim = [b.receive_message()[0] for _ in range(10)]
    [new] = b.receive_message()  # a second claim: the first is no longer kept
    new.delete()
    first_claim[0].delete()
    assert len(stored(queue)) == 29  # the old claim's message went at once; new's waits
    assert "m000" not in stored(queue) and new.body in stored(queue)
    b.flush()
    assert len(stored(queue)) == 28


def test_a_claim_that_moved_a_poison_message_keeps_all_its_deletes_waiting(db, clock, monkeypatch):
    from sqsqlite import defaults

    monkeypatch.setattr(defaults, "BUFFER_CLAIMS_KEPT", 1)  # one claim kept, however many rounds it took
    db.create_queue("dlq")
    q = db.create_queue(
        "jobs", {"RedrivePolicy": '{"deadLetterTargetArn": "arn:aws:sqs:us-east-1:000000000000:dlq", "maxReceiveCount": "1"}'}
    )
    q.send_message("poison")
    q.receive_message(visibility_timeout=1)  # received once: the next receive moves it
    clock.advance(2)
    fill(q, 11)  # visible after the poison message, so one claim takes it first
    b = q.buffered()
    handed = [b.receive_message()[0] for _ in range(10)]  # one claim, two rounds: the poison moved, then one more
    assert "poison" not in {m.body for m in handed}
    assert len({id(m.claim.token) for m in handed}) == 2  # a token a round, shared by the round's messages
    for m in handed:
        m.delete()
    assert len(stored(q)) == 11  # all ten deletes wait, none went alone
    b.flush()
    assert stored(q) == ["m010"]


def test_a_change_of_visibility_commits_the_waiting_deletes_only_when_one_is_its_messages(queue):
    fill(queue, 3)
    b = queue.buffered()
    first, second, third = (b.receive_message()[0] for _ in range(3))
    first.delete()
    second.change_visibility(60)  # its own delete does not wait: first's still does
    assert len(stored(queue)) == 3
    b.change_message_visibility_batch([{"Id": "a", "ReceiptHandle": third.receipt_handle, "VisibilityTimeout": 60}])
    assert len(stored(queue)) == 3
    second.delete()
    with pytest.raises(InvalidParameterValue):
        second.change_visibility(30)  # its delete waited: committed first, so it finds the message gone
    assert stored(queue) == ["m002"]


def test_a_fifo_buffered_delete_notifies_the_consumers_waiting_for_the_queue(db):
    q = db.create_queue("jobs.fifo", {"FifoQueue": "true", "ContentBasedDeduplication": "true"})
    q.send_message("a", message_group_id="g")
    woken = []
    inner = db.wakeups.notify
    db.wakeups.notify = lambda queue, count=None: (woken.append((queue, count)), inner(queue, count))
    b = q.buffered()
    [a] = b.receive_message()
    a.delete()
    b.flush()
    assert ("jobs.fifo", 1) in woken


@pytest.mark.parametrize("handle", ["not-a-handle", "", None, 7, ["x"]])
def test_a_bad_handle_fails_at_once_with_the_queues_own_error_and_changes_nothing(queue, handle):
    fill(queue, 2)
    b = queue.buffered()
    b.receive_message()
    with pytest.raises(SQSError) as err:
        b.delete_message(handle)
    assert err.value.code in ("ReceiptHandleIsInvalid", "MissingParameter", "InvalidParameterValue")
    assert len(stored(queue)) == 2


def test_deleting_twice_is_fine_as_in_sqs(queue):
    fill(queue, 1)
    b = queue.buffered()
    [m] = b.receive_message()
    m.delete()
    m.delete()
    b.flush()
    m.delete()
    assert b.flush() == [] and stored(queue) == []


def test_changing_the_visibility_of_a_message_whose_delete_waits_finds_it_deleted(queue):
    fill(queue, 2)
    b = queue.buffered()
    [m] = b.receive_message()
    m.delete()
    with pytest.raises(InvalidParameterValue):
        m.change_visibility(60)
    assert stored(queue) == ["m001"]


def test_changing_visibility_and_batches_go_straight_to_the_queue(queue, clock):
    fill(queue, 3)
    b = queue.buffered(visibility_timeout=30)
    first, second = b.receive_message(max_number_of_messages=2)
    first.change_visibility(0)
    assert counts(queue) == (1, 2)
    assert b.delete_message_batch([{"Id": "a", "ReceiptHandle": second.receipt_handle}]).failed == []
    assert "m001" not in stored(queue)
    r = b.change_message_visibility_batch([{"Id": "a", "ReceiptHandle": "junk", "VisibilityTimeout": 5}])
    assert [f.code for f in r.failed] == ["ReceiptHandleIsInvalid"]


def test_a_fifo_queue_hands_out_each_group_in_order(db):
    q = db.create_queue("pay.fifo", FifoQueue="true", ContentBasedDeduplication="true")
    for i in range(12):
        q.send_message(f"p{i:02d}", message_group_id="g")
    b = q.buffered()
    got = []
    while msgs := b.receive_message():
        got.append(msgs[0].body)
        msgs[0].delete()
    assert got == [f"p{i:02d}" for i in range(12)]
    b.close()
    assert q.peek("all") == []


@pytest.mark.parametrize("given_back", [0, 5])  # made visible at once, or backed off for 5 s
def test_a_fifo_message_given_back_comes_again_before_the_rest_of_its_group(db, clock, given_back):
    q = db.create_queue("pay.fifo", FifoQueue="true", ContentBasedDeduplication="true", VisibilityTimeout="30")
    for body in ("a0", "a1", "a2", "b0"):
        q.send_message(body, message_group_id=body[0])
    b = q.buffered()
    [first] = b.receive_message()
    assert first.body == "a0"
    first.change_visibility(given_back)  # as an unbuffered consumer that received a0 alone would
    clock.advance(given_back)
    got = []
    while msgs := b.receive_message():
        got.append(msgs[0].body)
        msgs[0].delete()
    assert [x for x in got if x.startswith("a")] == ["a0", "a1", "a2"] and "b0" in got
    b.close()


def test_a_fifo_heartbeat_extending_a_message_lets_none_of_its_group_go(db, clock):
    q = db.create_queue("pay.fifo", FifoQueue="true", ContentBasedDeduplication="true", VisibilityTimeout="30")
    for body in ("a0", "a1"):
        q.send_message(body, message_group_id="a")
    b = q.buffered()
    [first] = b.receive_message()
    b.change_message_visibility_batch([{"Id": "1", "ReceiptHandle": first.receipt_handle, "VisibilityTimeout": 60}])
    first.delete()
    [second] = b.receive_message()  # still fetched here: not let go, so its receive counted once
    assert (second.body, second.receive_count) == ("a1", 1)
    b.close()


def test_attribute_names_given_once_apply_to_every_message(queue):
    queue.send_message("x", message_attributes={"k": {"DataType": "String", "StringValue": "v"}})
    b = queue.buffered(message_system_attribute_names=["ApproximateReceiveCount"], message_attribute_names=["All"])
    [m] = b.receive_message()
    assert m.attributes == {"ApproximateReceiveCount": "1"}
    assert m.message_attributes["k"].string_value == "v"


@pytest.mark.parametrize(
    "options, named",
    [
        ({"prefetch": 0}, "prefetch"),
        ({"prefetch": 101}, "prefetch"),
        ({"max_batch_open_ms": -1}, "max_batch_open_ms"),
        ({"max_batch_open_ms": 60_001}, "max_batch_open_ms"),
        ({"visibility_timeout": 43_201}, "VisibilityTimeout"),
        ({"message_system_attribute_names": ["Nope"]}, "Nope"),
    ],
)
def test_bad_options_are_refused_with_the_value_and_the_range(queue, options, named):
    with pytest.raises(SQSError) as err:
        queue.buffered(**options)
    assert named in str(err.value)
    assert str(list(options.values())[0]).strip("[]'") in str(err.value)


def test_bad_receive_arguments_are_refused_before_anything_is_claimed(queue):
    fill(queue, 1)
    b = queue.buffered()
    with pytest.raises(InvalidParameterValue, match="MaxNumberOfMessages"):
        b.receive_message(max_number_of_messages=11)
    with pytest.raises(InvalidParameterValue, match="WaitTimeSeconds"):
        b.receive_message(wait_time_seconds=21)
    assert counts(queue) == (1, 0)


def test_it_is_otherwise_the_queue_itself(queue):
    b = queue.buffered()
    assert b.url == queue.url and b.name == queue.name
    b.send_message("via the buffer")
    [m] = b.receive_message()
    assert m.queue is b and m.body == "via the buffer"


def public_names(cls_or_obj) -> set[str]:
    return {n for n in dir(cls_or_obj) if not n.startswith("_")}


def test_every_public_name_of_its_queue_is_forwarded_or_done_its_own_way(queue):
    # Fails when Queue gains a public name: add it to FORWARDED, or name it in BUFFERS_OWN if
    # the buffer must do it its own way.
    queue_names = public_names(Queue) | {"db", "name", "context"}  # set by Queue's __init__
    assert BUFFERS_OWN <= queue_names
    assert set(FORWARDED) == queue_names - BUFFERS_OWN and len(FORWARDED) == len(set(FORWARDED))
    b = queue.buffered()
    for name in FORWARDED:
        mine, theirs = getattr(b, name), getattr(queue, name)
        if inspect.ismethod(theirs):  # the queue's own method, its signature and docstring with it
            assert mine.__self__ is queue and mine.__func__ is theirs.__func__, name
        else:
            assert mine == theirs, name
    for name in BUFFERS_OWN:
        assert vars(BufferedQueue)[name] is not vars(Queue)[name]
    b.close()


def test_every_forwarded_name_acts_on_its_queue(queue, db):
    b = queue.buffered()
    assert (b.db, b.name, b.url, b.arn, b.key, b.fifo) == (queue.db, queue.name, queue.url, queue.arn, queue.key, queue.fifo)
    assert b.context is queue.context
    b.set_queue_attributes({"DelaySeconds": "0", "VisibilityTimeout": "40"})
    assert b.get_queue_attributes(["VisibilityTimeout"]) == queue.get_queue_attributes(["VisibilityTimeout"]) == {"VisibilityTimeout": "40"}
    b.add_permission("p", ["111122223333"], ["SendMessage"])
    b.remove_permission("p")
    b.tag_queue({"team": "a", "tier": "1"})
    b.untag_queue(["tier"])
    assert b.list_queue_tags() == queue.list_queue_tags() == {"team": "a"}
    assert b.list_dead_letter_source_queues() == []
    sent = b.send_message("one", delay_seconds=0)
    assert len(b.send_message_batch([{"Id": "1", "MessageBody": "two"}]).successful) == 1
    assert [m.message_id for m in b.peek()] == [m.message_id for m in queue.peek()]
    assert sent.message_id in {m.message_id for m in b.peek()}
    page, _ = b.peek_page(limit=1)
    previews, _ = b.peek_previews(chars=1)
    assert len(page) == 1 and [(m.body, n) for m, n in previews] == [("o", 3), ("t", 3)]
    records = list(b.export_messages())
    assert [r for _, r in b.message_records()] == records and len(records) == 2
    assert b.purge_visible() == 2 and queue.peek() == []
    assert b.import_messages(records) == 2 and len(queue.peek()) == 2
    b.purge_queue()
    assert queue.peek() == []
    fifo = db.create_queue("f.fifo", attributes={"FifoQueue": "true", "ContentBasedDeduplication": "true"})
    fb = fifo.buffered()
    fb.send_message("g", message_group_id="g")
    assert list(fb.group_records()) == list(fifo.group_records()) and len(list(fb.group_records())) == 1
    assert fb.last_sequence() == fifo.last_sequence()
    other = b.buffered(prefetch=10)
    assert isinstance(other, BufferedQueue) and other.queue is queue and other.prefetch == 10
    with pytest.raises(AttributeError):
        b.no_such_name  # noqa: B018
    for buffer in (b, fb, other):
        buffer.close()


def test_a_buffer_without_its_queue_says_which_attribute_it_lacks():
    bare = object.__new__(BufferedQueue)  # as copying makes one, before its state is set
    with pytest.raises(AttributeError, match="'queue'"):
        bare.url  # noqa: B018
    with pytest.raises(AttributeError, match="'queue'"):
        bare.send_message("lost")


def test_what_the_buffer_sets_on_itself_is_its_own(queue):
    b = queue.buffered(visibility_timeout=5, prefetch=20)
    assert (b.visibility_timeout, b.prefetch) == (5, 20)
    # None of its own settings hides a name of its queue, nor does a later Queue name hide them.
    assert set(vars(b)) & (public_names(Queue) | {"db", "name"}) == set()
    b.send_message = "the buffer's"  # as any name may be assigned to it
    assert b.send_message == "the buffer's" and callable(queue.send_message)


def test_a_closed_buffer_refuses_receives_and_deletes_what_it_handed_out_at_once(queue, clock):
    fill(queue, 3)
    b = queue.buffered()
    [m, n] = b.receive_message(max_number_of_messages=2)
    b.close()
    b.close()  # again: nothing more to do
    with pytest.raises(ValueError, match="closed"):
        b.receive_message()
    m.delete()  # a worker finishing a message handed out before the close
    b.delete_message(n.receipt_handle)
    assert [x.body for x in queue.peek("in-flight")] == []
    clock.advance(3600)  # past every visibility timeout: nothing handed out comes back
    assert len(queue.receive_message(max_number_of_messages=10)) == 1  # the one never handed out


def test_threads_sharing_one_buffer_each_get_every_message_once(db_path):
    # Real threads on real time, bounded: four consumers drain 200 messages through one buffer.
    db = sqsqlite.connect(db_path)
    q = db.create_queue("shared")
    fill(q, 200)
    b = q.buffered()
    seen, lock = [], threading.Lock()

    def consume():
        while msgs := b.receive_message():
            with lock:
                seen.append(msgs[0].body)
            msgs[0].delete()

    threads = [threading.Thread(target=consume) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    b.close()
    assert sorted(seen) == sorted(f"m{i:03d}" for i in range(200))
    assert q.peek("all") == []
    db.close()


# Any run of receives, acknowledgements, clock steps and flushes: once the buffer is closed and
# every lease has ended, each message is either still stored or was acknowledged, and every
# acknowledged one is gone unless its deferred delete was reported as refused.
step = st.one_of(
    st.tuples(st.just("receive"), st.integers(1, 10)),
    st.tuples(st.just("ack"), st.integers(0, 30)),
    st.tuples(st.just("advance"), st.sampled_from([0.05, 0.2, 5, 31])),
    st.tuples(st.just("flush"), st.just(0)),
    st.tuples(st.just("other consumer"), st.integers(1, 10)),
)


@settings(max_examples=40, deadline=None, database=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=st.lists(step, max_size=40))
def test_no_run_of_buffered_calls_loses_or_keeps_a_message_wrongly(tmp_path_factory, steps):
    clock = sqsqlite.ManualClock()
    db = sqsqlite.connect(str(tmp_path_factory.mktemp("prop") / "b.db"), clock=clock)
    try:
        q = db.create_queue("jobs", visibility_timeout=30)
        fill(q, 30)
        b = q.buffered(prefetch=7)
        held, acked = [], set()
        for kind, arg in steps:
            if kind == "receive":
                held.extend(b.receive_message(max_number_of_messages=arg))
            elif kind == "ack" and held:
                m = held.pop(arg % len(held))
                m.delete()
                acked.add(m.body)
            elif kind == "advance":
                clock.advance(arg)
            elif kind == "flush":
                b.flush()
            elif kind == "other consumer":
                q.receive_message(max_number_of_messages=arg)
        b.close()
        refused = {f.receipt_handle for f in b.failed_deletes}
        clock.advance(31)
        left = set(stored(q))
        assert left | acked == {f"m{i:03d}" for i in range(30)}
        # An acknowledged message is stored again only if its deferred delete was refused.
        assert len(left & acked) <= len(refused)
    finally:
        db.close()


def test_a_receive_after_the_window_waits_for_the_deletes_the_flusher_is_committing(queue, clock, monkeypatch):
    # The flusher may take the due deletes an instant before a receive looks: the receive must
    # then wait for that commit, not find nothing waiting and return with the deletes unwritten.
    import sqsqlite.core.buffered as buffered_module

    fill(queue, 10)
    b = queue.buffered(max_batch_open_ms=200)
    started, go = threading.Event(), threading.Event()
    commit = buffered_module.delete_claims

    def slow_commit(q, claims):
        started.set()
        go.wait(10)
        return commit(q, claims)

    monkeypatch.setattr(buffered_module, "delete_claims", slow_commit)
    b.receive_message()[0].delete()
    clock.advance(0.2)
    threading.Thread(target=b.flush_due, daemon=True).start()
    assert started.wait(10)
    threading.Timer(0.1, go.set).start()
    b.receive_message()
    assert len(stored(queue)) == 9
    b.close()


def test_a_claim_of_more_than_ten_returns_each_message_as_a_claim_of_ten_does(db, clock):
    # A buffer's claims of more than a receive's 10 read their rows, then claim them by id
    # (receiving._claim_listed), where a claim of 10 or fewer is one UPDATE ... RETURNING: the
    # same messages must come back, in the same state, every kind of message among them.
    from dataclasses import fields

    from sqsqlite.core.receiving import ReceiveRequest, receive
    from sqsqlite.core.rules import wanted_message_attributes

    def made(name):
        dlq = db.create_queue(f"{name}-dlq")
        source = db.create_queue(f"{name}-src", {"RedrivePolicy": json.dumps({"deadLetterTargetArn": dlq.arn, "maxReceiveCount": "1"})})
        source.send_message("redriven")
        source.receive_message(visibility_timeout=0)
        source.receive_message()  # past maxReceiveCount: moved to the dead-letter queue, which the claims below read
        dlq.send_message("plain")
        dlq.send_message("with attributes", message_attributes={"k": {"DataType": "String", "StringValue": "v"}})
        dlq.send_message("grouped", message_group_id="tenant-1")  # a fair queue's group id, on a standard queue
        dlq.send_message("received before")
        [again] = [m for m in dlq.receive_message(max_number_of_messages=10, visibility_timeout=0) if m.body == "received before"]
        assert again.receive_count == 1
        fill(dlq, 21)
        return dlq

    small, large = made("small"), made("large")
    clock.advance(1)
    every = wanted_message_attributes(["All"])
    system = set(sqsqlite.defaults.MESSAGE_SYSTEM_ATTRIBUTES)
    by_ten = [m for _ in range(3) for m in receive(small.context, small, ReceiveRequest(10, None, None, system, every))]
    at_once = receive(large.context, large, ReceiveRequest(30, None, None, system, every))
    compared = [f.name for f in fields(at_once[0]) if f.name not in ("message_id", "_receipt_handle", "claim", "queue", "_md5_body")]

    def state(messages, queue):
        # Each message's fields but its id, by body; the queues' names told apart only by their prefix.
        return repr(sorted((m.body, [getattr(m, name) for name in compared]) for m in messages)).replace(queue, "q")

    assert len(at_once) == 26
    assert state(at_once, "large") == state(by_ten, "small")
    assert counts(small) == counts(large) == (0, 26)
    for m in at_once:
        m.delete()
    assert counts(large) == (0, 0)


def test_on_the_system_clock_a_prefetched_message_whose_lease_ended_is_never_handed_out(db_path):
    # The system clock's leases are checked in ns against the earliest lease end of the
    # waiting messages (BufferedQueue._ready_until); a test's clock goes through its ms.
    with sqsqlite.connect(db_path) as db:
        q = db.create_queue("jobs")
        fill(q, 20)
        held = q.buffered(visibility_timeout=30)
        first, second = held.receive_message()[0], held.receive_message()[0]
        assert second.claim.token is first.claim.token  # served from the claim: its lease holds
        held.close()
        lapsed = q.buffered(visibility_timeout=0)
        first, second = lapsed.receive_message()[0], lapsed.receive_message()[0]
        assert second.claim.token is not first.claim.token  # the waiting ones' leases had ended: a new claim
        lapsed.close()


def test_a_claim_of_more_than_ten_moves_the_messages_past_max_receive_count_to_the_dead_letter_queue(db, clock):
    # The dead-letter move follows the claim's UPDATE (it undoes that claim's count), in a claim
    # of more than 10 (a SELECT, then an UPDATE by id) as in one of up to 10.
    from sqsqlite.core.receiving import ReceiveRequest, receive
    from sqsqlite.core.rules import wanted_message_attributes

    dlq = db.create_queue("jobs-dlq")
    q = db.create_queue("jobs", {"RedrivePolicy": json.dumps({"deadLetterTargetArn": dlq.arn, "maxReceiveCount": "1"})})
    fill(q, 5)
    assert len(q.receive_message(max_number_of_messages=5, visibility_timeout=0)) == 5  # received once: the next receive is past 1
    fill(q, 20)
    clock.advance(1)
    got = receive(q.context, q, ReceiveRequest(30, None, None, set(), wanted_message_attributes([])))
    assert sorted(m.body for m in got) == [f"m{i:03d}" for i in range(20)]
    assert {m.receive_count for m in got} == {1}
    moved = dlq.peek("all", limit=100)
    assert len(moved) == 5 and {m.receive_count for m in moved} == {1}  # their count as it was, not this claim's
    assert counts(q) == (0, 20) and counts(dlq) == (5, 0)


def test_messages_left_waiting_by_two_claims_at_once_are_checked_against_the_earlier_lease(queue, clock, monkeypatch):
    # Two threads' claims into one buffer: the waiting messages are handed out unchecked only
    # before the earliest of their leases ends (BufferedQueue._ready_until), not the later claim's.
    import sqsqlite.core.buffered as buffered_module

    fill(queue, 40)
    b = queue.buffered(visibility_timeout=10)
    claim, entered, go = buffered_module.receive, threading.Event(), threading.Event()

    def held_in_thread_b(*args, **kwargs):
        if threading.current_thread().name == "b":
            entered.set()
            go.wait(10)
        return claim(*args, **kwargs)

    monkeypatch.setattr(buffered_module, "receive", held_in_thread_b)
    later = threading.Thread(target=b.receive_message, name="b")
    later.start()
    assert entered.wait(10)
    b.receive_message()  # this thread's claim: the rest wait, their lease ending in 10 s
    clock.advance(5)
    go.set()  # thread b's claim: the rest wait too, their lease ending 5 s later
    later.join(10)
    clock.advance(6)  # past the first claim's lease, within the second's
    [m] = b.receive_message()
    assert m.visible_at > clock.now_ms()  # one of the second claim's, never a lapsed one of the first
    b.close()
