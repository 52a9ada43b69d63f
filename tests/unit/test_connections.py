"""Each thread that uses a database gets a connection of its own; a thread that ends takes it
with it, so a program that starts a thread a task (a web server's thread a request) holds no
more descriptors after a thousand tasks than after one."""

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
