"""The Kombu transport's rules, through Kombu's own API, on a manual clock: no sleeps, no worker.

A second Database on the same file (the `db` fixture, same clock) looks at what the transport did.
"""

from __future__ import annotations

import socket
import subprocess
import sys
from datetime import datetime, timedelta, timezone

import kombu
import pytest
from kombu import Connection, Exchange, Producer
from kombu import Queue as KombuQueue

import sqsqlite
from sqsqlite.transport import channel as transport
from sqsqlite.transport import payloads


def counts(db, name):
    (stats,) = [s for s in db.stats() if s.name == name]
    return stats.visible, stats.in_flight, stats.delayed


@pytest.fixture
def connect(db_path, clock):
    opened = []

    def make(**options):
        conn = Connection("sqsqlite:///" + db_path, transport_options={"clock": clock, **options})
        opened.append(conn)
        return conn

    yield make
    for conn in opened:
        conn.release()


@pytest.fixture
def conn(connect):
    return connect(visibility_timeout=30)


def publish(conn, body, queue="jobs", **kwargs):
    q = KombuQueue(queue, Exchange(queue), routing_key=queue)
    with conn.channel() as channel:
        Producer(channel).publish(body, exchange=q.exchange, routing_key=queue, declare=[q], serializer="json", **kwargs)


def receive(conn, queue="jobs", timeout=1):
    """The next message of `queue` through a Kombu SimpleQueue's consumer (real Kombu code path)."""
    return conn.SimpleQueue(queue).get(timeout=timeout)


def test_a_url_with_the_sqsqlite_scheme_resolves_to_the_transport_once_celery_or_the_package_is_imported():
    assert kombu.transport.TRANSPORT_ALIASES["sqsqlite"] == "sqsqlite.transport.channel:Transport"
    assert Connection("sqsqlite:///x.db").transport_cls == "sqsqlite"
    assert Connection("sqsqlite:///x.db").get_transport_cls() is transport.Transport


def test_urls_name_files_as_sqlalchemy_does():
    assert transport.database_path("sqsqlite:///queue.db") == "queue.db"
    assert transport.database_path("sqsqlite:////var/lib/queue.db") == "/var/lib/queue.db"
    assert transport.database_path("sqsqlite://") is None  # $SQSQLITE_DB or ./sqsqlite.db
    with pytest.raises(ValueError, match="sqsqlite:///relative"):
        transport.database_path("sqsqlite://host/queue.db")


def test_a_published_message_is_received_with_its_body_and_an_ack_deletes_it(conn, db):
    publish(conn, {"n": 1})
    message = receive(conn)
    assert message.payload == {"n": 1}
    assert counts(db, "jobs") == (0, 1, 0)
    message.ack()
    assert counts(db, "jobs") == (0, 0, 0)


@pytest.mark.parametrize("foreign", ["not json", '{"no": "properties"}', "[1, 2]"])
def test_a_message_another_program_sent_is_handed_over_as_its_text_between_kombus_own(conn, db, foreign):
    publish(conn, {"n": 1})
    db.queue("jobs").send_message(foreign)
    publish(conn, {"n": 2})
    simple = conn.SimpleQueue("jobs")  # one consumer: a receive hands it all three
    got = [simple.get(timeout=1) for _ in range(3)]
    assert [m.payload if m.body != foreign else m.body for m in got] == [{"n": 1}, foreign, {"n": 2}]
    for m in got:
        m.ack()
    assert counts(db, "jobs") == (0, 0, 0)


def test_an_unacked_message_comes_back_after_the_visibility_timeout_and_not_before(conn, db, clock):
    publish(conn, "work")
    first = receive(conn)
    clock.advance(29)
    assert counts(db, "jobs") == (0, 1, 0)
    clock.advance(1)
    again = receive(conn)
    assert again.payload == "work" and again.delivery_tag != first.delivery_tag
    assert again.properties["delivery_info"]["sqsqlite_queue"] == "jobs"
    again.ack()
    assert counts(db, "jobs") == (0, 0, 0)


def test_an_ack_whose_lease_ended_and_whose_message_this_worker_received_again_deletes_it(conn, db, clock, caplog):
    # A task longer than the visibility timeout, under acks_late: the same worker receives it
    # again while the first run goes on. The first run's ack deletes it with the newer handle, so
    # it runs twice, as on SQS, not once a lease until it is dead-lettered.
    publish(conn, "work")
    first = receive(conn)
    clock.advance(30)
    again = receive(conn)
    with caplog.at_level("INFO", logger="sqsqlite.transport"):
        first.ack()
    assert counts(db, "jobs") == (0, 0, 0)
    assert [r.levelname for r in caplog.records] == ["INFO"]  # said, and not as a failure
    again.ack()  # the second run's: its message is gone, its handle the last one, which succeeds
    assert counts(db, "jobs") == (0, 0, 0)


def test_an_ack_refused_before_the_receive_that_superseded_it_was_noted_deletes_the_message_when_it_arrives(conn, db, clock):
    # Celery acks from another thread than the one that receives, so the ack may find its handle
    # superseded before the receive that superseded it has noted its delivery here (a receive by
    # another Database stands in for that moment). The message is deleted when it comes back.
    publish(conn, "work")
    first = receive(conn)
    clock.advance(30)
    [crossing] = db.queue("jobs").receive_message()
    first.ack()  # refused: superseded, and no newer delivery noted here yet
    assert counts(db, "jobs") == (0, 1, 0)
    clock.advance(30)
    again = receive(conn)  # handed over (it runs again), and deleted at once
    assert counts(db, "jobs") == (0, 0, 0)
    again.ack()  # its handle, the last one, deletes a deleted message: fine
    assert counts(db, "jobs") == (0, 0, 0)


def test_a_message_received_again_is_marked_redelivered_where_celery_reads_it(conn, clock):
    publish(conn, "work")
    first = receive(conn)
    assert first.delivery_info["redelivered"] is False
    clock.advance(30)
    again = receive(conn)
    assert again.delivery_info["redelivered"] is True  # Celery's Request reads delivery_info
    again.requeue()
    assert receive(conn).delivery_info["redelivered"] is True


def test_the_visibility_timeout_option_sets_the_lease_and_the_new_queues_attribute(connect, db, clock):
    conn = connect(visibility_timeout=5)
    publish(conn, "x")
    receive(conn)
    assert db.queue("jobs").get_queue_attributes(["VisibilityTimeout"]) == {"VisibilityTimeout": "5"}
    clock.advance(5)
    assert counts(db, "jobs") == (1, 0, 0)


def test_without_the_option_new_queues_lease_for_1800_seconds_as_kombus_sqs_transport_makes_them(connect, db, clock):
    conn = connect()
    publish(conn, "long task")
    assert db.queue("jobs").get_queue_attributes(["VisibilityTimeout"]) == {"VisibilityTimeout": "1800"}
    receive(conn)
    clock.advance(1799)  # Celery holds a prefetched, rate-limited or ETA task leased this long
    assert counts(db, "jobs") == (0, 1, 0)
    clock.advance(1)
    assert counts(db, "jobs") == (1, 0, 0)


def test_without_the_option_an_existing_queue_leases_for_its_own_visibility_timeout(connect, db, clock):
    db.create_queue("jobs", {"VisibilityTimeout": 45})
    conn = connect()
    publish(conn, "x")
    receive(conn)
    clock.advance(45)
    assert counts(db, "jobs") == (1, 0, 0)


@pytest.mark.parametrize("given", ["60", 60.5, 60])
def test_the_visibility_timeout_option_is_read_as_kombus_sqs_transport_reads_it(connect, db, clock, given):
    conn = connect(visibility_timeout=given)
    publish(conn, "x")
    receive(conn)
    assert db.queue("jobs").get_queue_attributes(["VisibilityTimeout"]) == {"VisibilityTimeout": "60"}
    clock.advance(59)
    assert counts(db, "jobs") == (0, 1, 0)
    clock.advance(1)
    assert counts(db, "jobs") == (1, 0, 0)


def test_a_wait_time_given_as_text_bounds_the_long_poll(connect, db, clock):
    conn = connect(wait_time_seconds="5")
    with conn.Consumer(KombuQueue("jobs", Exchange("jobs"), routing_key="jobs"), callbacks=[]):
        start = clock.now_ms()
        with pytest.raises(socket.timeout):
            conn.drain_events(timeout=30)
    assert clock.now_ms() - start == 5000


@pytest.mark.parametrize(("polling_interval", "waited"), [(None, 1000), (0.25, 250), (5, 1000)])
def test_with_no_long_poll_an_empty_drain_waits_for_a_commit_up_to_the_polling_interval_not_a_busy_loop(
    connect, db, clock, polling_interval, waited
):
    options = {} if polling_interval is None else {"polling_interval": polling_interval}
    conn = connect(wait_time_seconds=0, **options)
    with consume(conn) as consumer:
        start = clock.now_ms()
        with pytest.raises(socket.timeout):
            conn.drain_events(timeout=30)
        assert clock.now_ms() - start == waited  # a second at most, as a wait for several queues
        publish(conn, "x")
        conn.drain_events(timeout=30)
    assert consumer.got == ["x"]


@pytest.mark.parametrize(
    "option",
    [
        {"visibility_timeout": "soon"},
        {"visibility_timeout": 43201},
        {"wait_time_seconds": 21},
        {"wait_time_seconds": None},
        {"max_receive_count": 0},
    ],
)
def test_a_bad_option_is_a_clear_error_naming_it_when_the_connection_opens(connect, db, option):
    (name,) = option
    with pytest.raises(ValueError, match=f"transport option {name}="):
        connect(**option).connect()
    assert db.stats() == []


def test_reject_with_requeue_releases_the_message_visible_again_at_once(conn, db):
    publish(conn, "again")
    receive(conn).requeue()
    assert counts(db, "jobs") == (1, 0, 0)
    assert receive(conn).payload == "again"


def test_reject_without_requeue_deletes_the_message(conn, db):
    publish(conn, "poison")
    receive(conn).reject()
    assert counts(db, "jobs") == (0, 0, 0)


def test_with_a_dead_letter_queue_a_rejected_message_moves_there_after_max_receive_count_receives(connect, db, clock):
    conn = connect(visibility_timeout=10, dead_letter_queue="jobs.dead", max_receive_count=2)
    publish(conn, "poison")
    policy = db.queue("jobs").get_queue_attributes(["RedrivePolicy"])["RedrivePolicy"]
    assert db.queue_arn("jobs-dead") in policy and '"maxReceiveCount": 2' in policy.replace(":2", ": 2")
    for _ in range(2):
        receive(conn).reject()  # left for the redrive policy, not deleted
        assert counts(db, "jobs") == (0, 1, 0)
        clock.advance(10)
    with pytest.raises(kombu.simple.SimpleQueue.Empty):
        receive(conn)  # the third receive moves it instead of returning it
    assert counts(db, "jobs") == (0, 0, 0)
    assert counts(db, "jobs-dead") == (1, 0, 0)
    assert [m.body for m in db.queue("jobs-dead").peek()][0].startswith("{")


def test_closing_a_channel_releases_its_unacked_deliveries_at_once(conn, db):
    publish(conn, "a")
    publish(conn, "b")
    simple = conn.SimpleQueue("jobs")
    simple.get(timeout=1)
    assert counts(db, "jobs")[1] >= 1
    simple.close()
    conn.release()
    assert counts(db, "jobs") == (2, 0, 0)


def consume(conn, queue="jobs", ack=True, **kwargs):
    """A consumer of `queue` whose bodies land in `.got` (acked unless `ack` is False)."""
    got: list = []
    consumer = conn.Consumer(
        KombuQueue(queue, Exchange(queue), routing_key=queue),
        callbacks=[lambda body, m: (got.append(body), ack and m.ack())],
        **kwargs,
    )
    consumer.got = got
    return consumer


def test_a_drain_hands_over_one_message_and_the_rest_of_its_receive_waits_for_the_next_drains(conn, db):
    for n in range(4):
        publish(conn, n)
    with consume(conn) as consumer:
        conn.drain_events(timeout=1)
        assert consumer.got == [0]  # a solo worker runs each task inside the drain that hands it over
        assert counts(db, "jobs") == (0, 3, 0)  # one receive took them all; three wait in the channel
        for _ in range(3):
            conn.drain_events(timeout=1)
        assert consumer.got == [0, 1, 2, 3]
    assert counts(db, "jobs") == (0, 0, 0)


def one_of_four_handed_over(conn):
    """A consumer of four messages after one drain: one handed over, three kept in the channel."""
    for n in range(4):
        publish(conn, n)
    consumer = consume(conn)
    consumer.consume()
    conn.drain_events(timeout=1)
    return consumer


def test_messages_received_but_not_handed_over_are_visible_again_at_once_when_their_consumer_is_cancelled(conn, db):
    consumer = one_of_four_handed_over(conn)
    consumer.cancel()  # a worker's warm shutdown: the three never started go back now, not in 30 s
    assert consumer.got == [0]
    assert counts(db, "jobs") == (3, 0, 0)


def test_closing_the_connection_releases_the_received_messages_not_handed_over(conn, db):
    one_of_four_handed_over(conn)
    conn.release()
    assert counts(db, "jobs") == (3, 0, 0)


def test_a_no_ack_consumers_message_is_deleted_when_it_is_handed_over_so_a_close_loses_none(conn, db):
    for n in range(3):
        publish(conn, n)
    with consume(conn, ack=False, no_ack=True) as consumer:
        conn.drain_events(timeout=1)
        assert counts(db, "jobs") == (0, 2, 0)
    assert consumer.got == [0]
    assert counts(db, "jobs") == (2, 0, 0)


def test_a_countdown_becomes_the_messages_delay_in_the_database(conn, db, clock):
    eta = datetime.fromtimestamp(clock.now_ms() / 1000, timezone.utc) + timedelta(seconds=60)
    publish(conn, "later", headers={"eta": eta.isoformat()})
    assert counts(db, "jobs") == (0, 0, 1)
    clock.advance(59)
    assert counts(db, "jobs") == (0, 0, 1)
    clock.advance(1)
    assert receive(conn).payload == "later"


def test_a_delay_over_sqs_limit_is_sent_with_900_seconds_and_an_explicit_delay_property_wins():
    now = 1_700_000_000_000
    eta = datetime.fromtimestamp(now / 1000, timezone.utc) + timedelta(hours=2)
    assert payloads.delay_seconds({"headers": {"eta": eta.isoformat()}}, now) == 900
    assert payloads.delay_seconds({"headers": {"eta": eta.isoformat()}, "properties": {"delay_seconds": 7}}, now) == 7
    naive = datetime.fromtimestamp(now / 1000, timezone.utc).replace(tzinfo=None) + timedelta(seconds=3.5)
    assert payloads.delay_seconds({"headers": {"eta": naive.isoformat()}}, now) == 3  # rounded down: never late
    assert payloads.delay_seconds({"headers": {"eta": "2000-01-01T00:00:00+00:00"}}, now) is None  # past: none
    assert payloads.delay_seconds({"headers": {}}, now) is None


def test_a_drain_long_polls_and_wakes_when_a_delayed_message_becomes_visible(conn, db, clock):
    publish(conn, "late", delay_seconds=5)
    got = []
    consumer = conn.Consumer(
        KombuQueue("jobs", Exchange("jobs"), routing_key="jobs"), callbacks=[lambda body, m: (got.append(body), m.ack())]
    )
    start = clock.now_ms()
    with consumer:
        conn.drain_events(timeout=20)
        assert got == ["late"]
        assert clock.now_ms() - start == 5000  # woke when the delay ended, not at the drain's end
        with pytest.raises(socket.timeout):
            conn.drain_events(timeout=3)
    assert clock.now_ms() - start == 8000


def test_a_drain_with_nothing_to_consume_ends_at_its_timeout_when_the_wall_clock_steps_back(db_path, stepping_clock):
    import threading
    import time

    conn = Connection("sqsqlite:///" + db_path, transport_options={"clock": stepping_clock})
    try:
        conn.connect()
        threading.Timer(0.2, setattr, (stepping_clock, "offset", -3_600_000)).start()  # an hour back
        ended = []

        def drain():  # no consumer: it looks again until its timeout
            with pytest.raises(socket.timeout):
                conn.drain_events(timeout=1)
            ended.append(True)

        started = time.monotonic()
        drainer = threading.Thread(target=drain, daemon=True)
        drainer.start()
        drainer.join(10)
        assert ended and time.monotonic() - started < 5  # not an hour and a second
    finally:
        conn.release()


def test_queue_names_get_the_prefix_and_dots_become_dashes(connect, db):
    conn = connect(queue_name_prefix="app1-")
    publish(conn, "x", queue="celery.tasks")
    assert [s.name for s in db.stats()] == ["app1-celery-tasks"]
    assert receive(conn, "celery.tasks").payload == "x"
    assert transport.queue_name("", "a.b:c.fifo") == "a-b_c.fifo"


@pytest.mark.parametrize(("prefix", "name"), [("prod.", "prod-celery"), ("prod:", "prod_celery"), ("app1-", "app1-celery")])
def test_a_prefix_is_made_sqs_safe_with_the_name_as_kombus_sqs_transport_makes_it(connect, db, prefix, name):
    conn = connect(queue_name_prefix=prefix)
    publish(conn, "x", queue="celery")
    assert [s.name for s in db.stats()] == [name]
    assert receive(conn, "celery").payload == "x"
    assert transport.queue_name("prod.", "jobs.fifo") == "prod-jobs.fifo"


def test_a_fifo_queue_keeps_order_and_needs_no_group_from_the_caller(conn, db):
    for n in range(3):
        publish(conn, n, queue="ordered.fifo")
    assert db.queue("ordered.fifo").fifo
    simple, got = conn.SimpleQueue("ordered.fifo"), []
    for _ in range(3):
        m = simple.get(timeout=1)
        got.append(m.payload)
        m.ack()
    assert got == [0, 1, 2]
    assert counts(db, "ordered.fifo") == (0, 0, 0)


def test_predefined_queues_map_kombu_queues_to_the_queues_their_urls_name_and_no_other_is_used(connect, db):
    url = "https://sqs.us-east-1.amazonaws.com/123456789012/prod-celery"
    conn = connect(predefined_queues={"celery": {"url": url, "access_key_id": "ignored"}})
    publish(conn, "x", queue="celery")
    assert [s.name for s in db.stats()] == ["prod-celery"]
    assert receive(conn, "celery").payload == "x"
    with pytest.raises(transport.UndefinedQueueException, match="'other' must be defined in 'predefined_queues'"):
        publish(conn, "y", queue="other")
    with conn.channel() as channel:
        channel.queue_delete("celery")  # defined elsewhere: kept, as Kombu's SQS transport keeps it
    assert [s.name for s in db.stats()] == ["prod-celery"]


@pytest.mark.parametrize(
    ("predefined", "error"),
    [
        ({"celery": {"url": "https://x/1/celery", "backoff_policy": {1: 10}}}, "backoff_policy, which the sqsqlite transport does not"),
        ({"jobs.fifo": {"url": "https://x/1/jobs"}}, "both end in .fifo, or neither"),
        ({"celery": {}}, "expected a mapping with the queue's 'url'"),
    ],
)
def test_a_predefined_queue_this_transport_cannot_serve_as_configured_is_refused_when_the_connection_opens(connect, predefined, error):
    with pytest.raises(ValueError, match=error):
        connect(predefined_queues=predefined).connect()


def test_a_message_group_id_reaches_a_standard_queue_for_its_fair_queueing_as_kombus_sqs_transport_sends_it(conn, db):
    publish(conn, "a", MessageGroupId="tenant-1")
    publish(conn, "b")
    assert [m.message_group_id for m in db.queue("jobs").peek()] == ["tenant-1", None]


def test_purge_removes_the_ready_messages_and_size_counts_them(conn, db, clock):
    for n in range(12):
        publish(conn, n)
    publish(conn, "delayed", delay_seconds=60)
    with conn.channel() as channel:
        assert channel._size("jobs") == 12
        assert channel.queue_purge("jobs") == 12
    assert counts(db, "jobs") == (0, 0, 1)


def test_purge_deletes_every_ready_message_and_moves_none_to_the_dead_letter_queue(connect, db):
    conn = connect(dead_letter_queue="dead", max_receive_count=1)
    publish(conn, "poison")
    receive(conn).requeue()  # received once: a receive now would move it to the dead-letter queue
    for n in range(25):
        publish(conn, n)
    with conn.channel() as channel:
        assert channel.queue_purge("jobs") == 26
    assert counts(db, "jobs") == (0, 0, 0)
    assert counts(db, "dead") == (0, 0, 0)


def test_queue_attributes_apply_to_new_queues_and_a_bad_one_is_a_clear_error(connect, db):
    conn = connect(queue_attributes={"MessageRetentionPeriod": 3600})
    publish(conn, "x")
    assert db.queue("jobs").get_queue_attributes(["MessageRetentionPeriod"]) == {"MessageRetentionPeriod": "3600"}
    bad = connect(queue_attributes={"MessageRetentionPeriod": 1})
    with pytest.raises(sqsqlite.SQSError, match="MessageRetentionPeriod"):
        publish(bad, "y", queue="other")
    assert "other" not in [s.name for s in db.stats()]


def test_kombus_sqs_creation_attributes_apply_last_over_the_visibility_timeout_option_as_kombus_sqs_applies_them(connect, db):
    conn = connect(visibility_timeout=60, **{"sqs-creation-attributes": {"VisibilityTimeout": "120"}})
    publish(conn, "x")
    assert db.queue("jobs").get_queue_attributes(["VisibilityTimeout"]) == {"VisibilityTimeout": "120"}


def test_a_polling_interval_is_read_as_a_number_when_the_connection_opens(connect, db, clock):
    conn = connect(wait_time_seconds=0, polling_interval="0.5")
    with consume(conn):
        start = clock.now_ms()
        with pytest.raises(socket.timeout):
            conn.drain_events(timeout=30)
        assert clock.now_ms() - start == 500
    with pytest.raises(ValueError, match="transport option polling_interval='soon': expected a number of seconds"):
        connect(polling_interval="soon").connect()


def test_predefined_queues_are_keyed_by_the_prefixed_sqs_safe_name_as_kombus_sqs_keys_them(connect, db):
    url = "https://sqs.us-east-1.amazonaws.com/123456789012/prod-my-tasks"
    conn = connect(queue_name_prefix="prod-", predefined_queues={"prod-my-tasks": {"url": url}})
    publish(conn, "x", queue="my.tasks")
    assert [s.name for s in db.stats()] == ["prod-my-tasks"]
    assert receive(conn, "my.tasks").payload == "x"
    with pytest.raises(transport.UndefinedQueueException, match="'prod-other' must be defined in 'predefined_queues'"):
        publish(conn, "y", queue="other")  # named by the key it was looked up by


def test_kombus_sqs_creation_attributes_and_queue_tags_apply_to_new_queues(connect, db):
    conn = connect(**{"sqs-creation-attributes": {"MessageRetentionPeriod": "3600"}, "queue_tags": {"team": "billing"}})
    publish(conn, "x")
    assert db.queue("jobs").get_queue_attributes(["MessageRetentionPeriod"]) == {"MessageRetentionPeriod": "3600"}
    assert db.queue("jobs").list_queue_tags()["team"] == "billing"  # beside the tag recording its binding


def test_an_ack_whose_lease_was_lost_to_another_consumer_is_logged_not_raised(conn, connect, db, clock, caplog):
    publish(conn, "slow")
    first = receive(conn)
    clock.advance(30)
    second = receive(connect(visibility_timeout=30))  # another worker's channel
    first.ack()  # its handle is no longer the newest: the other consumer settles the message
    assert "could not ack" in caplog.text
    assert counts(db, "jobs") == (0, 1, 0)
    second.ack()
    assert counts(db, "jobs") == (0, 0, 0)


def test_requeueing_a_delivery_whose_message_another_consumer_already_deleted_is_logged_not_raised(conn, db, clock, caplog):
    publish(conn, "once")
    first = receive(conn)
    clock.advance(30)
    receive(conn).ack()  # the lease ended, another consumer took the message and deleted it
    first.requeue()  # (an ack or a reject of it is a delete of a message gone: it succeeds, as SQS's does)
    assert counts(db, "jobs") == (0, 0, 0)
    assert "could not release a message of jobs" in caplog.text


def test_closing_a_channel_holding_a_delivery_deleted_elsewhere_releases_the_rest_with_no_emergency_dump(conn, db, clock, caplog):
    publish(conn, "gone")
    simple = conn.SimpleQueue("jobs")
    simple.get(timeout=1)
    clock.advance(30)
    db.queue("jobs").receive_message()[0].delete()  # another program took it after the lease ended
    publish(conn, "kept")
    simple.get(timeout=1)
    simple.close()
    conn.release()
    assert "UNABLE TO RESTORE" not in caplog.text and "EMERGENCY DUMP" not in caplog.text
    assert "could not release a message of jobs" in caplog.text
    assert counts(db, "jobs") == (1, 0, 0)


def test_a_consumer_of_several_queues_takes_from_each_in_turn_and_waits_through_the_wakeups_seam(conn, db, clock):
    got = []
    queues = [KombuQueue(name, Exchange(name), routing_key=name) for name in ("a", "b")]
    consumer = conn.Consumer(queues, callbacks=[lambda body, m: (got.append(body), m.ack())])
    with consumer:
        publish(conn, "b1", queue="b")
        conn.drain_events(timeout=5)
        assert got == ["b1"]
        for n in range(2):
            publish(conn, f"a{n}", queue="a")
            publish(conn, f"b{n + 2}", queue="b")
        for _ in range(2):
            conn.drain_events(timeout=5)  # one queue's receive: one message a drain
        assert got[1:] in (["a0", "a1"], ["b2", "b3"])
        for _ in range(2):
            conn.drain_events(timeout=5)  # the next receive starts at the other queue
        assert sorted(got) == ["a0", "a1", "b1", "b2", "b3"]
        start = clock.now_ms()
        with pytest.raises(socket.timeout):
            conn.drain_events(timeout=5)  # nothing: one wait of at most a second, then a timeout
        assert 0 < clock.now_ms() - start <= 1000
    assert counts(db, "a") == counts(db, "b") == (0, 0, 0)


def _ten_jobs(db_path: str) -> None:
    """Ten messages on "jobs", whose queue leases for Kombu SQS's default 1800 s."""
    with Connection("sqsqlite:///" + db_path, transport_options={"visibility_timeout": 1800}) as c:
        q = c.SimpleQueue("jobs")
        for n in range(10):
            q.put({"n": n})
        q.close()


def _run_script(tmp_path, text: str, *args: str) -> subprocess.CompletedProcess:
    """``text`` run as a program of its own (what its interpreter does at exit is the point)."""
    script = tmp_path / "script.py"
    script.write_text(text)
    return subprocess.run([sys.executable, str(script), *args], capture_output=True, text=True, timeout=60)


_CONSUME_AND_EXIT = """
import sys
from kombu import Connection
import sqsqlite.transport
conn = Connection("sqsqlite:///" + sys.argv[1])
message = conn.SimpleQueue("jobs").get(timeout=5)
if sys.argv[2] == "ack":
    message.ack()
print("got", message.payload["n"])
# ends without closing the queue or releasing the connection
"""


@pytest.mark.parametrize("ack", [True, False])
def test_a_kombu_program_that_exits_without_closing_gives_back_what_it_held_at_once(db_path, tmp_path, ack):
    # Real processes: the point is what happens at the interpreter's exit.
    _ten_jobs(db_path)
    done = _run_script(tmp_path, _CONSUME_AND_EXIT, db_path, "ack" if ack else "keep")
    assert done.returncode == 0 and "got 0" in done.stdout, done.stderr
    assert "EMERGENCY DUMP" not in done.stdout + done.stderr
    with sqsqlite.connect(db_path) as db:
        # Not hidden for the 1800 s visibility timeout: the prefetched ones, and the unacked one.
        assert counts(db, "jobs") == ((9 if ack else 10), 0, 0)


_FORK_AND_CHILD_EXITS = """
import os, sys
from kombu import Connection
import sqsqlite, sqsqlite.transport
conn = Connection("sqsqlite:///" + sys.argv[1])
message = conn.SimpleQueue("jobs").get(timeout=5)  # held, unacked; the rest of the claim buffered
pid = os.fork()
if pid == 0:
    sys.exit(0)  # a normal exit: exit hooks run, with a copy of the parent's channel
os.waitpid(pid, 0)
with sqsqlite.connect(sys.argv[1]) as db:
    [stats] = db.stats()
    print("after the child", stats.visible, stats.in_flight)
"""


def test_a_forked_child_that_exits_gives_back_nothing_of_its_parents_messages(db_path, tmp_path):
    # Real processes: the point is what a forked child's exit does.
    _ten_jobs(db_path)
    done = _run_script(tmp_path, _FORK_AND_CHILD_EXITS, db_path)
    assert done.returncode == 0, done.stderr
    assert "after the child 0 10" in done.stdout  # still the parent's: none visible to another consumer
