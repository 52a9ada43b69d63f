"""Checkpoints run on a thread of their own, a few milliseconds behind the writers, so no
writer's COMMIT waits for the WAL's fsync (see checkpoint.Checkpointer).

Real time, bounded: the thread's timing is the point. A checkpoint shows in the database file
itself: pages committed to the WAL are copied back into it, and it grows."""

import gc
import json
import os
import random
import signal
import threading
import time

import sqsqlite
from sqsqlite import defaults as D

BODY = "x" * 3000  # about one page each: 100 of them stay well under SQLite's own 1,000-page checkpoint


def _checkpoint_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "sqsqlite-checkpoint"]


def _eventually(check, seconds: float = 5.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.01)
    return check()


def test_committed_pages_reach_the_database_file_without_sqlites_own_checkpoint(db_path, clock):
    db = sqsqlite.connect(db_path, clock=clock)
    q = db.create_queue("orders")
    before = os.path.getsize(db_path)
    for _ in range(10):
        q.send_message_batch([{"Id": str(j), "MessageBody": BODY} for j in range(10)])
    # 100 pages in the WAL, far below the 1,000 at which a COMMIT would checkpoint: only the
    # background thread copies them back.
    assert _eventually(lambda: os.path.getsize(db_path) >= before + 100 * 3000)
    assert len(q.receive_message(max_number_of_messages=10)) == 10
    db.close()


def test_no_checkpoint_thread_starts_before_the_first_write_and_close_stops_it(db_path, clock):
    already = set(_checkpoint_threads())
    db = sqsqlite.connect(db_path, clock=clock)  # opening writes (schema, key) on a new file
    db.close()
    db = sqsqlite.connect(db_path, clock=clock)
    assert set(_checkpoint_threads()) == already  # an existing file opens with reads only
    q = db.create_queue("orders")
    q.send_message("one")
    mine = [t for t in _checkpoint_threads() if t not in already]
    assert len(mine) == 1
    db.close()
    assert not mine[0].is_alive()
    # Closed for good: a write after close (it reopens a connection) starts no other thread.
    q.send_message("two")
    assert [t for t in _checkpoint_threads() if t not in already and t.is_alive()] == []
    db.close()


def test_a_database_dropped_without_close_stops_its_checkpoint_thread(db_path, clock):
    already = set(_checkpoint_threads())
    db = sqsqlite.connect(db_path, clock=clock)
    db.create_queue("orders").send_message("one")
    mine = [t for t in _checkpoint_threads() if t not in already]
    assert len(mine) == 1
    del db
    gc.collect()
    assert _eventually(lambda: not mine[0].is_alive())


def test_under_synchronous_full_the_writers_checkpoint_as_sqlite_does(db_path, clock):
    # FULL syncs the WAL at every commit; a checkpoint then only copies pages back.
    already = set(_checkpoint_threads())
    db = sqsqlite.connect(db_path, clock=clock, synchronous="FULL")
    db.create_queue("orders").send_message("one")
    assert set(_checkpoint_threads()) == already
    db.close()


def test_a_forked_child_checkpoints_its_own_writes_on_its_own_thread(tmp_path, clock):
    path = str(tmp_path / "fork.db")
    db = sqsqlite.connect(path)
    q = db.create_queue("forked")
    q.send_message("from the parent")  # the parent's thread is running at the fork
    out = str(tmp_path / "child.json")
    pid = os.fork()
    if pid == 0:
        try:
            before = os.path.getsize(path)
            for _ in range(10):
                q.send_message_batch([{"Id": str(j), "MessageBody": BODY} for j in range(10)])
            grew = _eventually(lambda: os.path.getsize(path) >= before + 100 * 3000)
            threads = [t for t in _checkpoint_threads() if t.is_alive()]
            with open(out, "w") as f:
                json.dump({"grew": grew, "threads": len(threads)}, f)
        finally:
            os._exit(0)
    os.waitpid(pid, 0)
    with open(out) as f:
        assert json.load(f) == {"grew": True, "threads": 1}
    assert q.get_queue_attributes(["ApproximateNumberOfMessages"]) == {"ApproximateNumberOfMessages": "101"}
    db.close()


def test_a_fork_never_catches_the_checkpoint_thread_inside_sqlite(tmp_path):
    # Forked while the thread held SQLite's own mutexes, a child waited for ever on its first
    # write: 4 hangs in 1,234 forks before the fork hook waited for the thread's pass.
    db = sqsqlite.connect(str(tmp_path / "forks.db"))
    q = db.create_queue("forks")
    # As many forks as 6 s allow (up to 300), and at least 51 however long a loaded machine
    # takes for them: a whole suite on a loaded 2-core machine fitted 50 or fewer into 30 s, so
    # 180 s only bounds a run that never ends (a hung child is caught after 5 s).
    forks, hung, start = 0, 0, time.monotonic()
    while forks < 300 and (time.monotonic() - start < 6 or forks <= 50) and time.monotonic() - start < 180:
        q.send_message_batch([{"Id": str(i), "MessageBody": "x" * 60_000} for i in range(4)])  # a pass is due
        time.sleep(random.random() * 0.008)  # fork at any point of the thread's pass
        pid = os.fork()
        if pid == 0:
            try:
                q.send_message("from the child")
            finally:
                os._exit(0)
        forks += 1
        waited = time.monotonic()
        while os.waitpid(pid, os.WNOHANG)[0] == 0:
            if time.monotonic() - waited > 5:
                hung += 1
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                break
            time.sleep(0.001)
    assert (hung, forks > 50) == (0, True)
    assert q.get_queue_attributes(["ApproximateNumberOfMessages"])["ApproximateNumberOfMessages"] == str(5 * forks)
    db.close()


def test_a_light_load_waits_between_checkpoints(monkeypatch, db_path, clock):
    # While the WAL grows slowly (under CHECKPOINT_BUSY_RATE pages a second), each pass is
    # followed by CHECKPOINT_LIGHT_WAIT: a small commit every few milliseconds gets a few
    # checkpoints a second, not one every CHECKPOINT_GATHER.
    monkeypatch.setattr(D, "CHECKPOINT_LIGHT_WAIT", 0.2)
    db = sqsqlite.connect(db_path, clock=clock)
    q = db.create_queue("orders")
    start = time.monotonic()
    sent = 0
    while time.monotonic() - start < 0.5:
        q.send_message("small")  # a few WAL pages: at most ~200 sends a second stay well under the busy rate
        sent += 1
        time.sleep(0.005)
    passes = db.store._checkpointer.passes
    db.close()
    # Without the wait: a pass after each send's CHECKPOINT_GATHER, dozens in the half second.
    assert sent >= 20
    assert 1 <= passes <= 5


def _autocheckpoint(db) -> int:
    return db.store.connection().execute("PRAGMA wal_autocheckpoint").fetchone()[0]


def test_sqlites_own_checkpoint_is_only_a_backstop_while_the_thread_runs(tmp_path):
    normal = sqsqlite.connect(str(tmp_path / "normal.db"))
    full = sqsqlite.connect(str(tmp_path / "full.db"), synchronous="FULL")
    assert _autocheckpoint(normal) == D.WAL_BACKSTOP_PAGES
    assert _autocheckpoint(full) == D.SQLITE_AUTOCHECKPOINT_PAGES  # no thread under FULL
    normal.close()
    full.close()


def test_a_checkpoint_thread_that_cannot_start_leaves_sqlites_own_checkpoint_at_its_default(tmp_path, monkeypatch):
    start = threading.Thread.start

    def refuse_checkpointer(thread):
        if thread.name == "sqsqlite-checkpoint":
            raise RuntimeError("can't start new thread")
        start(thread)

    monkeypatch.setattr(threading.Thread, "start", refuse_checkpointer)
    db = sqsqlite.connect(str(tmp_path / "nothread.db"))
    q = db.create_queue("orders")  # the first commit tries to start the thread
    q.send_message("still sent")
    assert _autocheckpoint(db) == D.SQLITE_AUTOCHECKPOINT_PAGES
    assert [m.body for m in q.receive_message()] == ["still sent"]
    db.close()
