"""What a console page costs is bounded whatever the queue holds: bodies shown in part, HEAD
rendering no body, and at most D.CONSOLE_RENDERS pages rendered at once."""

from __future__ import annotations

import html
import re
import threading

import pytest

from sqsqlite import defaults as D
from sqsqlite.console.app import Console

LOCAL = {"Host": "127.0.0.1"}


def get(console: Console, path: str, method: str = "GET", query: str = ""):
    return console.handle(method, path, query, LOCAL, b"")


@pytest.fixture
def console(db):
    return Console(db)


def test_a_large_body_shows_its_preview_a_capped_part_and_how_much_more_there_is(console, db):
    body = "<b>" + "x" * 9_000 + "é" * 997  # 10,000 characters
    db.create_queue("big").send_message(body)
    page = get(console, "/console/queues/big").body.decode()
    [cell] = re.findall(r'<td class="body">(.*?)</td>', page, re.S)
    summary = html.unescape(re.search(r"<summary>(.*?)…</summary>", cell).group(1))
    shown = html.unescape(re.search(r"<pre>(.*?)</pre>", cell, re.S).group(1))
    assert summary == body[: D.CONSOLE_BODY_PREVIEW] and shown == body[: D.CONSOLE_BODY_SHOWN]
    assert f"{10_000 - D.CONSOLE_BODY_SHOWN:,} more characters not shown." in cell


def test_a_page_of_large_messages_stays_small(console, db):
    queue = db.create_queue("big")
    for _ in range(5):
        queue.send_message("<>&" * 300_000)  # markup: the most escaping costs
    page = get(console, "/console/queues/big")
    assert page.status == 200 and page.body.count(b'class="not-shown"') == 5
    assert len(page.body) < 5 * 6 * (D.CONSOLE_BODY_PREVIEW + D.CONSOLE_BODY_SHOWN) + 20_000


def test_a_short_body_is_shown_whole_and_unfolded(console, db):
    db.create_queue("small").send_message("just this")
    page = get(console, "/console/queues/small").body.decode()
    assert "<pre>just this</pre>" in page and "<details>" not in page and "not shown" not in page


@pytest.mark.parametrize("query", ["", "state=visible", "state=gone", "after=not-a-cursor"])
def test_head_of_a_queue_page_has_the_get_s_status_and_length_and_no_body(console, db, query):
    queue = db.create_queue("mixed")
    for body in ("plain", "<script>'\"&</script>" * 40, "é" * 5_000, "ü<" * 3_000):
        queue.send_message(body, message_attributes={"kind": "<i>x</i>"})
    got, head = get(console, "/console/queues/mixed", "GET", query), get(console, "/console/queues/mixed", "HEAD", query)
    assert head.status == got.status and head.body == b""
    assert head.headers["Content-Length"] == str(len(got.body))


def test_head_of_every_other_page_has_the_get_s_length(console, db):
    db.create_queue("q").send_message("hello")
    for path in ("/console", "/console/api/stats", "/console/queues/q/tasks", "/console/static/console.css", "/console/nowhere"):
        # The queue list, the tasks page and /console/api/stats carry live figures (the time, a
        # fresh token, the file's and WAL's sizes, which the checkpoint thread changes) that may
        # change between two requests: the HEAD's length is within the GETs' on either side (the
        # list's once read 1,691 against 1,689).
        got, head, after = get(console, path), get(console, path, "HEAD"), get(console, path)
        assert (head.status, head.body) == (got.status, b"")
        lengths = sorted((len(got.body), len(after.body)))
        if path in ("/console", "/console/api/stats", "/console/queues/q/tasks"):
            assert lengths[0] - 8 <= int(head.headers["Content-Length"]) <= lengths[1] + 8
        else:
            assert head.headers["Content-Length"] == str(len(got.body))


class Held:
    """A database whose stats wait until released: pages that read them stay rendering."""

    def __init__(self, db):
        self.db = db
        self.entered = threading.Semaphore(0)
        self.release = threading.Event()

    def __getattr__(self, name):
        return getattr(self.db, name)

    def stats(self, names=None):
        self.entered.release()
        assert self.release.wait(30), "never released"
        return self.db.stats(names)


def test_beyond_its_renders_at_once_the_console_answers_503_at_once_and_then_recovers(db):
    db.create_queue("q")
    held = Held(db)
    console = Console(held)
    answers: list = []
    busy = [threading.Thread(target=lambda: answers.append(get(console, "/console"))) for _ in range(D.CONSOLE_RENDERS)]
    for t in busy:
        t.start()
    for _ in busy:
        assert held.entered.acquire(timeout=30), "a page never started"
    refused = get(console, "/console/queues/q")
    assert refused.status == 503 and refused.headers["Retry-After"] == "1"
    assert get(console, "/console/static/console.js").status == 200  # files render nothing: never refused
    held.release.set()
    for t in busy:
        t.join(30)
    assert [a.status for a in answers] == [200] * D.CONSOLE_RENDERS
    assert get(console, "/console/queues/q").status == 200
