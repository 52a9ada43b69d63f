"""BufferedQueue at the edges of what it fetches and commits: a lease of 0 (nothing it keeps
would still be in flight when handed out), and its queue deleted while deletes wait. All timing
on the manual clock."""

import json

import pytest

from tests.unit.test_buffered import counts, fill


def received(queue):
    """How many receives the queue's messages have counted, all told."""
    return sum(m.receive_count for m in queue.peek("all", limit=1000))


@pytest.mark.parametrize("zero", ["queue", "buffer"])  # the queue's VisibilityTimeout, or the buffer's visibility_timeout
def test_with_a_lease_of_0_a_claim_takes_only_what_the_receive_asks_for(db, zero):
    dlq = db.create_queue("dead")
    policy = json.dumps({"deadLetterTargetArn": dlq.arn, "maxReceiveCount": 1})
    q = db.create_queue("jobs", attributes={"RedrivePolicy": policy, "VisibilityTimeout": "0" if zero == "queue" else "30"})
    fill(q, 10)
    b = q.buffered(visibility_timeout=0) if zero == "buffer" else q.buffered()
    first = b.receive_message(max_number_of_messages=3)
    assert len(first) == 3 and received(q) == 3  # none received to lapse unhandled, its count raised
    for m in first:
        m.delete()
    handled = [m.body for m in first]
    while msgs := b.receive_message():  # the clock never moves: a consumer as quick as can be
        handled.append(msgs[0].body)
        msgs[0].delete()
    b.close()
    assert handled == [f"m{i:03d}" for i in range(10)]  # each handed out, once
    assert dlq.peek("all") == []  # none went to the dead-letter queue unhandled


def test_claims_made_with_a_lease_of_0_grow_no_later_claim(queue, clock):
    queue.set_queue_attributes({"VisibilityTimeout": "0"})
    fill(queue, 200)
    b = queue.buffered()
    for _ in range(5):  # on a clock that never moves, a pace that would double every claim
        b.receive_message()[0].delete()
    assert received(queue) == 1  # of those left, the fifth alone (its delete waits): each claim took the one asked for
    queue.set_queue_attributes({"VisibilityTimeout": "30"})
    b.receive_message()
    assert counts(queue)[1] <= 10  # no bigger than a first claim
    b.close()


def test_deletes_waiting_when_their_queue_is_deleted_are_refused_once_and_logged_once(db, queue, clock, caplog):
    fill(queue, 10)
    b = queue.buffered()
    handed = [b.receive_message()[0] for _ in range(2)]
    db.delete_queue(queue.url)  # by another program, say, while these two are handled
    for m in handed:
        m.delete()
    clock.advance(1)  # the window has passed: the flusher's step commits them
    assert b.flush_due() is None  # nothing waits any more: they are not put back to fail again
    assert [(f.receipt_handle, f.code, f.message) for f in b.failed_deletes] == [
        (m.receipt_handle, "QueueDoesNotExist", "The specified queue does not exist.") for m in handed
    ]
    assert len([r for r in caplog.records if r.name == "sqsqlite.buffered"]) == 1
    b.close()  # the eight fetched and not handed out went with the queue: nothing to release, no error


@pytest.fixture
def disk_full_once(monkeypatch):
    """The next commit of deferred deletes fails as on a full disk; the ones after go through."""
    from sqsqlite.core import buffered
    from sqsqlite.errors import DatabaseError

    inner, failing = buffered.delete_claims, [True]

    def once(queue, claims):
        if failing:
            failing.clear()
            raise DatabaseError("Database error: database or disk is full.")
        return inner(queue, claims)

    monkeypatch.setattr(buffered, "delete_claims", once)


def acknowledge(queue, n):
    fill(queue, 10)
    b = queue.buffered(max_batch_open_ms=60_000)
    for _ in range(n):
        b.receive_message()[0].delete()
    return b


def test_a_receive_whose_due_deletes_fail_to_commit_still_hands_out_its_message_and_the_deletes_wait(queue, clock, monkeypatch):
    import threading

    from sqsqlite.core import buffered
    from sqsqlite.errors import DatabaseError

    # No flusher thread (as when none can start): the receive alone commits the due deletes.
    start = threading.Thread.start

    def no_flusher(thread):
        if thread.name.startswith("sqsqlite-buffer-"):
            raise RuntimeError("can't start new thread")
        start(thread)

    monkeypatch.setattr(threading.Thread, "start", no_flusher)
    fill(queue, 10)
    b = queue.buffered(max_batch_open_ms=200)
    b.receive_message()[0].delete()  # a delete waits
    inner = buffered.delete_claims

    def disk_full(queue, claims):
        raise DatabaseError("Database error: database or disk is full.")

    monkeypatch.setattr(buffered, "delete_claims", disk_full)
    clock.advance(1)  # the delete is due at the next receive, whose commit of it fails
    [second] = b.receive_message()
    monkeypatch.setattr(buffered, "delete_claims", inner)
    second.delete()
    handled = 2
    while got := b.receive_message(wait_time_seconds=0):
        got[0].delete()
        handled += 1
    b.close()
    assert handled == 10 and counts(queue) == (0, 0)


def test_a_close_that_could_not_commit_its_deletes_raises_and_the_next_close_commits_them(queue, disk_full_once):
    from sqsqlite.errors import DatabaseError

    b = acknowledge(queue, 3)
    with pytest.raises(DatabaseError, match="full"):
        b.close()
    assert counts(queue) == (7, 3)  # the fetched ones released; the three acknowledged still stored
    b.close()  # the disk has room again
    assert counts(queue) == (7, 0) and not b.failed_deletes
    b.close()  # nothing waits: returns at once


def test_the_database_commits_the_deletes_a_failed_close_left_waiting_though_the_buffer_was_dropped(db_path, clock, disk_full_once):
    import gc

    import sqsqlite
    from sqsqlite.errors import DatabaseError

    db = sqsqlite.connect(db_path, clock=clock)
    q = db.create_queue("jobs")
    b = acknowledge(q, 3)
    with pytest.raises(DatabaseError):
        b.close()
    del b
    gc.collect()
    db.close()  # tries them again, and commits them
    with sqsqlite.connect(db_path, clock=clock) as db:
        assert counts(db.queue("jobs")) == (7, 0)
