"""The wall clock stepped (NTP at boot, a virtual machine resumed), on a ManualClock: a time
stamped before a backward step counts as stamped now, so no deduplication window and no 60-second
refusal outlasts its own length of real time; nothing a purge should take is spared."""

from sqsqlite import defaults as D

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
