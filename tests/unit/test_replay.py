"""Replay: archived messages sent again in their queue's send order, with their bodies and
attributes, new ids and the original kept; FIFO groups in order; dry runs; a replay cut short
continues without sending anything twice. Timing by the injected clock."""

from __future__ import annotations

import random

import pytest

import sqsqlite
from sqsqlite.errors import InvalidParameterValue, QueueDoesNotExist

ORIGINAL = "sqsqlite.OriginalMessageId"


def drain(queue) -> list:
    got = []
    while batch := queue.receive_message(
        max_number_of_messages=10, message_attribute_names=["All"], message_system_attribute_names=["All"]
    ):
        got += batch
    return got


def delete_in_random_order(queue, n: int, seed: int = 7) -> list:
    got = drain(queue)
    assert len(got) == n
    for m in random.Random(seed).sample(got, len(got)):
        m.delete()
    return got


@pytest.fixture
def archived(db):
    q = db.create_queue("orders")
    db.set_archive(q.url, 86_400)
    return q


def test_a_replay_sends_the_archived_messages_again_in_send_order_with_new_ids_and_the_original_kept(db, archived, clock):
    for i in range(25):
        archived.send_message(f"m{i}", message_attributes={"n": str(i)})
        clock.advance(0.001)
    originals = {m.body: m.message_id for m in delete_in_random_order(archived, 25)}
    result = db.replay(archived.url)
    assert result.sent == 25 and result.sent_before == 0
    again = drain(archived)
    assert [m.body for m in again] == [f"m{i}" for i in range(25)]
    for m in again:
        assert m.message_attributes[ORIGINAL].string_value == originals[m.body] != m.message_id
        assert m.message_attributes["n"].string_value == m.body[1:]
    assert [new for _, new in result.replayed] == [m.message_id for m in again]


def test_messages_sent_in_the_same_millisecond_replay_in_their_positions_order(db, archived):
    archived.send_message_batch([{"Id": str(i), "MessageBody": f"b{i}"} for i in range(10)])
    delete_in_random_order(archived, 10)
    db.replay(archived.url)
    assert [m.body for m in drain(archived)] == [f"b{i}" for i in range(10)]


def test_a_replay_takes_only_the_deletes_of_its_time_range_and_filters(db, archived, clock):
    archived.send_message("early", message_attributes={"tenant": "acme"})
    archived.send_message("late", message_attributes={"tenant": "other"})
    archived.send_message("later", message_attributes={"tenant": "acme"})
    [early, late, later] = drain(archived)
    early.delete()
    clock.advance(60)
    t = clock.now_ms()
    late.delete()
    later.delete()
    assert [m.body for m in db.replay(archived.url, until=t, dry_run=True).pending] == ["early"]
    assert [m.body for m in db.replay(archived.url, since=t, dry_run=True).pending] == ["late", "later"]
    assert [m.body for m in db.replay(archived.url, where="tenant=acme", dry_run=True).pending] == ["early", "later"]
    assert [m.body for m in db.replay(archived.url, message_ids=[late.message_id], dry_run=True).pending] == ["late"]
    assert drain(archived) == []  # dry runs send nothing
    assert db.replay(archived.url, since=t, where="tenant=acme").sent == 1
    assert [m.body for m in drain(archived)] == ["later"]


def test_a_replay_to_another_queue_leaves_its_own_queue_alone(db, archived):
    other = db.create_queue("fixed")
    archived.send_message("x")
    delete_in_random_order(archived, 1)
    assert db.replay(archived.url, to=other.url).target_name == "fixed"
    assert [m.body for m in drain(other)] == ["x"] and drain(archived) == []


def test_a_fifo_replay_keeps_each_groups_order_with_new_deduplication_ids(db, clock):
    f = db.create_queue("f.fifo", attributes={"FifoQueue": "true"})
    db.set_archive(f.url, 86_400)
    for i in range(12):
        f.send_message(f"{'ab'[i % 2]}{i}", message_group_id="ab"[i % 2], message_deduplication_id=f"d{i}")
    while got := f.receive_message(max_number_of_messages=10):
        for m in reversed(got):  # deleted out of order
            m.delete()
    result = db.replay(f.url)
    assert result.sent == 12
    again = []  # deduplication ids d0..d11 still within their window: new ones let them in
    while got := f.receive_message(max_number_of_messages=10, message_system_attribute_names=["All"]):
        again += got
        for m in got:
            m.delete()
    by_group = {g: [m.body for m in again if m.attributes["MessageGroupId"] == g] for g in "ab"}
    assert by_group == {"a": [f"a{i}" for i in range(0, 12, 2)], "b": [f"b{i}" for i in range(1, 12, 2)]}
    assert all(m.attributes["MessageDeduplicationId"].startswith("replay-") for m in again)


def test_a_fair_queues_messages_keep_their_groups(db, archived):
    for i in range(4):
        archived.send_message(f"t{i}", message_group_id=f"tenant{i % 2}")
    delete_in_random_order(archived, 4)
    db.replay(archived.url)
    again = archived.receive_message(max_number_of_messages=10, message_system_attribute_names=["All"])
    assert [(m.body, m.attributes.get("MessageGroupId")) for m in again] == [(f"t{i}", f"tenant{i % 2}") for i in range(4)]


def test_a_finished_replay_run_again_sends_nothing_unless_asked_again(db, archived):
    archived.send_message("once")
    delete_in_random_order(archived, 1)
    assert db.replay(archived.url).sent == 1
    second = db.replay(archived.url)
    assert (second.sent, second.sent_before, second.finished_before) == (0, 1, True)
    assert db.replay(archived.url, dry_run=True).pending == []  # finished: nothing more to send
    assert len(db.replay(archived.url, dry_run=True, again=True).pending) == 1
    assert db.replay(archived.url, again=True).sent == 1
    assert [m.body for m in drain(archived)] == ["once", "once"]


def test_a_replay_cut_short_continues_where_it_stopped_and_sends_nothing_twice(db, archived):
    for i in range(35):
        archived.send_message(f"m{i}")
    delete_in_random_order(archived, 35)
    seen = []

    def crash(sent, total):
        seen.append((sent, total))
        if sent == 20:
            raise KeyboardInterrupt  # after its second transaction committed

    with pytest.raises(KeyboardInterrupt):
        db.replay(archived.url, progress=crash)
    assert seen == [(10, 35), (20, 35)]
    rest = db.replay(archived.url, progress=lambda sent, total: seen.append((sent, total)))
    assert (rest.sent, rest.sent_before) == (15, 20)
    assert seen[2:] == [(10, 15), (15, 15)]
    assert [m.body for m in drain(archived)] == [f"m{i}" for i in range(35)]


def test_a_message_with_ten_attributes_is_replayed_without_the_original_id_and_listed(db, archived):
    archived.send_message("full", message_attributes={f"a{i}": "v" for i in range(10)})
    [m] = delete_in_random_order(archived, 1)
    result = db.replay(archived.url)
    assert result.without_original_id == [m.message_id]
    [again] = drain(archived)
    assert ORIGINAL not in again.message_attributes and len(again.message_attributes) == 10


def test_a_replay_that_cannot_send_stops_typed_and_sends_nothing_of_its_batch(db, archived):
    fifo = db.create_queue("t.fifo", attributes={"FifoQueue": "true"})
    archived.send_message("no group")
    delete_in_random_order(archived, 1)
    with pytest.raises(sqsqlite.errors.SQSError, match="MessageGroupId"):
        db.replay(archived.url, to=fifo.url)
    assert drain(fifo) == []


def test_a_replay_of_a_queue_that_does_not_exist_is_queue_does_not_exist(db, archived):
    with pytest.raises(QueueDoesNotExist):
        db.replay("nope")
    with pytest.raises(QueueDoesNotExist):
        db.replay(archived.url, to="nope")
    with pytest.raises(InvalidParameterValue):
        db.replay(archived.url, where="=x")


def test_two_runs_of_the_same_replay_at_once_send_each_message_once(db, archived):
    for i in range(30):
        archived.send_message(f"m{i}")
    delete_in_random_order(archived, 30)
    inner = []

    def meanwhile(sent, total):
        if not inner:  # after the first run's first transaction, a second run of it goes to the end
            inner.append(db.replay(archived.url))

    first = db.replay(archived.url, progress=meanwhile)
    assert (first.sent, inner[0].sent) == (10, 20)
    assert [m.body for m in drain(archived)] == [f"m{i}" for i in range(30)]


def test_a_fifo_replay_run_again_within_the_deduplication_window_sends_every_message_again(db, clock):
    f = db.create_queue("again.fifo", attributes={"FifoQueue": "true", "ContentBasedDeduplication": "true"})
    db.set_archive(f.url, 86_400)
    for i in range(3):
        f.send_message(f"m{i}", message_group_id="g")
    for m in drain(f):
        m.delete()
    first = db.replay(f.url)
    for m in drain(f):
        m.delete()
    clock.advance(60)  # well inside the five-minute deduplication window
    second = db.replay(f.url, again=True)
    got = drain(f)
    assert second.sent == len(got) == 3 and [m.body for m in got] == ["m0", "m1", "m2"]
    assert [new for _, new in second.replayed] == [m.message_id for m in got]
    assert not {new for _, new in second.replayed} & {new for _, new in first.replayed}


def test_a_replay_run_again_sends_the_same_messages_not_the_copies_it_sent_before(db, archived):
    for i in range(3):
        archived.send_message(f"m{i}")
    delete_in_random_order(archived, 3)
    assert db.replay(archived.url).sent == 3
    delete_in_random_order(archived, 3)  # the copies, archived in their turn
    assert len(db.replay(archived.url, again=True, dry_run=True).pending) == 3
    again = db.replay(archived.url, again=True)
    assert (again.sent, again.sent_before) == (3, 0)
    assert sorted(m.body for m in drain(archived)) == ["m0", "m1", "m2"]


def test_a_resumed_replay_takes_no_message_archived_after_it_began_even_where_newer_rows_were_pruned(db, archived, clock):
    brief = db.create_queue("brief")
    db.set_archive(brief.url, 60)
    for i in range(11):
        archived.send_message(f"m{i}")
    delete_in_random_order(archived, 11)
    brief.send_message("b")
    delete_in_random_order(brief, 1)  # the archive's newest row when the replay begins

    def crash(sent, total):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        db.replay(archived.url, progress=crash)
    clock.advance(60)
    db.prune()  # the newest row goes: its id must not come back
    archived.send_message("late")
    delete_in_random_order(archived, 11)  # the first ten copies and "late"
    rest = db.replay(archived.url)
    assert (rest.sent, rest.sent_before) == (1, 10)
    assert [m.body for m in drain(archived)] == ["m10"]


def test_a_replay_to_another_accounts_queue_url_sends_to_that_accounts_queue_not_this_ones(db, archived):
    mine = db.create_queue("fixed")
    theirs = db.scoped(account_id="111111111111").create_queue("fixed")
    archived.send_message("x")
    delete_in_random_order(archived, 1)
    assert db.replay(archived.url, to=theirs.url).sent == 1
    assert [m.body for m in drain(theirs)] == ["x"] and drain(mine) == []
    # A run of its own, not the finished one to this account's queue of the same name.
    assert db.replay(archived.url, to=mine.url).sent == 1
    assert [m.body for m in drain(mine)] == ["x"]


def test_a_replay_resumed_after_some_of_its_rows_were_pruned_sends_the_rest_in_order(db, clock):
    q = db.create_queue("pruned")
    db.set_archive(q.url, 60)
    for i in range(25):
        q.send_message(f"m{i}")
        clock.advance(0.001)
    got = drain(q)
    for m in got[:12]:  # deleted first: these expire first
        m.delete()
    clock.advance(30)
    for m in got[12:]:
        m.delete()

    def crash(sent, total):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        db.replay(q.url, progress=crash)
    first = drain(q)
    assert [m.body for m in first] == [f"m{i}" for i in range(10)]
    for m in first:
        m.delete()
    clock.advance(30)
    db.prune()  # m10 and m11, next in the replay's order, are gone
    rest = db.replay(q.url)
    assert (rest.sent, rest.sent_before) == (13, 10)
    assert [m.body for m in drain(q)] == [f"m{i}" for i in range(12, 25)]
