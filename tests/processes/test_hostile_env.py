"""A hostile environment: a full disk, a read-only file, a reader that never lets go, a file
that is not ours, a schema from the future. Each gives a typed DatabaseError naming the problem,
and the database stays intact."""

import contextlib
import hashlib
import os
import shutil
import sqlite3
import subprocess

import pytest

import sqsqlite
from sqsqlite.errors import DatabaseError
from sqsqlite.store import HEAD_REVISION, Store
from tests.reliability.snapshots import integrity, snapshot


def digest(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


# ------------------------------------------------------------------ a full disk


def limit_pages(db, extra):
    """Cap this thread's connection a few pages past the file's size: the disk is full."""
    conn = db.store.connection()
    pages = conn.execute("PRAGMA page_count").fetchone()[0]
    conn.execute(f"PRAGMA max_page_count={int(pages + extra)}")  # test code, a number it computed


def test_a_disk_filling_up_in_the_middle_of_a_batch_raises_database_error_and_stores_nothing(db, queue, db_path):
    queue.send_message("already here")
    before = snapshot(db_path)
    limit_pages(db, 4)
    entries = [{"Id": f"e{i}", "MessageBody": "x" * 60_000} for i in range(10)]

    with pytest.raises(DatabaseError, match="full") as err:
        queue.send_message_batch(entries)

    assert db_path in str(err.value)
    assert snapshot(db_path) == before  # not one entry of the batch stored
    assert integrity(db_path) == "ok"
    assert [m.body for m in queue.peek()] == ["already here"]


def test_once_space_is_freed_the_same_batch_goes_through(db, queue, db_path):
    limit_pages(db, 4)
    entries = [{"Id": f"e{i}", "MessageBody": "x" * 60_000} for i in range(10)]
    with pytest.raises(DatabaseError):
        queue.send_message_batch(entries)

    db.store.connection().execute("PRAGMA max_page_count=1073741823")
    result = queue.send_message_batch(entries)

    assert len(result.successful) == 10 and result.failed == []
    assert len(queue.receive_message(max_number_of_messages=10)) == 10
    assert integrity(db_path) == "ok"


def test_a_full_disk_fails_a_single_send_with_database_error_and_the_queue_keeps_working(db, queue, db_path):
    before = snapshot(db_path)
    limit_pages(db, 0)

    with pytest.raises(DatabaseError, match="full"):
        queue.send_message("z" * 200_000)

    assert snapshot(db_path) == before
    db.store.connection().execute("PRAGMA max_page_count=1073741823")
    queue.send_message("small")
    assert [m.body for m in queue.receive_message()] == ["small"]


# ------------------------------------------------------------------ a read-only file


@contextlib.contextmanager
def read_only(path):
    """Make the file read-only for this process. Root ignores permission bits, so as root use
    the immutable attribute, and skip where the filesystem does not have one."""
    if os.geteuid() != 0:
        os.chmod(path, 0o400)
        try:
            yield
        finally:
            os.chmod(path, 0o600)
        return
    if shutil.which("chattr") is None or subprocess.run(["chattr", "+i", path], capture_output=True).returncode:
        pytest.skip("running as root where chattr +i is unavailable: no way to make a read-only file")
    try:
        yield
    finally:
        subprocess.run(["chattr", "-i", path], check=True)


def test_a_read_only_database_file_gives_database_error_on_writes_and_stays_intact(db_path, clock):
    db = sqsqlite.connect(db_path, clock=clock)
    q = db.create_queue("orders")
    q.send_message("kept")
    db.close()  # checkpoints the WAL into the file, so the file alone holds everything
    before = digest(db_path)

    with read_only(db_path):
        try:
            ro = sqsqlite.connect(db_path, clock=clock)
        except DatabaseError as exc:
            assert "read-only" in str(exc) or "open" in str(exc)
        else:
            q = ro.queue("orders")
            assert [m.body for m in q.peek()] == ["kept"]  # reading still works
            for write in (
                lambda: q.send_message("no"),
                lambda: q.receive_message(),
                lambda: q.purge_queue(),
                lambda: ro.create_queue("other"),
            ):
                with pytest.raises(DatabaseError, match="read-only"):
                    write()
            ro.close()
        assert digest(db_path) == before

    db = sqsqlite.connect(db_path, clock=clock)
    [msg] = db.queue("orders").receive_message()
    assert msg.body == "kept"
    db.close()
    assert integrity(db_path) == "ok"


# ------------------------------------------------------------------ a reader that holds a snapshot


def wal_size(path):
    try:
        return os.path.getsize(path + "-wal")
    except FileNotFoundError:
        return 0


def checkpoint(path):
    """(frames in the WAL, frames checkpointed) from a passive checkpoint, which waits for nobody."""
    conn = sqlite3.connect(path)
    try:
        _, log, done = conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
        return log, done
    finally:
        conn.close()


def churn(queue, rounds):
    body = "y" * 10_000
    for _ in range(rounds):
        queue.send_message_batch([{"Id": f"e{i}", "MessageBody": body} for i in range(10)])
        queue.delete_message_batch(
            [{"Id": f"d{i}", "ReceiptHandle": m.receipt_handle} for i, m in enumerate(queue.receive_message(max_number_of_messages=10))]
        )


def test_a_long_reader_pins_the_wal_while_it_reads_and_writers_reuse_it_once_it_ends(db, queue, db_path):
    queue.send_message("seen by the reader")
    reader = sqlite3.connect(db_path)
    reader.execute("BEGIN")
    seen = reader.execute("SELECT count(*) FROM messages").fetchone()[0]

    # Writers carry on for ~22 MB while the reader holds its snapshot.
    churn(queue, 30)
    grown = wal_size(db_path)
    churn(queue, 30)
    peak = wal_size(db_path)
    log, done = checkpoint(db_path)
    assert peak > grown > 4_000_000  # the reader's snapshot keeps every frame
    assert done < log  # frames after the reader's snapshot can't be checkpointed
    assert reader.execute("SELECT count(*) FROM messages").fetchone()[0] == seen  # its snapshot held

    reader.execute("COMMIT")
    reader.close()
    churn(queue, 240)  # four times as much writing as during the hold, well past the backstop

    # Once the reader ends, checkpoints complete again: the WAL fills up to SQLite's own
    # checkpoint (D.WAL_BACKSTOP_PAGES, a little more while the checkpoint thread's pass holds
    # the lock), which completes in a writer's COMMIT, and writers reuse it from its start. It
    # never passes the journal_size_limit, the size it is cut back to at a reset.
    assert wal_size(db_path) <= 64 * 1024 * 1024
    log, done = checkpoint(db_path)
    assert done == log  # and everything in it reaches the database
    assert integrity(db_path) == "ok"


# ------------------------------------------------------------------ files that are not ours


def test_a_file_that_is_not_a_database_gives_database_error_and_is_left_untouched(tmp_path):
    path = str(tmp_path / "notes.db")
    with open(path, "wb") as f:
        f.write(b"these are my notes, not a database\n" * 200)
    before = digest(path)

    with pytest.raises(DatabaseError, match="not a SQLite database"):
        sqsqlite.connect(path)

    assert digest(path) == before
    assert sorted(os.listdir(tmp_path)) == ["notes.db"]


def test_someone_elses_sqlite_database_gives_database_error_and_is_left_untouched(tmp_path):
    path = str(tmp_path / "theirs.db")
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE accounts (id INTEGER PRIMARY KEY, balance INTEGER)")
    conn.execute("INSERT INTO accounts VALUES (1, 100)")
    conn.commit()
    conn.close()
    before = digest(path)

    with pytest.raises(DatabaseError, match="not a sqsqlite one"):
        sqsqlite.connect(path)

    assert digest(path) == before  # not even switched to WAL
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
    assert conn.execute("SELECT balance FROM accounts").fetchall() == [(100,)]
    conn.close()


def alembic_managed_app(path, revision, journal_mode="delete"):
    """Another application's database, managed by Alembic as sqsqlite's is: an alembic_version
    table at ``revision`` beside its own tables."""
    with contextlib.closing(sqlite3.connect(path)) as conn:
        conn.execute(f"PRAGMA journal_mode={journal_mode}")
        with conn:
            conn.execute("CREATE TABLE alembic_version (version_num VARCHAR(32) NOT NULL PRIMARY KEY)")
            conn.execute("INSERT INTO alembic_version VALUES (?)", (revision,))
            conn.execute("CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT)")
            conn.execute("INSERT INTO users (name) VALUES ('ann')")


@pytest.mark.parametrize("journal_mode", ["delete", "wal"])
@pytest.mark.parametrize("revision", ["ae1027a6acf", "0001"])  # its own; one that looks like sqsqlite's first
def test_another_alembic_managed_applications_database_is_refused_and_left_byte_for_byte_as_it_was(tmp_path, revision, journal_mode):
    path = str(tmp_path / "app.db")
    alembic_managed_app(path, revision, journal_mode)
    before = digest(path)

    with pytest.raises(DatabaseError, match="not a sqsqlite one"):
        sqsqlite.connect(path)
    store = Store(path, migrate=False)  # as the db commands open it
    with pytest.raises(DatabaseError, match="not a sqsqlite one"):
        store.current_revision()
    store.close()

    assert digest(path) == before  # not even switched to WAL
    with contextlib.closing(sqlite3.connect(path)) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == journal_mode
        assert conn.execute("SELECT name FROM sqlite_master WHERE type='table' ORDER BY name").fetchall() == [
            ("alembic_version",),
            ("users",),
        ]


def test_a_sqsqlite_database_downgraded_to_base_is_still_taken_for_sqsqlites(db_path):
    from sqsqlite import migrate

    store = Store(db_path)
    migrate.downgrade(store, "base")
    store.close()
    db = sqsqlite.connect(db_path)  # an empty alembic_version, and nothing else: upgraded again
    assert migrate.current(db.store) == HEAD_REVISION
    db.close()


def test_a_database_with_a_newer_schema_than_the_code_gives_database_error_naming_both_versions(db_path):
    sqsqlite.connect(db_path).close()
    conn = sqlite3.connect(db_path)
    conn.execute("UPDATE alembic_version SET version_num = '9999'")
    conn.commit()
    conn.close()
    before = snapshot(db_path)

    with pytest.raises(DatabaseError, match="unknown schema revision '9999'") as err:
        sqsqlite.connect(db_path)
    assert "a newer sqsqlite's, or another application's" in str(err.value) and f"'{HEAD_REVISION}'" in str(err.value)

    store = Store(db_path, migrate=False)
    with pytest.raises(DatabaseError, match="unknown schema revision"):
        store.ensure_schema()
    store.close()
    assert snapshot(db_path) == before


def test_a_write_nested_in_another_databases_write_on_the_same_file_fails_instead_of_hanging(tmp_path, monkeypatch):
    # Two Database objects on one file, the second writing inside the first's transaction, in
    # one thread: the writers' flock must not make that thread wait for itself forever. It
    # gets SQLite's answer instead, after the busy timeout (shortened here).
    import threading

    from sqsqlite import defaults

    monkeypatch.setattr(defaults, "BUSY_TIMEOUT_SECONDS", 0.3)
    path = str(tmp_path / "nested.db")
    outer, inner = sqsqlite.connect(path), sqsqlite.connect(path)
    outer.create_queue("q")
    result = {}

    def nested():
        with outer.store.write():
            try:
                inner.queue("q").send_message("inside")
            except DatabaseError as exc:
                result["error"] = str(exc)

    t = threading.Thread(target=nested, daemon=True)
    t.start()
    t.join(timeout=20)
    assert not t.is_alive(), "the nested write waited for its own thread's lock"
    assert "locked" in result.get("error", "")
    inner.queue("q").send_message("after")  # and both work afterwards
    assert [m.body for m in outer.queue("q").receive_message()] == ["after"]
    outer.close()
    inner.close()


# ------------------------------------------------------------------ another program holding SQLite's write lock

# The busy timeout these tests set, in seconds: not a minute, in a test; long enough that the
# slack their bounds leave above it (a second or more) is many times what a busy machine adds.
BUSY = 4.0


def test_a_write_while_another_program_holds_sqlites_write_lock_fails_after_one_busy_timeout_not_two(tmp_path, monkeypatch):
    import time

    from sqsqlite import defaults

    monkeypatch.setattr(defaults, "BUSY_TIMEOUT_SECONDS", BUSY)  # before connect: its connections wait as long
    path = str(tmp_path / "held.db")
    db = sqsqlite.connect(path)
    q = db.create_queue("q")
    other = sqlite3.connect(path, isolation_level=None)  # a program that knows nothing of sqsqlite's lock file
    other.execute("BEGIN IMMEDIATE")
    started = time.monotonic()
    with pytest.raises(DatabaseError, match="locked"):
        q.send_message("waits")
    waited = time.monotonic() - started
    assert BUSY <= waited < BUSY * 1.4, waited  # the first BEGIN's wait in SQLite counts; not a second timeout after it
    other.execute("ROLLBACK")
    other.close()
    assert db.store.connection().execute("PRAGMA busy_timeout").fetchone()[0] == BUSY * 1000
    q.send_message("after")
    assert [m.body for m in q.peek()] == ["after"]
    db.close()


def _warm(path, monkeypatch):
    """A database at ``path`` whose busy timeout is BUSY, with this thread's connection and cursor
    made by a first send: (db, its queue "q", the thread's ConnectionState, its real cursor)."""
    from sqsqlite import defaults

    monkeypatch.setattr(defaults, "BUSY_TIMEOUT_SECONDS", BUSY)
    db = sqsqlite.connect(str(path))
    q = db.create_queue("q")
    q.send_message("warm")
    local = db.store._local
    return db, q, local, local.cursor


def test_a_commit_retried_while_busy_waits_one_busy_timeout_in_all_from_its_first_try(tmp_path, monkeypatch):
    # COMMIT's first try fails busy after half the timeout; every later try waits in SQLite's busy
    # handler as long as the connection's busy timeout then says, and fails busy too.
    import time

    db, q, local, real = _warm(tmp_path / "commit.db", monkeypatch)
    tries = []

    class BusyCommits:
        def __getattr__(self, name):
            return getattr(real, name)

        def execute(self, sql, *args):
            if sql != "COMMIT":
                return real.execute(sql, *args)
            waits = BUSY / 2 if not tries else real.execute("PRAGMA busy_timeout").fetchone()[0] / 1000
            tries.append(waits)
            time.sleep(waits)
            raise sqlite3.OperationalError("database is locked")

    local.cursor = BusyCommits()
    started = time.monotonic()
    try:
        with pytest.raises(DatabaseError, match="locked"):
            q.send_message("never committed")
    finally:
        local.cursor = real
    waited = time.monotonic() - started
    assert len(tries) > 1 and BUSY <= waited < BUSY * 1.25, (waited, tries)  # retried, each try within the time left
    assert real.execute("PRAGMA busy_timeout").fetchone()[0] == BUSY * 1000  # the connection's own again
    assert [m.body for m in q.peek()] == ["warm"]
    db.close()


def _sqlite_lock_held_by_another_program(path: str) -> sqlite3.Connection:
    other = sqlite3.connect(path, isolation_level=None)  # knows nothing of sqsqlite's lock file
    other.execute("BEGIN IMMEDIATE")
    return other


def _bounded(db, write) -> bool:
    """``write()`` as the endpoint's event loop makes its calls, the write lock taken up front
    within WAIT_FREE_SECONDS: whether it ran."""
    from sqsqlite import defaults

    return db.store.call_with_lock(defaults.WAIT_FREE_SECONDS, write)[0]


def _busy_timeout_of_reads(db) -> int:
    with db.store.read():
        return db.store.connection().execute("PRAGMA busy_timeout").fetchone()[0]


def test_a_bounded_write_while_another_program_holds_sqlites_write_lock_gives_up_at_once_having_written_nothing(tmp_path, monkeypatch):
    import time

    from sqsqlite import defaults

    monkeypatch.setattr(defaults, "BUSY_TIMEOUT_SECONDS", BUSY)
    db = sqsqlite.connect(str(tmp_path / "wait-free.db"))
    q = db.create_queue("q")
    q.send_message("before")
    other = _sqlite_lock_held_by_another_program(db.store.path)
    started = time.monotonic()
    assert _bounded(db, lambda: q.send_message("never written")) is False
    assert time.monotonic() - started < BUSY / 3  # not the busy timeout: WAIT_FREE_SECONDS, and the lock file's
    assert not db.store.connection().in_transaction and _lock_is_free(db)
    other.execute("ROLLBACK")
    other.close()
    assert [m.body for m in q.peek()] == ["before"]
    assert _bounded(db, lambda: q.send_message("after")) is True  # the lock let go, a bounded write writes
    assert sorted(m.body for m in q.peek()) == ["after", "before"]
    db.close()


def test_writes_that_may_wait_and_reads_keep_the_whole_busy_timeout_after_a_bounded_write_gave_up(tmp_path, monkeypatch):
    import time

    from sqsqlite import defaults

    monkeypatch.setattr(defaults, "BUSY_TIMEOUT_SECONDS", BUSY)
    db = sqsqlite.connect(str(tmp_path / "waits.db"))
    q = db.create_queue("q")
    other = _sqlite_lock_held_by_another_program(db.store.path)
    assert _bounded(db, lambda: q.send_message("never written")) is False
    assert _busy_timeout_of_reads(db) == BUSY * 1000
    assert _bounded(db, lambda: q.send_message("never written")) is False
    started = time.monotonic()
    with pytest.raises(DatabaseError, match="locked"):
        q.send_message("waits")
    waited = time.monotonic() - started
    assert BUSY <= waited < BUSY * 5, waited  # the one busy timeout it had, not the wait-free one; a 5x margin above
    other.execute("ROLLBACK")
    other.close()
    _bounded(db, lambda: q.send_message("sent wait-free"))  # the loop's connection keeps its short timeout between writes
    assert _busy_timeout_of_reads(db) == BUSY * 1000
    assert [m.body for m in q.peek()] == ["sent wait-free"]
    db.close()


def test_an_interrupt_while_a_bounded_write_shortens_the_busy_timeout_leaves_later_writes_and_reads_their_whole_one(tmp_path, monkeypatch):
    import time

    db, q, local, real = _warm(tmp_path / "interrupted.db", monkeypatch)

    class InterruptedOnceShortened:
        def __getattr__(self, name):
            return getattr(real, name)

        def execute(self, sql, *args):
            out = real.execute(sql, *args)
            if sql.startswith("PRAGMA busy_timeout") and real.execute("PRAGMA busy_timeout").fetchone()[0] < BUSY * 1000:
                local.cursor = real
                raise KeyboardInterrupt
            return out

    local.cursor = InterruptedOnceShortened()
    try:
        with pytest.raises(KeyboardInterrupt):
            _bounded(db, lambda: q.send_message("interrupted"))
    finally:
        local.cursor = real
    assert _busy_timeout_of_reads(db) == BUSY * 1000
    other = _sqlite_lock_held_by_another_program(db.store.path)
    started = time.monotonic()
    with pytest.raises(DatabaseError, match="locked"):
        q.send_message("waits")
    assert BUSY <= time.monotonic() - started < BUSY * 5  # its busy timeout, not a shortened one; a 5x margin above
    other.execute("ROLLBACK")
    other.close()
    assert [m.body for m in q.peek()] == ["warm"]
    db.close()


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="counts descriptors through /proc")
def test_databases_dropped_without_close_leave_no_file_descriptors_open(tmp_path):
    import gc

    path = str(tmp_path / "dropped.db")
    sqsqlite.connect(path).create_queue("q")
    gc.collect()
    before = len(os.listdir("/proc/self/fd"))
    for _ in range(50):
        db = sqsqlite.connect(path)
        db.queue("q").send_message("x")  # opens the connection and the writers' lock file
        del db
    gc.collect()
    assert len(os.listdir("/proc/self/fd")) <= before


# ------------------------------------------------------------------ an interrupt at the worst moment


def _lock_is_free(db) -> bool:
    import fcntl

    fd = os.open(db.store._lock_key, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except BlockingIOError:
        return False
    finally:
        os.close(fd)


def test_an_interrupt_just_after_begin_leaves_no_transaction_open_and_no_lock_held(db, queue):
    from sqsqlite.lock import held_by_thread

    queue.send_message("warm")  # this thread's connection and lock descriptor exist
    local = db.store._local
    real = local.cursor

    class InterruptedAfterBegin:
        def execute(self, sql, *args):
            out = real.execute(sql, *args)
            if sql.startswith("BEGIN"):
                local.cursor = real
                raise KeyboardInterrupt
            return out

    local.cursor = InterruptedAfterBegin()
    with pytest.raises(KeyboardInterrupt):
        queue.send_message("interrupted")
    assert not local.conn.in_transaction
    assert _lock_is_free(db) and db.store._lock_key not in held_by_thread()
    queue.send_message("after")  # and this thread goes on writing
    assert sorted(m.body for m in queue.peek()) == ["after", "warm"]


def test_an_interrupt_just_after_a_read_begins_ends_the_read(db, queue, monkeypatch):
    from sqsqlite import store as S

    store = db.store
    real = S.retrying

    def interrupted(*args):
        real(*args)
        raise KeyboardInterrupt

    with monkeypatch.context() as patch:
        patch.setattr(S, "retrying", interrupted)
        with pytest.raises(KeyboardInterrupt):
            with store.read():
                pass
    assert not store.connection().in_transaction
    queue.send_message("after")


def test_an_interrupt_while_letting_the_writers_lock_go_never_leaves_this_thread_skipping_it(db, queue, monkeypatch):
    import fcntl

    from sqsqlite import lock

    queue.send_message("warm")
    real = fcntl.flock
    calls = []

    class Interrupting:
        LOCK_EX, LOCK_NB, LOCK_UN = fcntl.LOCK_EX, fcntl.LOCK_NB, fcntl.LOCK_UN

        @staticmethod
        def flock(fd, op):
            real(fd, op)
            if op == fcntl.LOCK_UN and not calls:
                calls.append(fd)
                raise KeyboardInterrupt

    monkeypatch.setattr(lock, "fcntl", Interrupting)
    with pytest.raises(KeyboardInterrupt):
        queue.send_message("interrupted after the unlock")
    assert db.store._lock_key not in lock.held_by_thread()  # forgotten: the next write takes the lock again
    monkeypatch.setattr(lock, "fcntl", fcntl)
    queue.send_message("after")
    assert _lock_is_free(db)
