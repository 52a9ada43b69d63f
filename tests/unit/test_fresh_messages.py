"""Never-received messages with no delay and no group have no entry in ix_messages_visible: a
claim finds them by id, from the queue's fresh_from on (migration 0014). None of them may be
passed over, whatever sits before them in the queue's range of ids."""


def test_a_visible_message_is_received_behind_ones_stamped_after_a_clock_step_back(db, clock):
    q = db.create_queue("orders")
    for i in range(100):
        q.send_message(f"early{i}")
    clock.advance(-1)  # the clock steps back a second: the 100 are delayed until it catches up
    q.send_message("now visible")
    assert q.get_queue_attributes()["ApproximateNumberOfMessagesDelayed"] == "100"
    assert [m.body for m in q.receive_message(max_number_of_messages=10)] == ["now visible"]
    assert [m.body for m in q.peek("delayed", 1)] == ["early0"]


def test_a_visible_message_is_received_behind_expired_ones_a_prune_has_not_removed(db, clock):
    q = db.create_queue("orders", attributes={"MessageRetentionPeriod": "60"})
    q.receive_message()  # the connection's first receive prunes (nothing), and the next is a while off
    for i in range(100):
        q.send_message(f"old{i}")
    clock.advance(61)
    q.send_message("live")
    assert [m.body for m in q.receive_message(max_number_of_messages=10)] == ["live"]


def test_never_received_messages_behind_ones_in_flight_wait_little_for_messages_that_keep_coming_back(db, clock):
    q = db.create_queue("orders")
    for i in range(5):
        q.send_message_batch([{"Id": str(j), "MessageBody": f"A{i * 10 + j}"} for j in range(10)])
    for _ in range(4):
        q.receive_message(max_number_of_messages=10, visibility_timeout=3600)  # A0-A39 held by slow handlers
    clock.advance(1)
    q.send_message_batch([{"Id": str(j), "MessageBody": f"R{j}", "DelaySeconds": 1} for j in range(10)])
    clock.advance(1)
    first = {}
    for second in range(15):
        for m in q.receive_message(max_number_of_messages=10, visibility_timeout=30):
            if m.body.startswith("A"):
                first.setdefault(m.body, second)
                m.change_visibility(3600)
            else:
                m.change_visibility(0)  # a failing handler: back at once, every second
        clock.advance(1)
    assert sorted(first) == sorted(f"A{i}" for i in range(40, 50))
    assert max(first.values()) <= 10  # OLDEST_FIRST_WINDOW_MS: none waits longer behind them
