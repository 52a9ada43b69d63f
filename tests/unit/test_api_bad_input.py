"""Bad input to the Python API's administrative methods (bookmarks, permissions, pages, export
and import, stats, connect): a typed error naming the parameter and what it takes, raised
before anything is written, never a bare TypeError, IndexError or OverflowError, and nothing a
later read would fail on."""

import contextlib
import os
import sqlite3

import pytest

import sqsqlite
from sqsqlite.errors import InvalidParameterValue, SQSError


def _snapshot(path):
    with contextlib.closing(sqlite3.connect(path)) as conn:
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
        return {t: sorted(conn.execute(f'SELECT * FROM "{t}"').fetchall(), key=repr) for t in tables}


@contextlib.contextmanager
def refused(db, *fragments):
    """The block raises InvalidParameterValue whose message or hint holds every fragment, and
    the database is unchanged, every table compared."""
    before = _snapshot(db.path)
    with pytest.raises(SQSError) as info:
        yield info
    assert isinstance(info.value, InvalidParameterValue), repr(info.value)
    for fragment in fragments:
        assert fragment in str(info.value) or fragment in (info.value.hint or ""), (fragment, str(info.value), info.value.hint)
    assert _snapshot(db.path) == before


@pytest.fixture
def q(db):
    queue = db.create_queue("strict")
    queue.send_message("already here")  # so "nothing changed" is checked against real rows
    db.set_bookmark("kept", b"1")
    return queue


@pytest.fixture
def fifo(db):
    queue = db.create_queue("strict.fifo", FifoQueue="true")
    queue.send_message("a1", message_group_id="a", message_deduplication_id="1")
    return queue


# ---------------------------------------------------------------- bookmarks


@pytest.mark.parametrize("value", [1.5, "abc", 5, True, ["x"]])
def test_a_bookmark_value_that_is_not_bytes_is_refused_and_every_bookmark_still_reads(db, q, value):
    with refused(db, "bookmark", "bytes"):
        db.set_bookmark("copy a", value)
    with refused(db, "bookmark", "bytes"):
        db.set_bookmarks({"copy b": b"fine", "copy c": value})
    assert db.bookmark("copy a") is None and db.bookmark("copy b") is None
    assert db.bookmarks("") == {"kept": b"1"}


@pytest.mark.parametrize("key", [None, 5, b"key", "lone \ud800"])
def test_a_bookmark_key_that_is_not_text_is_refused_by_every_bookmark_method(db, q, key):
    with refused(db, "bookmark key"):
        db.set_bookmark(key, b"1")
    with refused(db, "bookmark key"):
        db.set_bookmarks({"fine": b"1", key: b"2"})
    with refused(db, "bookmark key"):
        db.bookmark(key)
    with refused(db, "bookmark prefix"):
        db.bookmarks(key)
    assert db.bookmark("fine") is None


@pytest.mark.parametrize("values", [None, [("k", b"1")], "k"])
def test_set_bookmarks_takes_a_mapping_and_refuses_anything_else(db, q, values):
    with refused(db, "bookmarks", "map"):
        db.set_bookmarks(values)


def test_a_bookmark_given_as_a_bytearray_or_memoryview_is_kept_as_bytes(db):
    db.set_bookmarks({"a": bytearray(b"12"), "b": memoryview(b"34")})
    assert db.bookmarks("") == {"a": b"12", "b": b"34"}


def test_an_import_with_a_bookmark_that_is_not_bytes_is_refused_and_imports_nothing(db, q):
    records = list(q.export_messages())
    other = db.create_queue("other")
    with refused(db, "bookmark", "bytes"):
        other.import_messages(records, bookmarks={"imported": 7})
    with refused(db, "bookmarks", "map"):
        other.import_messages(records, bookmarks=["imported"])
    with refused(db, "skip_bookmarked"):
        other.import_messages(records, skip_bookmarked=[7])
    with refused(db, "skip_bookmarked", "1 bookmarks for 2 records"):
        other.import_messages(records * 2, skip_bookmarked=["one"])


# ---------------------------------------------------------------- permissions


@pytest.mark.parametrize("accounts, actions", [(5, ["SendMessage"]), (["000000000000"], 5), ({"000000000000": 1}, ["*"]), ([12], ["*"])])
def test_add_permission_with_account_ids_or_actions_that_are_not_lists_of_strings_is_refused(db, q, accounts, actions):
    with refused(db, "expected a list"):
        q.add_permission("L", accounts, actions)


# ---------------------------------------------------------------- pages, export and import


@pytest.mark.parametrize("after", [5, b"1.2", ["1.2"]])
def test_a_page_cursor_that_is_not_text_is_refused_naming_what_a_cursor_is(db, q, after):
    with refused(db, "page cursor"):
        q.peek_page(after=after)


@pytest.mark.parametrize("state", [["all"], None, 5])
def test_a_page_state_that_is_not_a_state_name_is_refused(db, q, state):
    with refused(db, "state"):
        q.peek_page(state=state)


@pytest.mark.parametrize("page", [0, -1, 10**24, "many", 1.5, None])
def test_an_export_page_size_outside_1_to_2_63_is_refused_when_called(db, q, fifo, page):
    for call in (q.export_messages, fifo.export_messages, q.message_records, fifo.group_records):
        with refused(db, "page"):
            call(page=page)


@pytest.mark.parametrize("position", [-1, 10**24, "abc", 1.5, None])
def test_a_position_to_resume_after_outside_0_to_2_63_is_refused(db, q, fifo, position):
    with refused(db, "after"):
        q.message_records(after=position)
    with refused(db, "done"):
        fifo.group_records(done=position)
    if position is not None:  # upto=None: no upper bound
        with refused(db, "upto"):
            fifo.group_records(upto=position)


@pytest.mark.parametrize("after", [None, {}, [], ("a",), ("a", 1, 2), (1, 1), ("a", "x"), ("a", -1), ("a", 10**24), "a1"])
def test_a_group_position_that_is_not_a_group_and_sequence_number_pair_is_refused(db, fifo, after):
    with refused(db, "after", "(group, sequence number)"):
        fifo.group_records(after=after)


def test_group_records_take_the_pair_as_a_list_too(fifo):
    assert [p for p, _ in fifo.group_records(after=["", 0])] == [("a", 1)]


@pytest.mark.parametrize("records", [None, 5, "records", {"MessageId": "x"}])
def test_import_of_something_other_than_an_iterable_of_records_is_refused(db, q, records):
    with refused(db, "records", "iterable"):
        q.import_messages(records)


# ---------------------------------------------------------------- stats and connect


@pytest.mark.parametrize("names", [5, [5], {"strict": 1}, b"strict"])
def test_stats_of_anything_but_queue_names_is_refused(db, q, names):
    with refused(db, "queue names"):
        db.stats(names)


def test_stats_of_names_given_as_a_generator_reports_those_queues(db, q):
    assert [s.name for s in db.stats(n for n in ["strict"])] == ["strict"]


@pytest.mark.parametrize("synchronous", [None, "abc", 1, "OFF"])
def test_connect_refuses_a_synchronous_setting_but_normal_or_full_before_making_any_file(tmp_path, synchronous):
    path = tmp_path / "never.db"
    with pytest.raises(InvalidParameterValue, match='"NORMAL" or "FULL"'):
        sqsqlite.connect(path, synchronous=synchronous)
    assert os.listdir(tmp_path) == []


def test_connect_takes_normal_and_full_in_any_case(tmp_path):
    for setting in ("normal", "Full"):
        sqsqlite.connect(tmp_path / f"{setting}.db", synchronous=setting).close()
