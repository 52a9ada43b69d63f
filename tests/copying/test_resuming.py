"""A copy to another endpoint run again: it continues after what it sent, by the queue it sent
to, through deletes here, partly accepted batches, and a process that dies between a send and
the keeping of its position."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from collections import Counter

import pytest

import sqsqlite
from sqsqlite.copying import CopyError, copy_to

from .helpers import FailingEntries, cli, drain, other_account_client


def three_messages(db, name: str):
    """A new queue holding m0, m1 and m2."""
    queue = db.create_queue(name)
    for i in range(3):
        queue.send_message(f"m{i}")
    return queue


def bodies(client, name: str) -> Counter:
    return Counter(m["Body"] for m in drain(client, client.get_queue_url(QueueName=name)["QueueUrl"]))


def test_a_message_sent_after_the_newest_was_deleted_is_copied_on_the_next_run(tmp_path, remote):
    endpoint, env, client = remote
    with sqsqlite.connect(str(tmp_path / "q.db")) as db:
        queue = db.create_queue("recycled")
        for body in "abc":
            queue.send_message(body)
        assert copy_to(db, client).messages == {"recycled": 3}
        for message in queue.receive_message(max_number_of_messages=10):
            if message.body == "c":
                message.delete()  # the newest: its position must never be handed out again
        queue.send_message("d")
        assert copy_to(db, client).messages == {"recycled": 1}
    assert bodies(client, "recycled") == Counter("abcd")


def test_a_copy_run_again_with_another_spelling_of_the_endpoint_url_sends_nothing_twice(tmp_path, remote):
    endpoint, env, client = remote
    with sqsqlite.connect(str(tmp_path / "q.db")) as db:
        queue = db.create_queue("spelled")
        for i in range(12):
            queue.send_message(f"m{i}")
    cli("copy", "--db", str(tmp_path / "q.db"), "--to-endpoint-url", endpoint, env=env)
    again = cli("copy", "--db", str(tmp_path / "q.db"), "--to-endpoint-url", endpoint + "/", env=env)
    assert "spelled: 0 messages copied" in again.stdout
    assert bodies(client, "spelled") == Counter(f"m{i}" for i in range(12))


def test_a_copy_to_another_account_at_the_same_endpoint_starts_from_the_beginning(tmp_path, remote):
    endpoint, env, client = remote
    other = other_account_client(endpoint)
    with sqsqlite.connect(str(tmp_path / "q.db")) as db:
        queue = db.create_queue("two-accounts")
        for i in range(5):
            queue.send_message(f"m{i}")
        assert copy_to(db, client).messages == {"two-accounts": 5}
        assert copy_to(db, other).messages == {"two-accounts": 5}
        assert [key.split()[1] for key in sorted(db.bookmarks("copy-to "))] == [
            "arn:aws:sqs:us-east-1:123456789012:two-accounts",
            "arn:aws:sqs:us-east-1:222222222222:two-accounts",
        ]
    try:
        assert bodies(other, "two-accounts") == Counter(f"m{i}" for i in range(5))
    finally:
        other.delete_queue(QueueUrl=other.get_queue_url(QueueName="two-accounts")["QueueUrl"])


def test_a_batch_accepted_in_part_keeps_what_was_accepted_so_a_run_again_sends_only_the_rest(tmp_path, remote):
    endpoint, env, client = remote
    with sqsqlite.connect(str(tmp_path / "q.db")) as db:
        queue = db.create_queue("partly")
        queue.send_message_batch([{"Id": str(i), "MessageBody": f"m{i}"} for i in range(10)])
        queue.send_message_batch([{"Id": str(i), "MessageBody": f"m{10 + i}"} for i in range(5)])
        with pytest.raises(CopyError, match="partly: the endpoint kept failing a message: InternalError: try again"):
            copy_to(db, FailingEntries(client, {"3"}))
        assert copy_to(db, client).messages == {"partly": 6}  # m3 and the second batch
    assert bodies(client, "partly") == Counter(f"m{i}" for i in range(15))  # each once


def fifo_queue(db, name: str, groups: list[str]):
    queue = db.create_queue(name, attributes={"FifoQueue": "true"})
    for i, group in enumerate(groups):
        queue.send_message(f"f{i}", message_group_id=group, message_deduplication_id=f"d{i}")
    return queue


def test_a_fifo_batch_whose_failed_entries_held_their_group_back_is_sent_again_in_order(tmp_path, remote):
    endpoint, env, client = remote
    with sqsqlite.connect(str(tmp_path / "q.db")) as db:
        fifo_queue(db, "ordered.fifo", ["a", "b"] * 5)
        # The batch holds group a's messages (f0, f2, ... f8), then b's. The endpoint failed f2
        # and every later message of group a: a's order is intact.
        flaky = FailingEntries(client, {"1", "2", "3", "4"}, times=1)
        assert copy_to(db, flaky).messages == {"ordered.fifo": 10}
        assert flaky.calls == 2
    got = drain(client, client.get_queue_url(QueueName="ordered.fifo")["QueueUrl"])
    assert [m["Body"] for m in got if m["Attributes"]["MessageGroupId"] == "a"] == ["f0", "f2", "f4", "f6", "f8"]


def test_a_fifo_batch_whose_failed_entry_a_later_one_of_its_group_overtook_stops_the_copy_naming_the_group(tmp_path, remote):
    endpoint, env, client = remote
    with sqsqlite.connect(str(tmp_path / "q.db")) as db:
        fifo_queue(db, "overtaken.fifo", ["a", "b"] * 5)
        flaky = FailingEntries(client, {"2"}, times=1)
        with pytest.raises(CopyError, match="failed a message of group a .* accepted a later one of that group"):
            copy_to(db, flaky)
        assert flaky.calls == 1  # not sent again behind f4
        assert copy_to(db, client).messages == {"overtaken.fifo": 1}  # only f2, on a run again
    assert bodies(client, "overtaken.fifo") == Counter(f"f{i}" for i in range(10))


# Runs copy_to in a process of its own and ends that process with os._exit right after the
# endpoint accepted the queue's third batch, before its position is kept: a crash at the worst
# moment, put there on purpose rather than hoped for with a timed SIGKILL.
DIE_AFTER_SEND = textwrap.dedent(
    """
    import os, sys
    import boto3
    import sqsqlite
    from sqsqlite.copying import copy_to

    db_path, endpoint, queue, batches = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])

    class DiesAfterSending:
        def __init__(self, inner):
            self.inner, self.sent = inner, 0

        def __getattr__(self, name):
            return getattr(self.inner, name)

        def send_message_batch(self, **kwargs):
            result = self.inner.send_message_batch(**kwargs)
            if kwargs["QueueUrl"].endswith("/" + queue):
                self.sent += 1
                if self.sent == batches:
                    os._exit(86)
            return result

    client = boto3.client("sqs", endpoint_url=endpoint, region_name="us-east-1")
    with sqsqlite.connect(db_path) as db:
        copy_to(db, DiesAfterSending(client))
    """
)


@pytest.mark.parametrize("name", ["bulk", "bulk.fifo"])
def test_a_copy_that_dies_between_a_send_and_keeping_its_position_sends_at_most_that_batch_again(tmp_path, remote, name):
    endpoint, env, client = remote
    db_path = tmp_path / "q.db"
    with sqsqlite.connect(str(db_path)) as db:
        if name.endswith(".fifo"):
            fifo_queue(db, name, [f"g{i % 3}" for i in range(60)])
        else:
            queue = db.create_queue(name)
            for i in range(6):
                queue.send_message_batch([{"Id": str(j), "MessageBody": f"f{i * 10 + j}"} for j in range(10)])
    script = tmp_path / "die_after_send.py"
    script.write_text(DIE_AFTER_SEND)
    died = subprocess.run(
        [sys.executable, str(script), str(db_path), endpoint, name, "3"], env=env, capture_output=True, text=True, timeout=120
    )
    assert died.returncode == 86, died.stderr  # it died where meant to, after the third batch went out
    with sqsqlite.connect(str(db_path)) as db:
        assert len(db.bookmarks("copy-to ")) == 1  # where the second batch ended
    again = cli("copy", "--db", str(db_path), "--to-endpoint-url", endpoint, env=env)
    assert f"{name}: 40 messages copied" in again.stdout  # the third batch again, and the rest
    got = bodies(client, name)
    assert set(got) == {f"f{i}" for i in range(60)}
    if name.endswith(".fifo"):
        assert max(got.values()) == 1  # the endpoint dropped the third batch's second send
    else:
        assert sorted(body for body, n in got.items() if n > 1) == sorted(f"f{i}" for i in range(20, 30))


# ------------------------------------------------------------------ which queue a position is of


@pytest.fixture
def emulators(tmp_path):
    """Two ``sqsqlite serve`` endpoints on one clock: each gives a queue of one name the same ARN
    (account 000000000000, us-east-1), as two LocalStacks do, and the same CreatedTimestamp."""
    from sqsqlite.server import BackgroundServer
    from tests.server.server_helpers import boto3_client

    clock = sqsqlite.ManualClock(int(time.time() * 1000))
    with BackgroundServer(str(tmp_path / "one.db"), clock=clock) as one, BackgroundServer(str(tmp_path / "two.db"), clock=clock) as two:
        yield clock, boto3_client(one.url), boto3_client(two.url)


def test_a_copy_to_a_queue_deleted_and_made_again_there_sends_every_message_again(tmp_path, emulators):
    clock, there, _ = emulators
    with sqsqlite.connect(str(tmp_path / "q.db")) as db:
        three_messages(db, "remade")
        assert copy_to(db, there).messages == {"remade": 3}
        there.delete_queue(QueueUrl=there.get_queue_url(QueueName="remade")["QueueUrl"])
        clock.advance(61)  # SQS lets a name be used again a minute after its queue was deleted
        assert copy_to(db, there).messages == {"remade": 3}
        assert copy_to(db, there).messages == {"remade": 0}  # a run again to the new queue continues
    assert bodies(there, "remade") == Counter(f"m{i}" for i in range(3))


def test_a_copy_to_a_second_endpoint_giving_the_queue_the_same_arn_and_creation_time_sends_every_message(tmp_path, emulators):
    _, one, two = emulators
    with sqsqlite.connect(str(tmp_path / "q.db")) as db:
        three_messages(db, "twice")
        assert copy_to(db, one).messages == {"twice": 3}
        assert copy_to(db, two).messages == {"twice": 3}
        assert copy_to(db, one).messages == copy_to(db, two).messages == {"twice": 0}
    assert bodies(one, "twice") == bodies(two, "twice") == Counter(f"m{i}" for i in range(3))


def test_a_position_an_older_sqsqlite_kept_by_the_arn_alone_is_continued_from_once_with_a_note(tmp_path, emulators):
    _, there, _ = emulators
    with sqsqlite.connect(str(tmp_path / "q.db")) as db:
        queue = three_messages(db, "older")
        assert copy_to(db, there).messages == {"older": 3}
        ((key, value),) = db.bookmarks("copy-to ").items()
        arn = there.get_queue_attributes(QueueUrl=there.get_queue_url(QueueName="older")["QueueUrl"], AttributeNames=["QueueArn"])
        legacy = f"copy-to {arn['Attributes']['QueueArn']}"
        db.set_bookmarks({key: None, legacy: value})  # as an older sqsqlite left it
        queue.send_message("m3")
        report = copy_to(db, there)
        assert report.messages == {"older": 1}
        assert report.notes == [
            f"older: continues from the position an older sqsqlite kept for {legacy[8:]} (by the ARN alone, "
            "so for whichever queue had it last); from now on it is kept for arn:aws:sqs:us-east-1:000000000000:older "
            "here and that queue there"
        ]
        assert list(db.bookmarks("copy-to ")) == [key]
        assert copy_to(db, there).notes == []
    assert bodies(there, "older") == Counter(f"m{i}" for i in range(4))


def test_queues_of_one_name_in_two_regions_here_copied_to_one_queue_there_each_send_every_message(tmp_path, emulators):
    _, there, _ = emulators
    with sqsqlite.connect(str(tmp_path / "q.db")) as db:
        west = db.scoped(region="eu-west-1")
        west.create_queue("shared").send_message_batch([{"Id": str(i), "MessageBody": f"west-{i}"} for i in range(2)])
        db.create_queue("shared").send_message_batch([{"Id": str(i), "MessageBody": f"east-{i}"} for i in range(3)])
        assert copy_to(db, there).messages == {"shared": 3}  # the newer rows: past every one of eu-west-1's
        assert copy_to(west, there).messages == {"shared": 2}
        assert copy_to(db, there).messages == copy_to(west, there).messages == {"shared": 0}  # each continues its own
        assert sorted(key.rsplit(" ", 1)[1] for key in db.bookmarks("copy-to ")) == [
            "arn:aws:sqs:eu-west-1:000000000000:shared",
            "arn:aws:sqs:us-east-1:000000000000:shared",
        ]
    assert bodies(there, "shared") == Counter([*(f"east-{i}" for i in range(3)), *(f"west-{i}" for i in range(2))])


def test_a_position_an_older_sqsqlite_kept_by_the_queue_there_alone_is_continued_by_the_default_scopes_queue_only(tmp_path, emulators):
    _, there, _ = emulators
    with sqsqlite.connect(str(tmp_path / "q.db")) as db:
        west = db.scoped(region="eu-west-1", account_id="111111111111")
        three_messages(west, "kept")
        queue = three_messages(db, "kept")
        assert copy_to(db, there).messages == {"kept": 3}
        ((key, value),) = db.bookmarks("copy-to ").items()
        previous = key.rsplit(" from ", 1)[0]  # as an older sqsqlite named it: by the queue there alone
        db.set_bookmarks({key: None, previous: value})
        # Another account's and region's queue of the name starts from its first message, and
        # leaves the older position alone.
        report = copy_to(west, there)
        assert (report.messages, report.notes) == ({"kept": 3}, [])
        assert db.bookmark(previous) == value
        queue.send_message("m3")
        report = copy_to(db, there)
        assert report.messages == {"kept": 1}
        arn = previous.split()[1]
        assert report.notes == [
            f"kept: continues from the position an older sqsqlite kept for {arn} (by the queue there alone, "
            "so for whichever queue had it last); from now on it is kept for arn:aws:sqs:us-east-1:000000000000:kept "
            "here and that queue there"
        ]
        assert db.bookmark(previous) is None and db.bookmark(key) is not None
        assert copy_to(db, there).notes == []
    assert bodies(there, "kept") == Counter([*(f"m{i}" for i in range(4)), *(f"m{i}" for i in range(3))])
