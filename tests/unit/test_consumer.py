"""The consumer helper: heartbeat while handling, delete on success, back off on failure."""

import time

import pytest

import sqsqlite
from sqsqlite.consumer import Backoff, Consumer, Heartbeat, consume
from sqsqlite.errors import DatabaseError, InvalidParameterValue, ReceiptHandleIsInvalid


def in_flight(queue):
    return int(queue.get_queue_attributes(["ApproximateNumberOfMessagesNotVisible"])["ApproximateNumberOfMessagesNotVisible"])


def test_a_handled_message_is_deleted(queue):
    queue.send_message("job")
    seen = []
    outcome = consume(queue, lambda m: seen.append(m.body), wait_time_seconds=0, stop_when_empty=True)
    assert seen == ["job"]
    assert outcome.processed == 1
    assert queue.peek("all") == []


def test_a_failed_message_comes_back_only_after_its_backoff(queue, clock):
    queue.send_message("flaky")

    def fail(msg):
        raise RuntimeError("downstream is down")

    consumer = Consumer(queue, fail, wait_time_seconds=0, backoff=Backoff(base=10, cap=100))
    assert consumer.run_once().failed == 1
    clock.advance(9.9)
    assert queue.receive_message() == []
    clock.advance(0.1)
    [again] = queue.receive_message()
    assert again.receive_count == 2


def test_on_a_fifo_queue_a_failed_message_keeps_the_rest_of_its_group_behind_it(db, clock):
    q = db.create_queue("pay.fifo", FifoQueue="true", ContentBasedDeduplication="true")
    for body in ("a0", "a1", "a2", "b0"):
        q.send_message(body, message_group_id=body[0])
    handled, failures = [], []

    def handle(msg):
        if msg.body == "a0" and not failures:
            failures.append(msg.body)
            raise RuntimeError("once")
        handled.append(msg.body)

    consumer = Consumer(q, handle, wait_time_seconds=0, backoff=Backoff(base=1, cap=1))
    assert consumer.run_once().failed == 1  # a0 failed; a1 and a2 are let go unhandled, b0 is handled
    clock.advance(1)
    while consumer.run_once().processed:
        pass
    assert [b for b in handled if b.startswith("a")] == ["a0", "a1", "a2"] and "b0" in handled


def test_backoff_doubles_per_receive_and_is_capped():
    backoff = Backoff(base=5, cap=60)
    assert [backoff.delay(n) for n in (1, 2, 3, 4, 5)] == [5, 10, 20, 40, 60]


def test_a_poison_message_lands_in_the_dead_letter_queue(db, clock):
    dlq = db.create_queue("orders-dlq")
    queue = db.create_queue("orders", RedrivePolicy={"deadLetterTargetArn": dlq.arn, "maxReceiveCount": 3})
    queue.send_message("poison")

    def fail(msg):
        raise ValueError("can't parse")

    consumer = Consumer(queue, fail, wait_time_seconds=0, backoff=Backoff(base=1, cap=1))
    for _ in range(4):
        consumer.run_once()
        clock.advance(1)
    [dead] = dlq.receive_message(message_system_attribute_names=["All"])
    assert dead.body == "poison"
    assert dead.attributes["DeadLetterQueueSourceArn"] == queue.arn
    assert dead.receive_count == 4  # 3 in the source queue, this one in the DLQ


def test_a_heartbeat_extends_visibility_from_the_moment_it_beats(db, clock):
    queue = db.create_queue("slow", visibility_timeout=30)
    queue.send_message("long job")
    [msg] = queue.receive_message()
    beat = Heartbeat(msg, visibility_timeout=30, interval=10)
    clock.advance(20)
    assert beat.beat()
    clock.advance(20)  # 40 s after the receive, past the original 30 s
    assert in_flight(queue) == 1
    assert queue.receive_message() == []
    clock.advance(10)  # 30 s after the beat
    assert in_flight(queue) == 0


def test_a_heartbeat_stops_at_the_twelve_hour_cap(db, clock):
    queue = db.create_queue("capped", visibility_timeout=3600)
    queue.send_message("forever")
    [msg] = queue.receive_message()
    beat = Heartbeat(msg, visibility_timeout=3600, interval=1800)
    start = clock.now_ms()
    while beat.beat():
        clock.advance(1800)
    # Beats succeed while now + 3600 s stays within 12 h of the receive, then stop.
    assert (clock.now_ms() - start) / 1000 == 12 * 3600 - 3600 + 1800
    assert isinstance(beat.error, InvalidParameterValue)
    assert in_flight(queue) == 1


def test_a_heartbeat_stops_once_another_consumer_holds_the_message(db, clock):
    queue = db.create_queue("shared", visibility_timeout=5)
    queue.send_message("contested")
    [first] = queue.receive_message()
    clock.advance(6)
    [second] = queue.receive_message()
    beat = Heartbeat(first, visibility_timeout=5, interval=2)
    assert not beat.beat()
    assert isinstance(beat.error, ReceiptHandleIsInvalid)
    assert second.receipt_handle != first.receipt_handle


def test_a_heartbeat_the_file_failed_keeps_the_message_and_the_next_beat_renews_it(db, clock, monkeypatch):
    queue = db.create_queue("busy", visibility_timeout=30)
    queue.send_message("long job")
    [msg] = queue.receive_message()
    beat = Heartbeat(msg, visibility_timeout=30, interval=10)
    real = type(queue).change_message_visibility

    def locked_once(self, handle, timeout):
        monkeypatch.setattr(type(queue), "change_message_visibility", real)
        raise DatabaseError("database is locked")

    monkeypatch.setattr(type(queue), "change_message_visibility", locked_once)
    clock.advance(10)
    assert beat.beat() and beat.holds(msg)  # a failure of the file, not of the lease
    assert isinstance(beat.error, DatabaseError)
    clock.advance(10)
    assert beat.beat()
    clock.advance(25)  # 45 s after the receive: the second beat's lease holds it
    assert queue.receive_message() == []


def test_consume_refuses_a_buffered_queue_naming_why(queue):
    with queue.buffered() as buffered, pytest.raises(TypeError, match="consume\\(\\) takes a Queue, not BufferedQueue"):
        consume(buffered, lambda m: None, wait_time_seconds=0, stop_when_empty=True)


@pytest.mark.slow
def test_the_heartbeat_thread_keeps_a_slow_handlers_message_hidden(db, clock):
    # Real threads are the point here: the heartbeat must run beside a blocked handler.
    queue = db.create_queue("slow-real", visibility_timeout=3)
    queue.send_message("slow")
    stolen = []

    def slow(msg):
        for _ in range(5):
            clock.advance(2)  # 10 s of queue time in all, over three visibility timeouts
            time.sleep(0.15)  # real time for the heartbeat thread (interval 0.05 s) to beat
            stolen.extend(queue.receive_message())

    consumer = Consumer(queue, slow, wait_time_seconds=0, heartbeat_interval=0.05)
    assert consumer.run_once().processed == 1
    assert stolen == []
    assert queue.peek("all") == []


@pytest.mark.slow
def test_messages_waiting_their_turn_in_a_batch_stay_hidden_while_earlier_ones_are_handled(db, clock):
    # Real threads: the heartbeat must keep the whole batch, not just the message in hand.
    queue = db.create_queue("batch-real", visibility_timeout=3)
    queue.send_message_batch([{"Id": str(i), "MessageBody": f"m{i}"} for i in range(3)])
    stolen, handled = [], []

    def slow(msg):
        for _ in range(3):
            clock.advance(2)  # 6 s of queue time per message, two visibility timeouts
            time.sleep(0.15)  # real time for the heartbeat thread (interval 0.05 s) to beat
            stolen.extend(queue.receive_message(max_number_of_messages=10))
        handled.append(msg.body)

    consumer = Consumer(queue, slow, wait_time_seconds=0, heartbeat_interval=0.05)
    assert consumer.run_once().processed == 3
    assert stolen == [] and sorted(handled) == ["m0", "m1", "m2"]
    assert queue.peek("all") == []
    assert len(db.store._all) == 1  # the heartbeat thread's connection closed with it


def test_a_handled_message_that_can_no_longer_be_deleted_is_counted_failed_and_the_loop_goes_on(db, clock):
    queue = db.create_queue("lapsed", visibility_timeout=5)
    queue.send_message("lapses")
    taken = []

    def too_slow(msg):  # no beat in time (the first comes 2 s of real time later): another consumer takes it
        clock.advance(6)
        taken.extend(queue.receive_message())

    consumer = Consumer(queue, too_slow, wait_time_seconds=0, heartbeat_interval=2)
    assert consumer.run_once() == sqsqlite.consumer.Outcome(processed=0, failed=1)
    assert [m.body for m in taken] == ["lapses"] and in_flight(queue) == 1


def test_after_stop_the_messages_not_yet_handled_are_visible_again_at_once(db, clock):
    queue = db.create_queue("stopping", visibility_timeout=30)
    queue.send_message_batch([{"Id": str(i), "MessageBody": f"m{i}"} for i in range(3)])
    consumer = Consumer(queue, lambda msg: consumer.stop(), wait_time_seconds=0)
    assert consumer.run(max_receives=5).processed == 1
    assert sorted(m.body for m in queue.receive_message(max_number_of_messages=10)) == ["m1", "m2"]


def test_an_interrupted_handler_stops_its_heartbeat(db, clock):
    import threading

    queue = db.create_queue("interrupted", visibility_timeout=30)
    queue.send_message("m")

    def interrupted(msg):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        Consumer(queue, interrupted, wait_time_seconds=0).run_once()
    assert [t for t in threading.enumerate() if t.name == "sqsqlite-heartbeat"] == []


@pytest.mark.parametrize("interval", [-1, 0, 10, 5.5, float("nan"), float("inf"), "1", [], True])
def test_a_heartbeat_interval_that_could_let_a_message_lapse_or_spin_is_refused(queue, interval):
    # Beats further apart than half the timeout let a slow handler's message lapse to another
    # consumer; none apart (or negative) commit thousands of writes a second.
    with pytest.raises(InvalidParameterValue, match="heartbeat_interval"):
        Consumer(queue, print, visibility_timeout=10, heartbeat_interval=interval)


@pytest.mark.parametrize("timeout", [2, 43_201, "30", 30.0])
def test_a_visibility_timeout_no_heartbeat_can_keep_is_refused_with_a_typed_error(queue, timeout):
    with pytest.raises(InvalidParameterValue, match="visibility_timeout"):
        Consumer(queue, print, visibility_timeout=timeout)


def test_an_interrupt_in_a_handler_gives_back_the_messages_not_yet_handled_at_once(db, clock):
    queue = db.create_queue("interrupt", visibility_timeout=60)
    queue.send_message_batch([{"Id": str(i), "MessageBody": f"m{i}"} for i in range(10)])

    def interrupted(msg):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        Consumer(queue, interrupted, wait_time_seconds=0).run_once()
    assert in_flight(queue) == 1  # the one in hand, maybe half done: back when its lease ends
    assert len(queue.receive_message(max_number_of_messages=10)) == 9


def test_a_consumer_that_does_not_long_poll_waits_longer_between_receives_of_an_empty_queue(db, clock):
    queue = db.create_queue("idle")
    started = clock.now_ms()
    Consumer(queue, print, wait_time_seconds=0).run(max_receives=8)
    # After each empty receive: 0.05 s, doubling to 1 s (the clock's sleep moves it).
    assert clock.now_ms() - started == 50 + 100 + 200 + 400 + 800 + 1000 + 1000
    started = clock.now_ms()
    queue.send_message("wakes it")
    Consumer(queue, print, wait_time_seconds=0).run(max_receives=1)
    assert clock.now_ms() == started and queue.peek("all") == []


def test_a_long_polling_consumer_waits_only_in_its_polls(db, clock):
    queue = db.create_queue("polls")
    started = clock.now_ms()
    Consumer(queue, print, wait_time_seconds=2).run(max_receives=3)
    assert clock.now_ms() - started == 3 * 2000
