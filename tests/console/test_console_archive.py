"""A queue page shows the queue's archive beside its messages: the deleted ones, newest deleted
first, how each left, when, its receives and its body; and turns the archive on and off as its
other forms act, refused by a read-only console."""

from __future__ import annotations

import html
import re
from urllib.parse import urlencode

import pytest

from sqsqlite import defaults as D
from sqsqlite.console.app import Console

LOCAL = {"Host": "127.0.0.1"}
DAY = 86_400


def get(console: Console, path: str, method: str = "GET"):
    return console.handle(method, path, "", LOCAL, b"")


def post(console: Console, path: str, **form: str):
    body = urlencode({"token": console.form_token(), **form}).encode()
    return console.handle("POST", path, "", {**LOCAL, "Content-Type": "application/x-www-form-urlencoded"}, body)


def archived_rows(page: str) -> list[list[str]]:
    rows = re.findall(r'<tr class="archived">(.*?)</tr>', page, re.S)
    return [[html.unescape(re.sub(r"<[^>]+>", "", c)).strip() for c in re.findall(r"<td[^>]*>(.*?)</td>", r, re.S)] for r in rows]


@pytest.fixture
def console(db):
    return Console(db)


def test_a_queue_page_lists_its_archive_newest_deleted_first_with_how_each_left(console, db, clock):
    q = db.create_queue("orders")
    db.set_archive(q.url, 7 * DAY)
    q.send_message_batch([{"Id": str(i), "MessageBody": f"<b>order {i}</b>"} for i in range(3)])
    got = {m.body: m for m in q.receive_message(max_number_of_messages=3)}
    clock.advance(10)
    q.delete_message(got["<b>order 0</b>"].receipt_handle)
    clock.advance(10)
    q.delete_message_batch([{"Id": "1", "ReceiptHandle": got["<b>order 1</b>"].receipt_handle}])
    clock.advance(10)
    q.send_message("never received")
    q.purge_queue()  # takes order 2 (in flight) and the new one
    page = get(console, "/console/queues/orders").body.decode()
    assert "Keeps each deleted message for 7 d 0 h" in page
    rows = archived_rows(page)
    assert [(r[1], r[4], r[-1]) for r in rows[2:]] == [("deleted in a batch", "1", "<b>order 1</b>"), ("deleted", "1", "<b>order 0</b>")]
    assert sorted((r[1], r[-1]) for r in rows[:2]) == [("purged", "<b>order 2</b>"), ("purged", "never received")]
    assert "&lt;b&gt;order 1&lt;/b&gt;" in page  # a body is text, never markup
    # The messages section beside it: the queue is empty now.
    assert 'id="no-messages"' in page


def test_a_queue_without_an_archive_says_it_is_off_and_offers_to_turn_it_on(console, db):
    db.create_queue("plain").send_message("m")
    page = get(console, "/console/queues/plain").body.decode()
    assert 'id="archive-off"' in page and 'id="archived"' not in page and "Turn the archive on" in page


def test_the_newest_are_read_first_from_a_large_archive_and_a_batch_sharing_its_instant(db, clock, monkeypatch):
    q = db.create_queue("busy")
    db.set_archive(q.url, 7 * DAY)
    for i in range(130):
        q.send_message(f"m{i}")
        q.delete_message(q.receive_message()[0].receipt_handle)
        clock.advance(1)
    q.send_message_batch([{"Id": str(i), "MessageBody": f"b{i}"} for i in range(10)])
    q.delete_message_batch(
        [{"Id": str(i), "ReceiptHandle": m.receipt_handle} for i, m in enumerate(q.receive_message(max_number_of_messages=10))]
    )

    def newest_archived(db, url, n, **selection):
        return db.archived(url, limit=n, newest_first=True, **selection)

    shown = newest_archived(db, q.url, 15)
    assert [m.body for m in shown[:10]] == [f"b{i}" for i in range(9, -1, -1)]  # one instant: by archive order
    assert [m.body for m in shown[10:]] == [f"m{i}" for i in range(129, 124, -1)]
    # Five of the batch's ten, deleted at one instant: five of them, the newest before them.
    assert {m.body for m in newest_archived(db, q.url, 5)} <= {f"b{i}" for i in range(10)}
    assert len(newest_archived(db, q.url, 5)) == 5
    assert [m.body for m in newest_archived(db, q.url, 500)][-1] == "m0"  # fewer than asked: all
    monkeypatch.setattr(D, "ARCHIVE_PAGE_ROWS", 7)  # a filter reads pages of 7 rows, dropping most
    picked = [m.message_id for m in db.archived(q.url, limit=1000) if m.body in ("m3", "m80", "m120")]
    assert [m.body for m in newest_archived(db, q.url, 2, message_ids=picked)] == ["m120", "m80"]
    assert [m.body for m in db.archived(q.url, limit=2, message_ids=picked)] == ["m3", "m80"]


def test_a_page_shows_at_most_a_page_of_the_archive(console, db, clock):
    q = db.create_queue("busy")
    db.set_archive(q.url, DAY)
    for i in range(D.CONSOLE_PAGE_SIZE + 7):
        q.send_message(f"m{i}")
        q.delete_message(q.receive_message()[0].receipt_handle)
        clock.advance(1)
    rows = archived_rows(get(console, "/console/queues/busy").body.decode())
    assert len(rows) == D.CONSOLE_PAGE_SIZE and rows[0][-1] == f"m{D.CONSOLE_PAGE_SIZE + 6}"


def test_head_of_a_queue_page_with_an_archive_has_the_get_s_length(console, db):
    q = db.create_queue("mixed")
    db.set_archive(q.url, DAY)
    for body in ("plain", "<script>'\"&</script>" * 40, "é" * 5_000):
        q.send_message(body)
    for m in q.receive_message(max_number_of_messages=3):
        q.delete_message(m.receipt_handle)
    got, head = get(console, "/console/queues/mixed"), get(console, "/console/queues/mixed", "HEAD")
    assert got.body.count(b'class="archived"') == 3 and head.body == b""
    assert head.headers["Content-Length"] == str(len(got.body))


def test_the_archive_form_turns_it_on_for_whole_days_and_off(console, db):
    q = db.create_queue("orders")
    answer = post(console, "/console/queues/orders/archive", days="3")
    assert answer.status == 303 and "notice=" in answer.headers["Location"]
    assert db.archive_retention(q.url) == 3 * DAY
    assert post(console, "/console/queues/orders/archive", days="0").status == 303
    assert db.archive_retention(q.url) is None


@pytest.mark.parametrize("days", ["x", "1.5", "-1", "²", "1000", "367"])
def test_a_retention_that_is_no_whole_number_of_days_in_range_is_said_on_the_page_and_changes_nothing(console, db, days):
    q = db.create_queue("orders")
    answer = post(console, "/console/queues/orders/archive", days=days)
    assert answer.status == 303 and "error=" in answer.headers["Location"]
    assert db.archive_retention(q.url) is None


def test_a_read_only_console_shows_the_archive_and_refuses_to_turn_it_on(db):
    q = db.create_queue("orders")
    db.set_archive(q.url, DAY)
    q.send_message("kept")
    q.delete_message(q.receive_message()[0].receipt_handle)
    console = Console(db, read_only=True)
    page = get(console, "/console/queues/orders").body.decode()
    assert [r[-1] for r in archived_rows(page)] == ["kept"]
    assert re.search(r'id="archive-on" disabled', page) and re.search(r'id="archive-off-button" disabled', page)
    assert post(console, "/console/queues/orders/archive", days="0").status == 403
    assert db.archive_retention(q.url) == DAY
