"""Bindings across processes: Kombu keeps exchanges and bindings in the memory of the connection
that declared them, so each Connection here stands for a process of its own (a producer, a
worker); the file is all they share. A manual clock, no sleeps."""

from __future__ import annotations

import pytest
from kombu import Connection, Exchange, Producer
from kombu import Queue as KombuQueue

from sqsqlite.transport import bindings
from sqsqlite.transport import channel as transport

media = Exchange("media", type="topic")


@pytest.fixture
def connect(db_path, clock):
    opened = []

    def make(**options):
        conn = Connection("sqsqlite:///" + db_path, transport_options={"clock": clock, "visibility_timeout": 30, **options})
        opened.append(conn)
        return conn

    yield make
    for conn in opened:
        conn.release()


def bind(conn, *queues):
    """Declare the queues and their bindings, as a worker does when it starts consuming."""
    with conn.channel() as channel:
        for q in queues:
            q.bind(channel).declare()


def publish(conn, body, exchange, routing_key, **kwargs):
    with conn.channel() as channel:
        Producer(channel).publish(body, exchange=exchange, routing_key=routing_key, serializer="json", **kwargs)


def bodies(conn, queue):
    """Every message of `queue`, acked."""
    got = []
    with conn.SimpleQueue(queue) as simple:
        while True:
            try:
                message = simple.get(timeout=1)  # on the manual clock an empty long poll takes no real time
            except simple.Empty:
                return got
            got.append(message.payload)
            message.ack()


def test_a_message_published_to_a_topic_exchange_reaches_the_queue_another_process_bound(connect):
    worker, producer = connect(), connect()
    bind(worker, KombuQueue("images", media, routing_key="image.#"))
    publish(producer, {"img": 1}, media, "image.png")
    publish(producer, {"img": 2}, "media", "image.png.large")  # the exchange by name alone, never declared here
    assert bodies(worker, "images") == [{"img": 1}, {"img": 2}]


def test_a_publish_reaches_every_queue_bound_for_its_key_in_any_process_not_only_this_ones(connect):
    first, second, producer = connect(), connect(), connect()
    bind(first, KombuQueue("thumbs", media, routing_key="image.*"))
    bind(second, KombuQueue("audit", media, routing_key="#"))
    bind(producer, KombuQueue("local", media, routing_key="image.png"))
    publish(producer, "png", media, "image.png")
    publish(producer, "mp3", media, "audio.mp3")
    assert (bodies(first, "thumbs"), bodies(second, "audit"), bodies(producer, "local")) == (["png"], ["png", "mp3"], ["png"])


def test_direct_and_fanout_exchanges_route_by_the_bindings_of_every_process(connect):
    worker, producer = connect(), connect()
    jobs, everyone = Exchange("jobs", type="direct"), Exchange("everyone", type="fanout")
    bind(worker, KombuQueue("resize", jobs, routing_key="resize"), KombuQueue("a", everyone), KombuQueue("b", everyone))
    publish(producer, "cat.png", "jobs", "resize")
    publish(producer, "hello", "everyone", "")
    assert (bodies(worker, "resize"), bodies(worker, "a"), bodies(worker, "b")) == (["cat.png"], ["hello"], ["hello"])


def test_a_persistent_message_no_queue_is_bound_for_raises_instead_of_vanishing(connect, db):
    worker, producer = connect(), connect()
    bind(worker, KombuQueue("images", media, routing_key="image.#"))
    with pytest.raises(transport.UnroutableMessage, match="no queue is bound to exchange 'media' for routing key 'audio.mp3'"):
        publish(producer, "mp3", media, "audio.mp3")
    with pytest.raises(transport.UnroutableMessage, match="exchange 'nowhere'"):
        publish(producer, "x", "nowhere", "x")
    assert [(s.name, s.visible) for s in db.stats()] == [("images", 0)]


def test_celerys_remote_control_is_refused_saying_the_transport_does_not_offer_it(connect, db):
    with pytest.raises(transport.UnroutableMessage, match="Celery's remote control .* does not work on this transport"):
        publish(connect(), "ping", "celery.pidbox", "")
    assert db.stats() == []


def test_a_transient_message_no_queue_is_bound_for_is_dropped_as_a_broker_drops_celerys_unheard_events(connect, db):
    producer = connect()
    events = Exchange("celeryev", type="topic")
    publish(producer, {"type": "worker-heartbeat"}, events, "worker.heartbeat", delivery_mode=1)  # Celery's events are transient
    assert db.stats() == []


def test_kombus_deadletter_queue_option_takes_the_messages_no_queue_is_bound_for(connect):
    producer = connect(deadletter_queue="unrouted")
    with pytest.warns(UserWarning, match="could not be delivered"):
        publish(producer, "lost?", media, "audio.mp3")
    assert bodies(producer, "unrouted") == ["lost?"]


def test_an_unbound_or_deleted_queue_no_longer_receives(connect):
    worker, producer = connect(), connect()
    bind(worker, KombuQueue("images", media, routing_key="image.#"), KombuQueue("thumbs", media, routing_key="image.#"))
    with worker.channel() as channel:
        channel.queue_unbind("images", "media", "image.#")
        KombuQueue("thumbs", media, routing_key="image.#").bind(channel).delete()
    with pytest.raises(transport.UnroutableMessage):
        publish(producer, "png", media, "image.png")


def test_a_queue_deleted_by_a_process_that_never_bound_it_is_deleted_with_its_bindings(connect, db):
    worker, admin, producer = connect(), connect(), connect()
    bind(worker, KombuQueue("images", media, routing_key="image.#"))
    with admin.channel() as channel:
        channel.queue_delete("images")
    assert "images" not in [s.name for s in db.stats()]
    with pytest.raises(transport.UnroutableMessage):
        publish(producer, "png", media, "image.png")


def test_unbinding_a_queue_missing_from_the_file_creates_nothing(connect, db):
    with connect().channel() as channel:
        channel.queue_unbind("never-made", "media", "image.#")
    assert db.stats() == []


def test_a_queue_with_sqs_fifty_tags_refuses_another_binding_naming_the_limit_and_keeps_its_tags(connect, db):
    worker = connect()
    bind(worker, KombuQueue("images", media, routing_key="image.0"))
    db.queue("images").tag_queue({f"t{i}": "x" for i in range(49)})
    with pytest.raises(ValueError, match=r"its bindings are kept as the queue's tags, and it has 50, SQS's limit \(50\)"):
        bind(worker, KombuQueue("images", media, routing_key="image.1"))
    assert len(db.queue("images").list_queue_tags()) == 50
    bind(worker, KombuQueue("images", media, routing_key="image.0"))  # one it has: declared again as workers start


def test_an_auto_delete_queues_bindings_stay_with_the_process_that_declared_it(connect, db):
    monitor, producer = connect(), connect()
    # Such a queue (Celery's event receivers, Flower's) lives as long as its process; the file
    # outlives it, and a binding recorded there would route messages into it forever after.
    bind(monitor, KombuQueue("celeryev.1234", media, routing_key="#", auto_delete=True))
    publish(monitor, "seen", media, "image.png")
    with pytest.raises(transport.UnroutableMessage):
        publish(producer, "unseen", media, "image.png")
    assert bodies(monitor, "celeryev.1234") == ["seen"]


def test_a_binding_is_a_tag_of_its_queue_and_one_too_long_to_record_is_refused_when_declared(connect, db):
    worker = connect()
    bind(worker, KombuQueue("images.large", media, routing_key="image.#"))
    (recorded,) = bindings.read(db.queue("images-large").list_queue_tags())
    assert recorded == bindings.Binding("images.large", "media", "topic", "image.#")
    with pytest.raises(ValueError, match="too long to record"):
        bind(worker, KombuQueue("q", media, routing_key="x" * 200))


def test_deleting_a_predefined_queue_keeps_it_and_drops_its_bindings_for_every_process(connect, db):
    predefined = {"images": {"url": "https://sqs.us-east-1.amazonaws.com/123456789012/images"}}
    worker, producer = connect(predefined_queues=predefined), connect(predefined_queues=predefined)
    bind(worker, KombuQueue("images", media, routing_key="image.#"))
    with worker.channel() as channel:
        channel.queue_delete("images")
    assert [s.name for s in db.stats()] == ["images"]
    with pytest.raises(transport.UnroutableMessage):
        publish(producer, "png", media, "image.png")


def test_deleting_a_missing_queue_if_empty_creates_nothing(connect, db):
    with connect(dead_letter_queue="dead").channel() as channel:
        channel.queue_delete("never-made", if_empty=True)
    assert db.stats() == []
