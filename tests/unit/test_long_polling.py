"""Long polling: a waiting receive returns as soon as a message can be returned."""

import multiprocessing as mp
import threading
import time

import pytest

import sqsqlite
from sqsqlite.core import receiving
from sqsqlite.errors import InvalidParameterValue

# ------------------------------------------------------------------ on the manual clock


def test_a_wait_returns_when_a_delay_ends_during_it(db, clock):
    q = db.create_queue("lp")
    q.send_message("soon", delay_seconds=5)
    start = clock.now_ms()
    [m] = q.receive_message(wait_time_seconds=20)
    assert m.body == "soon"
    assert clock.now_ms() - start == 5000  # the moment the delay ended, not the 20 s


def test_a_wait_returns_when_a_visibility_timeout_ends_during_it(db, clock):
    q = db.create_queue("lp2", visibility_timeout=7)
    q.send_message("x")
    first = q.receive_message()[0]
    start = clock.now_ms()
    [again] = q.receive_message(wait_time_seconds=20)
    assert again.message_id == first.message_id and again.receive_count == 2
    assert clock.now_ms() - start == 7000


def test_a_fifo_wait_returns_when_the_retention_of_a_head_in_flight_frees_its_group(db, clock):
    q = db.create_queue(
        "lp.fifo", FifoQueue="true", ContentBasedDeduplication="true", VisibilityTimeout="43200", MessageRetentionPeriod="60"
    )
    q.send_message("blocks", message_group_id="g")
    q.receive_message()  # in flight for 12 hours, holding its group back
    clock.advance(30)
    q.send_message("next", message_group_id="g")
    clock.advance(25)  # the head expires 5 s from now
    start = clock.now_ms()
    [m] = q.receive_message(wait_time_seconds=20)
    assert m.body == "next"
    assert clock.now_ms() - start == 5000  # when the head's retention ended, not the 20 s


def test_a_fifo_wait_takes_a_group_whose_head_expired_while_its_empty_claim_committed(db, clock, monkeypatch):
    q = db.create_queue(
        "lp2.fifo", FifoQueue="true", ContentBasedDeduplication="true", VisibilityTimeout="43200", MessageRetentionPeriod="60"
    )
    q.send_message("blocks", message_group_id="g")
    q.receive_message()
    clock.advance(30)
    q.send_message("next", message_group_id="g")
    clock.advance(25)  # the head expires 5 s from now
    claim, slow = receiving._claim, []

    def claim_taking_six_seconds(*args):
        out = claim(*args)
        if not slow:
            slow.append(clock.advance(6))  # the head expires between this empty claim and the wait
        return out

    monkeypatch.setattr(receiving, "_claim", claim_taking_six_seconds)
    start = clock.now_ms()
    [m] = q.receive_message(wait_time_seconds=20)
    assert m.body == "next"
    assert clock.now_ms() - start == 6000  # at once, not at the 20 s deadline


def test_a_wait_with_nothing_to_return_ends_empty_at_the_wait_time(db, clock):
    q = db.create_queue("lp3")
    q.send_message("too late", delay_seconds=30)
    start = clock.now_ms()
    assert q.receive_message(wait_time_seconds=20) == []
    assert clock.now_ms() - start == 20_000


def test_the_queue_receive_wait_time_is_the_default_wait(db, clock):
    q = db.create_queue("lp4", attributes={"ReceiveMessageWaitTimeSeconds": "3"})
    start = clock.now_ms()
    assert q.receive_message() == []
    assert clock.now_ms() - start == 3000
    start = clock.now_ms()
    assert q.receive_message(wait_time_seconds=0) == []  # an explicit 0 is a short poll
    assert clock.now_ms() - start == 0


def test_a_short_poll_does_not_wait(db, clock):
    q = db.create_queue("lp5")
    q.send_message("x", delay_seconds=1)
    start = clock.now_ms()
    assert q.receive_message() == []
    assert clock.now_ms() == start


@pytest.mark.parametrize("bad", [-1, 21, "x"])
def test_wait_time_seconds_is_0_to_20(db, bad):
    q = db.create_queue("lp6")
    with pytest.raises(InvalidParameterValue) as err:
        q.receive_message(wait_time_seconds=bad)
    assert "0 to 20" in str(err.value)


# ------------------------------------------------------------------ real time, bounded

WAIT = 20  # the longest long poll; every wake-up below must come well before it


def test_a_send_from_another_thread_wakes_a_waiting_receive(tmp_path):
    db = sqsqlite.connect(tmp_path / "threads.db")
    try:
        q = db.create_queue("wake")
        timer = threading.Timer(0.3, lambda: q.send_message("hello"))
        timer.start()
        started = time.monotonic()
        got = q.receive_message(wait_time_seconds=WAIT)
        elapsed = time.monotonic() - started
        timer.join()
        assert [m.body for m in got] == ["hello"]
        assert elapsed < WAIT / 2
    finally:
        db.close()


def test_a_long_poll_ends_at_its_wait_time_when_the_wall_clock_steps_back_meanwhile(db_path, stepping_clock):
    with sqsqlite.connect(db_path, clock=stepping_clock) as db:
        q = db.create_queue("stepped")
        done = []
        poll = threading.Thread(target=lambda: done.append(q.receive_message(wait_time_seconds=1)), daemon=True)
        started = time.monotonic()
        poll.start()
        time.sleep(0.2)
        stepping_clock.offset = -3_600_000  # an hour back, 0.2 s into the poll
        poll.join(10)
        waited = time.monotonic() - started
        assert done == [[]]  # ended empty, not an hour and a second later
        assert 0.9 <= waited < 10


def test_a_long_poll_returns_a_delayed_message_as_soon_as_the_wall_clock_steps_past_its_delay(db_path, stepping_clock):
    with sqsqlite.connect(db_path, clock=stepping_clock) as db:
        q = db.create_queue("stepped")
        q.send_message("due after the step", delay_seconds=900)
        done = []
        poll = threading.Thread(target=lambda: done.append(q.receive_message(wait_time_seconds=20)), daemon=True)
        started = time.monotonic()
        poll.start()
        time.sleep(0.2)
        stepping_clock.offset = 1_000_000  # 1,000 s forward, 0.2 s into the poll: the delay is over
        poll.join(30)
        waited = time.monotonic() - started
        assert [[m.body for m in got] for got in done] == [["due after the step"]]
        assert waited < 10  # at the step, not when the 20-second poll ends


def _send_when_told(path, ready, name):
    db = sqsqlite.connect(path)
    ready.wait(10)
    time.sleep(0.3)  # let the receive settle into its wait
    db.queue(name).send_message("from another process")
    db.close()


@pytest.mark.slow
def test_a_send_from_another_process_wakes_a_waiting_receive(tmp_path):
    path = str(tmp_path / "procs.db")
    db = sqsqlite.connect(path)
    try:
        q = db.create_queue("wake")
        ctx = mp.get_context("spawn")
        ready = ctx.Event()
        proc = ctx.Process(target=_send_when_told, args=(path, ready, "wake"))
        proc.start()
        try:
            ready.set()
            started = time.monotonic()
            got = q.receive_message(wait_time_seconds=WAIT)
            elapsed = time.monotonic() - started
        finally:
            proc.join(15)
            if proc.is_alive():
                proc.kill()
        assert proc.exitcode == 0
        assert [m.body for m in got] == ["from another process"]
        assert elapsed < WAIT / 2
    finally:
        db.close()


def test_a_send_committed_between_an_empty_claim_and_the_wait_still_wakes_the_poll(db_path, clock):
    # The race: a receive finds nothing, then another connection sends before the poll starts
    # waiting. The wait compares against data_version as the claim saw it, so it returns at its
    # first look instead of sleeping to the deadline. A manual clock makes this exact: only the
    # first poll interval passes.
    waiting = sqsqlite.connect(db_path, clock=clock)
    sender = sqsqlite.connect(db_path, clock=clock)
    q = waiting.create_queue("raced")
    assert q.receive_message() == []  # the empty claim
    sender.queue("raced").send_message("slipped in")
    start = clock.now_ms()
    waiting.wakeups.wait("raced", None, start + 20_000, start + 20_000)
    assert clock.now_ms() - start < 1000
    waiting.close()
    sender.close()


def test_a_wait_is_told_both_when_to_look_again_and_when_the_whole_poll_ends(db, clock):
    class Recording:
        def __init__(self, inner):
            self.inner, self.waits = inner, []

        def mark(self, queue):
            return self.inner.mark(queue)

        def notify(self, queue, count=None):
            self.inner.notify(queue, count)

        def wait(self, queue, mark, until, deadline):
            self.waits.append((until - start, deadline - start))
            self.inner.wait(queue, mark, until, deadline)

    q = db.create_queue("told", visibility_timeout=7)
    q.send_message("x")
    q.receive_message()
    db.wakeups = recording = Recording(db.wakeups)
    start = clock.now_ms()
    [again] = q.receive_message(wait_time_seconds=20)
    assert again.receive_count == 2
    assert recording.waits[0] == (7_000, 20_000)  # look again when the message is back; the poll ends at 20 s
