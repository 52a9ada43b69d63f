"""The wall clock stepped (NTP at boot, a virtual machine resumed), on a ManualClock: a time
stamped before a backward step counts as stamped now, so no deduplication window and no 60-second
refusal outlasts its own length of real time; nothing a purge should take is spared."""

import json

import pytest

import sqsqlite
from sqsqlite import defaults as D
from sqsqlite.errors import PurgeQueueInProgress, QueueDeletedRecently

HOUR = 3600


def make_fifo(db, name="jobs.fifo", **attributes):
    return db.create_queue(name, attributes={"FifoQueue": "true", **{k: str(v) for k, v in attributes.items()}})


def bodies(msgs):
    return [m.body for m in msgs]


# ---------------------------------------------------------------- deduplication


def test_a_deduplication_id_sent_before_the_clock_stepped_back_dedups_the_retry_then_is_free_five_minutes_later(db, clock):
    q = make_fifo(db)
    first = q.send_message("order", message_group_id="g", message_deduplication_id="order-1")
    [m] = q.receive_message()
    m.delete()
    clock.advance(-HOUR)
    # The producer's retry straddling the step is still a duplicate...
    assert q.send_message("order", message_group_id="g", message_deduplication_id="order-1").message_id == first.message_id
    clock.advance(D.FIFO_DEDUP_WINDOW_SECONDS)
    # ...and five minutes of real time later the id is free: this send is delivered, not dropped.
    again = q.send_message("order again", message_group_id="g", message_deduplication_id="order-1")
    assert again.message_id != first.message_id
    assert bodies(q.receive_message()) == ["order again"]


def test_a_body_sent_before_the_clock_stepped_back_dedups_for_five_minutes_of_real_time_at_most(db, clock):
    q = make_fifo(db, ContentBasedDeduplication="true")
    first = q.send_message("refresh", message_group_id="g")
    q.receive_message()[0].delete()
    clock.advance(-HOUR)
    assert q.send_message("refresh", message_group_id="g").message_id == first.message_id
    clock.advance(D.FIFO_DEDUP_WINDOW_SECONDS - 0.001)
    assert q.send_message("refresh", message_group_id="g").message_id == first.message_id  # a duplicate restarts nothing
    clock.advance(0.001)
    assert q.send_message("refresh", message_group_id="g").message_id != first.message_id
    assert bodies(q.receive_message()) == ["refresh"]


def _record(source, **changes):
    [record] = source.export_messages()
    return {**record, **changes}


def test_a_message_imported_from_a_clock_ahead_of_this_one_dedups_its_id_for_five_minutes_from_now(db, clock):
    source = make_fifo(db, "source.fifo")
    sent = source.send_message("charge 42", message_group_id="g", message_deduplication_id="order-42")
    target = make_fifo(db, "target.fifo")
    # Sent by a host whose clock is an hour ahead of this one.
    assert target.import_messages([_record(source, SentTimestamp=clock.now_ms() + HOUR * 1000)]) == 1
    assert target.send_message("charge 42", message_group_id="g", message_deduplication_id="order-42").message_id == sent.message_id
    clock.advance(D.FIFO_DEDUP_WINDOW_SECONDS)
    assert target.send_message("charge 42", message_group_id="g", message_deduplication_id="order-42").message_id != sent.message_id


def test_an_import_meeting_an_id_stamped_before_the_clock_stepped_back_keeps_it_five_minutes_of_real_time_at_most(db, clock):
    source = make_fifo(db, "source.fifo")
    source.send_message("charge 42", message_group_id="g", message_deduplication_id="order-42")
    target = make_fifo(db, "target.fifo")
    first = target.send_message("charge 42", message_group_id="g", message_deduplication_id="order-42")
    clock.advance(-HOUR)
    assert target.import_messages([_record(source, SentTimestamp=clock.now_ms())]) == 1
    clock.advance(D.FIFO_DEDUP_WINDOW_SECONDS)
    assert target.send_message("charge 42", message_group_id="g", message_deduplication_id="order-42").message_id != first.message_id


def test_a_receive_attempt_made_before_the_clock_stepped_back_is_repeated_then_forgotten_five_minutes_later(db, clock):
    q = make_fifo(db, ContentBasedDeduplication="true")
    q.send_message("job", message_group_id="g")
    [m] = q.receive_message(receive_request_attempt_id="attempt-1", visibility_timeout=2 * HOUR)
    clock.advance(-HOUR)
    [again] = q.receive_message(receive_request_attempt_id="attempt-1", visibility_timeout=2 * HOUR)
    assert again.receipt_handle == m.receipt_handle  # the retry straddling the step is repeated
    clock.advance(D.RECEIVE_ATTEMPT_WINDOW_SECONDS)
    # Five minutes of real time later the attempt is over: a receive afresh, and the group's
    # message is in flight, so there is nothing to return.
    assert q.receive_message(receive_request_attempt_id="attempt-1") == []


# ---------------------------------------------------------------- PurgeQueue


def test_a_purge_deletes_the_messages_sent_before_the_clock_stepped_back_too(db, clock):
    q = db.create_queue("jobs")
    for i in range(3):
        q.send_message(f"before-{i}")
    clock.advance(-HOUR)
    q.send_message("after")
    q.purge_queue()
    assert q.peek() == []
    clock.advance(HOUR + 1)
    assert q.receive_message(max_number_of_messages=10) == []


def test_a_purge_deletes_a_message_imported_with_a_sent_timestamp_ahead_of_this_clock(db, clock):
    q = db.create_queue("imported")
    record = {
        "MessageId": "3b1c6a2e-0000-4000-8000-000000000001",
        "Body": "from a clock a minute ahead",
        "SentTimestamp": db.now() + 60_000,
    }
    assert q.import_messages([record]) == 1
    q.purge_queue()
    clock.advance(120)
    assert q.receive_message() == []


# ---------------------------------------------------------------- the 60-second rules


def test_a_purge_made_before_the_clock_stepped_back_refuses_another_for_60_seconds_of_real_time_at_most(db, clock):
    q = db.create_queue("jobs")
    q.purge_queue()
    clock.advance(-HOUR)
    with pytest.raises(PurgeQueueInProgress, match=r"purge it again in 60\.0 seconds"):
        q.purge_queue()
    clock.advance(30)
    with pytest.raises(PurgeQueueInProgress, match=r"purge it again in 30\.0 seconds"):
        q.purge_queue()
    clock.advance(30)
    q.send_message("sent before the purge")
    q.purge_queue()
    assert q.peek() == []


def test_a_queue_deleted_before_the_clock_stepped_back_keeps_its_name_for_60_seconds_of_real_time_at_most(db, clock):
    q = db.create_queue("jobs")
    db.delete_queue(q.url)
    clock.advance(-HOUR)
    with pytest.raises(QueueDeletedRecently, match=r"reused in 60\.0 seconds"):
        db.create_queue("jobs")
    clock.advance(60)
    assert db.create_queue("jobs").name == "jobs"


# ---------------------------------------------------------------- a move task's rate


def test_a_rate_limited_move_task_waits_a_second_at_most_between_steps_when_the_clock_steps_back(db, clock, monkeypatch):
    dlq = db.create_queue("dead")
    source = db.create_queue("work", attributes={"RedrivePolicy": json.dumps({"deadLetterTargetArn": dlq.arn, "maxReceiveCount": 1})})
    for i in range(5):
        dlq.send_message(f"m{i}")
    clock.advance(2 * HOUR)  # sent long enough before the task that the step back leaves them visible
    waits = []
    monkeypatch.setattr(clock, "sleep", lambda seconds: (waits.append(seconds), sqsqlite.ManualClock.sleep(clock, seconds)))
    handle = db.start_message_move_task(dlq.arn, source.arn, max_number_of_messages_per_second=2, background=False)

    stepped = []

    def step_back_after_the_first_step(task):
        if task.approximate_number_of_messages_moved == 2 and not stepped:
            stepped.append(clock.advance(-HOUR))

    task = db.run_message_move_task(handle, step_back_after_the_first_step)
    assert (task.status, task.approximate_number_of_messages_moved) == ("COMPLETED", 5)
    assert waits and max(waits) <= 1
    assert sorted(bodies(source.peek())) == [f"m{i}" for i in range(5)]
