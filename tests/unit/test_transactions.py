"""An application's transaction: its own SQL and the queue's operations committed together or not
at all, on sqsqlite's connection, the application's sqlite3 connection, SQLAlchemy's Core
Connection and ORM Session; every rule as outside; nothing shows before the commit."""

import sqlite3
import threading
import time

import pytest

import sqsqlite
from sqsqlite.errors import (
    InvalidParameterValue,
    ReceiptHandleIsInvalid,
    TransactionError,
)


class Boom(Exception):
    pass


def counts(queue):
    a = queue.get_queue_attributes(["All"])
    return (
        int(a["ApproximateNumberOfMessages"]),
        int(a["ApproximateNumberOfMessagesNotVisible"]),
        int(a["ApproximateNumberOfMessagesDelayed"]),
    )


@pytest.fixture
def orders(db):
    with db.transaction() as tx:
        tx.execute("CREATE TABLE orders (id INTEGER PRIMARY KEY, item TEXT NOT NULL UNIQUE)")
    return db


def rows(db_path):
    with sqlite3.connect(db_path) as conn:
        return [r[0] for r in conn.execute("SELECT item FROM orders ORDER BY id")]


# ---------------------------------------------------------------- commit and rollback together


def test_a_send_and_the_applications_insert_commit_together(orders, queue, db_path):
    with orders.transaction() as tx:
        tx.execute("INSERT INTO orders (item) VALUES (?)", ("book",))
        tx.queue("orders").send_message("order book")
    assert rows(db_path) == ["book"]
    assert [m.body for m in queue.receive_message()] == ["order book"]


def test_a_block_that_raises_leaves_neither_the_row_nor_the_message(orders, queue, db_path):
    with pytest.raises(Boom):
        with orders.transaction() as tx:
            tx.execute("INSERT INTO orders (item) VALUES ('pen')")
            queue.send_message("order pen")
            queue.send_message_batch([{"Id": "a", "MessageBody": "x"}, {"Id": "b", "MessageBody": "y"}])
            raise Boom
    assert rows(db_path) == []
    assert counts(queue) == (0, 0, 0)


def test_a_rolled_back_receive_leaves_the_receive_count_and_the_lease_as_they_were(db, queue):
    queue.send_message("m")
    with pytest.raises(Boom):
        with db.transaction():
            [m] = queue.receive_message()
            assert m.receive_count == 1
            raise Boom
    assert counts(queue) == (1, 0, 0)
    [m] = queue.receive_message()
    assert m.receive_count == 1  # the undone receive never counted


def test_a_rolled_back_delete_and_visibility_change_leave_the_message_in_flight(db, queue, clock):
    queue.send_message("m")
    [m] = queue.receive_message(visibility_timeout=30)
    with pytest.raises(Boom):
        with db.transaction():
            m.change_visibility(0)
            queue.delete_message(m.receipt_handle)
            raise Boom
    assert counts(queue) == (0, 1, 0)
    m.delete()  # the handle is still the live one
    assert counts(queue) == (0, 0, 0)


def test_batch_deletes_and_visibility_changes_roll_back_too(db, queue):
    queue.send_message_batch([{"Id": str(i), "MessageBody": str(i)} for i in range(3)])
    got = queue.receive_message(max_number_of_messages=3)
    with pytest.raises(Boom):
        with db.transaction():
            queue.delete_message_batch([{"Id": "a", "ReceiptHandle": got[0].receipt_handle}])
            queue.change_message_visibility_batch([{"Id": "b", "ReceiptHandle": got[1].receipt_handle, "VisibilityTimeout": 0}])
            raise Boom
    assert counts(queue) == (0, 3, 0)


def test_a_receive_a_delete_and_a_send_in_any_mix_commit_as_one(orders, queue, db_path):
    queue.send_message("in")
    other = orders.create_queue("shipments")
    with orders.transaction() as tx:
        [m] = queue.receive_message()
        tx.execute("INSERT INTO orders (item) VALUES (?)", (m.body,))
        other.send_message(f"ship {m.body}")
        m.delete()
    assert rows(db_path) == ["in"]
    assert counts(queue) == (0, 0, 0)
    assert [m.body for m in other.receive_message()] == ["ship in"]


def test_nothing_of_an_open_transaction_is_seen_by_another_connection(db_path, orders, queue):
    seen = []
    with orders.transaction() as tx:
        queue.send_message("m")
        tx.execute("INSERT INTO orders (item) VALUES ('x')")

        def look():
            other = sqsqlite.connect(db_path)
            seen.append(other.queue("orders").peek())
            other.close()

        t = threading.Thread(target=look)
        t.start()
        t.join()
    assert seen == [[]]
    assert len(queue.peek()) == 1


def test_a_nested_block_is_a_savepoint_undone_alone(orders, queue, db_path):
    with orders.transaction() as tx:
        tx.execute("INSERT INTO orders (item) VALUES ('outer')")
        with pytest.raises(Boom):
            with orders.transaction() as inner:
                inner.execute("INSERT INTO orders (item) VALUES ('inner')")
                queue.send_message("inner")
                raise Boom
        queue.send_message("outer")
    assert rows(db_path) == ["outer"]
    assert [m.body for m in queue.receive_message(max_number_of_messages=10)] == ["outer"]


# ---------------------------------------------------------------- errors inside


def test_a_refused_call_changes_nothing_and_the_transaction_goes_on(orders, queue, db_path):
    with orders.transaction() as tx:
        tx.execute("INSERT INTO orders (item) VALUES ('a')")
        with pytest.raises(ReceiptHandleIsInvalid):
            queue.delete_message("not-a-handle")
        with pytest.raises(InvalidParameterValue):
            queue.send_message("x" * 2_000_000)
        queue.send_message("kept")
    assert rows(db_path) == ["a"]
    assert counts(queue) == (1, 0, 0)


def test_an_application_statement_that_fails_is_undone_alone_as_sqlite_does(orders, queue, db_path):
    with orders.transaction() as tx:
        tx.execute("INSERT INTO orders (item) VALUES ('a')")
        with pytest.raises(sqlite3.IntegrityError):
            tx.execute("INSERT INTO orders (item) VALUES ('a')")
        queue.send_message("kept")
    assert rows(db_path) == ["a"]
    assert counts(queue) == (1, 0, 0)


@pytest.mark.parametrize("statement", ["COMMIT", "ROLLBACK", "END", " /* c */ begin immediate", "rollback transaction"])
def test_statements_that_begin_or_end_the_transaction_are_refused_and_change_nothing(orders, queue, db_path, statement):
    with orders.transaction() as tx:
        tx.execute("INSERT INTO orders (item) VALUES ('a')")
        with pytest.raises(TransactionError, match="the block's own"):
            tx.execute(statement)
        tx.execute("SAVEPOINT mine")
        tx.execute("INSERT INTO orders (item) VALUES ('b')")
        tx.execute("ROLLBACK TO mine")
        tx.execute("RELEASE mine")
        queue.send_message("kept")
    assert rows(db_path) == ["a"] and counts(queue) == (1, 0, 0)


def test_a_joined_transaction_its_application_commits_inside_the_block_ends_it_for_sqsqlite(orders, queue, db_path):
    conn = sqlite3.connect(db_path)
    conn.execute("INSERT INTO orders (item) VALUES ('a')")
    with pytest.raises(TransactionError, match="can't go on"):
        with orders.transaction(conn):
            queue.send_message("before")
            conn.commit()  # the application's own commit, inside the block
            queue.send_message("after")  # refused: the transaction has ended
    assert rows(db_path) == ["a"] and counts(queue) == (1, 0, 0)  # what came before the commit is committed
    conn.close()


def test_calls_after_the_applications_commit_inside_a_joined_block_are_refused_once_it_writes_again(orders, queue, db_path):
    # sqlite3 begins a new transaction at the application's next INSERT (at once with Python 3.12's
    # autocommit=False): the connection is in a transaction again, but not the block's.
    conn = sqlite3.connect(db_path)
    conn.execute("INSERT INTO orders (item) VALUES ('a')")
    with pytest.raises(Boom):
        with orders.transaction(conn) as tx:
            queue.send_message("before")
            conn.commit()
            conn.execute("INSERT INTO orders (item) VALUES ('b')")  # the application's new transaction
            with pytest.raises(TransactionError, match="can't go on"):
                queue.send_message("after")
            with pytest.raises(TransactionError, match="can't go on"):
                tx.execute("INSERT INTO orders (item) VALUES ('c')")
            raise Boom
    assert conn.in_transaction  # the application's new transaction, left as it is
    conn.commit()
    assert rows(db_path) == ["a", "b"]
    assert [m.body for m in queue.peek()] == ["before"]  # nothing of the block rode on the application's commit
    conn.close()


def test_a_joined_block_whose_application_committed_and_began_again_raises_at_its_end(orders, queue, db_path):
    conn = sqlite3.connect(db_path)
    conn.execute("INSERT INTO orders (item) VALUES ('a')")
    with pytest.raises(TransactionError, match="can't go on"):
        with orders.transaction(conn):
            queue.send_message("before")
            conn.commit()
            conn.execute("INSERT INTO orders (item) VALUES ('b')")
    assert conn.in_transaction
    conn.rollback()  # the application's own: its 'b', nothing of sqsqlite's
    assert rows(db_path) == ["a"] and [m.body for m in queue.peek()] == ["before"]
    conn.close()


def test_sqlalchemy_session_commit_inside_a_joined_block_refuses_the_later_calls(orders, queue, db_path):
    sa = pytest.importorskip("sqlalchemy")
    from sqlalchemy.orm import Session

    engine = sa.create_engine(f"sqlite:///{db_path}")
    with Session(engine) as session:
        session.execute(sa.text("INSERT INTO orders (item) VALUES ('a')"))
        with pytest.raises(Boom):
            with orders.transaction(session):
                queue.send_message("before")
                session.commit()
                session.execute(sa.text("INSERT INTO orders (item) VALUES ('b')"))
                with pytest.raises(TransactionError, match="can't go on"):
                    queue.send_message("after")
                raise Boom
        session.commit()
    engine.dispose()
    assert rows(db_path) == ["a", "b"] and [m.body for m in queue.peek()] == ["before"]


def test_a_joined_block_leaves_the_applications_foreign_key_checks_as_they_were(orders, queue, db_path):
    conn = sqlite3.connect(db_path)
    conn.execute("PRAGMA foreign_keys=ON")
    conn.execute("CREATE TABLE lines (order_id INTEGER REFERENCES orders(id))")
    conn.commit()
    conn.execute("INSERT INTO orders (item) VALUES ('a')")
    with orders.transaction(conn) as tx:
        queue.send_message("m")
        with pytest.raises(sqlite3.IntegrityError):  # at the statement, not deferred to the commit
            tx.execute("INSERT INTO lines VALUES (99)")
    assert conn.execute("PRAGMA defer_foreign_keys").fetchone() == (0,)
    conn.commit()
    conn.close()
    plain = sqlite3.connect(db_path)
    plain.execute("INSERT INTO orders (item) VALUES ('b')")
    with orders.transaction(plain):
        queue.send_message("n")
    assert plain.execute("PRAGMA defer_foreign_keys").fetchone() == (0,)  # its marker taken off again
    plain.commit()
    plain.close()
    assert counts(queue) == (2, 0, 0)


def test_a_queue_created_in_a_sqlalchemy_savepoint_rolled_back_takes_no_later_send(orders, db_path):
    sa = pytest.importorskip("sqlalchemy")
    engine = sa.create_engine(f"sqlite:///{db_path}")
    with engine.begin() as conn:
        with orders.transaction(conn):
            savepoint = conn.begin_nested()  # SQLAlchemy's own SAVEPOINT and ROLLBACK TO, unseen by sqsqlite
            ghost = orders.create_queue("ghost")
            ghost.send_message("inside")
            savepoint.rollback()
            with pytest.raises(sqsqlite.errors.QueueDoesNotExist):
                ghost.send_message("after")
    engine.dispose()
    assert orders.create_queue("created-later").receive_message() == []  # no orphan row under a reused id


def test_a_rollback_to_run_on_tx_connection_is_seen_by_the_next_call(orders):
    with orders.transaction() as tx:
        tx.connection.execute("SAVEPOINT mine")
        ghost = orders.create_queue("ghost")
        ghost.send_message("inside")
        tx.connection.execute("ROLLBACK TO mine")
        tx.connection.execute("RELEASE mine")
        with pytest.raises(sqsqlite.errors.QueueDoesNotExist):
            ghost.send_message("after")
    assert orders.create_queue("created-later").receive_message() == []


def test_an_in_flight_reservation_undone_by_the_applications_rollback_to_is_not_drawn_on(orders, queue, db_path, monkeypatch):
    from sqsqlite import defaults

    monkeypatch.setattr(defaults, "MAX_IN_FLIGHT_STANDARD", 10)
    monkeypatch.setattr(defaults, "INFLIGHT_BLOCK", 8)
    for i in range(3):
        queue.send_message_batch([{"Id": str(j), "MessageBody": f"{i}-{j}"} for j in range(10)])
    conn = sqlite3.connect(db_path)
    conn.execute("INSERT INTO orders (item) VALUES ('a')")
    with orders.transaction(conn):
        conn.execute("SAVEPOINT mine")
        queue.receive_message()  # reserves a block of 8 of the cap in the queue's row
        conn.execute("ROLLBACK TO mine")  # which this undoes, unseen by sqsqlite
        conn.execute("RELEASE mine")
        for _ in range(7):
            queue.receive_message(visibility_timeout=600)
    conn.commit()
    conn.close()
    with pytest.raises(sqsqlite.errors.OverLimit):
        while queue.receive_message(max_number_of_messages=10, visibility_timeout=600):
            pass
    assert counts(queue)[1] <= 10


def test_a_receive_that_would_wait_is_refused_inside_a_transaction(db, queue):
    queue.send_message("m")
    with db.transaction():
        with pytest.raises(TransactionError, match="can't wait"):
            queue.receive_message(wait_time_seconds=1)
        assert len(queue.receive_message(wait_time_seconds=0)) == 1


def test_the_queues_own_wait_time_does_not_apply_inside_a_transaction(db, clock):
    q = db.create_queue("waits", receive_message_wait_time_seconds=20)
    before = clock.now_ms()
    with db.transaction():
        assert q.receive_message() == []
    assert clock.now_ms() == before  # no wait: the injected clock never moved


def test_a_buffered_queue_refuses_all_but_its_sends_inside_a_transaction(db, queue):
    queue.send_message_batch([{"Id": str(i), "MessageBody": str(i)} for i in range(3)])
    with queue.buffered() as buffered:
        [m] = buffered.receive_message()
        with db.transaction():
            for call in (
                buffered.receive_message,
                lambda: buffered.delete_message(m),
                lambda: buffered.delete_message_batch([{"Id": "a", "ReceiptHandle": m.receipt_handle}]),
                lambda: buffered.change_message_visibility(m.receipt_handle, 5),
                buffered.flush,
                buffered.flush_due,
                buffered.close,
            ):
                with pytest.raises(TransactionError, match="buffered"):
                    call()


def test_a_consumer_refuses_to_run_inside_a_transaction_rather_than_wait_for_it(db, queue):
    from sqsqlite.consumer import Consumer, consume

    queue.send_message("m")
    with db.transaction():
        for transactional in (False, True):
            with pytest.raises(TransactionError, match="consumer"):
                consume(queue, lambda *_: None, stop_when_empty=True, transaction=transactional)
        with pytest.raises(TransactionError, match="consumer"):
            Consumer(queue, lambda *_: None).run_once()
    assert counts(queue) == (1, 0, 0)


def test_a_rolled_back_transaction_never_undoes_a_buffered_delete_made_before_it(db, queue, clock):
    queue.send_message_batch([{"Id": str(i), "MessageBody": f"m{i}"} for i in range(2)])
    with queue.buffered(max_batch_open_ms=60_000) as buffered:
        [m] = buffered.receive_message()
        m.delete()  # acknowledged: its delete waits in the buffer
        with pytest.raises(Boom):
            with db.transaction():
                with pytest.raises(TransactionError):
                    buffered.receive_message()
                raise Boom
    clock.advance(3600)
    assert [x.body for x in queue.receive_message(max_number_of_messages=10)] == ["m1"]


@pytest.mark.slow
def test_a_buffered_flusher_due_during_a_transaction_never_deadlocks_it(db_path):
    real = sqsqlite.connect(db_path)  # the system clock: the flusher thread runs for real
    q = real.create_queue("flushed")
    q.send_message_batch([{"Id": str(i), "MessageBody": str(i)} for i in range(3)])
    buffered = q.buffered(max_batch_open_ms=20)
    [m] = buffered.receive_message()
    outcome = []

    def work():
        with real.transaction():
            m.delete()  # the Message's queue is the buffer
            time.sleep(0.1)  # the flusher falls due meanwhile and waits for the lock

    def guarded():
        try:
            work()
        except TransactionError as exc:
            outcome.append(exc)

    t = threading.Thread(target=guarded)
    t.start()
    t.join(timeout=10)
    assert not t.is_alive() and len(outcome) == 1
    buffered.close()
    real.close()


def test_a_refused_receive_leaves_the_transaction_usable(orders, queue, db_path, monkeypatch):
    from sqsqlite import defaults

    monkeypatch.setattr(defaults, "MAX_IN_FLIGHT_STANDARD", 1)
    queue.send_message_batch([{"Id": str(i), "MessageBody": str(i)} for i in range(2)])
    queue.receive_message()
    with orders.transaction() as tx:
        tx.execute("INSERT INTO orders (item) VALUES ('a')")
        with pytest.raises(sqsqlite.errors.OverLimit):
            queue.receive_message()
        queue.send_message("kept")
    assert rows(db_path) == ["a"] and counts(queue) == (2, 1, 0)


def test_a_nested_block_saves_the_transaction_from_a_call_that_failed_after_writing(orders, queue, db_path, monkeypatch):
    from sqsqlite.core import sending

    original = sending._insert_one  # a single send to a standard queue

    def interrupted(*args, **kwargs):
        original(*args, **kwargs)
        raise RuntimeError("interrupted after its INSERT")

    with orders.transaction() as tx:
        tx.execute("INSERT INTO orders (item) VALUES ('outer')")
        with pytest.raises(TransactionError):
            with orders.transaction():
                monkeypatch.setattr(sending, "_insert_one", interrupted)
                with pytest.raises(RuntimeError):
                    queue.send_message("half")
                monkeypatch.setattr(sending, "_insert_one", original)
        queue.send_message("after")
    assert rows(db_path) == ["outer"]
    assert [m.body for m in queue.receive_message(max_number_of_messages=10)] == ["after"]


def test_another_database_on_the_file_in_the_same_thread_is_refused_at_once(orders, queue, db_path):
    other = sqsqlite.connect(db_path)
    q = other.queue("orders")
    with orders.transaction():
        with pytest.raises(TransactionError, match="another Database"):
            q.send_message("would wait for itself")
    q.send_message("after")
    other.close()


def test_a_write_after_a_joined_block_before_the_applications_commit_is_refused_at_once(orders, queue, db_path):
    conn = sqlite3.connect(db_path)
    conn.execute("INSERT INTO orders (item) VALUES ('a')")
    with orders.transaction(conn):
        queue.send_message("joined")
    with pytest.raises(TransactionError, match="Commit or roll it back first"):
        queue.send_message("would wait for the application's lock")
    conn.commit()
    queue.send_message("after the commit")
    assert counts(queue) == (2, 0, 0)
    conn.close()


def test_a_connection_with_another_text_factory_is_refused(orders, db_path):
    conn = sqlite3.connect(db_path)
    conn.text_factory = bytes
    with pytest.raises(TransactionError, match="text_factory"):
        with orders.transaction(conn):
            pass
    conn.close()


def test_a_transaction_is_refused_from_another_thread(orders):
    caught = []
    with orders.transaction() as tx:
        t = threading.Thread(target=lambda: caught.append(pytest.raises(TransactionError, tx.execute, "SELECT 1")))
        t.start()
        t.join()
    assert len(caught) == 1


def test_a_move_task_started_in_a_rolled_back_transaction_never_runs(db, clock):
    dlq = db.create_queue("dead")
    db.create_queue("src", redrive_policy={"deadLetterTargetArn": dlq.arn, "maxReceiveCount": 1})
    dlq.send_message("m")
    with pytest.raises(Boom):
        with db.transaction():
            db.start_message_move_task(dlq.arn)
            raise Boom
    assert db.tasks == [] and db.list_message_move_tasks(dlq.arn) == []


def test_a_background_move_task_is_refused_in_a_joined_block_and_one_run_after_the_commit_moves(db, db_path):
    dlq = db.create_queue("dead")
    src = db.create_queue("src", redrive_policy={"deadLetterTargetArn": dlq.arn, "maxReceiveCount": 1})
    dlq.send_message("m")
    conn = sqlite3.connect(db_path)
    conn.execute("CREATE TABLE mine (x)")
    conn.execute("INSERT INTO mine VALUES (1)")
    with db.transaction(conn):
        with pytest.raises(TransactionError, match="background=False"):
            db.start_message_move_task(dlq.arn)  # its thread would start at a commit sqsqlite never sees
        handle = db.start_message_move_task(dlq.arn, src.arn, background=False)
    conn.commit()
    conn.close()
    assert db.tasks == []
    assert db.run_message_move_task(handle).status == "COMPLETED"
    assert [m.body for m in src.receive_message()] == ["m"]


def test_a_move_task_started_in_a_rolled_back_nested_block_never_runs(db, clock):
    dlq = db.create_queue("dead")
    db.create_queue("src", redrive_policy={"deadLetterTargetArn": dlq.arn, "maxReceiveCount": 1})
    dlq.send_message("m")
    with db.transaction():
        with pytest.raises(Boom):
            with db.transaction():
                db.start_message_move_task(dlq.arn)
                raise Boom
        db.queue("src").send_message("kept")
    assert db.tasks == [] and db.list_message_move_tasks(dlq.arn) == []
    assert [m.body for m in db.queue("src").peek()] == ["kept"]


def test_a_transaction_is_used_inside_its_block_only(db):
    tx = db.transaction()
    with pytest.raises(TransactionError):
        tx.execute("SELECT 1")
    with tx:
        assert tx.execute("SELECT 1").fetchone() == (1,)
    with pytest.raises(TransactionError):
        tx.queue("orders")


# ---------------------------------------------------------------- every rule holds inside


def test_fifo_sends_in_one_transaction_keep_their_order_and_sequence(db):
    q = db.create_queue("o.fifo", fifo_queue="true", content_based_deduplication="true")
    with db.transaction():
        sent = [q.send_message(f"m{i}", message_group_id="g").sequence_number for i in range(3)]
    assert sent == sorted(sent)
    got = q.receive_message(max_number_of_messages=10)
    assert [m.body for m in got] == ["m0", "m1", "m2"]


def test_a_rolled_back_fifo_send_does_not_hold_its_deduplication_id(db):
    q = db.create_queue("d.fifo", fifo_queue="true")
    with pytest.raises(Boom):
        with db.transaction():
            q.send_message("first", message_group_id="g", message_deduplication_id="d1")
            raise Boom
    q.send_message("again", message_group_id="g", message_deduplication_id="d1")
    assert [m.body for m in q.receive_message()] == ["again"]


def test_a_deduplicated_send_inside_a_transaction_returns_the_first_ones_id(db):
    q = db.create_queue("e.fifo", fifo_queue="true")
    with db.transaction():
        a = q.send_message("one", message_group_id="g", message_deduplication_id="d")
        b = q.send_message("two", message_group_id="g", message_deduplication_id="d")
    assert a.message_id == b.message_id
    assert counts(q) == (1, 0, 0)


def test_a_dead_letter_move_inside_a_rolled_back_transaction_is_undone(db, clock):
    dlq = db.create_queue("dead")
    q = db.create_queue("work", redrive_policy={"deadLetterTargetArn": dlq.arn, "maxReceiveCount": 1})
    q.send_message("poison")
    q.receive_message(visibility_timeout=1)
    clock.advance(2)
    with pytest.raises(Boom):
        with db.transaction():
            assert q.receive_message() == []  # moved past maxReceiveCount
            assert counts(dlq) == (1, 0, 0)
            raise Boom
    assert counts(dlq) == (0, 0, 0)
    assert counts(q) == (1, 0, 0)


def test_fair_queue_groups_are_received_inside_a_transaction_as_outside(db):
    q = db.create_queue("fair")
    with db.transaction():
        for i in range(3):
            q.send_message(f"t{i}", message_group_id=f"tenant-{i}")
        got = q.receive_message(max_number_of_messages=10, message_system_attribute_names=["MessageGroupId"])
    assert sorted(m.message_group_id for m in got) == ["tenant-0", "tenant-1", "tenant-2"]


def test_delays_and_retention_run_on_the_clock_inside_as_outside(db, queue, clock):
    with db.transaction():
        queue.send_message("later", delay_seconds=5)
        assert queue.receive_message() == []
    assert counts(queue) == (0, 0, 1)
    clock.advance(5)
    assert [m.body for m in queue.receive_message()] == ["later"]


# ---------------------------------------------------------------- the application's connections


def test_on_an_applications_sqlite3_connection_with_no_transaction_sqsqlite_begins_and_commits(orders, queue, db_path):
    conn = sqlite3.connect(db_path)
    with orders.transaction(conn) as tx:
        assert tx.connection is conn
        conn.execute("INSERT INTO orders (item) VALUES ('own')")
        queue.send_message("own")
    assert not conn.in_transaction
    assert rows(db_path) == ["own"]
    assert counts(queue) == (1, 0, 0)
    conn.close()


def test_on_an_applications_open_transaction_sqsqlite_joins_and_the_application_commits(orders, queue, db_path):
    conn = sqlite3.connect(db_path)
    conn.execute("INSERT INTO orders (item) VALUES ('joined')")  # sqlite3 began a transaction
    with orders.transaction(conn):
        queue.send_message("joined")
    assert conn.in_transaction
    assert counts(queue) == (0, 0, 0)  # not before the application's commit
    conn.commit()
    assert counts(queue) == (1, 0, 0)
    assert rows(db_path) == ["joined"]
    conn.close()


def test_an_application_rollback_after_a_joined_block_undoes_the_send(orders, queue, db_path):
    conn = sqlite3.connect(db_path)
    conn.execute("INSERT INTO orders (item) VALUES ('gone')")
    with orders.transaction(conn):
        queue.send_message("gone")
    conn.rollback()
    assert rows(db_path) == [] and counts(queue) == (0, 0, 0)
    conn.close()


def test_a_joined_block_that_raises_undoes_its_own_part_only(orders, queue, db_path):
    conn = sqlite3.connect(db_path)
    conn.execute("INSERT INTO orders (item) VALUES ('kept')")
    with pytest.raises(Boom):
        with orders.transaction(conn):
            queue.send_message("undone")
            raise Boom
    conn.commit()
    assert rows(db_path) == ["kept"] and counts(queue) == (0, 0, 0)
    conn.close()


def test_the_applications_row_factory_and_busy_timeout_stay_its_own(orders, queue, db_path):
    conn = sqlite3.connect(db_path, timeout=2.5)
    conn.row_factory = lambda cursor, row: {"item": row[0]}
    with orders.transaction(conn) as tx:
        tx.execute("INSERT INTO orders (item) VALUES ('r')")
        assert tx.execute("SELECT item FROM orders").fetchall() == [{"item": "r"}]
        queue.send_message("m")
    assert conn.row_factory is not sqlite3.Row
    assert conn.execute("PRAGMA busy_timeout").fetchone() == {"item": 2500}
    conn.close()


def test_rows_come_as_the_connections_row_factory_makes_them_whatever_its_cursors_set(orders, db_path):
    class DictCursor(sqlite3.Cursor):
        def __init__(self, *args):
            super().__init__(*args)
            self.row_factory = lambda cursor, row: {"one": row[0]}

    class AppConnection(sqlite3.Connection):
        def cursor(self, factory=DictCursor):  # type: ignore[override]
            return super().cursor(factory)

    conn = sqlite3.connect(db_path, factory=AppConnection)
    with orders.transaction(conn) as tx:
        assert tx.execute("SELECT 1").fetchall() == [(1,)]
    conn.close()


def test_statement_texts_are_not_kept_once_the_database_is_closed(tmp_path):
    import gc
    import tracemalloc

    db = sqsqlite.connect(str(tmp_path / "texts.db"))
    pad = "x" * 100_000
    tracemalloc.start()
    try:
        with db.transaction() as tx:
            for i in range(50):  # 5 MB of texts, each new; SQLite refuses them, so sqlite3 keeps none
                with pytest.raises(sqlite3.OperationalError):
                    tx.execute(f"SELECT {i}, '{pad}' FROM nowhere")
        db.close()
        gc.collect()
        assert tracemalloc.get_traced_memory()[0] < 1_000_000
    finally:
        tracemalloc.stop()


def test_a_connection_to_another_file_is_refused(db, tmp_path):
    conn = sqlite3.connect(str(tmp_path / "other.db"))
    with pytest.raises(TransactionError, match="one file"):
        with db.transaction(conn):
            pass
    conn.close()


def test_a_transaction_that_began_as_a_read_and_is_overtaken_is_refused_up_front(orders, queue, db_path):
    conn = sqlite3.connect(db_path, isolation_level=None)
    conn.execute("BEGIN")
    conn.execute("SELECT count(*) FROM orders").fetchone()
    queue.send_message("another connection writes meanwhile")
    with pytest.raises(TransactionError, match="BEGIN IMMEDIATE"):
        with orders.transaction(conn):
            pass
    conn.execute("ROLLBACK")
    conn.close()


def test_sqlalchemy_core_connection_commits_both_with_engine_begin(orders, queue, db_path):
    sa = pytest.importorskip("sqlalchemy")
    engine = sa.create_engine(f"sqlite:///{db_path}")
    with engine.begin() as conn:
        conn.execute(sa.text("INSERT INTO orders (item) VALUES ('core')"))
        with orders.transaction(conn):
            queue.send_message("core")
    assert rows(db_path) == ["core"] and counts(queue) == (1, 0, 0)
    with pytest.raises(Boom):
        with engine.begin() as conn:
            with orders.transaction(conn):
                queue.send_message("rolled back")
            conn.execute(sa.text("INSERT INTO orders (item) VALUES ('rolled back')"))
            raise Boom
    assert rows(db_path) == ["core"] and counts(queue) == (1, 0, 0)
    engine.dispose()


def test_a_sqlalchemy_connection_used_first_by_the_block_commits_the_send_with_its_commit(orders, queue, db_path):
    # engine.connect() has begun nothing until its first statement: the block begins SQLAlchemy's
    # transaction, so conn.commit() commits the send (not a no-op, the pool's reset then undoing it).
    sa = pytest.importorskip("sqlalchemy")
    engine = sa.create_engine(f"sqlite:///{db_path}")
    with engine.connect() as conn:
        with orders.transaction(conn):
            queue.send_message("the connection's first use")
        conn.commit()
    with engine.connect() as conn:
        with orders.transaction(conn):
            queue.send_message("never committed")
    assert counts(queue) == (1, 0, 0)
    engine.dispose()


def test_sqlalchemy_orm_session_commits_the_send_with_its_own_writes(orders, queue, db_path):
    sa = pytest.importorskip("sqlalchemy")
    from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column

    class Base(DeclarativeBase):
        pass

    class Order(Base):
        __tablename__ = "orders"
        id: Mapped[int] = mapped_column(primary_key=True)
        item: Mapped[str]

    engine = sa.create_engine(f"sqlite:///{db_path}")
    with Session(engine) as session, session.begin():
        session.add(Order(item="orm"))
        with orders.transaction(session):
            queue.send_message("orm")
    assert rows(db_path) == ["orm"] and counts(queue) == (1, 0, 0)
    with pytest.raises(Boom):
        with Session(engine) as session, session.begin():
            session.add(Order(item="never"))
            with orders.transaction(session):
                queue.send_message("never")
            raise Boom
    assert rows(db_path) == ["orm"] and counts(queue) == (1, 0, 0)
    engine.dispose()


def test_a_scoped_session_is_this_threads_session(orders, queue, db_path):
    sa = pytest.importorskip("sqlalchemy")
    from sqlalchemy.orm import scoped_session, sessionmaker

    engine = sa.create_engine(f"sqlite:///{db_path}")
    session = scoped_session(sessionmaker(engine))
    with session.begin():
        session.execute(sa.text("INSERT INTO orders (item) VALUES ('scoped')"))
        with orders.transaction(session):
            queue.send_message("scoped")
    session.remove()
    assert rows(db_path) == ["scoped"] and counts(queue) == (1, 0, 0)
    engine.dispose()


def test_sqlalchemy_in_autocommit_isolation_is_refused(orders, db_path):
    sa = pytest.importorskip("sqlalchemy")
    engine = sa.create_engine(f"sqlite:///{db_path}", isolation_level="AUTOCOMMIT")
    with engine.connect() as conn:
        with pytest.raises(TransactionError, match="AUTOCOMMIT"):
            with orders.transaction(conn):
                pass
    engine.dispose()


def test_something_else_than_a_connection_is_a_type_error(db):
    with pytest.raises(TypeError):
        with db.transaction("app.db"):
            pass


# ---------------------------------------------------------------- wake-ups after the commit


def test_a_long_poll_is_woken_by_the_commit_and_finds_the_message(db_path, clock):
    producer = sqsqlite.connect(db_path)
    queue = producer.create_queue("polled")
    consumer = sqsqlite.connect(db_path)
    got = []
    started = threading.Event()

    def poll():
        started.set()
        got.extend(consumer.queue("polled").receive_message(wait_time_seconds=10))

    t = threading.Thread(target=poll)
    t.start()
    started.wait()
    with producer.transaction():
        queue.send_message("after commit")
    t.join(timeout=10)
    assert [m.body for m in got] == ["after commit"]
    producer.close()
    consumer.close()


# ---------------------------------------------------------------- the transactional consumer


def test_a_transactional_handlers_writes_and_the_delete_commit_together(orders, queue, db_path):
    queue.send_message_batch([{"Id": str(i), "MessageBody": f"item{i}"} for i in range(3)])

    def handle(message, tx):
        tx.execute("INSERT INTO orders (item) VALUES (?)", (message.body,))

    outcome = sqsqlite.consume(queue, handle, transaction=True, wait_time_seconds=0, stop_when_empty=True)
    assert outcome.processed == 3
    assert rows(db_path) == ["item0", "item1", "item2"]
    assert counts(queue) == (0, 0, 0)


def test_a_transactional_handler_that_raises_leaves_no_write_and_the_message_backs_off(orders, queue, db_path, clock):
    queue.send_message("bad")

    def handle(message, tx):
        tx.execute("INSERT INTO orders (item) VALUES (?)", (message.body,))
        raise Boom

    outcome = sqsqlite.consume(queue, handle, transaction=True, wait_time_seconds=0, max_receives=1)
    assert outcome.failed == 1
    assert rows(db_path) == []
    assert counts(queue) == (0, 1, 0)  # backing off, then back
    clock.advance(6)
    [m] = queue.receive_message()
    assert m.receive_count == 2


def test_a_transactional_consumer_sends_to_another_queue_exactly_with_its_delete(orders, queue):
    out = orders.create_queue("out")
    queue.send_message("a")

    def handle(message, tx):
        tx.queue("out").send_message(message.body.upper())

    sqsqlite.consume(queue, handle, transaction=True, wait_time_seconds=0, stop_when_empty=True)
    assert [m.body for m in out.receive_message()] == ["A"]
    assert counts(queue) == (0, 0, 0)


def test_the_transaction_option_is_a_bool(queue):
    with pytest.raises(TypeError):
        sqsqlite.Consumer(queue, print, transaction="yes")


def test_a_call_that_fails_after_writing_part_of_its_work_dooms_the_transaction(orders, queue, db_path, monkeypatch):
    from sqsqlite.core import sending

    original = sending._insert_one  # a single send to a standard queue

    def interrupted(*args, **kwargs):
        original(*args, **kwargs)
        raise RuntimeError("interrupted after its INSERT")

    with pytest.raises(TransactionError, match="rolled back"):
        with orders.transaction() as tx:
            tx.execute("INSERT INTO orders (item) VALUES ('a')")
            monkeypatch.setattr(sending, "_insert_one", interrupted)
            with pytest.raises(RuntimeError):
                queue.send_message("half")
            monkeypatch.setattr(sending, "_insert_one", original)
            with pytest.raises(TransactionError):
                queue.send_message("after")
            with pytest.raises(TransactionError):
                tx.execute("INSERT INTO orders (item) VALUES ('b')")
    assert rows(db_path) == [] and counts(queue) == (0, 0, 0)


def test_a_visibility_change_past_the_12_hour_cap_is_refused_and_the_transaction_goes_on(db, queue):
    queue.send_message("m")
    [m] = queue.receive_message()
    with db.transaction():
        with pytest.raises(sqsqlite.errors.SQSError):
            m.change_visibility(43_201)
        m.change_visibility(60)
        queue.send_message("kept")
    assert counts(queue) == (1, 1, 0)


def test_a_database_closed_inside_a_transaction_says_so_and_commits_nothing(db_path):
    db = sqsqlite.connect(db_path)
    q = db.create_queue("closing")
    with pytest.raises(sqsqlite.errors.DatabaseError, match="closed inside the transaction"):
        with db.transaction():
            q.send_message("never")
            db.close()
    again = sqsqlite.connect(db_path)
    assert counts(again.queue("closing")) == (0, 0, 0)
    again.close()


@pytest.mark.parametrize("joined", [True, False], ids=["joined", "begun by sqsqlite"])
def test_a_database_closed_inside_a_block_on_the_applications_connection_undoes_the_block_there(db_path, joined):
    db = sqsqlite.connect(db_path)
    q = db.create_queue("closing")
    conn = sqlite3.connect(db_path, timeout=2.5)
    conn.execute("CREATE TABLE mine (x)")
    conn.commit()
    if joined:
        conn.execute("INSERT INTO mine VALUES (1)")
    with pytest.raises(sqsqlite.errors.DatabaseError, match="closed inside the transaction"):
        with db.transaction(conn):
            q.send_message("never")
            db.close()
    assert conn.execute("PRAGMA busy_timeout").fetchone() == (2500,)  # the application's own again
    assert conn.in_transaction is joined  # a joined one is the application's, and goes on
    conn.commit()
    assert conn.execute("SELECT count(*) FROM messages").fetchone() == (0,)
    assert conn.execute("SELECT count(*) FROM mine").fetchone() == (int(joined),)
    conn.close()


def test_one_queue_shared_with_another_thread_is_in_the_transaction_on_the_opening_thread_only(db, queue):
    # A queue's context holds no transaction (docs/explanation/architecture.md): the store runs the calls of
    # the thread that opened the block inside it; another thread's call on the same Queue
    # waits for the block and commits on its own, whatever the block's fate.
    sent = threading.Event()

    def other_thread() -> None:
        queue.send_message("another thread's")
        sent.set()

    thread = threading.Thread(target=other_thread)
    with pytest.raises(RuntimeError):
        with db.transaction():
            queue.send_message("in the block")
            thread.start()
            assert not sent.wait(0.2)  # held by the block's write lock, not joined to it
            raise RuntimeError("roll the block back")
    thread.join(10)
    assert [m.body for m in queue.peek()] == ["another thread's"]
