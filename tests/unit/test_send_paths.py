"""A batch send of bodies alone takes its own path (core.sending._insert_plain, and the action
layer's response written in one comprehension), which earns its place by measurement
(docs/explanation/decisions.md). It must answer exactly as the general path does, whatever the bodies,
the Ids and the queue, and leave the file exactly as the general path leaves it."""

from __future__ import annotations

import importlib
import itertools
import sqlite3

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import sqsqlite
from sqsqlite.actions import Actions
from sqsqlite.errors import SQSError

SENDING = importlib.import_module("sqsqlite.core.sending")
MAX_SIZE = 1024  # the queues' MaximumMessageSize: bodies at its edge are cheap to make

bodies = st.one_of(
    st.text(max_size=6),  # any code point, lone surrogates and characters SQS refuses included
    st.text(alphabet="xé\U0001f600\x07\ufffe\ud800", min_size=1, max_size=4),
    st.sampled_from(
        ["x" * MAX_SIZE, "x" * (MAX_SIZE + 1), "é" * (MAX_SIZE // 2), "é" * (MAX_SIZE // 2 + 1), "\U0001f600" * (MAX_SIZE // 4)]
    ),
    st.sampled_from(["", " ", "\t\n\r", "\x00"]),
    st.integers(-1, 1),
    st.none(),
)
valid_bodies = st.one_of(
    st.text(st.characters(blacklist_categories=("Cs", "Cc")), min_size=1, max_size=8),
    st.sampled_from(["x" * MAX_SIZE, "é" * (MAX_SIZE // 2), "\U0001f600" * (MAX_SIZE // 4), "\t\n\r"]),
)


def numbered(batch_bodies: list) -> list[dict]:
    return [{"Id": str(i), "MessageBody": body} for i, body in enumerate(batch_bodies)]


entries = st.one_of(
    st.lists(valid_bodies, min_size=1, max_size=10).map(numbered),  # all sent, if the queue takes them
    st.lists(st.one_of(valid_bodies, bodies), min_size=1, max_size=10).map(numbered),  # some refused
    st.lists(st.fixed_dictionaries({"Id": st.text(alphabet="ab-_ é", max_size=3), "MessageBody": bodies}), max_size=11),
    # Entries with options too (general both ways): delays, attributes, FIFO fields, valid or not.
    st.lists(
        st.fixed_dictionaries(
            {"MessageBody": valid_bodies},
            optional={
                "DelaySeconds": st.sampled_from([0, 1, 900, 901, -1, "1"]),
                "MessageAttributes": st.sampled_from(
                    [{}, {"a": {"DataType": "String", "StringValue": "v"}}, {"b": {"DataType": "Number", "StringValue": "x"}}]
                ),
                "MessageGroupId": st.sampled_from(["g", "h", "", "é"]),
                "MessageDeduplicationId": st.sampled_from(["d", "e", ""]),
            },
        ),
        min_size=1,
        max_size=10,
    ).map(lambda got: [{"Id": str(i), **e} for i, e in enumerate(got)]),
)
QUEUES = itertools.count()


@pytest.fixture(scope="module")
def opened(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("paths") / "paths.db")
    db = sqsqlite.connect(path, clock=sqsqlite.ManualClock())
    yield db, path
    db.close()


def general(batch: list[dict]) -> list[dict]:
    """The same entries made not plain (a member given as None, absent as SQS reads it)."""
    return [{**e, "MessageSystemAttributes": None} for e in batch]


def stored(path: str, queue_id: int) -> tuple[list, list]:
    """The queue's messages (all but their row and message ids, in the order sent) and its
    history rows."""
    with sqlite3.connect(path) as conn:
        cur = conn.execute("SELECT * FROM messages WHERE queue_id = ? ORDER BY id", (queue_id,))
        names = [d[0] for d in cur.description]
        keep = [i for i, n in enumerate(names) if n not in ("id", "queue_id", "message_id", "receipt_token")]
        messages = [tuple(row[i] for i in keep) for row in cur]
        cur = conn.execute("SELECT * FROM queue_history WHERE queue_id = ?", (queue_id,))
        history = [tuple(v for n, v in zip((d[0] for d in cur.description), row) if n != "queue_id") for row in cur]
    conn.close()
    return messages, history


def message_ids(path: str, queue_id: int) -> list[str]:
    with sqlite3.connect(path) as conn:
        found = [m for (m,) in conn.execute("SELECT message_id FROM messages WHERE queue_id = ? ORDER BY id", (queue_id,))]
    conn.close()
    return found


def queue_id(path: str, name: str) -> int:
    with sqlite3.connect(path) as conn:
        (found,) = conn.execute("SELECT id FROM queues WHERE name = ?", (name,)).fetchone()
    conn.close()
    return found


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@example(
    batch=[{"Id": str(i), "MessageBody": "0", "MessageGroupId": "g", "MessageDeduplicationId": "d"} for i in range(2)],
    fifo=True,
    content_based=False,
)  # a duplicate within the batch
@given(batch=entries, fifo=st.booleans(), content_based=st.booleans())
def test_a_batch_of_bodies_alone_answers_and_stores_as_the_general_path_does(opened, batch, fifo, content_based):
    db, path = opened
    actions = Actions(db)
    number = next(QUEUES)

    def send(way: str, request_entries: list[dict]) -> tuple:
        name = f"paths-{way}-{number}" + (".fifo" if fifo else "")
        attributes = {"MaximumMessageSize": str(MAX_SIZE)}
        if fifo:
            attributes |= {"FifoQueue": "true", "ContentBasedDeduplication": str(content_based).lower()}
        url = actions.CreateQueue({"QueueName": name, "Attributes": attributes})["QueueUrl"]
        try:
            response = actions.SendMessageBatch({"QueueUrl": url, "Entries": request_entries})
        except SQSError as err:
            answer: tuple = (type(err).__name__, err.code, err.message.replace(name, "<queue>"), err.sender_fault)
        else:
            sent = [s.pop("MessageId") for s in response.get("Successful", [])]
            # The ids answered are those stored, in the order sent (a FIFO duplicate in the batch
            # is answered with the id of the message it repeats, stored once).
            assert list(dict.fromkeys(sent)) == message_ids(path, queue_id(path, name))
            answer = (response,)
        return answer, stored(path, queue_id(path, name))

    assert send("fast", batch) == send("general", general(batch))


def test_the_general_request_of_the_property_test_takes_the_general_path(opened, monkeypatch):
    db, _ = opened
    taken = []
    plain = SENDING._insert_plain

    def spied(*args):
        taken.append(args)
        return plain(*args)

    monkeypatch.setattr(SENDING, "_insert_plain", spied)
    queue = db.create_queue(f"paths-spy-{next(QUEUES)}")
    batch = [{"Id": "1", "MessageBody": "one"}, {"Id": "2", "MessageBody": "two"}]
    queue.send_message_batch(general(batch))
    assert taken == []
    queue.send_message_batch(batch)
    assert len(taken) == 1


def test_a_single_send_of_a_body_alone_is_stored_as_one_with_options_that_change_nothing(opened):
    db, path = opened
    fast, slow = db.create_queue(f"paths-one-{next(QUEUES)}"), db.create_queue(f"paths-one-{next(QUEUES)}")
    one, other = fast.send_message("é\U0001f600"), slow.send_message("é\U0001f600", delay_seconds=None, message_attributes={})
    assert (one.md5_of_message_body, one.md5_of_message_attributes) == (other.md5_of_message_body, other.md5_of_message_attributes)
    assert stored(path, queue_id(path, fast.name)) == stored(path, queue_id(path, slow.name))
