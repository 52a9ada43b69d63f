"""Fair queues: on a standard queue, a message group holding a disproportionate share of the
messages in flight is noisy, and receives return quiet groups' messages before its own
(docs/explanation/fair-queues.md). Timing with the injected clock."""

import threading
from collections import Counter

import pytest

import sqsqlite
from sqsqlite import defaults as D

MIN = D.FAIR_NOISY_MIN_IN_FLIGHT  # 30


def _send(q, group, n, prefix=None):
    prefix = prefix or group
    for start in range(0, n, 10):
        entries = [
            {"Id": str(i), "MessageBody": f"{prefix}-{start + i}", **({"MessageGroupId": group} if group else {})}
            for i in range(min(10, n - start))
        ]
        assert not q.send_message_batch(entries).failed


def _take(q, n, **kw):
    """Receive n messages (in receives of up to 10), holding them in flight."""
    out = []
    while len(out) < n:
        got = q.receive_message(max_number_of_messages=min(10, n - len(out)), **kw)
        if not got:
            break
        out += got
    return out


def _groups(messages):
    return [m.message_group_id for m in messages]


def test_a_group_with_the_minimum_in_flight_and_more_than_the_share_gets_its_messages_after_quiet_ones(queue):
    _send(queue, "noisy", 200)
    _send(queue, None, 0)
    for i in range(20):
        queue.send_message(f"quiet-{i}", message_group_id=f"tenant-{i}")
    held = _take(queue, MIN)
    assert set(_groups(held)) == {"noisy"}  # plain order until then: the noisy group's are older
    nxt = _take(queue, 20)
    assert sorted(_groups(nxt)) == sorted(f"tenant-{i}" for i in range(20))


def test_a_group_below_the_minimum_in_flight_is_never_noisy(queue):
    _send(queue, "big", 100)
    queue.send_message("quiet", message_group_id="small")
    held = _take(queue, MIN - 1)
    assert set(_groups(held)) == {"big"}
    # 29 in flight, 100% of the queue's: still quiet, so plain order goes on.
    assert _groups(queue.receive_message()) == ["big"]


def test_a_group_with_at_most_the_share_of_the_messages_in_flight_is_not_noisy(queue):
    # 270 messages of no group in flight and 30 of the group: exactly 10%, not more.
    _send(queue, None, 270, prefix="plain")
    _take(queue, 270)
    _send(queue, "big", 40)
    queue.send_message("quiet", message_group_id="small")
    assert set(_groups(_take(queue, 30))) == {"big"}
    assert _groups(queue.receive_message()) == ["big"]  # 31 of 301 now: more than 10%
    assert _groups(queue.receive_message()) == ["small"]


def test_a_noisy_group_is_still_served_when_no_quiet_message_is_visible(queue):
    _send(queue, "noisy", 100)
    _take(queue, MIN)
    queue.send_message("quiet", message_group_id="tenant")
    batch = queue.receive_message(max_number_of_messages=10)
    # Quiet first, then the noisy group fills the batch: nothing waits while a consumer asks.
    assert Counter(_groups(batch)) == {"tenant": 1, "noisy": 9}
    assert len(_take(queue, 100)) == 100 - MIN - 9


def test_messages_without_a_group_are_never_noisy_and_keep_plain_order(queue):
    _send(queue, None, 100, prefix="plain")
    assert [m.body for m in _take(queue, 60)] == [f"plain-{i}" for i in range(60)]
    assert queue.db.stats()[0].noisy_groups == 0


def test_a_noisy_group_becomes_quiet_again_as_its_messages_are_deleted(queue):
    _send(queue, "noisy", 100)
    held = _take(queue, MIN)
    queue.send_message("quiet", message_group_id="tenant")
    assert queue.db.stats()[0].noisy_groups == 1
    held[0].delete()  # 29 in flight: below the minimum
    assert queue.db.stats()[0].noisy_groups == 0
    assert _groups(queue.receive_message()) == ["noisy"]  # plain order again: the older message first


def test_a_noisy_group_becomes_quiet_again_when_its_visibility_timeouts_end(queue, clock):
    _send(queue, "noisy", 100)
    _take(queue, MIN, visibility_timeout=30)
    queue.send_message("quiet", message_group_id="tenant")
    assert queue.db.stats()[0].noisy_groups == 1
    clock.advance(30)  # the leases end: nothing in flight, nothing written
    assert queue.db.stats()[0].noisy_groups == 0
    assert _groups(queue.receive_message()) == ["noisy"]


def test_a_noisy_group_becomes_quiet_again_when_its_messages_are_released(queue):
    _send(queue, "noisy", 100)
    held = _take(queue, MIN)
    queue.send_message("quiet", message_group_id="tenant")
    held[0].change_visibility(0)
    assert queue.db.stats()[0].noisy_groups == 0


def test_a_batch_takes_every_quiet_message_before_any_noisy_one(queue):
    _send(queue, "noisy", 200)
    _take(queue, MIN)
    for i in range(3):
        queue.send_message(f"q{i}", message_group_id=f"tenant-{i}")
    _send(queue, None, 2, prefix="plain")
    batch = queue.receive_message(max_number_of_messages=10)
    # One claim returns its messages in row order; which messages it took is the rule.
    assert Counter(_groups(batch)) == {"tenant-0": 1, "tenant-1": 1, "tenant-2": 1, None: 2, "noisy": 5}


def test_several_noisy_groups_all_wait_behind_quiet_ones(queue):
    _send(queue, "a", 60)
    _send(queue, "b", 60)
    _take(queue, 90)  # a: 60 in flight, b: 30
    queue.send_message("quiet", message_group_id="tenant")
    assert queue.db.stats()[0].noisy_groups == 2
    assert Counter(_groups(queue.receive_message(max_number_of_messages=2))) == {"tenant": 1, "b": 1}


def test_a_long_poll_returns_the_quiet_message_that_becomes_visible_with_a_noisy_one(db, queue, clock):
    _send(queue, "noisy", 40)
    held = _take(queue, 40, visibility_timeout=60)
    held[0].change_visibility(10)  # one noisy message comes back in 10 s; 39 stay in flight
    queue.send_message("quiet", message_group_id="tenant", delay_seconds=10)
    got = queue.receive_message(wait_time_seconds=20)
    assert _groups(got) == ["tenant"]
    assert _groups(queue.receive_message()) == ["noisy"]


def test_a_long_poll_woken_by_a_send_takes_the_quiet_message(db, queue, clock):
    _send(queue, "noisy", 40)
    _take(queue, 40, visibility_timeout=60)
    result = []
    waiter = threading.Thread(target=lambda: result.extend(queue.receive_message(wait_time_seconds=20)))
    waiter.start()
    other = sqsqlite.connect(db.path, clock=clock)
    _send(other.queue("orders"), "noisy", 5, prefix="late")
    other.queue("orders").send_message("quiet", message_group_id="tenant")
    other.close()
    waiter.join(10)
    assert not waiter.is_alive()
    assert result and set(_groups(result)) <= {"noisy", "tenant"}
    assert "tenant" in _groups(result + queue.receive_message())


def test_the_quiet_group_figures_are_exact(db, queue, clock):
    _send(queue, "noisy", 50)
    _take(queue, MIN + 5)
    clock.advance(2)
    for i in range(3):
        queue.send_message(f"q{i}", message_group_id=f"tenant-{i}")
    queue.send_message("late", message_group_id="tenant-9", delay_seconds=60)
    queue.send_message("plain")
    _take(queue, 2)  # quiet first: tenant-0 and tenant-1 go in flight
    s = db.stats()[0]
    assert (s.noisy_groups, s.visible_in_quiet_groups, s.in_flight_in_quiet_groups, s.delayed_in_quiet_groups) == (1, 2, 2, 1)
    assert s.oldest_age_in_quiet_groups_seconds == 0.0
    assert (s.visible, s.in_flight, s.delayed) == (17, 37, 1)


def test_a_fifo_queue_has_no_noisy_groups_and_keeps_group_order(db):
    fifo = db.create_queue("f.fifo", attributes={"FifoQueue": "true", "ContentBasedDeduplication": "true"})
    for g in range(5):
        for i in range(10):
            fifo.send_message(f"{g}-{i}", message_group_id=f"g{g}")
    got = []
    for _ in range(5):
        got += fifo.receive_message(max_number_of_messages=10)
    assert len(got) == 50
    s = db.stats()[0]
    assert s.fifo and s.noisy_groups == 0 and s.in_flight_in_quiet_groups == 50
    assert [m.body for m in got if m.message_group_id == "g0"] == [f"0-{i}" for i in range(10)]


@pytest.mark.parametrize("name", ["noisy_groups", "visible_in_quiet_groups"])
def test_an_empty_queue_has_no_fair_figures(db, queue, name):
    assert getattr(db.stats()[0], name) == 0


def test_a_quiet_message_behind_a_flood_larger_than_the_window_is_found_among_the_newest(queue, clock):
    _send(queue, "noisy", 3 * D.FAIR_WINDOW)
    _take(queue, MIN)
    clock.advance(1)
    queue.send_message("quiet", message_group_id="tenant")
    assert _groups(queue.receive_message()) == ["tenant"]


def test_quiet_messages_among_the_newest_come_oldest_first(queue, clock):
    _send(queue, "noisy", 2 * D.FAIR_WINDOW)
    _take(queue, MIN)
    for i in range(3):
        clock.advance(1)
        queue.send_message(f"q{i}", message_group_id=f"tenant-{i}")
    assert [m.body for m in queue.receive_message(max_number_of_messages=2)] == ["q0", "q1"]


def test_a_quiet_message_deeper_in_a_flood_than_both_windows_is_served_as_the_flood_drains(queue, clock):
    _send(queue, "noisy", 2 * D.FAIR_WINDOW)
    queue.send_message("deep", message_group_id="tenant")
    clock.advance(1)
    _send(queue, "noisy", 2 * D.FAIR_WINDOW, prefix="later")
    _take(queue, MIN)
    # Neither window reaches it: the noisy group is served, oldest first, never starved ...
    assert _groups(queue.receive_message(max_number_of_messages=10)) == ["noisy"] * 10
    # ... and once the flood ahead of it fits in the oldest window, it comes first.
    taken = 40
    while taken < 2 * D.FAIR_WINDOW - D.FAIR_WINDOW + 1:
        got = queue.receive_message(max_number_of_messages=10)
        assert _groups(got) == ["noisy"] * 10
        for m in got:
            m.delete()
        taken += 10
    assert _groups(queue.receive_message()) == ["tenant"]
