"""Each thread that uses a database gets a connection of its own; a thread that ends takes it
with it, so a program that starts a thread a task (a web server's thread a request) holds no
more descriptors after many tasks than after one."""

import os
import threading

import sqsqlite


def descriptors(path: str) -> int:
    """This process's open files of the database: the file, its WAL and shared memory, its locks."""
    paths = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            paths.append(os.readlink(f"/proc/self/fd/{fd}"))
        except FileNotFoundError:  # the listing's own descriptor, closed since
            pass
    return sum(p.startswith(path) for p in paths)


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
    import time

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
        deadline = time.monotonic() + 10
        while (done := os.waitpid(pid, os.WNOHANG))[0] == 0:
            if time.monotonic() > deadline:
                os.kill(pid, 9)
                os.waitpid(pid, 0)
                raise AssertionError("the child hung in the fork")
            time.sleep(0.01)
        assert os.waitstatus_to_exitcode(done[1]) == 0
    finally:
        stop.set()
        for t in threads:
            t.join(10)
        db.close()
