"""Each thread that uses a database gets a connection of its own; a thread that ends takes it
with it, so a program that starts a thread a task (a web server's thread a request) holds no
more descriptors after many tasks than after one."""

import fcntl
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time

import sqsqlite
from sqsqlite import defaults as D
from sqsqlite import queries as Q
from sqsqlite import store


def descriptors(path: str) -> int:
    """This process's open files of the database: the file, its WAL and shared memory, its locks."""
    paths = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            paths.append(os.readlink(f"/proc/self/fd/{fd}"))
        except FileNotFoundError:  # the listing's own descriptor, closed since
            pass
    return sum(p.startswith(path) for p in paths)


def exit_code(pid: int, seconds: float = 10.0) -> int:
    """A forked child's exit code; killed, and -9, if it hangs."""
    deadline = time.monotonic() + seconds
    while (done := os.waitpid(pid, os.WNOHANG))[0] == 0:
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            done = os.waitpid(pid, 0)
            break
        time.sleep(0.005)
    return os.waitstatus_to_exitcode(done[1])


def in_a_thread(work) -> None:
    t = threading.Thread(target=work)
    t.start()
    t.join()


def test_a_thread_that_ends_closes_its_connection_and_lock_files(db_path):
    db = sqsqlite.connect(db_path, synchronous="FULL")  # FULL: no checkpoint thread opening a connection meanwhile
    q = db.create_queue("tasks")
    in_a_thread(lambda: q.send_message("first"))
    held = descriptors(db_path)
    for i in range(50):  # writes (the writers' lock), reads, and receive + delete
        in_a_thread(lambda i=i: q.send_message(f"task {i}"))
        in_a_thread(db.stats)
        in_a_thread(lambda: [m.delete() for m in q.receive_message()])
    assert descriptors(db_path) == held
    assert sum(s.visible + s.in_flight for s in db.stats()) == 1  # every task sent, and all but one received and deleted
    db.close()
    assert descriptors(db_path) == 0


def test_a_thread_keeps_one_connection_while_it_lives(db_path):
    db = sqsqlite.connect(db_path, synchronous="FULL")
    q = db.create_queue("tasks")
    counts = []

    def work():
        for i in range(20):
            q.send_message(str(i))
            counts.append(descriptors(db_path))

    in_a_thread(work)
    assert len(set(counts)) == 1
    db.close()


def test_a_fork_while_another_thread_holds_the_stores_lock_does_not_hang_the_child(db_path):

    db = sqsqlite.connect(db_path, synchronous="FULL")
    with_connection, holding, stop = threading.Event(), threading.Event(), threading.Event()

    def lives_on():  # a thread with a connection: the child clears its state before its fork hooks run
        db.stats()
        with_connection.set()
        stop.wait(10)

    def holds_the_lock():  # as a thread does for a moment whenever it opens a connection or ends
        with db.store._lock:  # the store's own lock: the point of the test is a fork while it is held
            holding.set()
            stop.wait(10)

    threads = [threading.Thread(target=lives_on), threading.Thread(target=holds_the_lock)]
    threads[0].start()
    assert with_connection.wait(5)
    threads[1].start()
    assert holding.wait(5)
    pid = os.fork()
    if pid == 0:
        os._exit(0)  # past the fork: the parent's threads' ends did nothing here
    try:
        assert exit_code(pid) == 0  # -9: killed, having hung in the fork
    finally:
        stop.set()
        for t in threads:
            t.join(10)
        db.close()


def test_a_child_forked_while_another_thread_writes_can_write_at_once_and_the_parent_goes_on(db_path):
    # SQLite keeps its locks on a file per process: a child forked inside another thread's write
    # inherited SQLite's write lock held, and its first write waited 120 s, with every sqsqlite
    # writer of the file behind it. The fork waits for the write in progress to end.
    db = sqsqlite.connect(db_path)
    q = db.create_queue("forked")
    writing, stop = threading.Event(), threading.Event()

    def writes_slowly():
        while not stop.is_set():
            with db.store.write() as tx:  # a write in progress: the point of the test is a fork inside one
                tx.run(Q.set_meta, key="fork-test", value=b"held")
                writing.set()
                time.sleep(0.05)

    writer = threading.Thread(target=writes_slowly)
    writer.start()
    assert writing.wait(5)
    try:
        for _ in range(3):
            pid = os.fork()
            if pid == 0:
                signal.alarm(20)  # a hang ends the child, and the test reads it as a failure
                try:
                    q.send_message("from the child")
                    os._exit(0)
                except BaseException:
                    os._exit(1)
            assert exit_code(pid, 30) == 0  # 14 (its alarm) or -9: it hung
            writing.clear()
            assert writing.wait(5)  # the parent's writer goes on
    finally:
        stop.set()
        writer.join(10)
    assert sum(m.body == "from the child" for m in q.peek("all", limit=1000)) == 3
    db.close()


def _forked_child_exit_code(seconds=30.0):
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    return exit_code(pid, seconds)


def test_a_database_opened_while_a_fork_waits_leaves_every_writer_free_after_it(db_path, tmp_path):
    db = sqsqlite.connect(db_path)
    q = db.create_queue("forked")
    writing, opened = threading.Event(), []

    def writes_a_while():
        with db.store.write() as tx:  # a write in progress, which the fork waits for
            tx.run(Q.set_meta, key="fork-test", value=b"held")
            writing.set()
            time.sleep(0.6)

    def opens_another_meanwhile():
        time.sleep(0.2)
        opened.append(sqsqlite.connect(str(tmp_path / "other.db")))  # its checkpoint thread was never paused

    threads = [threading.Thread(target=writes_a_while), threading.Thread(target=opens_another_meanwhile)]
    threads[0].start()
    assert writing.wait(5)
    threads[1].start()
    assert _forked_child_exit_code() == 0
    for t in threads:
        t.join(10)
    sent = []
    after = threading.Thread(target=lambda: sent.append(q.send_message("after the fork")), daemon=True)
    after.start()
    after.join(10)
    assert sent, "the parent's writes hung after the fork"
    for d in (db, *opened):
        d.close()


_HOLDS_A_WRITE = """
import sys, time
import sqsqlite
from sqsqlite import queries as Q
db = sqsqlite.connect(sys.argv[1])
with db.store.write() as tx:  # the writers' lock and SQLite's, held
    tx.run(Q.set_meta, key="held", value=b"60 s")
    print("held", flush=True)
    time.sleep(60)  # killed by the test: a wait for it would be far beyond the test's bound
"""


def test_a_fork_waits_for_no_other_process_nor_a_second_database_nor_a_write_still_in_line(db_path, monkeypatch):
    # Only this process's writes pass SQLite's state on to a child: another process's write in
    # progress, a second Database on the same file, and a thread of ours still waiting for the
    # writers' lock (not inside SQLite yet) cost a fork nothing. A wait for any of them would last
    # 30 s (the fork's wait, lengthened here) or 60 s (the other process's write): far from the
    # bound, which a healthy fork on a loaded machine (2.1 s seen) must not reach.
    monkeypatch.setattr(D, "FORK_WAIT_SECONDS", 30.0)
    dbs = [sqsqlite.connect(db_path), sqsqlite.connect(db_path)]
    q = dbs[0].create_queue("forked")
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLDS_A_WRITE, db_path],
        stdout=subprocess.PIPE,
        text=True,
    )
    in_line = threading.Thread(target=q.send_message, args=("behind the other process",))
    try:
        assert holder.stdout.readline().strip() == "held"
        in_line.start()
        time.sleep(0.2)  # in the kernel's line for the writers' lock
        started = time.monotonic()
        assert _forked_child_exit_code() == 0
        assert time.monotonic() - started < 10  # not the other process's 60 s, nor the fork's 30 s wait for the rest
    finally:
        holder.kill()
        holder.wait(10)
        in_line.join(10)
        for d in dbs:
            d.close()
    assert not in_line.is_alive()


def test_an_interrupt_landing_just_after_a_write_began_lets_its_transaction_and_lock_go(db_path, monkeypatch):
    db = sqsqlite.connect(db_path)
    q = db.create_queue("tasks")

    class InterruptedOnce(store.Tx):
        __slots__ = ()
        interrupted = False

        def __init__(self, *args, **kwargs):
            if not InterruptedOnce.interrupted:  # as a Ctrl-C lands between BEGIN and the with block
                InterruptedOnce.interrupted = True
                raise KeyboardInterrupt
            super().__init__(*args, **kwargs)

    monkeypatch.setattr(store, "Tx", InterruptedOnce)
    try:
        q.send_message("lost to the interrupt")
    except KeyboardInterrupt:
        pass
    assert InterruptedOnce.interrupted
    with open(db_path + "-lock", "a") as other:  # the writers' lock is free for another process
        fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)
        fcntl.flock(other, fcntl.LOCK_UN)
    outside = sqlite3.connect(db_path, timeout=0)  # and so is SQLite's
    outside.execute("BEGIN IMMEDIATE")
    outside.rollback()
    outside.close()
    q.send_message("after it")  # and this thread writes as before
    assert [m.body for m in q.receive_message(max_number_of_messages=10)] == ["after it"]
    db.close()
