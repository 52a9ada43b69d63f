"""A drain from another endpoint into the database: each message imported once, whoever else
drains the same queue and whenever the endpoint delivers a message again."""

from __future__ import annotations

import json
import time

import sqsqlite
from sqsqlite.copying import copy_from


class Redelivers:
    """An endpoint that delivers the messages of the first receive again, once, after their
    delete (SQS is at-least-once: it may)."""

    def __init__(self, inner):
        self.inner, self.first, self.again = inner, None, False

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def receive_message(self, **kwargs):
        got = self.inner.receive_message(**kwargs)
        if self.first is None:
            self.first = got.get("Messages", [])
        elif not self.again and not got.get("Messages"):
            self.again = True
            return {"Messages": self.first}
        return got


def send(client, url: str, n: int) -> None:
    client.send_message_batch(QueueUrl=url, Entries=[{"Id": str(i), "MessageBody": f"m{i}"} for i in range(n)])


def test_a_message_the_endpoint_delivers_again_after_its_delete_is_not_imported_twice(tmp_path, remote):
    endpoint, env, client = remote
    url = client.create_queue(QueueName="again")["QueueUrl"]
    send(client, url, 4)
    with sqsqlite.connect(str(tmp_path / "q.db")) as db:
        redelivering = Redelivers(client)
        report = copy_from(db, redelivering, [url], wait_seconds=0)
        assert redelivering.again
        assert report.messages == {"again": 4}
        assert sorted(m.body for m in db.queue("again").peek(limit=10)) == ["m0", "m1", "m2", "m3"]


def test_notes_older_than_the_window_are_removed_when_a_drain_starts(tmp_path, remote):
    endpoint, env, client = remote
    url = client.create_queue(QueueName="noted")["QueueUrl"]
    send(client, url, 3)
    clock = sqsqlite.ManualClock(int(time.time() * 1000))
    with sqsqlite.connect(str(tmp_path / "q.db"), clock=clock) as db:
        copy_from(db, client, [url], wait_seconds=0, note_seconds=600)
        assert len(db.bookmarks("copy-from ")) == 3
        clock.advance(599)
        copy_from(db, client, [url], wait_seconds=0, note_seconds=600)
        assert len(db.bookmarks("copy-from ")) == 3
        clock.advance(2)
        copy_from(db, client, [url], wait_seconds=0, note_seconds=600)
        assert db.bookmarks("copy-from ") == {}


class RivalDrain:
    """A clock that, armed, lets another drain of the same queue (another process, another
    connection) import the very messages this one received, at the moment this drain is about
    to import them: after its receive, before its import's transaction."""

    def __init__(self, start_ms: int):
        self.clock = sqsqlite.ManualClock(start_ms)
        self.rival = None

    def now_ms(self) -> int:
        if self.rival is not None:
            rival, self.rival = self.rival, None
            rival()
        return self.clock.now_ms()

    def __getattr__(self, name):
        return getattr(self.clock, name)


class ArmsTheRival:
    def __init__(self, inner, clock: RivalDrain, db_path: str):
        self.inner, self.clock, self.db_path, self.done = inner, clock, db_path, False

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def receive_message(self, **kwargs):
        got = self.inner.receive_message(**kwargs)
        if not self.done and got.get("Messages"):
            self.done = True
            same = got["Messages"]
            self.clock.rival = lambda: self.rival_drain(kwargs["QueueUrl"], same)
        return got

    def rival_drain(self, url: str, messages: list) -> None:
        class SameMessages:
            """The rival's endpoint: it delivered the same messages (their visibility ran out)."""

            def __init__(self, inner):
                self.inner, self.given = inner, False

            def __getattr__(self, name):
                return getattr(self.inner, name)

            def receive_message(self, **kwargs):
                if self.given:
                    return {"Messages": []}
                self.given = True
                return {"Messages": messages}

            def delete_message_batch(self, **kwargs):
                return {"Successful": [], "Failed": []}

        with sqsqlite.connect(self.db_path) as other:
            assert copy_from(other, SameMessages(self.inner), [url], wait_seconds=0).messages == {"raced": len(messages)}


def test_two_drains_that_received_the_same_messages_import_each_once(tmp_path, remote):
    endpoint, env, client = remote
    url = client.create_queue(QueueName="raced")["QueueUrl"]
    send(client, url, 5)
    path = str(tmp_path / "q.db")
    sqsqlite.connect(path).close()
    clock = RivalDrain(int(time.time() * 1000))
    with sqsqlite.connect(path, clock=clock) as db:
        report = copy_from(db, ArmsTheRival(client, clock, path), [url], wait_seconds=0)
        assert report.messages == {"raced": 0}  # the rival committed them first
        assert sorted(m.body for m in db.queue("raced").peek(limit=10)) == [f"m{i}" for i in range(5)]


class WithRedriveAllowPolicy:
    """moto keeps no RedriveAllowPolicy: its answers carry one here, as Amazon SQS's do."""

    def __init__(self, inner, value: dict):
        self.inner, self.value = inner, json.dumps(value)

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def get_queue_attributes(self, **kwargs):
        got = self.inner.get_queue_attributes(**kwargs)
        if "All" in kwargs["AttributeNames"]:
            got["Attributes"]["RedriveAllowPolicy"] = self.value
        return got


def test_a_drain_copies_a_redrive_allow_policy_with_its_arns_made_local_and_leaves_a_policy_out_with_a_note(tmp_path, remote):
    endpoint, env, client = remote
    source = client.create_queue(QueueName="allowed-source")["QueueUrl"]
    source_arn = client.get_queue_attributes(QueueUrl=source, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    allow = {"redrivePermission": "byQueue", "sourceQueueArns": [source_arn]}
    policy = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Principal": "*", "Action": "sqs:*", "Resource": source_arn}]}
    dlq = client.create_queue(QueueName="allowed-dlq", Attributes={"Policy": json.dumps(policy)})["QueueUrl"]
    with sqsqlite.connect(str(tmp_path / "q.db")) as db:
        report = copy_from(db, WithRedriveAllowPolicy(client, allow), [dlq], wait_seconds=0)
        attributes = db.queue("allowed-dlq").get_queue_attributes(["All"])
        assert json.loads(attributes["RedriveAllowPolicy"]) == {
            "redrivePermission": "byQueue",
            "sourceQueueArns": [db.queue_arn("allowed-source")],
        }
        assert "Policy" not in attributes
        assert report.notes == [
            "allowed-dlq: its Policy was not copied: it names the queue's ARN and principals where it is now, "
            "which mean something else at the other end; set the policy there anew"
        ]


def test_a_drain_counts_the_messages_of_a_fifo_group_behind_one_in_flight_as_left_there(tmp_path, remote):
    # The endpoint holds the group behind its message in flight: a drain receives none of the
    # six, and the last line must say all six are still there, not only the one in flight.
    endpoint, env, client = remote
    url = client.create_queue(QueueName="held.fifo", Attributes={"FifoQueue": "true", "ContentBasedDeduplication": "true"})["QueueUrl"]
    for i in range(6):
        client.send_message(QueueUrl=url, MessageBody=f"m{i}", MessageGroupId="g")
    assert len(client.receive_message(QueueUrl=url, VisibilityTimeout=600)["Messages"]) == 1
    with sqsqlite.connect(str(tmp_path / "q.db")) as db:
        report = copy_from(db, client, [url], wait_seconds=0)
    assert report.messages == {"held.fifo": 0}
    assert report.left_remotely == {"held.fifo": 6}
