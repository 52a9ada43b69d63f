"""A copy of a FIFO queue sends every group in the queue's own order, which a redrive or a dead
letter moved in makes differ from the order of the rows: through interruptions, later runs,
batches the endpoint accepts in part, and a bookmark an older copy kept by row ids."""

from __future__ import annotations

import json
import time
from collections import Counter

import pytest

import sqsqlite
from sqsqlite.copying import CopyError, copy_to
from sqsqlite.copying.bookmark import GroupBookmark, copy_key, read_bookmark

from .helpers import FailingEntries, drain


@pytest.fixture
def db(tmp_path):
    # Stamps near the endpoint's own clock, which keeps deduplication ids for five minutes.
    clock = sqsqlite.ManualClock(int(time.time() * 1000))
    with sqsqlite.connect(str(tmp_path / "q.db"), clock=clock) as db:
        yield db


@pytest.fixture
def remote_sqs(remote):
    """The client on the endpoint."""
    return remote[2]


def fifo_with_dead_letters(db, name: str = "jobs.fifo"):
    """A FIFO queue whose messages go to its dead-letter queue after one receive left unfinished."""
    dlq = db.create_queue(name.replace(".fifo", "-dlq.fifo"), attributes={"FifoQueue": "true"})
    policy = json.dumps({"deadLetterTargetArn": dlq.arn, "maxReceiveCount": 1})
    return db.create_queue(name, attributes={"FifoQueue": "true", "VisibilityTimeout": "1", "RedrivePolicy": policy}), dlq


def send(queue, *bodies: str) -> None:
    """Each body to the group its first letter names."""
    for body in bodies:
        queue.send_message(body, message_group_id=body[0], message_deduplication_id=body)


def dead_letter(db, queue) -> None:
    """Every visible message of ``queue`` received once, then moved to its dead-letter queue."""
    assert queue.receive_message(max_number_of_messages=10)
    db.clock.advance(2)
    assert queue.receive_message(max_number_of_messages=10) == []


def redrive(db, dlq) -> None:
    """The dead-letter queue's messages moved back where they came from, by the engine's move task."""
    task = db.run_message_move_task(db.start_message_move_task(dlq.arn, background=False))
    assert task.status == "COMPLETED"


def delivered(queue) -> dict[str, list[str]]:
    """What ``queue`` delivers, received and deleted, by group."""
    groups: dict[str, list[str]] = {}
    while got := queue.receive_message(max_number_of_messages=10, message_system_attribute_names=["MessageGroupId"]):
        for message in got:
            groups.setdefault(message.message_group_id, []).append(message.body)
            message.delete()
    return groups


def remote_groups(client, name: str) -> dict[str, list[str]]:
    """What the endpoint's queue ``name`` delivers, by group."""
    groups: dict[str, list[str]] = {}
    for message in drain(client, client.get_queue_url(QueueName=name)["QueueUrl"]):
        groups.setdefault(message["Attributes"]["MessageGroupId"], []).append(message["Body"])
    return groups


def remote_key(db, client, name: str) -> str:
    """The bookmark a copy of the queue ``name`` here to the endpoint's of the name keeps its position under."""
    url = client.get_queue_url(QueueName=name)["QueueUrl"]
    got = client.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn", "CreatedTimestamp"])["Attributes"]
    return copy_key(got["QueueArn"], got["CreatedTimestamp"], client.meta.endpoint_url, db.queue_arn(name))


def test_a_group_whose_first_message_was_dead_lettered_and_redriven_is_copied_in_the_queues_order(db, remote_sqs):
    queue, dlq = fifo_with_dead_letters(db)
    send(queue, "a0", "b0")
    dead_letter(db, queue)
    send(queue, "a1", "a2", "b1", "c0")
    redrive(db, dlq)  # a0 and b0 come back behind the messages of their groups sent meanwhile
    assert copy_to(db, remote_sqs).messages == {"jobs-dlq.fifo": 0, "jobs.fifo": 6}
    here = delivered(queue)
    assert here == {"a": ["a1", "a2", "a0"], "b": ["b1", "b0"], "c": ["c0"]}
    assert remote_groups(remote_sqs, "jobs.fifo") == here


def test_a_copy_stopped_after_its_first_batch_and_run_again_sends_every_message_once_in_group_order(db, remote_sqs):
    queue, dlq = fifo_with_dead_letters(db)
    send(queue, "a00", "b00")
    dead_letter(db, queue)
    send(queue, *(f"{group}{i:02}" for i in range(1, 8) for group in "abc"))
    redrive(db, dlq)
    asked = []
    first = copy_to(db, remote_sqs, stop=lambda: asked.append(1) or len(asked) > 1)
    assert first.stopped and first.messages == {"jobs-dlq.fifo": 0, "jobs.fifo": 10}
    send(queue, "a08", "c08")  # arrived between the runs: sent after the rest of their groups
    assert copy_to(db, remote_sqs).messages == {"jobs-dlq.fifo": 0, "jobs.fifo": 15}
    assert copy_to(db, remote_sqs).messages == {"jobs-dlq.fifo": 0, "jobs.fifo": 0}
    here = delivered(queue)
    assert here["a"][-2:] == ["a00", "a08"] and here["b"][-1] == "b00"
    got = remote_groups(remote_sqs, "jobs.fifo")
    assert got == here
    assert max(Counter(body for bodies in got.values() for body in bodies).values()) == 1


def test_messages_sent_and_moved_in_after_a_copy_are_sent_by_the_next_run_behind_their_group(db, remote_sqs):
    queue, dlq = fifo_with_dead_letters(db)
    send(queue, "a0")
    dead_letter(db, queue)  # a0 waits in the dead-letter queue, and is copied with it
    send(queue, "a1", "b0")
    assert copy_to(db, remote_sqs).messages == {"jobs-dlq.fifo": 1, "jobs.fifo": 2}
    redrive(db, dlq)  # a0 moves in, its row older than every message the copy sent
    send(queue, "a2", "b1")
    assert copy_to(db, remote_sqs).messages == {"jobs-dlq.fifo": 0, "jobs.fifo": 3}
    here = delivered(queue)
    assert here == {"a": ["a1", "a0", "a2"], "b": ["b0", "b1"]}
    assert remote_groups(remote_sqs, "jobs.fifo") == here
    assert remote_groups(remote_sqs, "jobs-dlq.fifo") == {"a": ["a0"]}


def queue_id(db) -> int:
    return db.store.connection().execute("SELECT id FROM queues WHERE name = 'jobs.fifo'").fetchone()[0]


def test_a_bookmark_an_older_copy_kept_by_row_ids_is_converted_without_losing_or_resending_a_message(db, remote_sqs):
    queue, dlq = fifo_with_dead_letters(db)
    send(queue, "a0")
    dead_letter(db, queue)
    send(queue, "a1", "b0", "b1", "a2")
    redrive(db, dlq)
    # a0 back in the row it was sent with, as an older sqsqlite's redrive left a moved message
    # (one now takes a new row): the first row, the last sequence number.
    with db.store.write() as tx:
        tx.c.execute("UPDATE messages SET id = (SELECT min(id) - 1 FROM messages WHERE queue_id = ?) WHERE body = 'a0'", (queue_id(db),))
    rows = {record["Body"]: (row, record["SequenceNumber"]) for row, record in queue.message_records()}
    assert rows["a0"] == (min(row for row, _ in rows.values()), max(sequence for _, sequence in rows.values()))
    # What an older copy, in row order, left: a0 and a1 sent, then b0 failed and b1 was accepted.
    url = remote_sqs.create_queue(QueueName="jobs.fifo", Attributes={"FifoQueue": "true"})["QueueUrl"]
    for body in ("a0", "a1", "b1"):
        remote_sqs.send_message(QueueUrl=url, MessageBody=body, MessageGroupId=body[0], MessageDeduplicationId=body)
    arn = remote_sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    db.set_bookmark(f"copy-to {arn}", f"{rows['a1'][0]} {rows['b1'][0]}".encode())  # by the ARN alone, as it was kept then
    key = remote_key(db, remote_sqs, "jobs.fifo")

    assert copy_to(db, remote_sqs, ["jobs.fifo"], stop=lambda: True).messages == {"jobs-dlq.fifo": 0, "jobs.fifo": 0}
    # Everything up to a1's sequence number was sent (b0, after it, was not), and a0 and b1 beyond it.
    converted = GroupBookmark(done=rows["a1"][1], ahead={rows["a0"][1], rows["b1"][1]}, queue=queue.last_sequence().queue)
    assert GroupBookmark.parse(db.bookmark(key)) == converted
    assert copy_to(db, remote_sqs, ["jobs.fifo"]).messages == {"jobs-dlq.fifo": 0, "jobs.fifo": 2}  # b0 and a2
    assert copy_to(db, remote_sqs, ["jobs.fifo"]).messages == {"jobs-dlq.fifo": 0, "jobs.fifo": 0}
    got = remote_groups(remote_sqs, "jobs.fifo")
    assert sorted(body for bodies in got.values() for body in bodies) == ["a0", "a1", "a2", "b0", "b1"]  # each once
    assert got["a"] == ["a0", "a1", "a2"]  # as the older copy sent a0 and a1, then a2 behind them


def test_an_older_bookmark_that_had_sent_every_message_converts_to_all_sent_up_to_the_last_sequence_number(db):
    queue, dlq = fifo_with_dead_letters(db)
    send(queue, "a0")
    dead_letter(db, queue)
    send(queue, "a1", "b0")
    redrive(db, dlq)
    newest_row = max(row for row, _ in queue.message_records())
    bookmark, converted = read_bookmark(queue, str(newest_row).encode())
    assert converted and bookmark == GroupBookmark(done=queue.last_sequence().last, queue=queue.last_sequence().queue)
    assert list(bookmark.records(queue)) == []
    assert read_bookmark(queue, bookmark.value()) == (bookmark, False)


def test_a_fifo_queue_deleted_and_made_again_is_copied_from_its_first_message(db, remote_sqs):
    queue = db.create_queue("jobs.fifo", attributes={"FifoQueue": "true"})
    send(queue, "a0", "a1", "b0", "b1", "c0")
    assert copy_to(db, remote_sqs).messages == {"jobs.fifo": 5}
    db.delete_queue(queue.url)
    db.clock.advance(61)  # SQS lets a name be used again a minute after its queue was deleted
    queue = db.create_queue("jobs.fifo", attributes={"FifoQueue": "true"})
    send(queue, "a5", "b5", "d5")  # numbered from 1 again, below what the bookmark says was sent
    assert copy_to(db, remote_sqs).messages == {"jobs.fifo": 3}
    assert remote_groups(remote_sqs, "jobs.fifo") == {"a": ["a0", "a1", "a5"], "b": ["b0", "b1", "b5"], "c": ["c0"], "d": ["d5"]}


def test_a_fifo_batch_accepted_in_part_is_resumed_from_the_group_bookmark_then_what_arrived_since_is_sent(db, remote_sqs):
    queue, dlq = fifo_with_dead_letters(db)
    send(queue, "a0", "b0")
    dead_letter(db, queue)
    send(queue, "a1", "a2", "b1", "b2", *(f"c{i}" for i in range(8)))
    redrive(db, dlq)  # the batch, in the queue's order: a1 a2 a0 b1 b2 b0 c0 c1 c2 c3
    # a0, the last of its group in the batch, keeps failing; every later entry is accepted.
    with pytest.raises(CopyError, match="jobs.fifo: the endpoint kept failing a message: InternalError"):
        copy_to(db, FailingEntries(remote_sqs, {"2"}), ["jobs.fifo"])
    kept = GroupBookmark.parse(db.bookmark(remote_key(db, remote_sqs, "jobs.fifo")))
    assert kept.after[0] == "a" and len(kept.ahead) == 7  # b1 b2 b0 c0 c1 c2 c3
    send(queue, "b3")
    assert copy_to(db, remote_sqs, ["jobs.fifo"]).messages == {"jobs-dlq.fifo": 0, "jobs.fifo": 6}  # a0, c4-c7, then b3
    kept = GroupBookmark.parse(db.bookmark(remote_key(db, remote_sqs, "jobs.fifo")))
    assert kept.upto is None and kept.ahead == set()
    here = delivered(queue)
    assert here["a"] == ["a1", "a2", "a0"] and here["b"] == ["b1", "b2", "b0", "b3"]
    assert remote_groups(remote_sqs, "jobs.fifo") == here
