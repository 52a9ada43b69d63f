"""BufferedQueue's flusher: a deferred delete is committed once max_batch_open_ms have passed
since the first of its batch, whether or not the consumer calls again. Timing on the manual
clock, the test calling flush_due (the flusher's step) itself; real time, bounded, only where
the thread itself is the point."""

import os
import subprocess
import sys
import threading
import time
from collections import Counter

import pytest

import sqsqlite
from sqsqlite import defaults as D
from sqsqlite.core import buffered
from sqsqlite.errors import InvalidParameterValue
from tests.unit.test_buffered import counts, fill, stored
from tests.unit.test_connections import descriptors, exit_code


def flushers():
    # Compared as "none new" (<=): another test's idle flusher may end meanwhile.
    return {t for t in threading.enumerate() if t.name.startswith("sqsqlite-buffer-")}


def eventually(check, seconds=2.0):
    deadline = time.monotonic() + seconds
    while not check() and time.monotonic() < deadline:
        time.sleep(0.005)
    return check()


@pytest.fixture
def commits(monkeypatch):
    """The row ids of each transaction of deferred deletes, whichever thread commits it."""
    done, inner = [], buffered.delete_claims

    def recording(queue, claims):
        refused = inner(queue, claims)
        done.append([c.row_id for c in claims])
        return refused

    monkeypatch.setattr(buffered, "delete_claims", recording)
    return done


def test_a_deferred_delete_is_committed_once_max_batch_open_ms_passes_without_another_receive(queue, clock):
    fill(queue, 10)
    b = queue.buffered(visibility_timeout=30)
    [m] = b.receive_message()
    m.delete()
    assert b.flush_due() == 0.2 and m.body in stored(queue)  # due in 200 ms
    clock.advance(0.199)
    assert b.flush_due() == pytest.approx(0.001) and m.body in stored(queue)
    clock.advance(0.001)
    assert b.flush_due() is None  # committed: nothing waits
    assert m.body not in stored(queue)
    clock.advance(30)  # past its visibility timeout: it is not delivered again
    assert m.body not in [x.body for x in queue.receive_message(max_number_of_messages=10)]
    b.close()


def test_a_deferred_delete_is_committed_in_its_window_when_the_wall_clock_steps_back_meanwhile(db_path, stepping_clock):
    with sqsqlite.connect(db_path, clock=stepping_clock) as db:
        q = db.create_queue("stepped")
        fill(q, 10)
        b = q.buffered()
        [m] = b.receive_message()
        m.delete()
        stepping_clock.offset = -3_600_000  # an hour back while the delete waits for its window
        assert eventually(lambda: m.body not in stored(q), seconds=5)  # within max_batch_open_ms, not an hour
        b.close()


def test_deletes_acknowledged_within_the_window_are_committed_in_one_transaction(queue, clock, commits):
    fill(queue, 10)
    b = queue.buffered()
    handed = []
    for _ in range(5):
        [m] = b.receive_message()
        m.delete()
        handed.append(m.claim.row_id)
        clock.advance(0.03)  # five in 150 ms, from the buffer: no receive commits them
    assert b.flush_due() == pytest.approx(0.05) and commits == []
    clock.advance(0.05)
    assert b.flush_due() is None
    assert commits == [handed]  # all five, in one transaction
    assert len(stored(queue)) == 5
    b.close()


def test_a_buffer_that_never_defers_a_delete_starts_no_thread(queue):
    fill(queue, 30)
    before = flushers()
    [m] = queue.receive_message()
    receiving = queue.buffered()
    receiving.receive_message()
    receiving.delete_message(m.receipt_handle)  # not one of its own: deleted at once
    at_once = queue.buffered(max_batch_open_ms=0)
    at_once.receive_message()[0].delete()
    one_at_a_time = queue.buffered(prefetch=1)
    one_at_a_time.receive_message()[0].delete()
    assert flushers() <= before
    assert len(stored(queue)) == 27
    for b in (receiving, at_once, one_at_a_time):
        b.close()
    assert flushers() <= before


def test_a_buffer_has_one_flusher_however_many_batches_and_none_once_closed(queue, clock):
    fill(queue, 30)
    before = flushers()
    b = queue.buffered()
    for _ in range(3):
        for m in b.receive_message(max_number_of_messages=5):
            m.delete()
        clock.advance(0.2)
        assert b.flush_due() is None
    [flusher] = flushers() - before
    b.receive_message()[0].delete()  # waiting at the close
    b.close()
    assert not flusher.is_alive() and flushers() <= before
    assert len(stored(queue)) == 14  # the last delete committed; the claim's other messages released


@pytest.mark.slow
def test_the_flusher_thread_commits_a_delete_by_itself_within_max_batch_open_ms(db_path):
    # Real time, bounded: no receive, flush or close after the delete; only the thread can commit it.
    db = sqsqlite.connect(db_path)
    q = db.create_queue("timer")
    fill(q, 10)
    b = q.buffered(max_batch_open_ms=50)
    for _ in range(2):  # the second once the flusher has nothing left to wait for
        [m] = b.receive_message()
        m.delete()
        assert eventually(lambda: m.body not in stored(q))  # noqa: B023
    b.close()
    db.close()


@pytest.mark.slow
def test_an_idle_flusher_ends_and_the_next_deferred_delete_starts_another(db_path, monkeypatch):
    monkeypatch.setattr(D, "BUFFER_FLUSHER_LINGER", 0.05)
    db = sqsqlite.connect(db_path)
    q = db.create_queue("linger")
    fill(q, 10)
    before = flushers()
    b = q.buffered(max_batch_open_ms=20)
    b.receive_message()[0].delete()
    # Read at once, but a flusher may already have committed and ended (20 ms + 50 ms) on a
    # loaded machine: none left is fine, more than one is not.
    first = flushers() - before
    assert len(first) <= 1
    assert eventually(lambda: not any(t.is_alive() for t in first))  # committed the delete, then had nothing to wait for
    [m] = b.receive_message()
    m.delete()
    assert len(flushers() - before) <= 1  # not the first one woken: it has ended
    assert eventually(lambda: m.body not in stored(q))  # no receive since: only another flusher commits it
    b.close()
    assert flushers() <= before
    assert len(stored(q)) == 8
    db.close()


def test_a_flusher_that_ends_closes_the_connection_it_opened(db_path, monkeypatch):
    monkeypatch.setattr(D, "BUFFER_FLUSHER_LINGER", 0.05)
    db = sqsqlite.connect(db_path, synchronous="FULL")  # FULL: no checkpoint thread opening a connection of its own meanwhile
    q = db.create_queue("connections")
    fill(q, 10)
    before = flushers()
    b = q.buffered(max_batch_open_ms=20)
    b.receive_message()[0].delete()
    first = flushers() - before  # the delete's flusher (none if it has ended already)
    b.flush()  # the consumer's own connection has written: its descriptors are all open now
    # On a loaded machine that flusher may have committed the delete before flush() did, with a
    # connection of its own: the consumer's descriptors are counted once it has ended.
    assert eventually(lambda: not any(t.is_alive() for t in first))
    consumer = descriptors(db_path)
    for _ in range(3):  # each idle spell ends a flusher; the next deferred delete starts another
        b.receive_message()[0].delete()
        started = flushers() - before  # none if it has committed and ended already
        assert len(started) <= 1
        assert eventually(lambda s=started: not any(t.is_alive() for t in s))
    assert descriptors(db_path) == consumer  # each flusher's connection closed with its thread
    b.close()
    db.close()


@pytest.mark.slow
@pytest.mark.parametrize("call", ["flush", "change_visibility"])
def test_a_call_that_waits_for_the_deletes_waits_for_those_the_flusher_is_committing(queue, clock, monkeypatch, call):
    # flush() returns once every delete acknowledged before it is committed; a change of
    # visibility of a message whose delete waits finds it deleted. Also while the flusher,
    # another thread, holds them mid-commit (held here until released).
    committing, release = threading.Event(), threading.Event()
    inner = buffered.delete_claims

    def held(q, claims):
        if threading.current_thread().name.startswith("sqsqlite-buffer-"):
            committing.set()
            release.wait(5)
        return inner(q, claims)

    monkeypatch.setattr(buffered, "delete_claims", held)
    fill(queue, 10)
    b = queue.buffered()
    [m] = b.receive_message()
    m.delete()
    clock.advance(0.2)
    assert committing.wait(2)  # the flusher took it when it woke
    outcome = []

    def run():
        try:
            if call == "flush":
                b.flush()
            else:
                m.change_visibility(60)
            outcome.append("returned")
        except InvalidParameterValue:
            outcome.append("found it deleted")

    t = threading.Thread(target=run)
    t.start()
    t.join(0.1)
    assert outcome == []  # waiting for the flusher's commit
    release.set()
    t.join(5)
    assert outcome == ["returned" if call == "flush" else "found it deleted"]
    assert m.body not in stored(queue)
    b.close()


@pytest.mark.slow
def test_two_threads_sharing_a_buffer_with_its_flusher_commit_every_delete_once(db_path, commits):
    # Real threads on real time, bounded: handlers slower than max_batch_open_ms, so the flusher
    # commits beside the receives' own commits.
    db = sqsqlite.connect(db_path)
    q = db.create_queue("shared")
    fill(q, 100)
    b = q.buffered(max_batch_open_ms=2)
    handled, lock = Counter(), threading.Lock()

    def consume():
        while msgs := b.receive_message():
            time.sleep(0.001)
            with lock:
                handled[msgs[0].claim.row_id] += 1
            msgs[0].delete()

    threads = [threading.Thread(target=consume) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    b.close()
    committed = Counter(row for rows in commits for row in rows)
    assert committed == handled and set(handled.values()) == {1} and len(handled) == 100
    assert not b.failed_deletes and q.peek("all") == []
    db.close()


@pytest.mark.slow
@pytest.mark.parametrize("inherited", [False, True])  # a delete of the parent's waits at the fork, or none
def test_a_forked_child_commits_its_deferred_deletes_on_a_flusher_of_its_own(db_path, inherited):
    db = sqsqlite.connect(db_path)
    q = db.create_queue("forked")
    fill(q, 20)
    b = q.buffered(max_batch_open_ms=50)
    b.receive_message()[0].delete()  # the parent's flusher runs at the fork
    if not inherited:
        b.flush()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            [m] = b.receive_message()  # of the child's own claim
            m.delete()  # no receive follows: only a flusher of the child's can commit it
            code = 0 if eventually(lambda: m.body not in stored(q)) else 2
        finally:
            os._exit(code)
    assert exit_code(pid) == 0  # not 2 (never committed), nor hung on a lock held at the fork
    b.close()
    assert len(stored(q)) == 18
    db.close()


@pytest.mark.slow
@pytest.mark.parametrize("deferred", [False, True])  # a delete waits at the fork (its flusher runs), or none
def test_a_forked_child_neither_hands_out_nor_releases_the_messages_its_parent_fetched(db_path, deferred):
    db = sqsqlite.connect(db_path)
    q = db.create_queue("forked")
    fill(q, 20)
    b = q.buffered(max_batch_open_ms=60_000)
    [first] = b.receive_message()  # a claim of ten: nine wait in the buffer
    if deferred:
        first.delete()
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            os.close(r)
            os.write(w, " ".join(b.receive_message()[0].body for _ in range(3)).encode())
            b.close()  # as a with block ending in a worker: the parent's nine stay the parent's
            code = 0
        finally:
            os._exit(code)
    os.close(w)
    assert exit_code(pid) == 0
    with os.fdopen(r) as pipe:
        assert pipe.read().split() == ["m010", "m011", "m012"]  # from a claim of its own
    # The child's claim's other seven released by its close(); the parent's ten, and the
    # child's three, in flight (m000 deleted by the child's copy of its delete, if it waited).
    assert counts(q) == (7, 13 - deferred)
    assert [b.receive_message()[0].body for _ in range(9)] == [f"m{i:03d}" for i in range(1, 10)]
    if deferred:  # the parent's own commit of it finds it gone: a success, as a second DeleteMessage
        assert b.flush() == [] and not b.failed_deletes
    b.close()
    db.close()


def test_a_flusher_stops_once_its_database_is_closed_before_the_buffer(db_path, monkeypatch):
    monkeypatch.setattr(D, "BUFFER_FLUSHER_LINGER", 0.05)  # had it committed already, it would wait no longer than this
    db = sqsqlite.connect(db_path)
    q = db.create_queue("closed-first")
    fill(q, 3)
    before = flushers()
    b = q.buffered(max_batch_open_ms=20)
    b.receive_message()[0].delete()
    started = flushers() - before  # none if it has committed and ended already
    db.close()  # before the buffer: its flusher has nothing it can commit to any more
    assert eventually(lambda: not any(t.is_alive() for t in started), seconds=5)


ENDS_WITHOUT_CLOSE = """
import sys, sqsqlite
from sqsqlite.core import buffered
from sqsqlite.errors import DatabaseError
if sys.argv[2] == "failing":
    def disk_full(queue, claims):
        raise DatabaseError("Database error: database or disk is full.")
    buffered.delete_claims = disk_full
db = sqsqlite.connect(sys.argv[1])
b = db.queue("jobs").buffered(max_batch_open_ms=60_000)  # its flusher waits a minute: only the exit commits
[m] = b.receive_message()
m.delete()
"""


@pytest.mark.slow
def test_a_program_that_ends_without_closing_its_buffer_still_commits_its_deletes(db_path):
    with sqsqlite.connect(db_path) as db:
        fill(db.create_queue("jobs"), 3)
    done = subprocess.run([sys.executable, "-c", ENDS_WITHOUT_CLOSE, db_path, "ok"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    with sqsqlite.connect(db_path) as db:
        q = db.queue("jobs")
        assert stored(q) == ["m001", "m002"]  # m000 handled and deleted
        assert len(q.receive_message(max_number_of_messages=10)) == 2  # the two fetched and never handed out were released


@pytest.mark.slow
def test_a_commit_failing_at_exit_is_logged_without_a_traceback(db_path):
    with sqsqlite.connect(db_path) as db:
        fill(db.create_queue("jobs"), 1)
    done = subprocess.run([sys.executable, "-c", ENDS_WITHOUT_CLOSE, db_path, "failing"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0
    assert "closing the buffer of queue 'jobs' failed: Database error: database or disk is full." in done.stderr
    assert "Traceback" not in done.stderr
    with sqsqlite.connect(db_path) as db:
        assert stored(db.queue("jobs")) == ["m000"]  # it comes back after its visibility timeout: a duplicate, no loss


def test_closing_the_database_commits_the_deletes_of_a_buffer_never_closed(db_path, clock):
    with sqsqlite.connect(db_path, clock=clock) as db:
        q = db.create_queue("jobs")
        fill(q, 10)
        b = q.buffered(max_batch_open_ms=60_000)
        for _ in range(3):
            b.receive_message()[0].delete()
    with sqsqlite.connect(db_path, clock=clock) as db:
        q = db.queue("jobs")
        assert stored(q) == [f"m{i:03d}" for i in range(3, 10)]
        assert counts(q) == (7, 0)  # and the fetched ones not handed out were released
    with pytest.raises(ValueError, match="closed"):
        b.receive_message()  # closed with its database


def test_a_flusher_failing_on_a_full_disk_logs_one_line_once_and_once_more_when_it_commits(db_path, caplog):
    import logging

    from sqsqlite.errors import DatabaseError

    caplog.set_level(logging.INFO, "sqsqlite.buffered")
    inner, tries = buffered.delete_claims, []

    def full_four_times(queue, claims):
        tries.append(1)
        if len(tries) <= 4:
            raise DatabaseError("Database error: database or disk is full.")
        return inner(queue, claims)

    with sqsqlite.connect(db_path) as db:
        q = db.create_queue("jobs")
        fill(q, 3)
        b = q.buffered(max_batch_open_ms=10)
        buffered.delete_claims = full_four_times
        try:
            [m] = b.receive_message()
            m.delete()
            assert eventually(lambda: m.body not in stored(q), seconds=5)
        finally:
            buffered.delete_claims = inner
        b.close()
    assert len(tries) == 5
    said = [(r.levelname, r.getMessage(), r.exc_info) for r in caplog.records if r.name == "sqsqlite.buffered"]
    assert said == [
        (
            "ERROR",
            "committing the deferred deletes of queue 'jobs' failed (they wait, tried again every 10 ms): DatabaseError: Database error: database or disk is full.",
            None,
        ),
        ("WARNING", "the deferred deletes of queue 'jobs' are committed again", None),
    ]
