"""A process may fork with its Database open. SQLite keeps the locks a process holds on a file
in one record per process, which a forked child inherits: while the child holds the parent's
connections, its own take no shared lock of their own, and the parent's close, finding no other
lock, would checkpoint and delete the WAL under the running child, whose later commits no one
else would see. The child closes the connections it inherited (the store's fork hook), after a
fork that waited for this process's transactions, reads included, to leave SQLite."""

import multiprocessing as mp
import os
import signal
import sqlite3
import threading
import time

import sqsqlite
from sqsqlite import defaults as D
from sqsqlite import lock
from sqsqlite.errors import DatabaseError
from sqsqlite.store import Store

FORK = mp.get_context("fork")
WAIT = 60  # a guard against a hang, not a pace


def _bodies(path: str) -> list[str]:
    conn = sqlite3.connect(path, timeout=10)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        return [row[0] for row in conn.execute("SELECT body FROM messages")]
    finally:
        conn.close()


def _made(path: str) -> None:
    with sqsqlite.connect(path) as db:  # closed: no connection of it left open in this process
        db.create_queue("orders")


def _finish(child) -> None:
    child.join(WAIT)
    if child.is_alive():
        child.kill()
        child.join()
        raise AssertionError("a child hung")
    assert child.exitcode == 0


def _sends_around_the_parents_close(path: str, ready, go, done, looked) -> None:
    # FULL: no checkpoint thread, which would copy a deleted WAL's pages into the file.
    db = sqsqlite.connect(path, synchronous="FULL")
    queue = db.queue("orders")
    queue.send_message("before")
    ready.set()
    go.wait(WAIT)
    queue.send_message("after")
    done.set()
    looked.wait(WAIT)  # alive, its connections open, while the parent looks
    db.close()


def test_a_forked_childs_commit_is_seen_by_other_processes_after_its_parent_closed_the_database(tmp_path):
    path = str(tmp_path / "fork.db")
    db = sqsqlite.connect(path)
    db.create_queue("orders").send_message("parent")  # the parent's connections are open at the fork
    ready, go, done, looked = FORK.Event(), FORK.Event(), FORK.Event(), FORK.Event()
    child = FORK.Process(target=_sends_around_the_parents_close, args=(path, ready, go, done, looked))
    child.start()
    try:
        assert ready.wait(WAIT), "the child did not start"
        db.close()
        go.set()
        assert done.wait(WAIT), "the child did not send"
        assert set(_bodies(path)) == {"parent", "before", "after"}
    finally:
        go.set()
        looked.set()
        _finish(child)


def _sends(path: str, n: int, tag: int) -> None:
    db = sqsqlite.connect(path)
    queue = db.queue("orders")
    for i in range(n):
        queue.send_message(f"{tag}-{i}")
    db.close()


def test_children_forked_by_a_busy_process_lose_nothing_when_it_closes_its_database_midway(tmp_path):
    path = str(tmp_path / "many.db")
    db = sqsqlite.connect(path)
    queue = db.create_queue("orders")
    reader = sqsqlite.connect(path)  # a second Database, reading throughout, beside the writes
    stop, reads = threading.Event(), []

    def poll() -> None:
        while not stop.is_set():
            reads.append(reader.queue("orders").get_queue_attributes(["ApproximateNumberOfMessages"]))

    poller = threading.Thread(target=poll)
    poller.start()
    children = []
    try:
        for tag in range(20):
            queue.send_message(f"parent-{tag}")  # the parent writes between forks: its connections open
            child = FORK.Process(target=_sends, args=(path, 20, tag))
            child.start()
            children.append(child)
            if tag == 9:
                db.close()  # the children forked so far still writing
                db = sqsqlite.connect(path)
                queue = db.queue("orders")
    finally:
        for child in children:
            _finish(child)
        stop.set()
        poller.join(WAIT)
    db.close()
    reader.close()
    assert reads
    expected = {f"parent-{tag}" for tag in range(20)} | {f"{tag}-{i}" for tag in range(20) for i in range(20)}
    bodies = _bodies(path)
    assert len(bodies) == len(expected) and set(bodies) == expected


def _sends_one(path: str) -> None:
    _sends(path, 1, 0)


def test_a_fork_waits_for_a_read_inside_sqlite_on_another_thread_and_the_child_goes_on(tmp_path, monkeypatch):
    path = str(tmp_path / "read.db")
    _made(path)
    monkeypatch.setattr(D, "FORK_WAIT_SECONDS", WAIT)  # the read ends long before: the event, not a pace
    store = Store(path)
    inside, release = threading.Event(), threading.Event()

    def blocking() -> int:  # runs inside SQLite's step: its connection's mutex held meanwhile
        inside.set()
        release.wait(WAIT)
        return 1

    def read() -> None:
        conn = store.connection()  # the thread's, on which its reads run
        conn.create_function("blocking", 0, blocking)
        with store.read():
            conn.execute("SELECT blocking()").fetchone()

    reading = threading.Thread(target=read)
    reading.start()
    assert inside.wait(WAIT)
    threading.Timer(0.2, release.set).start()  # the fork below waits at its gate until then
    child = FORK.Process(target=_sends_one, args=(path,))
    child.start()
    try:
        assert release.is_set()  # the fork came after the read let go
    finally:
        release.set()
        reading.join(WAIT)
        _finish(child)
    store.close()
    assert _bodies(path) == ["0-0"]


def test_a_thread_ending_while_a_fork_waits_leaves_the_child_no_connection_of_the_parents(tmp_path, monkeypatch):
    path = str(tmp_path / "ending.db")
    _made(path)
    monkeypatch.setattr(D, "FORK_WAIT_SECONDS", WAIT)
    store = Store(path, synchronous="FULL")
    inside, release, end = threading.Event(), threading.Event(), threading.Event()

    def blocking() -> int:
        inside.set()
        release.wait(WAIT)
        return 1

    def slow_read() -> None:  # the read the fork waits for
        conn = store.connection()
        conn.create_function("blocking", 0, blocking)
        with store.read():
            conn.execute("SELECT blocking()").fetchone()

    def short_lived() -> None:  # ends while the fork waits: its connection is closed as it ends
        with store.read():
            pass
        end.wait(WAIT)

    def meanwhile() -> None:
        end.set()  # its close waits for the fork, or is done before it: either way, the child has none
        threading.Timer(0.2, release.set).start()

    reading, ending = threading.Thread(target=slow_read), threading.Thread(target=short_lived)
    reading.start()
    assert inside.wait(WAIT)
    ending.start()
    threading.Timer(0.2, meanwhile).start()
    ready, go, done, looked = FORK.Event(), FORK.Event(), FORK.Event(), FORK.Event()
    child = FORK.Process(target=_sends_around_the_parents_close, args=(path, ready, go, done, looked))
    child.start()
    try:
        reading.join(WAIT)
        ending.join(WAIT)
        assert ready.wait(WAIT), "the child did not start"
        store.close()  # every connection of the parent's closed: the child's must hold their own lock
        go.set()
        assert done.wait(WAIT), "the child did not send"
        assert sorted(_bodies(path)) == ["after", "before"]
    finally:
        release.set()
        go.set()
        looked.set()
        _finish(child)


def _refused(call) -> bool:
    try:
        call()
    except DatabaseError as exc:
        return "forked while a write transaction" in str(exc)
    return False


def _nested(db) -> None:
    with db.transaction():
        pass


def _waited(pid: int) -> int:
    deadline = time.monotonic() + WAIT  # a guard against a hang, not a pace
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return status
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            raise AssertionError("a child hung")
        time.sleep(0.01)


def test_a_child_forked_inside_a_write_transaction_is_refused_the_file_and_the_parents_commits_are_whole(tmp_path):
    path = str(tmp_path / "tx.db")
    db = sqsqlite.connect(path)
    queue = db.create_queue("orders")
    pid, seen = None, []
    try:
        with db.transaction() as tx:
            queue.send_message("parent-1")
            # The child inherits the connection mid-write: closing it there, or ending the
            # transaction, would change the WAL index both share while the parent goes on; kept,
            # SQLite believes the child holds the write lock for good. So it is refused, at once.
            pid = os.fork()
            if pid == 0:
                seen.append(_refused(lambda: queue.send_message("child")))
                seen.append(_refused(lambda: tx.execute("SELECT 1")))
                seen.append(_refused(lambda: sqsqlite.connect(path)))
                seen.append(_refused(lambda: _nested(db)))
            else:
                status = _waited(pid)  # the child ended its block before the parent goes on
                queue.send_message("parent-2")
    except DatabaseError as exc:  # the child's block end, refused too
        if pid == 0:
            os._exit(0 if seen == [True, True, True, True] and "forked while a write transaction" in str(exc) else 1)
        raise
    finally:
        if pid == 0:
            os._exit(1)  # whatever happened, the child never returns into the test
    assert os.waitstatus_to_exitcode(status) == 0
    for i in range(3):
        queue.send_message(f"after-{i}")
    db.close()
    assert sorted(_bodies(path)) == ["after-0", "after-1", "after-2", "parent-1", "parent-2"]


def _writes_and_reads_holding_the_fork_gate(path: str) -> None:
    db = sqsqlite.connect(path)
    queue = db.create_queue("orders")
    lock.close_fork_gate()
    try:
        queue.send_message("during")
        assert queue.get_queue_attributes(["ApproximateNumberOfMessages"])["ApproximateNumberOfMessages"] == "1"
    finally:
        lock.open_fork_gate()
    db.close()


def test_a_write_or_read_on_the_forking_thread_while_its_fork_waits_goes_through(tmp_path):
    # As a finalizer run by the wait's own allocations would (a buffer's close committing its
    # deletes): waiting at the gate its own thread holds would never end. In a child of its own,
    # so that a regression fails as a hung child rather than hanging the suite.
    path = str(tmp_path / "self.db")
    child = FORK.Process(target=_writes_and_reads_holding_the_fork_gate, args=(path,))
    child.start()
    _finish(child)
    assert _bodies(path) == ["during"]
