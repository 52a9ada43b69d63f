"""Bookmarks kept beside the queues, and message records with positions to resume after."""

import pytest

from sqsqlite.errors import InvalidExportRecord, InvalidParameterValue


def test_a_bookmark_is_kept_read_back_listed_by_prefix_and_removed_with_none(db):
    assert db.bookmark("copy a") is None
    db.set_bookmark("copy a", b"12")
    db.set_bookmark("copy b", b"7")
    db.set_bookmark("other", b"x")
    db.set_bookmark("copy a", b"13")
    assert db.bookmark("copy a") == b"13"
    assert db.bookmarks("copy ") == {"copy a": b"13", "copy b": b"7"}
    db.set_bookmark("copy a", None)
    assert db.bookmarks("copy ") == {"copy b": b"7"}


def test_bookmarks_never_meet_the_engines_own_settings(db):
    assert db.bookmarks("") == {}  # the receipt secret lives in the same table, unseen


def test_an_import_sets_its_bookmarks_with_the_messages_or_not_at_all(db, queue):
    source = db.create_queue("source")
    source.send_message("a")
    good = list(source.export_messages())
    assert queue.import_messages(good, bookmarks={"imported a": b"1"}) == 1
    assert db.bookmark("imported a") == b"1"
    with pytest.raises(InvalidExportRecord):
        queue.import_messages([{**good[0], "SentTimestamp": "later"}], bookmarks={"imported b": b"1"})
    assert db.bookmark("imported b") is None


def test_message_records_resume_after_the_last_position_whatever_was_deleted_between(queue):
    for body in "abcde":
        queue.send_message(body)
    first = list(queue.message_records())
    assert [r["Body"] for _, r in first] == list("abcde")
    positions = [p for p, _ in first]
    assert positions == sorted(positions)
    (received,) = queue.receive_message()
    received.delete()  # "a" is gone
    assert [r["Body"] for _, r in queue.message_records(after=positions[1])] == list("cde")
    assert [r["Body"] for _, r in queue.message_records(after=positions[1], page=1)] == list("cde")


def test_group_records_walk_a_fifo_queues_sequence_numbers_in_a_range_group_by_group_after_a_position(db):
    fifo = db.create_queue("walk.fifo", attributes={"FifoQueue": "true", "ContentBasedDeduplication": "true"})
    for body in ("a1", "b2", "a3", "b4", "a5"):  # each body's digit: its sequence number
        fifo.send_message(body, message_group_id=body[0])
    assert fifo.last_sequence().last == 5
    assert [(p, r["Body"]) for p, r in fifo.group_records()] == [
        (("a", 1), "a1"),
        (("a", 3), "a3"),
        (("a", 5), "a5"),
        (("b", 2), "b2"),
        (("b", 4), "b4"),
    ]
    assert [r["Body"] for _, r in fifo.group_records(done=1, upto=4)] == ["a3", "b2", "b4"]
    assert [r["Body"] for _, r in fifo.group_records(done=1, upto=4, after=("a", 3), page=1)] == ["b2", "b4"]


def test_an_import_leaves_out_the_records_whose_bookmark_is_set_and_counts_the_rest(db, queue):
    source = db.create_queue("source")
    for body in "abc":
        source.send_message(body)
    records = list(source.export_messages())
    db.set_bookmark("seen b", b"1")
    keys = ["seen a", "seen b", "seen c"]
    assert queue.import_messages(records, bookmarks=dict.fromkeys(keys, b"2"), skip_bookmarked=keys) == 2
    assert sorted(m.body for m in queue.peek(limit=10)) == ["a", "c"]
    assert queue.import_messages(records, skip_bookmarked=keys) == 0  # every one noted now
    with pytest.raises(InvalidParameterValue, match="names 1 bookmarks for 3 records"):
        queue.import_messages(records, skip_bookmarked=["seen a"])


def test_several_bookmarks_are_set_and_removed_in_one_call(db):
    db.set_bookmarks({"n a": b"1", "n b": b"2"})
    db.set_bookmarks({"n a": None, "n c": b"3"})
    assert db.bookmarks("n ") == {"n b": b"2", "n c": b"3"}
