"""sqsqlite copy: queues and messages to another SQS endpoint and back, with moto's server on
loopback standing in for Amazon SQS."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from collections import Counter

import pytest

import sqsqlite
from sqsqlite.copying import copy_from, copy_to

from .helpers import SQSQLITE, cli, drain


def test_a_copy_makes_each_queue_there_with_its_attributes_tags_and_redrive_policy(tmp_path, remote):
    endpoint, env, client = remote
    with sqsqlite.connect(str(tmp_path / "q.db")) as db:
        dlq = db.create_queue("orders-dlq", tags={"team": "billing"})
        db.create_queue(
            "orders",
            attributes={"VisibilityTimeout": "45", "RedrivePolicy": json.dumps({"deadLetterTargetArn": dlq.arn, "maxReceiveCount": 3})},
        )
        db.create_queue("events.fifo", attributes={"FifoQueue": "true", "ContentBasedDeduplication": "true"})
        report = copy_to(db, client, ["orders", "events.fifo"])
    assert report.queues == ["orders-dlq", "orders", "events.fifo"]  # the dead-letter queue first, and with it
    url = client.get_queue_url(QueueName="orders")["QueueUrl"]
    attributes = client.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
    dlq_arn = client.get_queue_attributes(QueueUrl=client.get_queue_url(QueueName="orders-dlq")["QueueUrl"], AttributeNames=["QueueArn"])
    assert attributes["VisibilityTimeout"] == "45"
    assert json.loads(attributes["RedrivePolicy"]) == {"deadLetterTargetArn": dlq_arn["Attributes"]["QueueArn"], "maxReceiveCount": 3}
    assert client.list_queue_tags(QueueUrl=client.get_queue_url(QueueName="orders-dlq")["QueueUrl"])["Tags"] == {"team": "billing"}
    fifo = client.get_queue_attributes(QueueUrl=client.get_queue_url(QueueName="events.fifo")["QueueUrl"], AttributeNames=["All"])
    assert fifo["Attributes"]["FifoQueue"] == "true" and fifo["Attributes"]["ContentBasedDeduplication"] == "true"


def test_a_queue_whose_dead_letter_queue_was_deleted_is_copied_without_its_redrive_policy_and_a_note_says_so(tmp_path, remote):
    endpoint, env, client = remote
    with sqsqlite.connect(str(tmp_path / "q.db")) as db:
        dlq = db.create_queue("gone-dlq")
        orphan = db.create_queue("orphan", attributes={"RedrivePolicy": json.dumps({"deadLetterTargetArn": dlq.arn, "maxReceiveCount": 3})})
        orphan.send_message("kept")
        db.create_queue("other").send_message("also kept")
        db.delete_queue(dlq.url)
    done = cli("copy", "--db", str(tmp_path / "q.db"), "--to-endpoint-url", endpoint, env=env)
    notes = [line for line in done.stderr.splitlines() if line.startswith("note: ")]
    assert notes == ["note: orphan: its RedrivePolicy was not copied: its dead-letter queue gone-dlq does not exist here"]
    assert done.stdout.splitlines() == [f"orphan: 1 messages copied to {endpoint}", f"other: 1 messages copied to {endpoint}"]
    url = client.get_queue_url(QueueName="orphan")["QueueUrl"]
    assert "RedrivePolicy" not in client.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
    assert [m["Body"] for m in drain(client, url)] == ["kept"]


def test_messages_arrive_with_bodies_attributes_groups_and_what_is_left_of_their_delay(tmp_path, remote):
    endpoint, env, client = remote
    clock = sqsqlite.ManualClock(int(time.time() * 1000))
    with sqsqlite.connect(str(tmp_path / "q.db"), clock=clock) as db:
        plain = db.create_queue("plain")
        plain.send_message("hello", message_attributes={"kind": "greeting", "blob": b"\x00\x01"})
        plain.send_message("later", delay_seconds=600)
        fifo = db.create_queue("jobs.fifo", attributes={"FifoQueue": "true"})
        for i in range(6):
            fifo.send_message(f"job {i}", message_group_id=f"g{i % 2}", message_deduplication_id=f"d{i}")
        report = copy_to(db, client)
    assert report.messages == {"plain": 2, "jobs.fifo": 6}
    plain_url = client.get_queue_url(QueueName="plain")["QueueUrl"]
    (hello,) = drain(client, plain_url)
    assert hello["Body"] == "hello"
    assert hello["MessageAttributes"]["kind"] == {"StringValue": "greeting", "DataType": "String"}
    assert hello["MessageAttributes"]["blob"] == {"BinaryValue": b"\x00\x01", "DataType": "Binary"}
    delayed = client.get_queue_attributes(QueueUrl=plain_url, AttributeNames=["ApproximateNumberOfMessagesDelayed"])
    assert delayed["Attributes"]["ApproximateNumberOfMessagesDelayed"] == "1"
    jobs = drain(client, client.get_queue_url(QueueName="jobs.fifo")["QueueUrl"])
    by_group = {g: [m["Body"] for m in jobs if m["Attributes"]["MessageGroupId"] == g] for g in ("g0", "g1")}
    assert by_group == {"g0": ["job 0", "job 2", "job 4"], "g1": ["job 1", "job 3", "job 5"]}
    assert sorted(m["Attributes"]["MessageDeduplicationId"] for m in jobs) == [f"d{i}" for i in range(6)]  # each message's own id


def test_a_copy_run_again_sends_only_what_arrived_since(tmp_path, remote):
    endpoint, env, client = remote
    with sqsqlite.connect(str(tmp_path / "q.db")) as db:
        queue = db.create_queue("orders")
        for i in range(25):
            queue.send_message(f"m{i}")
        assert copy_to(db, client).messages == {"orders": 25}
        assert copy_to(db, client).messages == {"orders": 0}
        queue.send_message("m25")
        assert copy_to(db, client).messages == {"orders": 1}
    bodies = [m["Body"] for m in drain(client, client.get_queue_url(QueueName="orders")["QueueUrl"])]
    assert sorted(bodies) == sorted(f"m{i}" for i in range(26))


def test_a_copy_stopped_by_sigterm_ends_between_batches_and_run_again_sends_nothing_twice(tmp_path, remote):
    endpoint, env, client = remote
    db_path = tmp_path / "q.db"
    with sqsqlite.connect(str(db_path)) as db:
        queue = db.create_queue("steady")
        for i in range(30):
            queue.send_message_batch([{"Id": str(j), "MessageBody": f"s{i * 10 + j}"} for j in range(10)])
    args = ("copy", "--db", str(db_path), "--to-endpoint-url", endpoint)
    first = subprocess.Popen([*SQSQLITE, *args], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    with sqsqlite.connect(str(db_path)) as db:
        while not db.bookmarks("copy-to ") and time.monotonic() < deadline:
            time.sleep(0.05)
    first.send_signal(signal.SIGTERM)
    out, err = first.communicate(timeout=120)
    assert first.returncode == 130, (out, err)
    assert "run the same command again to continue" in err and "Traceback" not in err
    cli(*args, env=env)
    bodies = Counter(m["Body"] for m in drain(client, client.get_queue_url(QueueName="steady")["QueueUrl"]))
    assert set(bodies) == {f"s{i}" for i in range(300)} and max(bodies.values()) == 1


def test_a_drain_from_an_endpoint_imports_each_message_once_and_deletes_it_there_only_after(tmp_path, remote):
    endpoint, env, client = remote
    url = client.create_queue(QueueName="inbox")["QueueUrl"]
    fifo_url = client.create_queue(QueueName="inbox.fifo", Attributes={"FifoQueue": "true", "ContentBasedDeduplication": "true"})[
        "QueueUrl"
    ]
    client.tag_queue(QueueUrl=url, Tags={"env": "prod"})
    sent = {
        client.send_message(QueueUrl=url, MessageBody=f"m{i}", MessageAttributes={"n": {"DataType": "Number", "StringValue": str(i)}})[
            "MessageId"
        ]
        for i in range(15)
    }
    for i in range(6):
        client.send_message(QueueUrl=fifo_url, MessageBody=f"f{i}", MessageGroupId="g")

    class CrashOnFirstDelete:
        """The process dies after its first import commits and before the delete there."""

        def __init__(self, inner):
            self.inner, self.crashed = inner, False

        def __getattr__(self, name):
            return getattr(self.inner, name)

        def delete_message_batch(self, **kwargs):
            if not self.crashed:
                self.crashed = True
                raise KeyboardInterrupt
            return self.inner.delete_message_batch(**kwargs)

    with sqsqlite.connect(str(tmp_path / "q.db")) as db:
        with pytest.raises(KeyboardInterrupt):
            copy_from(db, CrashOnFirstDelete(client), [url], wait_seconds=0, visibility_timeout=1)
        imported_before = db.queue("inbox").get_queue_attributes(["ApproximateNumberOfMessages"])
        time.sleep(1.2)  # real time: the remote endpoint's visibility timeout must pass
        report = copy_from(db, client, [url, fifo_url], wait_seconds=0)
        inbox = db.queue("inbox")
        messages = inbox.peek(limit=100)
        assert sorted(m.message_id for m in messages) == sorted(sent)  # each once, with its id
        assert int(imported_before["ApproximateNumberOfMessages"]) == 10
        assert report.messages["inbox"] == 5 and report.messages["inbox.fifo"] == 6
        assert inbox.list_queue_tags() == {"env": "prod"}
        notes = db.bookmarks("copy-from ")  # kept a while: the endpoint may deliver a message again
        assert len(notes) == 21 and all(key.startswith("copy-from arn:aws:sqs:") for key in notes)
        (first,) = [m for m in inbox.receive_message(max_number_of_messages=10, message_attribute_names=["All"]) if m.body == "m0"] or [
            None
        ]
        fifo_bodies = [m.body for m in db.queue("inbox.fifo").receive_message(max_number_of_messages=10)]
    assert fifo_bodies == [f"f{i}" for i in range(6)]
    assert (
        client.get_queue_attributes(QueueUrl=url, AttributeNames=["ApproximateNumberOfMessages"])["Attributes"][
            "ApproximateNumberOfMessages"
        ]
        == "0"
    )
    if first is not None:
        assert first.message_attributes["n"].string_value == "0"


def test_copy_with_both_directions_or_neither_is_bad_usage(tmp_path, remote):
    endpoint, env, client = remote
    both = cli("copy", "--db", str(tmp_path / "q.db"), "--to-endpoint-url", endpoint, "--from-endpoint-url", endpoint, env=env, code=252)
    assert "Give one of --to-endpoint-url and --from-endpoint-url." in both.stderr
    cli("copy", "--db", str(tmp_path / "q.db"), env=env, code=252)
    drain_without_queue = cli("copy", "--db", str(tmp_path / "q.db"), "--from-endpoint-url", endpoint, env=env, code=252)
    assert "--queue-url" in drain_without_queue.stderr


def test_a_copy_to_an_endpoint_that_is_not_there_fails_in_one_line(tmp_path, remote):
    endpoint, env, client = remote
    with sqsqlite.connect(str(tmp_path / "q.db")) as db:
        db.create_queue("orders")
    done = cli(
        "copy", "--db", str(tmp_path / "q.db"), "--to-endpoint-url", "http://127.0.0.1:9", env={**env, "AWS_MAX_ATTEMPTS": "1"}, code=255
    )
    assert "could not create queue orders" in done.stderr


def test_copying_a_queue_this_database_does_not_hold_is_an_sqs_error_with_a_hint(tmp_path, remote):
    endpoint, env, client = remote
    sqsqlite.connect(str(tmp_path / "q.db")).close()
    done = cli("copy", "--db", str(tmp_path / "q.db"), "--to-endpoint-url", endpoint, "--queue-url", "nope", env=env, code=254)
    assert done.stderr.splitlines() == [
        "An error occurred (AWS.SimpleQueueService.NonExistentQueue) when calling the copy operation: The specified queue does not exist.",
        "hint: The queue 'nope' does not exist.",
    ]


def test_a_copy_from_a_missing_file_or_one_that_is_no_database_fails_in_one_line_and_creates_nothing(tmp_path, remote):
    endpoint, env, client = remote
    missing = cli("copy", "--db", str(tmp_path / "typo.db"), "--to-endpoint-url", endpoint, env=env, code=255)
    assert missing.stderr == f"sqsqlite: There is no database at {str(tmp_path / 'typo.db')!r} to copy from.\n"
    assert list(tmp_path.iterdir()) == []
    (tmp_path / "notes.txt").write_text("not a database, but long enough to be read as one " * 100)
    garbled = cli("copy", "--db", str(tmp_path / "notes.txt"), "--to-endpoint-url", endpoint, env=env, code=255)
    assert len(garbled.stderr.splitlines()) == 1 and "unexpected error" not in garbled.stderr


def test_a_copy_of_every_queue_copies_more_than_a_list_queues_page(tmp_path, monkeypatch, remote):
    from sqsqlite import defaults as D

    endpoint, env, client = remote
    monkeypatch.setattr(D, "LIST_QUEUES_UNPAGED_LIMIT", 3)  # list_queues' unpaged answer stops at 3 here
    with sqsqlite.connect(str(tmp_path / "q.db")) as db:
        for i in range(5):
            db.create_queue(f"q{i}")
        assert len(db.list_queues()[0]) == 3
        report = copy_to(db, client)
    assert report.queues == [f"q{i}" for i in range(5)]


def test_a_fifo_message_goes_with_its_own_deduplication_id_within_its_five_minutes_so_a_retry_there_is_dropped(tmp_path, remote):
    endpoint, env, client = remote
    clock = sqsqlite.ManualClock(int(time.time() * 1000) - 400_000)  # the copy runs at the endpoint's time
    with sqsqlite.connect(str(tmp_path / "q.db"), clock=clock) as db:
        dlq = db.create_queue("orders-dlq.fifo", attributes={"FifoQueue": "true"})
        policy = json.dumps({"deadLetterTargetArn": dlq.arn, "maxReceiveCount": 1})
        orders = db.create_queue("orders.fifo", attributes={"FifoQueue": "true", "VisibilityTimeout": "1", "RedrivePolicy": policy})
        first = orders.send_message("order 0", message_group_id="g", message_deduplication_id="order-0")
        clock.advance(300)
        dead = orders.send_message("order 1", message_group_id="h", message_deduplication_id="order-1")
        assert len(orders.receive_message(max_number_of_messages=10)) == 2
        clock.advance(2)
        assert orders.receive_message(max_number_of_messages=10) == []  # both moved to the dead-letter queue
        clock.advance(98)
        orders.send_message("order 0 again", message_group_id="g", message_deduplication_id="order-0")  # its five minutes are over
        orders.send_message("order 2", message_group_id="g", message_deduplication_id="order-2")
        assert copy_to(db, client).messages == {"orders-dlq.fifo": 2, "orders.fifo": 2}
    url = client.get_queue_url(QueueName="orders.fifo")["QueueUrl"]
    # The producer, moved to the endpoint, retries its last send: dropped there, as it would have been here.
    client.send_message(QueueUrl=url, MessageBody="order 2", MessageGroupId="g", MessageDeduplicationId="order-2")
    got = [(m["Body"], m["Attributes"]["MessageDeduplicationId"]) for m in drain(client, url)]
    assert got == [("order 0 again", "order-0"), ("order 2", "order-2")]
    # Past its five minutes a message goes with its MessageId (its own id may have been given
    # again since, as here), and so does a dead letter.
    dead_letters = drain(client, client.get_queue_url(QueueName="orders-dlq.fifo")["QueueUrl"])
    assert {m["Body"]: m["Attributes"]["MessageDeduplicationId"] for m in dead_letters} == {
        "order 0": first.message_id,
        "order 1": dead.message_id,
    }


def test_two_fifo_messages_of_one_deduplication_id_in_different_groups_both_arrive(tmp_path, remote):
    endpoint, env, client = remote
    clock = sqsqlite.ManualClock(int(time.time() * 1000))
    with sqsqlite.connect(str(tmp_path / "q.db"), clock=clock) as db:
        queue = db.create_queue("scoped.fifo", attributes={"FifoQueue": "true", "DeduplicationScope": "messageGroup"})
        queue.send_message("in a", message_group_id="a", message_deduplication_id="same")
        queue.send_message("in b", message_group_id="b", message_deduplication_id="same")
        assert copy_to(db, client).messages == {"scoped.fifo": 2}
    assert sorted(m["Body"] for m in drain(client, client.get_queue_url(QueueName="scoped.fifo")["QueueUrl"])) == ["in a", "in b"]


def test_a_queue_whose_archive_is_on_is_copied_without_it_and_a_note_says_so(tmp_path, remote):
    endpoint, env, client = remote
    with sqsqlite.connect(str(tmp_path / "q.db")) as db:
        q = db.create_queue("archived")
        db.set_archive(q.url, 86_400)
        q.send_message("kept")
        report = copy_to(db, client, ["archived"])
    assert report.notes == ["archived: its archive of deleted messages was not copied: it is sqsqlite's own, which SQS has not"]
    url = client.get_queue_url(QueueName="archived")["QueueUrl"]
    assert not any("rchive" in k for k in client.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"])
    assert [m["Body"] for m in drain(client, url)] == ["kept"]
