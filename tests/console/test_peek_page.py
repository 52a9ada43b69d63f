"""Queue.peek_page and peek_previews, which the console's message pages read: keyset pages in receive order that
change nothing, and Database.stats from its one statement."""

from __future__ import annotations

import sqlite3

import pytest

import sqsqlite
from sqsqlite import queries as Q


def every_page(queue, state: str, limit: int) -> list[sqsqlite.Message]:
    out, cursor = [], None
    while True:
        page, cursor = queue.peek_page(state, limit, cursor)
        out += page
        if cursor is None:
            return out


def test_pages_cover_every_message_once_in_receive_order_even_when_send_times_tie(queue):
    for i in range(0, 95, 5):  # a batch's messages share their send time
        queue.send_message_batch([{"Id": str(j), "MessageBody": f"m{i + j}"} for j in range(5)])
    seen = every_page(queue, "all", 7)
    assert [m.body for m in seen] == [f"m{i}" for i in range(95)]
    assert [m.body for m in seen] == [m.body for m in queue.peek("all", 1000)]


def test_a_state_s_pages_hold_only_that_state(queue, clock):
    for i in range(6):
        queue.send_message(f"v{i}")
    queue.send_message("d", delay_seconds=60)
    queue.receive_message(max_number_of_messages=2, visibility_timeout=120)
    assert [m.body for m in every_page(queue, "in-flight", 1)] == ["v0", "v1"]
    assert [m.body for m in every_page(queue, "delayed", 1)] == ["d"]
    assert [m.body for m in every_page(queue, "visible", 3)] == ["v2", "v3", "v4", "v5"]
    assert [m.visible_at for m in every_page(queue, "in-flight", 5)] == [clock.now_ms() + 120_000] * 2


def test_a_page_changes_nothing_and_gives_no_receipt_handle(queue):
    queue.send_message("a")
    queue.receive_message(visibility_timeout=30)
    page, _ = queue.peek_page("all")
    assert page[0].receipt_handle is None and page[0].receive_count == 1
    assert queue.peek_page("all")[0][0].receive_count == 1 and queue.db.stats()[0].in_flight == 1


def test_a_dead_letter_page_tells_each_message_s_source_queue(db):
    dlq = db.create_queue("dlq")
    src = db.create_queue("src", RedrivePolicy={"deadLetterTargetArn": dlq.arn, "maxReceiveCount": 1})
    src.send_message("poison")
    for _ in range(2):
        src.receive_message(visibility_timeout=0)
    [m], cursor = dlq.peek_page()
    assert m.dead_letter_queue_source_arn == src.arn and m.receive_count == 1 and cursor is None


def test_expired_messages_are_on_no_page(queue, clock):
    queue.set_queue_attributes({"MessageRetentionPeriod": "60"})
    queue.send_message("old")
    clock.advance(61)
    assert queue.peek_page("all") == ([], None)


@pytest.mark.parametrize(
    "args, problem",
    [
        (("everything",), "Invalid state"),
        (("all", 0), "limit"),
        (("all", 1001), "limit"),
        (("all", 10, "12"), "cursor"),
        (("all", 10, "a.b"), "cursor"),
        (("all", 10, "99999999999999999999.1"), "cursor"),  # beyond SQLite's integers
        (("all", 10, "1.9223372036854775808"), "cursor"),
        (("all", 10, "\u00b2.1"), "cursor"),  # a digit to str.isdigit, not to a cursor
    ],
)
def test_a_bad_state_limit_or_cursor_is_refused(queue, args, problem):
    with pytest.raises(sqsqlite.SQSError) as err:
        queue.peek_page(*args)
    assert err.value.code == "InvalidParameterValue" and problem in err.value.message


def test_previews_cut_each_body_and_tell_its_whole_length_in_characters(queue):
    queue.send_message("é" * 300)
    queue.send_message("short")
    [(long, long_length), (short, short_length)], cursor = queue.peek_previews("all", 10, chars=100)
    assert (long.body, long_length) == ("é" * 100, 300) and (short.body, short_length) == ("short", 5)
    assert cursor is None and [m.body for m in queue.peek_page("all")[0]] == ["é" * 300, "short"]


def test_previews_page_as_peek_page_does(queue):
    queue.send_message_batch([{"Id": str(i), "MessageBody": f"m{i}" * 50} for i in range(5)])
    previews, cursor = queue.peek_previews("all", 3, chars=2)
    assert [m.body for m, _ in previews] == ["m0", "m1", "m2"] and cursor == queue.peek_page("all", 3)[1]
    rest, end = queue.peek_previews("all", 3, cursor, chars=2)
    assert [(m.body, n) for m, n in rest] == [("m3", 100), ("m4", 100)] and end is None


def test_a_page_of_hidden_messages_reads_only_the_hidden_end_of_the_index(db):
    db.create_queue("orders").send_message("x")
    conn = sqlite3.connect(db.path)
    params = dict(
        queue_id=1, cutoff=0, low=5, high=9, after_visible_at=-1, after_id=0, min_receives=1, max_receives=9, limit=50, body_chars=9
    )
    plan = [row[3] for row in conn.execute("EXPLAIN QUERY PLAN " + Q.peek_page, Q.peek_page.bind(params)) if "SEARCH messages" in row[3]]
    conn.close()
    # The never-received messages' range of ids too, which a page of hidden ones never walks (below).
    assert plan == [
        "SEARCH messages USING INDEX ix_messages_visible (queue_id=? AND visible_at>? AND visible_at<?)",
        "SEARCH messages USING INTEGER PRIMARY KEY (rowid>? AND rowid<?)",
    ]


def _steps_of_a_delayed_page(db, queue) -> int:
    """SQLite's virtual-machine steps (in hundreds) to read the first page of delayed messages."""
    steps = [0]

    def tick() -> int:
        steps[0] += 1
        return 0

    conn = sqlite3.connect(db.path)
    conn.set_progress_handler(tick, 100)
    row_id = conn.execute("SELECT id FROM queues WHERE name = ?", (queue.name,)).fetchone()[0]
    params = dict(
        queue_id=row_id,
        cutoff=0,
        low=2**61,
        high=2**62,
        after_visible_at=-1,
        after_id=0,
        min_receives=0,
        max_receives=0,
        limit=50,
        body_chars=9,
    )
    conn.execute(Q.peek_page, Q.peek_page.bind(params)).fetchall()
    conn.close()
    return steps[0]


def test_a_page_of_delayed_messages_never_walks_the_never_received_ones(db):
    small, large = db.create_queue("small"), db.create_queue("large")
    small.send_message("x")
    for _ in range(100):
        large.send_message_batch([{"Id": str(i), "MessageBody": "x"} for i in range(10)])
    assert _steps_of_a_delayed_page(db, large) <= _steps_of_a_delayed_page(db, small) + 2


def test_stats_from_one_statement_counts_each_state_and_the_dead_letter_depth(db, clock):
    dlq = db.create_queue("dlq")
    q = db.create_queue("q", RedrivePolicy={"deadLetterTargetArn": dlq.arn, "maxReceiveCount": 5})
    q.send_message("first")
    clock.advance(10)
    q.send_message_batch([{"Id": str(i), "MessageBody": "b"} for i in range(4)])
    q.send_message("later", delay_seconds=30)
    q.receive_message(max_number_of_messages=2, visibility_timeout=60)
    dlq.send_message("dead")
    stats = {s.name: s for s in db.stats()}
    assert (stats["q"].visible, stats["q"].in_flight, stats["q"].delayed) == (3, 2, 1)
    assert stats["q"].oldest_age_seconds == 10  # "first", now in flight, is still the oldest
    assert stats["q"].dead_letter_queue == "dlq" and stats["q"].dead_letter_depth == 1
    assert stats["dlq"].dead_letter_depth is None and stats["dlq"].oldest_age_seconds == 0


def test_stats_of_named_queues_reports_only_them_with_their_dead_letter_depth(db):
    dlq = db.create_queue("dlq")
    q = db.create_queue("q", RedrivePolicy={"deadLetterTargetArn": dlq.arn, "maxReceiveCount": 5})
    other = db.create_queue("other")
    q.send_message("one")
    dlq.send_message_batch([{"Id": str(i), "MessageBody": "dead"} for i in range(3)])
    other.send_message("elsewhere")
    [only] = db.stats(["q"])
    assert only == next(s for s in db.stats() if s.name == "q")
    assert (only.visible, only.dead_letter_queue, only.dead_letter_depth) == (1, "dlq", 3)
    assert [s.name for s in db.stats(["other", "no-such-queue"])] == ["other"]
    assert db.stats([]) == []
    assert db.stats("q") == [only]  # one name as a str
    assert db.queue_names() == ["dlq", "other", "q"]
