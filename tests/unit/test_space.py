"""Disk space (sqsqlite.space): a new file is incremental, free pages past the threshold are
returned in short steps under the writers' lock, by the checkpoint thread and by `vacuum`, and
an older file is converted. Thresholds and the look interval are injected; only the test of the
checkpoint thread itself waits, bounded, in real time."""

from __future__ import annotations

import fcntl
import os
import sqlite3
import threading
import time

import pytest

import sqsqlite
from sqsqlite import defaults as D
from sqsqlite import lock, space

BODY = "x" * 1024


def fill(queue, batches: int = 300) -> None:
    for _ in range(batches):
        queue.send_message_batch([{"Id": str(j), "MessageBody": BODY} for j in range(10)])


def figures(path: str) -> space.Space:
    return space.file_space(path)


def checkpointed(path: str) -> None:
    """The whole WAL copied back (the file cut to its pages), once the store's own checkpoint
    thread, which may be mid-pass, lets it."""
    conn = sqlite3.connect(path)
    for _ in range(500):
        if conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0] == 0:
            break
        time.sleep(0.01)
    conn.close()


def old_file(path: str) -> None:
    """A file as sqsqlite made them before: auto_vacuum off."""
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.close()


def return_all(path: str, reclaimer: space.Reclaimer) -> None:
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        while reclaimer.step(conn) > 0:
            pass
    finally:
        conn.close()
    checkpointed(path)


def test_a_new_database_file_is_made_incremental(db_path, clock):
    sqsqlite.connect(db_path, clock=clock).close()
    assert figures(db_path).auto_vacuum == "incremental"


def test_an_existing_file_keeps_its_mode_when_opened(db_path, clock):
    old_file(db_path)
    sqsqlite.connect(db_path, clock=clock).close()
    assert figures(db_path).auto_vacuum == "none"


def test_free_pages_are_due_only_past_both_the_fraction_and_the_minimum(db_path, clock):
    db = sqsqlite.connect(db_path, clock=clock)
    q = db.create_queue("orders")
    fill(q)
    conn = sqlite3.connect(db_path)
    now = [0.0]
    assert not space.Reclaimer(db_path, None, free_fraction=0.25, min_free_bytes=0, clock=lambda: now[0]).due(conn)  # nothing free yet
    q.purge_queue()
    free = figures(db_path)
    assert free.free_pages > 0.5 * free.pages
    assert space.Reclaimer(db_path, None, free_fraction=0.25, min_free_bytes=0, clock=lambda: now[0]).due(conn)
    assert not space.Reclaimer(db_path, None, free_fraction=0.99, min_free_bytes=0, clock=lambda: now[0]).due(conn)
    assert not space.Reclaimer(db_path, None, free_fraction=0.25, min_free_bytes=free.free_bytes + 1, clock=lambda: now[0]).due(conn)
    conn.close()
    db.close()


def test_a_look_at_the_free_pages_comes_at_most_once_per_look_interval(db_path, clock):
    db = sqsqlite.connect(db_path, clock=clock)
    q = db.create_queue("orders")
    fill(q)
    q.purge_queue()
    conn = sqlite3.connect(db_path)
    now = [100.0]
    reclaimer = space.Reclaimer(db_path, None, free_fraction=0.0, min_free_bytes=0, clock=lambda: now[0])
    assert reclaimer.due(conn)
    assert not reclaimer.due(conn)  # looked just now
    now[0] += D.RECLAIM_LOOK_SECONDS
    assert reclaimer.due(conn)
    conn.close()
    db.close()


def test_steps_return_the_free_pages_to_the_file_system_and_keep_every_message(db_path, clock):
    db = sqsqlite.connect(db_path, clock=clock)
    q = db.create_queue("orders")
    fill(q)
    kept = {m.message_id for m in q.receive_message(max_number_of_messages=10)}
    for m in q.receive_message(max_number_of_messages=10):
        m.delete()
    drained = db.create_queue("drained")
    fill(drained)
    drained.purge_queue()
    checkpointed(db_path)
    peak = figures(db_path)
    reclaimer = space.Reclaimer(db_path, space.lock_path(db_path), free_fraction=0.0, min_free_bytes=0)
    return_all(db_path, reclaimer)
    after = figures(db_path)
    assert after.free_pages == 0
    assert after.pages <= peak.pages - peak.free_pages  # (and a pointer-map page they needed)
    assert after.file_bytes == after.pages * after.page_size  # the file itself cut short
    assert reclaimer.figures.steps >= 1 and reclaimer.figures.longest_hold > 0
    assert db.integrity_check() == "ok"
    left = {m.message_id for m in q.peek("all", 10_000)}
    assert kept <= left and len(left) == 3000 - 10
    db.close()


def marked_within(fd: int, seconds: float = 10.0) -> bool:
    """Whether a writer is marked as waiting on the lock file, looked at until it is (bounded)."""
    deadline = time.monotonic() + seconds
    while not lock.writers_waiting(fd):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.001)
    return True


@pytest.mark.parametrize("write", [pytest.param("send", id="send"), pytest.param("receive", id="receive")])
def test_a_write_that_finds_the_writers_lock_taken_is_marked_waiting_until_it_has_it(db_path, clock, write):
    db = sqsqlite.connect(db_path, clock=clock)
    q = db.create_queue("orders")
    q.send_message("first")
    held = lock.WritersLock(space.lock_path(db_path))  # a reclaim step's
    held.take()
    assert not lock.writers_waiting(held.fd)
    done = []
    call = (lambda: q.send_message("second")) if write == "send" else (lambda: q.receive_message())
    writer = threading.Thread(target=lambda: done.append(call()))
    writer.start()
    try:
        assert marked_within(held.fd)  # a send behind the senders' gate, a receive at the lock
        assert not done
    finally:
        held.close()
    writer.join(10)
    probe = lock.WritersLock(space.lock_path(db_path))
    assert done and not lock.writers_waiting(probe.fd)
    probe.close()
    db.close()


def test_an_uncontended_write_takes_the_lock_without_a_mark(db_path, clock, monkeypatch):
    def never(*args):
        raise AssertionError("marked")

    monkeypatch.setattr(lock, "take_marked", never)
    monkeypatch.setattr(lock, "mark_waiting", never)
    db = sqsqlite.connect(db_path, clock=clock)
    q = db.create_queue("orders")
    q.send_message("one")
    for m in q.receive_message():
        m.delete()
    db.close()


def test_a_bounded_write_is_marked_while_it_tries_and_unmarked_when_it_gives_up(db_path):
    held = lock.WritersLock(space.lock_path(db_path))
    held.take()
    other = lock.WritersLock(space.lock_path(db_path))
    outcome = []

    def bounded() -> None:
        outcome.append("held" if lock.take_bounded(other.fd, 0.5) else "gave up")

    trying = threading.Thread(target=bounded)
    trying.start()
    try:
        assert marked_within(held.fd)
    finally:
        trying.join(10)
    assert outcome == ["gave up"] and not lock.writers_waiting(held.fd)
    held.close()
    other.close()


def test_a_step_waiting_for_the_lock_is_not_marked_so_steps_never_cut_each_other_short(db_path):
    held = lock.WritersLock(space.lock_path(db_path))
    held.take()
    other = lock.WritersLock(space.lock_path(db_path))
    outcome = []
    trying = threading.Thread(target=lambda: outcome.append(other.take(0.3)))
    trying.start()
    seen = []
    while trying.is_alive():
        seen.append(lock.writers_waiting(held.fd))
    trying.join(10)
    assert outcome == [False] and seen and not any(seen)
    held.close()
    other.close()


class Ticks:
    """A step's clock: ``tick`` seconds on at every reading."""

    def __init__(self, tick: float):
        self.now, self.tick = 0.0, tick

    def __call__(self) -> float:
        self.now += self.tick
        return self.now


def drained(db_path: str, clock) -> sqsqlite.Database:
    db = sqsqlite.connect(db_path, clock=clock)
    q = db.create_queue("orders")
    fill(q)
    q.purge_queue()
    checkpointed(db_path)
    return db


def test_a_step_returns_pages_for_its_time_and_no_longer(db_path, clock, monkeypatch):
    db = drained(db_path, clock)
    conn = sqlite3.connect(db_path, isolation_level=None)
    free = figures(db_path).free_pages
    slow = space.Reclaimer(db_path, None, free_fraction=0.0, min_free_bytes=0, step_clock=Ticks(0.4 * D.RECLAIM_STEP_SECONDS))
    left = slow.step(conn)
    assert 0 < free - left <= 3  # a page or two, then its time was up
    assert slow.last_hold == pytest.approx(slow.figures.longest_hold)
    monkeypatch.setattr(D, "RECLAIM_WAITERS_SECONDS", 1e9)
    stopped = space.Reclaimer(db_path, None, free_fraction=0.0, min_free_bytes=0, step_clock=lambda: 0.0)
    assert stopped.step(conn) == 0  # time never up: every free page in one step
    assert not stopped.yielded and stopped.figures.yielded == 0
    conn.close()
    db.close()


def test_a_step_ends_early_for_a_writer_marked_as_waiting(db_path, clock, monkeypatch):
    db = drained(db_path, clock)
    conn = sqlite3.connect(db_path, isolation_level=None)
    free = figures(db_path).free_pages
    monkeypatch.setattr(D, "RECLAIM_STEP_SECONDS", 1e9)  # only the writer ends it
    asked = []

    def waiting(fd: int) -> bool:
        asked.append(fd)
        return len(asked) > 3  # not at the lock, nor after pages one and two: after the third

    reclaimer = space.Reclaimer(
        db_path, space.lock_path(db_path), free_fraction=0.0, min_free_bytes=0, step_clock=Ticks(D.RECLAIM_WAITERS_SECONDS), waiting=waiting
    )
    left = reclaimer.step(conn)
    assert free - left == 3 and reclaimer.yielded and reclaimer.figures.yielded == 1
    assert not conn.in_transaction and figures(db_path).free_pages == left  # what it returned is committed
    assert asked and all(fd >= 0 for fd in asked)  # asked of the step's own descriptor of the lock file
    conn.close()
    db.close()


def test_a_step_does_not_begin_while_a_writer_waits_and_pauses_a_whole_step_after(db_path, clock):
    db = drained(db_path, clock)
    conn = sqlite3.connect(db_path, isolation_level=None)
    free = figures(db_path).free_pages
    reclaimer = space.Reclaimer(
        db_path, space.lock_path(db_path), free_fraction=0.0, min_free_bytes=0, waiting=lambda fd: True, jitter=lambda: 0.5
    )
    assert reclaimer.step(conn) == free and reclaimer.yielded  # nothing returned
    assert reclaimer.pause() == pytest.approx(D.RECLAIM_STEP_SECONDS * (1 / D.RECLAIM_DUTY - 1))
    reclaimer.waiting = lambda fd: False
    left = reclaimer.step(conn)
    assert left < free and not reclaimer.yielded
    assert reclaimer.pause() == pytest.approx(reclaimer.last_hold * (1 / D.RECLAIM_DUTY - 1))  # the duty's, jitter at its middle
    assert reclaimer.last_hold <= 4 * D.RECLAIM_STEP_SECONDS  # a wait inside a step pauses the next one little
    conn.close()
    db.close()


def test_the_pause_is_the_dutys_times_a_random_half_to_one_and_a_half(db_path, clock):
    reclaimer = space.Reclaimer(db_path, None, jitter=lambda: 0.0)
    reclaimer.last_hold = 0.001
    duty = 0.001 * (1 / D.RECLAIM_DUTY - 1)
    assert reclaimer.pause() == pytest.approx(0.5 * duty)
    reclaimer.jitter = lambda: 1.0
    assert reclaimer.pause() == pytest.approx(1.5 * duty)


def _expire(db, q, clock):
    q.set_queue_attributes({"MessageRetentionPeriod": "60"})
    clock.advance(61)


def _retention(db, q, clock):
    # Expired messages leave with receives, a window at a time, and with prune.
    _expire(db, q, clock)
    for _ in range(64):
        q.receive_message(max_number_of_messages=10)
    db.prune()


def _prune(db, q, clock):
    _expire(db, q, clock)
    db.prune()


@pytest.mark.parametrize(
    "emptied",
    [
        pytest.param(_retention, id="retention"),
        pytest.param(lambda db, q, clock: q.purge_queue(), id="purge"),
        pytest.param(lambda db, q, clock: db.delete_queue(q.url), id="delete-queue"),
        pytest.param(_prune, id="prune"),
    ],
)
def test_every_way_messages_leave_gives_space_the_steps_return(db_path, clock, emptied):
    db = sqsqlite.connect(db_path, clock=clock)
    q = db.create_queue("orders")
    fill(q)
    checkpointed(db_path)
    full = figures(db_path)
    emptied(db, q, clock)
    reclaimer = space.Reclaimer(db_path, space.lock_path(db_path), free_fraction=0.25, min_free_bytes=1 << 20)
    conn = sqlite3.connect(db_path)
    assert reclaimer.due(conn)
    conn.close()
    return_all(db_path, reclaimer)
    assert figures(db_path).file_bytes < 0.1 * full.file_bytes
    assert db.integrity_check() == "ok"
    db.close()


def test_the_checkpoint_thread_returns_free_pages_after_a_drain_without_further_commits(db_path, clock, monkeypatch):
    monkeypatch.setattr(D, "RECLAIM_MIN_FREE_BYTES", 1 << 20)
    monkeypatch.setattr(D, "RECLAIM_LOOK_SECONDS", 0.05)
    db = sqsqlite.connect(db_path, clock=clock)
    q = db.create_queue("orders")
    fill(q)
    full = figures(db_path)
    peak = full.pages * full.page_size  # what the file holds, in it or still in its WAL
    q.purge_queue()  # the last commit: nothing is written after it
    deadline = time.monotonic() + 20
    while os.path.getsize(db_path) >= 0.1 * peak and time.monotonic() < deadline:
        time.sleep(0.05)
    assert os.path.getsize(db_path) < 0.1 * peak
    # The WAL is left to SQLite, which cuts it back to the journal_size_limit when it starts again.
    assert os.path.getsize(db_path + "-wal") <= 64 * 1024 * 1024
    q.send_message("after")
    assert [m.body for m in q.receive_message()] == ["after"]
    assert db.integrity_check() == "ok"
    db.close()


def test_an_older_file_is_not_due_and_vacuum_makes_it_incremental_and_compact(db_path, clock):
    old_file(db_path)
    db = sqsqlite.connect(db_path, clock=clock)
    q = db.create_queue("orders")
    fill(q)
    q.send_message("kept")
    ids = {m.message_id for m in q.peek("all", 10_000)}
    dropped = db.create_queue("dropped")
    fill(dropped)
    db.delete_queue(dropped.url)
    conn = sqlite3.connect(db_path)
    assert not space.Reclaimer(db_path, None, free_fraction=0.0, min_free_bytes=0).due(conn)
    conn.close()
    seen: list[float] = []
    before, after = space.vacuum(db_path, space.lock_path(db_path), progress=lambda f, note: seen.append(f))
    assert before.auto_vacuum == "none" and after.auto_vacuum == "incremental"
    # Incremental auto-vacuum adds its pointer-map pages, one per page_size / 5 pages.
    pointer_maps = after.pages // (after.page_size // 5) + 1
    assert after.free_pages == 0 and after.pages <= before.pages - before.free_pages + pointer_maps
    assert after.file_bytes == after.pages * after.page_size and after.wal_bytes == 0
    assert seen and seen[-1] == 1.0
    assert {m.message_id for m in q.peek("all", 10_000)} == ids
    assert db.integrity_check() == "ok"
    db.close()


def test_vacuum_of_an_incremental_file_returns_every_free_page_in_steps(db_path, clock):
    db = sqsqlite.connect(db_path, clock=clock)
    q = db.create_queue("orders")
    fill(q)
    q.purge_queue()
    seen: list[float] = []
    before, after = space.vacuum(db_path, space.lock_path(db_path), progress=lambda f, note: seen.append(f))
    assert before.free_pages > 0 and after.free_pages == 0
    assert after.file_bytes < 0.1 * before.pages * before.page_size
    assert seen == sorted(seen) and seen[-1] == 1.0
    db.close()


def test_vacuum_refuses_in_one_line_while_another_process_holds_the_write_lock(db_path, clock):
    old_file(db_path)
    db = sqsqlite.connect(db_path, clock=clock)
    q = db.create_queue("orders")
    fill(q, 50)
    q.purge_queue()
    before = figures(db_path)
    fd = os.open(space.lock_path(db_path), os.O_RDWR)
    fcntl.flock(fd, fcntl.LOCK_EX)  # another writer mid-transaction, as far as the lock file tells
    try:
        with pytest.raises(space.VacuumRefused) as refused:
            space.vacuum(db_path, space.lock_path(db_path), wait_seconds=0.05)
    finally:
        os.close(fd)
    assert "another process is writing" in refused.value.message and "\n" not in refused.value.message
    after = figures(db_path)
    assert (after.pages, after.free_pages, after.auto_vacuum) == (before.pages, before.free_pages, "none")
    db.close()


class _SleepSeen:
    """space's ``time``, telling when vacuum first waits (it met a lock held by someone else)."""

    def __init__(self):
        self.waited = threading.Event()

    def __getattr__(self, name: str):
        return getattr(time, name)

    def sleep(self, seconds: float) -> None:
        self.waited.set()
        time.sleep(seconds)


@pytest.mark.parametrize("kind", ["steps", "whole"])
def test_vacuum_waits_out_a_program_holding_sqlites_lock_briefly(db_path, clock, monkeypatch, kind):
    # Litestream's checkpoint takes SQLite's lock without sqsqlite's lock file for a moment:
    # vacuum tries again rather than refusing.
    if kind == "whole":
        old_file(db_path)
    db = sqsqlite.connect(db_path, clock=clock)
    q = db.create_queue("orders")
    fill(q, 50)
    q.purge_queue()
    q.send_message("kept")
    checkpointed(db_path)
    seen = _SleepSeen()
    monkeypatch.setattr(space, "time", seen)
    other = sqlite3.connect(db_path, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    done: list = []
    vacuuming = threading.Thread(target=lambda: done.append(space.vacuum(db_path, space.lock_path(db_path), wait_seconds=120)))
    vacuuming.start()
    try:
        assert seen.waited.wait(60)
    finally:
        other.execute("ROLLBACK")
        other.close()
    vacuuming.join(120)
    assert done, "vacuum ended without figures"
    before, after = done[0]
    assert before.free_pages > 0 and after.free_pages == 0 and after.auto_vacuum == "incremental"
    assert [m.body for m in q.peek("all", 10)] == ["kept"]
    db.close()


@pytest.mark.parametrize("kind", ["steps", "whole"])
def test_vacuum_refuses_in_one_line_when_sqlites_lock_stays_held_past_its_wait(db_path, clock, kind):
    if kind == "whole":
        old_file(db_path)
    db = sqsqlite.connect(db_path, clock=clock)
    q = db.create_queue("orders")
    fill(q, 50)
    q.purge_queue()
    checkpointed(db_path)
    before = figures(db_path)
    other = sqlite3.connect(db_path, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    try:
        with pytest.raises(space.VacuumRefused) as refused:
            space.vacuum(db_path, space.lock_path(db_path), wait_seconds=0.2)
    finally:
        other.execute("ROLLBACK")
        other.close()
    assert "--wait" in refused.value.message and "\n" not in refused.value.message
    after = figures(db_path)
    assert (after.pages, after.free_pages) == (before.pages, before.free_pages)
    db.close()


def test_vacuum_refuses_in_one_line_without_free_disk_for_its_copy(db_path, clock, monkeypatch):
    old_file(db_path)
    db = sqsqlite.connect(db_path, clock=clock)
    fill(db.create_queue("orders"), 50)
    monkeypatch.setattr(space, "_free_disk", lambda folder: 1000)
    with pytest.raises(space.VacuumRefused, match="vacuum needs about .* free") as refused:
        space.vacuum(db_path, space.lock_path(db_path))
    assert "\n" not in refused.value.message
    assert figures(db_path).auto_vacuum == "none"
    with pytest.raises(space.VacuumRefused, match="the copy needs about"):
        space.vacuum_into(db_path, db_path + ".copy")
    assert not os.path.exists(db_path + ".copy")
    db.close()


def test_a_vacuum_interrupted_midway_is_undone_and_leaves_a_sound_file(db_path, clock):
    old_file(db_path)
    db = sqsqlite.connect(db_path, clock=clock)
    q = db.create_queue("orders")
    fill(q)
    while q.receive_message(max_number_of_messages=10):  # in flight: indexed, so VACUUM has an index to build
        pass
    ids = {m.message_id for m in q.peek("all", 10_000)}

    def interrupt(fraction: float, note: str) -> None:
        if fraction < 1.0:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        space.vacuum(db_path, space.lock_path(db_path), progress=interrupt)
    assert figures(db_path).auto_vacuum == "none"  # undone
    assert db.integrity_check() == "ok"
    assert {m.message_id for m in q.peek("all", 10_000)} == ids
    q.send_message("still writable")  # the writers' lock was let go
    db.close()


def test_vacuum_into_writes_a_compact_incremental_copy_and_never_replaces_a_file(db_path, clock, tmp_path):
    old_file(db_path)
    db = sqsqlite.connect(db_path, clock=clock)
    q = db.create_queue("orders")
    fill(q)
    q.send_message("kept")
    db.create_queue("gone")
    fill(db.queue("gone"))
    db.delete_queue(db.queue("gone").url)
    # In the file, not the WAL: the checkpoint thread may not have run yet on a loaded machine.
    checkpointed(db_path)
    target = str(tmp_path / "copy.db")
    before, copy_bytes = space.vacuum_into(db_path, target)
    assert copy_bytes < before.file_bytes and figures(target).auto_vacuum == "incremental"
    with sqsqlite.connect(target, clock=clock) as copy:
        assert len(copy.queue("orders").peek("all", 10_000)) == 3001
    with pytest.raises(space.VacuumRefused, match="exists already"):
        space.vacuum_into(db_path, target)
    db.close()


def test_a_step_gives_way_to_a_program_holding_sqlites_lock_without_the_lock_file(db_path, clock):
    db = sqsqlite.connect(db_path, clock=clock)
    q = db.create_queue("orders")
    fill(q)
    q.purge_queue()
    other = sqlite3.connect(db_path, isolation_level=None)  # the sqlite3 shell, a checkpoint of Litestream's
    other.execute("BEGIN IMMEDIATE")
    conn = sqlite3.connect(db_path, isolation_level=None, timeout=0.01)
    reclaimer = space.Reclaimer(db_path, space.lock_path(db_path), free_fraction=0.0, min_free_bytes=0)
    free = figures(db_path).free_pages
    assert reclaimer.step(conn) == -1 and reclaimer.gave_way  # the checkpoint thread looks again, commits or not
    assert figures(db_path).free_pages == free and not conn.in_transaction
    other.execute("ROLLBACK")
    assert reclaimer.step(conn) >= 0 and not reclaimer.gave_way
    conn.close()
    other.close()
    db.close()


def test_a_step_gives_way_at_once_to_a_transaction_holding_the_writers_lock(db_path, clock):
    db = sqsqlite.connect(db_path, clock=clock)
    q = db.create_queue("drained")
    fill(q)
    q.purge_queue()
    checkpointed(db_path)
    reclaimer = space.Reclaimer(db_path, space.lock_path(db_path), free_fraction=0.0, min_free_bytes=0)
    conn = sqlite3.connect(db_path, isolation_level=None)
    with db.transaction():  # an application's transaction holds the lock, for as long as it likes
        began = time.monotonic()
        assert reclaimer.step(conn) == -1 and reclaimer.gave_way
        assert time.monotonic() - began < 10 * D.RECLAIM_LOCK_WAIT_SECONDS  # it waited for it for ever
    assert reclaimer.step(conn) >= 0  # and goes on once it ends
    conn.close()
    db.close()
