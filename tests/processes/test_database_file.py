"""The database file under a running process: deleted or replaced at its path, opened read-only
by a thread before its permissions were fixed, and the errors of a full disk or of a process out
of file descriptors. Each ends in a typed DatabaseError that says what happened, and nothing
acknowledged is lost."""

import errno
import os
import shutil
import sqlite3
import subprocess
import sys
import textwrap
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

import sqsqlite
import sqsqlite.store as store_module
from sqsqlite.errors import DatabaseError
from sqsqlite.sqlite_errors import explain


class Ticks:
    """The store's monotonic clock, stepped by the test: the file is looked at once a second."""

    def __init__(self, real):
        self.real, self.offset = real, 0.0

    def __call__(self):
        return self.real() + self.offset


@pytest.fixture
def ticks(monkeypatch):
    ticks = Ticks(store_module._monotonic)
    monkeypatch.setattr(store_module, "_monotonic", ticks)
    return ticks


def remove_database(path):
    for suffix in ("", "-wal", "-shm"):
        try:
            os.remove(path + suffix)
        except FileNotFoundError:
            pass


def rows(path):
    con = sqlite3.connect(path)
    try:
        if not con.execute("SELECT name FROM sqlite_master WHERE name='messages'").fetchone():
            return None
        return con.execute("SELECT count(*) FROM messages").fetchone()[0]
    finally:
        con.close()


# ------------------------------------------------------------------ deleted or replaced


def _sent_then_removed(db_path, clock):
    """A database that sent one message to "orders", whose files were then removed under it."""
    db = sqsqlite.connect(db_path, clock=clock)
    q = db.create_queue("orders")
    q.send_message("before")
    remove_database(db_path)
    return db, q


def test_a_send_after_the_database_file_was_deleted_is_refused_and_writes_nothing(db_path, clock, ticks):
    db, q = _sent_then_removed(db_path, clock)
    ticks.offset += 1.5
    with pytest.raises(DatabaseError, match="deleted or replaced since this process opened it"):
        q.send_message("lost")
    ticks.offset += 5
    for write in (lambda: q.send_message("again"), lambda: q.receive_message(), lambda: db.create_queue("other")):
        with pytest.raises(DatabaseError, match="deleted or replaced"):
            write()
    assert [m.body for m in q.peek()] == ["before"]  # reads go on, on the file still open
    db.close()
    assert not os.path.exists(db_path)  # nothing was written to a new file at the path either


def test_a_send_after_the_database_file_was_replaced_by_another_is_refused(db_path, clock, ticks):
    db = sqsqlite.connect(db_path, clock=clock)
    q = db.create_queue("orders")
    q.send_message("before")
    other = db_path + ".other"
    sqsqlite.connect(other, clock=clock).close()
    for suffix in ("", "-wal", "-shm"):  # mv app.db* elsewhere: a stale -wal would be read as the new file's
        os.rename(db_path + suffix, db_path + ".old" + suffix)
    os.rename(other, db_path)
    ticks.offset += 1.5
    with pytest.raises(DatabaseError, match="deleted or replaced"):
        q.send_message("lost")
    db.close()
    assert rows(db_path) == 0  # the file now at the path got nothing


def test_within_a_second_of_the_last_look_writes_go_on_and_are_checked_at_the_next(db_path, clock, ticks):
    db = sqsqlite.connect(db_path, clock=clock)
    q = db.create_queue("orders")
    ticks.offset += 1.5
    q.send_message("looked at the file")
    os.rename(db_path, db_path + ".moved")
    q.send_message("within the second: not looked at")
    ticks.offset += 1.5
    with pytest.raises(DatabaseError, match="deleted or replaced"):
        q.send_message("refused")
    db.close()


def test_an_unchanged_database_file_is_never_refused(db_path, clock, ticks):
    db = sqsqlite.connect(db_path, clock=clock)
    q = db.create_queue("orders")
    for _ in range(5):
        ticks.offset += 1.5
        q.send_message("kept")
        [m] = q.receive_message()
        m.delete()
    db.close()


def test_a_database_opened_by_a_relative_path_keeps_writing_to_its_file_after_the_process_changes_directory(
    tmp_path, monkeypatch, clock, ticks
):
    monkeypatch.chdir(tmp_path)
    db = sqsqlite.connect("app.db", clock=clock)
    q = db.create_queue("orders")
    q.send_message("before")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)  # a daemon's chdir("/"), a job runner's
    ticks.offset += 1.5  # past the next look at the file
    q.send_message("after")
    thread = threading.Thread(target=q.send_message, args=("from a thread opening its connection now",))
    thread.start()
    thread.join(10)
    db.close()
    assert rows(str(tmp_path / "app.db")) == 3
    assert not (elsewhere / "app.db").exists()


def test_another_thread_opening_the_replaced_path_is_refused_too(db_path, clock, ticks):
    db, q = _sent_then_removed(db_path, clock)
    ticks.offset += 1.5
    failed = []

    def send():
        try:
            q.send_message("from a new thread")
        except DatabaseError as exc:
            failed.append(str(exc))

    thread = threading.Thread(target=send)
    thread.start()
    thread.join()
    assert failed and "deleted or replaced" in failed[0]
    db.close()


def test_the_checkpoint_thread_notices_a_deleted_file_and_says_so_once(db_path, clock, caplog):
    db, q = _sent_then_removed(db_path, clock)
    checkpointer = db.store._checkpointer
    with caplog.at_level("WARNING", logger="sqsqlite"):
        for _ in range(3):
            checkpointer.look(None)
    said = [r for r in caplog.records if "deleted or replaced" in r.getMessage()]
    assert len(said) == 1
    with pytest.raises(DatabaseError, match="deleted or replaced"):  # at once: the thread saw it
        q.send_message("lost")
    db.close()


# ------------------------------------------------------------------ opened read-only, fixed since


@pytest.fixture
def read_only_opens(monkeypatch, db_path):
    """While ``on[0]``, SQLite opens the database read-only, as it does (silently) when the file
    or its directory is not writable: root ignores permission bits, so mode=ro stands in."""
    on = [False]
    connect = sqlite3.connect

    def opening(path, *args, **kwargs):
        if on[0] and path == db_path:
            return connect(f"file:{path}?mode=ro", *args, uri=True, **kwargs)
        return connect(path, *args, **kwargs)

    monkeypatch.setattr(sqlite3, "connect", opening)
    return on


def test_a_thread_that_opened_its_connection_while_the_file_was_read_only_writes_once_it_is_writable(db_path, clock, read_only_opens):
    db = sqsqlite.connect(db_path, clock=clock)
    q = db.create_queue("orders")
    pool = ThreadPoolExecutor(1)  # a long-lived thread, as the endpoint's pool has
    try:
        read_only_opens[0] = True
        with pytest.raises(DatabaseError, match="read-only"):
            pool.submit(q.send_message, "refused").result()
        read_only_opens[0] = False
        for body in ("a", "b", "c"):
            pool.submit(q.send_message, body).result()
    finally:
        pool.shutdown()
    assert sorted(m.body for m in q.peek()) == ["a", "b", "c"]
    db.close()


def test_grouped_writes_on_a_read_only_connection_reopen_it_for_the_next_group(db_path, clock, read_only_opens):
    db = sqsqlite.connect(db_path, clock=clock)
    q = db.create_queue("orders")
    store = db.store
    read_only_opens[0] = True
    store.release_connection()  # this thread's next connection opens read-only
    group = store.begin_group()
    with pytest.raises(DatabaseError, match="read-only"):
        q.send_message("refused")
    store.end_group(group)  # the failed write was undone alone: nothing to commit
    read_only_opens[0] = False
    group = store.begin_group()
    q.send_message("kept")
    store.end_group(group)
    assert [m.body for m in q.peek()] == ["kept"]
    db.close()


def test_a_call_run_with_the_lock_up_front_on_a_read_only_connection_reopens_it_for_the_next(db_path, clock, read_only_opens):
    db = sqsqlite.connect(db_path, clock=clock)
    q = db.create_queue("orders")
    store = db.store
    read_only_opens[0] = True
    store.release_connection()  # this thread's next connection opens read-only (the endpoint's loop's, say)
    with pytest.raises(DatabaseError, match="read-only"):
        store.call_with_lock(1.0, lambda: q.send_message("refused"))
    read_only_opens[0] = False
    assert store.call_with_lock(1.0, lambda: q.send_message("kept"))[0]
    assert [m.body for m in q.peek()] == ["kept"]
    db.close()


# ------------------------------------------------------------------ the writers' lock file


@pytest.mark.parametrize("code", [errno.EMFILE, errno.ENFILE, errno.EACCES])
def test_a_lock_file_that_could_not_be_opened_for_a_passing_reason_is_opened_at_a_write_a_second_on(
    db_path, clock, monkeypatch, ticks, code
):
    db = sqsqlite.connect(db_path, clock=clock)
    q = db.create_queue("orders")
    db.store.release_connection()  # this thread's lock file is opened again at its next write
    real_open = os.open
    failing = [True]
    tries = []

    def opening(path, *args, **kwargs):
        if str(path).endswith("-lock"):
            tries.append(path)
            if failing[0]:
                raise OSError(code, os.strerror(code), path)
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(os, "open", opening)
    for _ in range(5):
        q.send_message("without the writers' lock: SQLite's own still holds")
    assert len(tries) == 1  # not a failing system call at every write
    failing[0] = False
    q.send_message("within the second: still without it")
    assert len(tries) == 1
    ticks.offset += 1.5
    q.send_message("with it")
    assert len(tries) == 2 and db.store._local.lockfd >= 0
    db.close()


# ------------------------------------------------------------------ a full disk, no descriptors left


def sqlite_error(text, name):
    exc = sqlite3.OperationalError(text)
    exc.sqlite_errorname = name
    return exc


@pytest.mark.parametrize("name", ["SQLITE_IOERR_SHMSIZE", "SQLITE_IOERR_WRITE", "SQLITE_IOERR_TRUNCATE"])
def test_a_disk_io_error_of_a_write_on_a_disk_with_no_room_left_is_said_to_be_a_full_disk(db_path, monkeypatch, name):
    usage = shutil.disk_usage(os.path.dirname(db_path))
    monkeypatch.setattr(shutil, "disk_usage", lambda path: usage._replace(free=4096))
    said = explain(db_path, sqlite_error("disk I/O error", name))
    assert said.startswith(f"The disk holding {db_path!r} is full")


@pytest.mark.parametrize("name", ["SQLITE_IOERR_SHMSIZE", "SQLITE_IOERR_WRITE", "SQLITE_IOERR_READ"])
def test_a_disk_io_error_with_room_left_is_not_taken_for_a_full_disk(db_path, name):
    said = explain(db_path, sqlite_error("disk I/O error", name))
    assert "full" not in said and "disk I/O error" in said


def test_sqlite_full_is_said_to_be_a_full_disk_by_its_code(db_path):
    said = explain(db_path, sqlite_error("some other wording", "SQLITE_FULL"))
    assert said.startswith(f"The disk holding {db_path!r} is full")


def run_child(db_path, script):
    code = textwrap.dedent(script)
    done = subprocess.run([sys.executable, "-c", code, db_path], capture_output=True, text=True, timeout=120, cwd=os.getcwd())
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_a_write_failing_for_want_of_room_reads_as_a_full_disk_when_the_disk_has_none_left(db_path):
    # A real failing write: RLIMIT_FSIZE makes the kernel refuse to grow the files (EFBIG, which
    # SQLite reports as a disk I/O error, as it does ENOSPC in a WAL write or -shm); only the free
    # space is the test's.
    said = run_child(
        db_path,
        """
        import os, resource, shutil, signal, sys
        import sqsqlite
        from sqsqlite.errors import DatabaseError
        path = sys.argv[1]
        db = sqsqlite.connect(path)
        q = db.create_queue("orders")
        q.send_message("kept")
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        size = max(os.path.getsize(path + suffix) for suffix in ("", "-wal"))
        resource.setrlimit(resource.RLIMIT_FSIZE, (size + 20000, size + 20000))
        usage = shutil.disk_usage(os.path.dirname(path))
        saids = []
        for free in (usage.free, 0):
            shutil.disk_usage = lambda p, free=free: usage._replace(free=free)
            try:
                for _ in range(100):
                    q.send_message("x" * 5000)
            except DatabaseError as exc:
                saids.append(str(exc))
        print("\\n".join(saids))
        """,
    )
    with_room, without = said.splitlines()
    assert "disk I/O error" in with_room and "full" not in with_room
    assert f"The disk holding {db_path!r} is full; the operation changed nothing" in without


def test_a_process_out_of_file_descriptors_is_told_so_not_that_the_file_cant_be_opened(db_path):
    said = run_child(
        db_path,
        """
        import os, resource, sys
        import sqsqlite
        from sqsqlite.errors import DatabaseError
        sqsqlite.connect(sys.argv[1]).close()  # the file exists, and every module is imported
        resource.setrlimit(resource.RLIMIT_NOFILE, (64, 64))
        held = []
        try:
            while True:
                held.append(os.open(os.devnull, os.O_RDONLY))
        except OSError:
            pass
        try:
            sqsqlite.connect(sys.argv[1])
        except DatabaseError as exc:
            print(exc)
        """,
    )
    assert "this process has no file descriptors left" in said and "is 64" in said
