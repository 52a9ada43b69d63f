"""Schema and migrations: alembic alone builds the schema, and it matches the metadata."""

import json
import sqlite3

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import create_engine

import sqsqlite
from sqsqlite import migrate
from sqsqlite.defaults import QUEUE_ID_SHIFT
from sqsqlite.schema import INDEXED, metadata
from sqsqlite.store import HEAD_REVISION, Store


def _diff(path):
    engine = create_engine(f"sqlite:///{path}")
    try:
        with engine.connect() as conn:
            context = MigrationContext.configure(conn, opts={"compare_type": True, "compare_server_default": True})
            return compare_metadata(context, metadata)
    finally:
        engine.dispose()


def _migrate(path, revision="head"):
    """Bring the file at ``path`` down to ``revision``, or up to head."""
    store = Store(str(path))
    try:
        if revision == "head":
            migrate.upgrade(store)
        else:
            migrate.downgrade(store, revision)
    finally:
        store.close()


def _indexes(path):
    with sqlite3.connect(path) as conn:
        return {
            (row[0], row[1], row[2])
            for row in conn.execute("SELECT name, tbl_name, sql FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL")
        }


def test_upgrading_an_empty_database_gives_exactly_the_metadata_indexes_included(tmp_path):
    path = tmp_path / "fresh.db"
    store = Store(str(path))
    store.close()
    assert _diff(path) == []
    names = {name for name, _, _ in _indexes(path)}
    expected = {ix.name for table in metadata.tables.values() for ix in table.indexes}
    assert expected <= names


def test_opening_a_new_file_migrates_it_to_head(tmp_path):
    db = sqsqlite.connect(tmp_path / "new.db")
    try:
        assert migrate.current(db.store) == HEAD_REVISION
    finally:
        db.close()


def test_history_lists_every_revision_newest_first_and_head_matches_the_store():
    revisions = migrate.history()
    assert revisions[0][0] == HEAD_REVISION
    assert revisions[-1][1] is None  # the first revision revises nothing
    # Each revision revises the one after it in the list: one straight line, no branches.
    for (_rev, down, _), (older, _, _) in zip(revisions, revisions[1:]):
        assert down == older
    assert all(doc for _, _, doc in revisions)


def test_upgrade_downgrade_and_upgrade_again_keep_every_message(tmp_path, clock):
    path = tmp_path / "roundtrip.db"
    db = sqsqlite.connect(path, clock=clock)
    q = db.create_queue("keep", visibility_timeout=30)
    sent = {q.send_message(f"m{i}", message_attributes={"n": i}).message_id for i in range(25)}
    [held] = q.receive_message()  # one in flight, so state columns survive too
    before = {r["MessageId"]: r for r in q.export_messages()}
    db.close()

    store = Store(str(path))
    migrate.downgrade(store, "-1")
    assert migrate.current(store) != HEAD_REVISION
    migrate.upgrade(store)
    assert migrate.current(store) == HEAD_REVISION
    store.close()
    assert _diff(path) == []

    db = sqsqlite.connect(path, clock=clock)
    try:
        q = db.queue("keep")
        after = {r["MessageId"]: r for r in q.export_messages()}
        assert set(after) == sent
        assert after == before
        # The receipt secret survived too: the handle issued before the round trip still deletes.
        q.delete_message(held.receipt_handle)
        assert len(list(q.export_messages())) == 24
    finally:
        db.close()


def test_downgrading_to_base_and_upgrading_again_rebuilds_the_schema(tmp_path):
    path = tmp_path / "base.db"
    store = Store(str(path))
    migrate.downgrade(store, "base")
    assert migrate.current(store) is None
    migrate.upgrade(store)
    store.close()
    assert _diff(path) == []


def test_a_downgrade_that_would_drop_tables_holding_rows_is_refused_without_force_and_changes_nothing(tmp_path, clock):
    from tests.reliability.snapshots import snapshot

    path = str(tmp_path / "kept.db")
    db = sqsqlite.connect(path, clock=clock)
    q = db.create_queue("q.fifo", attributes={"FifoQueue": "true"})
    q.send_message("kept", message_group_id="g", message_deduplication_id="d")  # a row of fifo_dedup, which 0002 brought
    db.close()
    before = snapshot(path)
    store = Store(path, migrate=False)
    try:
        with pytest.raises(migrate.WouldDropData) as refused:
            migrate.downgrade(store, "base")
        assert refused.value.tables == ["fifo_dedup", "messages", "meta", "queues"]
        assert "every queue and message; nothing was changed" in refused.value.message
        with pytest.raises(migrate.WouldDropData) as refused:
            migrate.downgrade(store, "0001")
        assert refused.value.tables == ["fifo_dedup"]
        assert migrate.current(store) == HEAD_REVISION
        assert snapshot(path) == before  # the refused downgrades left every row where it was
        migrate.downgrade(store, "0002")  # drops no table: needs no force
        migrate.downgrade(store, "base", force=True)
        assert migrate.current(store) is None
    finally:
        store.close()


def test_downgrading_past_0004_stores_the_digests_send_returned(tmp_path, clock):
    path = tmp_path / "digests.db"
    db = sqsqlite.connect(path, clock=clock)
    q = db.create_queue("d")
    attrs = {"s": {"DataType": "String", "StringValue": "é"}, "b": {"DataType": "Binary", "BinaryValue": b"\x00\xff"}}
    results = [q.send_message("plain"), q.send_message("ünïcode", message_attributes=attrs)]
    for n in range(120):  # past one page of the downgrade's walk
        results += q.send_message_batch([{"Id": str(i), "MessageBody": f"m{n}.{i}"} for i in range(10)]).successful
    db.close()

    _migrate(path, "0003")
    with sqlite3.connect(path) as conn:
        stored = {r[0]: (r[1], r[2]) for r in conn.execute("SELECT message_id, md5_of_body, md5_of_attributes FROM messages")}
    assert stored == {r.message_id: (r.md5_of_message_body, r.md5_of_message_attributes) for r in results}
    assert results[0].md5_of_message_attributes is None


def _table_sql(path, name):
    with sqlite3.connect(path) as conn:
        return conn.execute("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?", (name,)).fetchone()[0]


def test_a_new_database_never_gives_a_deleted_messages_position_out_again(tmp_path, clock):
    path = tmp_path / "fresh.db"
    db = sqsqlite.connect(path, clock=clock)
    try:
        q = db.create_queue("q")
        for body in "abc":
            q.send_message(body)
        positions = [p for p, _ in q.message_records()]
        for m in q.receive_message(max_number_of_messages=10):
            m.delete()  # the newest among them: SQLite's plain rowid would hand its id out again
        q.send_message("d")
        [(position, _)] = list(q.message_records())
    finally:
        db.close()
    assert position > max(positions)
    assert "AUTOINCREMENT" not in _table_sql(path, "messages")  # the high-water mark does it (0013)


_RANGE = 1 << QUEUE_ID_SHIFT  # queue q's message ids: q * _RANGE on (0014)


def _marks(path):
    """message_positions' rows: (range, highest id a deletion took from its top); at 0013 one, row 1."""
    with sqlite3.connect(path) as conn:
        return conn.execute("SELECT id, highest_removed FROM message_positions ORDER BY id").fetchall()


def _columns(conn, table):
    return [r[1] for r in conn.execute(f"PRAGMA table_info({table})")]


def _messages(conn):
    """Every message row in id order, each column but moved_from (0014's, which a downgrade drops)."""
    names = [c for c in _columns(conn, "messages") if c != "moved_from"]
    return conn.execute(f"SELECT {', '.join(names)} FROM messages ORDER BY id").fetchall()


def _moved_from(path):
    """0014's moved_from of every row that has one, by id; and whether ix_messages_moved_from exists."""
    with sqlite3.connect(path) as conn:
        moved = dict(conn.execute("SELECT id, moved_from FROM messages WHERE moved_from IS NOT NULL"))
        indexed = conn.execute("SELECT sql FROM sqlite_master WHERE name = 'ix_messages_moved_from'").fetchone()
    return moved, indexed is not None


def test_upgrading_from_0007_keeps_every_row_index_and_the_highest_id_given_out(tmp_path, clock):
    path = tmp_path / "old.db"
    db = sqsqlite.connect(path, clock=clock)
    q = db.create_queue("keep")
    fifo = db.create_queue("keep.fifo", attributes={"FifoQueue": "true"})
    for i in range(5):
        q.send_message(f"m{i}", message_group_id=f"g{i % 2}")
        fifo.send_message(f"f{i}", message_group_id=f"g{i % 2}", message_deduplication_id=f"d{i}")
    [held] = q.receive_message()
    db.close()
    _migrate(path, "0007")
    assert "AUTOINCREMENT" not in _table_sql(path, "messages")
    with sqlite3.connect(path) as conn:
        rows_before = conn.execute("SELECT * FROM messages ORDER BY id").fetchall()
        names = _columns(conn, "messages")
    indexes_before = {i for i in _indexes(path) if i[1] == "messages"}

    _migrate(path)
    assert _diff(path) == []
    with sqlite3.connect(path) as conn:
        assert _columns(conn, "messages") == [*names, "moved_from"]
        assert conn.execute(f"SELECT {', '.join(names)} FROM messages ORDER BY id").fetchall() == rows_before
    assert _moved_from(path) == ({}, True)  # no row tells of a move: none took a new id
    # 0008's sequence, carried by 0013, is the mark of the range it lies in (keep.fifo's, the
    # newest queue's); range 1's own mark was not kept below 0013.
    highest = rows_before[-1][0]
    assert _marks(path) == [(1, 0), (highest >> QUEUE_ID_SHIFT, highest)]
    assert highest >> QUEUE_ID_SHIFT == 2
    # Every index as it was, but ix_messages_visible, which 0014 made partial, and its new one.
    assert {i for i in _indexes(path) if i[1] == "messages" and i[0] not in ("ix_messages_visible", "ix_messages_moved_from")} == {
        i for i in indexes_before if i[0] != "ix_messages_visible"
    }
    db = sqsqlite.connect(path, clock=clock)
    try:
        db.queue("keep").delete_message(held.receipt_handle)  # state columns came through
        bodies = [m.body for m in db.queue("keep.fifo").receive_message(max_number_of_messages=10)]
        assert [b for b in bodies if int(b[1]) % 2 == 0] == ["f0", "f2", "f4"]  # each group in send order
        assert [b for b in bodies if int(b[1]) % 2 == 1] == ["f1", "f3"]
    finally:
        db.close()


def test_upgrading_a_file_whose_copy_kept_a_position_past_its_rows_gives_no_new_message_a_position_it_passed(tmp_path, clock):
    path = tmp_path / "copied.db"
    db = sqsqlite.connect(path, clock=clock)
    q = db.create_queue("jobs")
    for i in range(5):
        q.send_message(f"m{i}")
    positions = [p for p, _ in q.message_records()]
    # A copy sent all five (its position, and one taken ahead out of turn); the newest two were
    # then deleted. A FIFO queue's copy counts sequence numbers, another bookmark nothing.
    db.set_bookmarks(
        {
            "copy-to arn:aws:sqs:us-east-1:000000000000:jobs created 1 at http://elsewhere:80": f"{positions[3]} {positions[4]}".encode(),
            "copy-to arn:aws:sqs:us-east-1:000000000000:f.fifo": b'fifo {"done": 99}',
            "my-own": b"1000",
        }
    )
    for m in q.receive_message(max_number_of_messages=10):
        if m.body in ("m3", "m4"):
            m.delete()
    db.close()
    _migrate(path, "0007")  # as an older sqsqlite left it: ids handed out from the highest row's
    _migrate(path)
    db = sqsqlite.connect(path, clock=clock)
    try:
        db.queue("jobs").send_message("new")
        newest = max(p for p, _ in db.queue("jobs").message_records())
    finally:
        db.close()
    assert newest > positions[4]


def _dead_lettered(path, clock, messages):
    """A database with jobs.fifo's messages, (body, group) each, moved to dead.fifo; and dead.fifo."""
    db = sqsqlite.connect(path, clock=clock)
    dlq = db.create_queue("dead.fifo", attributes={"FifoQueue": "true"})
    redrive = f'{{"deadLetterTargetArn": "{dlq.arn}", "maxReceiveCount": 1}}'
    q = db.create_queue("jobs.fifo", attributes={"FifoQueue": "true", "VisibilityTimeout": "1", "RedrivePolicy": redrive})
    for i, (body, group) in enumerate(messages):
        q.send_message(body, message_group_id=group, message_deduplication_id=f"d{i}")
    q.receive_message(max_number_of_messages=10)
    clock.advance(2)
    assert q.receive_message(max_number_of_messages=10) == []
    return db, dlq


def test_a_running_fifo_move_task_survives_a_downgrade_to_0008_and_an_upgrade_and_then_moves_every_message(tmp_path, clock):
    path = tmp_path / "task.db"
    db, dlq = _dead_lettered(path, clock, [(f"m{i}", f"g{i % 2}") for i in range(4)])
    handle = db.start_message_move_task(dlq.arn, background=False)
    db.close()
    _migrate(path, "0008")
    with sqlite3.connect(path) as conn:  # a walk by row id over the rows there, from the start
        assert conn.execute("SELECT last_id, max_id FROM move_tasks").fetchone() == (
            0,
            conn.execute("SELECT max(id) FROM messages").fetchone()[0],
        )
    _migrate(path)
    assert _diff(path) == []
    with sqlite3.connect(path) as conn:  # a walk by (group, sequence) up to the queue's last sequence
        assert conn.execute("SELECT last_id, last_group, max_id FROM move_tasks").fetchone() == (
            0,
            None,
            conn.execute("SELECT last_sequence FROM queues WHERE name = 'dead.fifo'").fetchone()[0],
        )
    db = sqsqlite.connect(path, clock=clock)
    try:
        task = db.run_message_move_task(handle)
        assert (task.status, task.approximate_number_of_messages_moved) == ("COMPLETED", 4)
        bodies = [m.body for m in db.queue("jobs.fifo").receive_message(max_number_of_messages=10)]
        assert [b for b in bodies if b in ("m0", "m2")] == ["m0", "m2"] and [b for b in bodies if b in ("m1", "m3")] == ["m1", "m3"]
    finally:
        db.close()


def test_upgrading_a_fifo_move_task_into_its_own_queue_part_done_by_row_id_moves_only_what_it_still_owed(tmp_path, clock):
    path = tmp_path / "self.db"
    db, dlq = _dead_lettered(path, clock, [("a0", "a"), ("a1", "a")])
    handle = db.start_message_move_task(dlq.arn, background=False)
    db.close()
    with sqlite3.connect(path) as conn:  # into its own queue, as an older sqsqlite would start one (today's refuses)
        conn.execute("UPDATE move_tasks SET destination_arn = ?", (dlq.arn,))
    _migrate(path, "0008")
    with sqlite3.connect(path) as conn:
        # A walk by id would meet again what it moved into its own queue: the downgrade stops it.
        assert conn.execute("SELECT status, failure_reason FROM move_tasks").fetchone() == (
            "FAILED",
            "The task was stopped by a downgrade of the database; start it again.",
        )
        # What a 0008 task of its own, one step in, having moved a0 into its queue, leaves.
        [(a0, a1)] = conn.execute("SELECT min(id), max(id) FROM messages").fetchall()
        seq = conn.execute(
            "UPDATE queues SET last_sequence = last_sequence + 1 WHERE name = 'dead.fifo' RETURNING last_sequence"
        ).fetchone()[0]
        conn.execute("UPDATE messages SET sequence_number = ?, is_head = 0 WHERE id = ?", (seq, a0))
        conn.execute("UPDATE messages SET is_head = 1 WHERE id = ?", (a1,))
        conn.execute("UPDATE move_tasks SET status = 'RUNNING', failure_reason = NULL, last_id = ?, max_id = ?, moved = 1", (a0, a1))
    _migrate(path)
    db = sqsqlite.connect(path, clock=clock)
    try:
        task = db.run_message_move_task(handle)
        assert (task.status, task.approximate_number_of_messages_moved) == ("COMPLETED", 2)  # a1 alone, not a0 again
        assert [m.body for m in db.queue("dead.fifo").receive_message(max_number_of_messages=10)] == ["a0", "a1"]
    finally:
        db.close()


def _info(caplog):
    return [(r.name, r.getMessage()) for r in caplog.records if r.levelno >= 20]


def test_a_host_logging_at_info_sees_one_line_when_a_migration_runs_and_none_from_alembic(tmp_path, caplog):
    import logging

    path = tmp_path / "app.db"
    caplog.set_level(logging.INFO)
    sqsqlite.connect(path).close()
    assert _info(caplog) == [("sqsqlite.migrate", f"sqsqlite: created the schema of {path} (revision {HEAD_REVISION})")]
    caplog.clear()
    sqsqlite.connect(path).close()  # at the schema already: nothing
    assert _info(caplog) == []
    _migrate(path, "0009")
    caplog.clear()
    sqsqlite.connect(path).close()
    assert _info(caplog) == [("sqsqlite.migrate", f"sqsqlite: migrated {path} from schema revision 0009 to {HEAD_REVISION}")]


def test_alembics_own_lines_outside_sqsqlite_still_reach_the_host(tmp_path, caplog):
    import logging

    sqsqlite.connect(tmp_path / "app.db").close()  # sqsqlite has loaded and run alembic
    caplog.set_level(logging.INFO)
    logging.getLogger("alembic.runtime.migration").info("the host's own migration")
    assert [r.getMessage() for r in caplog.records] == ["the host's own migration"]


def test_upgrading_from_0011_gives_existing_queues_and_tombstones_the_openers_account_and_region(tmp_path, clock):
    path = tmp_path / "scoped.db"
    db = sqsqlite.connect(path, clock=clock)
    db.create_queue("gone")
    db.delete_queue("gone")  # a tombstone, and a queue id used
    db.create_queue("kept").send_message("m")
    db.close()
    store = Store(str(path))
    migrate.downgrade(store, "0011")
    store.close()

    store = Store(str(path), owner=("123456789012", "eu-west-1"))  # the upgrade runs as this opens the file
    store.close()
    assert _diff(path) == []
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT id, name, account, region FROM queues").fetchall() == [(2, "kept", "123456789012", "eu-west-1")]
        assert conn.execute("SELECT account, region, name FROM queue_tombstones").fetchall() == [("123456789012", "eu-west-1", "gone")]
        assert conn.execute("SELECT seq FROM sqlite_sequence WHERE name = 'queues'").fetchone() == (2,)
    db = sqsqlite.connect(path, clock=clock, account_id="123456789012", region="eu-west-1")
    try:
        assert [m.body for m in db.queue("kept").receive_message()] == ["m"]
        assert db.create_queue("next").arn == "arn:aws:sqs:eu-west-1:123456789012:next"
        with sqlite3.connect(path) as conn:
            assert conn.execute("SELECT id FROM queues WHERE name = 'next'").fetchone() == (3,)  # id 1 is never given again
    finally:
        db.close()


def _every_state(path, clock):
    """A file holding every state a message and its bookkeeping can be in; the newest messages
    deleted, so the highest id given out is above every row: they are jobs', the newest queue,
    whose range is the highest. A handle of a message still held, and that highest id."""
    db = sqsqlite.connect(path, clock=clock)
    dlq = db.create_queue("dead")
    fifo = db.create_queue("jobs.fifo", attributes={"FifoQueue": "true"})
    redrive = f'{{"deadLetterTargetArn": "{dlq.arn}", "maxReceiveCount": 1}}'
    q = db.create_queue("jobs", visibility_timeout=30, attributes={"RedrivePolicy": redrive})
    q.send_message("to-dead-letter")
    [first] = q.receive_message()
    clock.advance(31)
    assert q.receive_message(max_number_of_messages=10) == []  # moved to dead
    q.send_message("visible")
    q.send_message("delayed", delay_seconds=600)
    q.send_message("grouped", message_group_id="tenant")
    q.send_message_batch([{"Id": str(i), "MessageBody": f"b{i}", "MessageAttributes": {"n": i}} for i in range(3)])
    for i in range(4):
        fifo.send_message(f"f{i}", message_group_id=f"g{i % 2}", message_deduplication_id=f"d{i}")
    fifo.receive_message(receive_request_attempt_id="attempt")
    db.start_message_move_task(dlq.arn, background=False)  # running, not run
    positions = [p for p, _ in q.message_records()]
    db.set_bookmarks({"copy-to arn:aws:sqs:us-east-1:000000000000:jobs at http://elsewhere:80": str(positions[-1]).encode()})
    [held] = q.receive_message(max_number_of_messages=1)
    newest = q.send_message_batch([{"Id": str(i), "MessageBody": f"gone{i}"} for i in range(2)])
    gone = {r.message_id for r in newest.successful}
    highest = max(p for p, _ in q.message_records())
    for m in q.receive_message(max_number_of_messages=10):
        if m.message_id in gone:
            m.delete()
    db.close()
    return held, highest


def _rows(path):
    with sqlite3.connect(path) as conn:
        return {"messages": _messages(conn)} | {
            t: conn.execute(f"SELECT * FROM {t} ORDER BY 1, 2").fetchall() for t in ("move_tasks", "receive_attempts", "meta")
        }


def test_0013_drops_autoincrement_keeping_every_row_and_no_id_is_given_out_twice_either_way(tmp_path, clock):
    path = tmp_path / "states.db"
    held, highest = _every_state(path, clock)
    rows = _rows(path)
    assert max(r[0] for r in rows["messages"]) < highest  # the newest two were deleted
    jobs = highest >> QUEUE_ID_SHIFT  # their range, jobs', the highest
    assert _marks(path) == [(1, 0), (jobs, highest)]  # row 1 the one a new file starts with
    [(dead_letter, moved_from)] = _moved_from(path)[0].items()  # it left jobs' range for dead's
    assert (dead_letter >> QUEUE_ID_SHIFT, moved_from >> QUEUE_ID_SHIFT) == (1, jobs)
    assert "AUTOINCREMENT" not in _table_sql(path, "messages")

    _migrate(path, "0012")  # back to AUTOINCREMENT, its sequence the highest id given out
    assert "AUTOINCREMENT" in _table_sql(path, "messages")
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT seq FROM sqlite_sequence WHERE name = 'messages'").fetchone()[0] == highest
        assert conn.execute("SELECT name FROM sqlite_master WHERE name = 'message_positions'").fetchall() == []
    assert _rows(path) == rows

    _migrate(path)
    assert _diff(path) == []
    assert _rows(path) == rows
    assert _moved_from(path) == ({}, True)  # the dead-lettered one's old id went with 0014's column
    # 0013's mark, the sequence, goes to the range it lies in; range 1's was not kept below 0013.
    assert _marks(path) == [(1, 0), (jobs, highest)]
    db = sqsqlite.connect(path, clock=clock)
    try:
        q = db.queue("jobs")
        q.delete_message(held.receipt_handle)  # a handle issued before both migrations
        q.send_message("after")
        assert max(p for p, _ in q.message_records()) == highest + 1
        task = db.run_message_move_task(db.list_message_move_tasks(db.queue("dead").arn)[0].task_handle)
        assert (task.status, task.approximate_number_of_messages_moved) == ("COMPLETED", 1)
        assert [m.body for m in db.queue("jobs.fifo").receive_message(receive_request_attempt_id="attempt")] == ["f0"]
    finally:
        db.close()


def test_a_downgrade_below_0012_is_refused_while_another_accounts_or_regions_queue_exists(tmp_path, clock):
    path = tmp_path / "two.db"
    db = sqsqlite.connect(path, clock=clock)
    db.create_queue("q")
    db.scoped(region="eu-west-1").create_queue("q")
    db.close()
    store = Store(str(path))
    try:
        with pytest.raises(sqsqlite.errors.DatabaseError, match=r"Delete them first") as info:
            migrate.downgrade(store, "0011")
        assert "q (000000000000, eu-west-1)" in str(info.value)
        assert migrate.current(store) == HEAD_REVISION
    finally:
        store.close()
    db = sqsqlite.connect(path, clock=clock)
    db.scoped(region="eu-west-1").delete_queue("q")
    clock.advance(61)
    db.prune()  # the tombstone goes too
    db.close()
    store = Store(str(path))
    try:
        migrate.downgrade(store, "0011")
        assert migrate.current(store) == "0011"
    finally:
        store.close()


def test_a_deletion_raises_the_mark_only_when_it_removes_the_highest_row(tmp_path, clock):
    path = tmp_path / "mark.db"
    db = sqsqlite.connect(path, clock=clock)
    try:
        q = db.create_queue("q")
        q.send_message_batch([{"Id": str(i), "MessageBody": f"m{i}"} for i in range(5)])
        ids = [p for p, _ in q.message_records()]
        assert ids == [_RANGE + i for i in range(1, 6)]  # queue 1's range
        got = {m.body: m for m in q.receive_message(max_number_of_messages=10)}
        got["m0"].delete()
        got["m2"].delete()
        assert _marks(path) == [(1, 0)]  # rows above them remain: no write
        got["m4"].delete()
        assert _marks(path) == [(1, ids[4])]
        got["m3"].delete()  # the highest row again, below the mark
        assert _marks(path) == [(1, ids[4])]
        q.send_message_batch([{"Id": str(i), "MessageBody": f"n{i}"} for i in range(3)])
        assert [p for p, _ in q.message_records()] == [ids[1], ids[4] + 1, ids[4] + 2, ids[4] + 3]
        fifo = db.create_queue("f.fifo", attributes={"FifoQueue": "true"})
        fifo.send_message("f", message_group_id="g", message_deduplication_id="d")
        [(first_fifo, _)] = fifo.message_records()
        assert first_fifo == 2 * _RANGE + 1  # its own range: q's marks and rows do not reach it
        q.purge_queue()  # a bulk deletion: raises its range's mark to the highest row first
        fifo.purge_queue()
        q.send_message("last")
        fifo.send_message("f", message_group_id="g", message_deduplication_id="d2")
        assert [p for p, _ in q.message_records()] == [ids[4] + 4]
        assert [p for p, _ in fifo.message_records()] == [first_fifo + 1]
        assert _marks(path) == [(1, ids[4] + 3), (2, first_fifo)]
    finally:
        db.close()


def _visible_index(path):
    """The message ids ix_messages_visible holds, read from the index alone (SQLite refuses
    INDEXED BY where the query does not state the index's predicate)."""
    query = f"SELECT id FROM messages INDEXED BY ix_messages_visible WHERE {INDEXED}"
    with sqlite3.connect(path) as conn:
        plan = " ".join(r[3] for r in conn.execute(f"EXPLAIN QUERY PLAN {query}"))
        assert "COVERING INDEX ix_messages_visible" in plan, plan
        return {i for (i,) in conn.execute(query)}


def _indexed_ones(path):
    """The ids the partial index must hold, worked out from each row: every message but one never
    received, sent with no delay and no group, whose id is in its own queue's range."""
    with sqlite3.connect(path) as conn:
        rows = conn.execute("SELECT id, queue_id, receive_count, visible_at, sent_at, group_id FROM messages").fetchall()
    return {
        i
        for i, queue, received, visible_at, sent_at, group in rows
        if received or visible_at != sent_at or group is not None or i // _RANGE != queue
    }


def _queues(path, columns=None):
    with sqlite3.connect(path) as conn:
        names = columns or [r[1] for r in conn.execute("PRAGMA table_info(queues)")]
        return names, conn.execute(f"SELECT {', '.join(names)} FROM queues ORDER BY id").fetchall()


def _send_as_0013(conn, queue_id, body, now):
    """A message sent as a 0013 sqsqlite sends it: never received, no delay, no group; its id
    the next above the highest row and the table's one mark (row 1)."""
    return conn.execute(
        "INSERT INTO messages (id, queue_id, message_id, body, sender_id, sent_at, visible_at) VALUES ("
        "max(coalesce((SELECT max(id) FROM messages), 0), (SELECT highest_removed FROM message_positions WHERE id = 1)) + 1, "
        "?, ?, ?, '000000000000', ?, ?) RETURNING id",
        (queue_id, f"sent-by-0013-{body}", body, now, now),
    ).fetchone()[0]


def _as_0013_left_it(path, moved, mark):
    """Rewrite a file just downgraded from 0014 to 0013 with the ids a 0013 sqsqlite gives out:
    one sequence, below every range, in the order the ids were given (a moved message's its id as
    sent, ``moved``: 0014's moved_from by id, since 0013 moves a message with its id); its one
    mark, row 1, ``mark`` (the highest id a deletion took from the top) in that sequence. Every
    table that names a message's id follows. The rewrite of the ids, a function."""
    with sqlite3.connect(path) as conn:
        conn.execute("DELETE FROM message_positions WHERE id <> 1")  # what the downgrade keeps of the ranges'
        ids = [i for (i,) in conn.execute("SELECT id FROM messages ORDER BY id")]
        tasks = conn.execute(  # a FIFO queue's task walks sequence numbers, a standard queue's ids
            "SELECT task_handle, last_id, max_id FROM move_tasks JOIN queues ON queues.id = source_queue_id WHERE fifo = 0"
        ).fetchall()
        bookmarks = conn.execute("SELECT key, value FROM meta WHERE key LIKE 'copy-to %' AND value NOT LIKE 'fifo %'").fetchall()
        attempts = [(q, a, json.loads(r)) for q, a, r in conn.execute("SELECT queue_id, attempt_id, result FROM receive_attempts")]
        named = {mark, *(i for _, *t in tasks for i in t), *(int(p) for _, v in bookmarks for p in v.split())}
        named |= {i for *_, r in attempts for i, _ in r}
        given = sorted({moved.get(i, i) for i in (*ids, *named)} - {0})
        assert given and given[0] >= _RANGE  # every id from the ranges: none below collides
        rank = {i: n for n, i in enumerate(given, 1)}

        def rewrite(i):
            return 0 if i == 0 else rank[moved.get(i, i)]

        for i in ids:  # each to a lower id, below every id not yet rewritten
            conn.execute("UPDATE messages SET id = ? WHERE id = ?", (rewrite(i), i))
        conn.execute("UPDATE message_positions SET highest_removed = ?", (rewrite(mark),))
        for handle, last_id, max_id in tasks:
            conn.execute("UPDATE move_tasks SET last_id = ?, max_id = ? WHERE task_handle = ?", (rewrite(last_id), rewrite(max_id), handle))
        for key, value in bookmarks:
            conn.execute("UPDATE meta SET value = ? WHERE key = ?", (" ".join(str(rewrite(int(p))) for p in value.split()).encode(), key))
        for q, a, result in attempts:
            stored = json.dumps([[rewrite(i), token] for i, token in result])
            conn.execute("UPDATE receive_attempts SET result = ? WHERE queue_id = ? AND attempt_id = ?", (stored, q, a))
    return rewrite


def test_upgrading_to_0014_keeps_every_row_and_id_and_puts_every_message_a_0013_file_holds_in_the_partial_index(tmp_path, clock):
    path = tmp_path / "states.db"
    _, highest = _every_state(path, clock)  # with a running move task, a DLQ, FIFO heads, a fair group
    db = sqsqlite.connect(path, clock=clock)
    short = db.create_queue("short", attributes={"MessageRetentionPeriod": "60"})
    short.send_message("expired")
    back = db.create_queue("back", visibility_timeout=30)
    back.send_message("returned")
    [returned] = back.receive_message()
    back.change_message_visibility(returned.receipt_handle, 0)  # received once, visible again
    db.queue("jobs").receive_message(max_number_of_messages=10)  # the grouped one in flight too
    clock.advance(61)  # "expired" outlived its queue's retention, its row not yet pruned
    db.close()
    moved, _ = _moved_from(path)
    assert len(moved) == 1  # the dead-lettered one
    _migrate(path, "0013")
    rewrite = _as_0013_left_it(path, moved, highest)  # as 0013 made it: one mark, and no id in a range
    with sqlite3.connect(path) as conn:
        jobs = conn.execute("SELECT id FROM queues WHERE name = 'jobs'").fetchone()[0]
        fresh_looking = _send_as_0013(conn, jobs, "fresh-looking", clock.now_ms())
    rows, queues, marks = _rows(path), _queues(path), _marks(path)
    ids = [r[0] for r in rows["messages"]]
    assert marks == [(1, rewrite(highest))]
    assert rewrite(highest) < fresh_looking == max(ids) < _RANGE  # 0013 sent "short" and "back" after it, and this

    _migrate(path)
    assert _diff(path) == []
    assert _rows(path) == rows
    assert _queues(path, queues[0]) == queues
    assert _queues(path, ["fresh_from"])[1] == [(0,)] * len(queues[1])
    assert _marks(path) == marks  # the table's mark, below every range, stays range 1's
    # moved_from is there, set on no row (0013 moved a message with its id), and indexed.
    with sqlite3.connect(path) as conn:
        assert "moved_from" in _columns(conn, "messages")
        assert conn.execute("SELECT count(*), count(moved_from) FROM messages").fetchone() == (len(ids), 0)
    assert _moved_from(path) == ({}, True)
    # Every message, the never-received undelayed groupless ones too: their ids are in no range.
    assert _visible_index(path) == _indexed_ones(path) == set(ids)
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    db = sqsqlite.connect(path, clock=clock)
    try:  # a send takes its queue's range's first id: every id 0013 gave out is below it
        db.queue("jobs").send_message("after")
        assert max(p for p, _ in db.queue("jobs").message_records()) == jobs * _RANGE + 1
    finally:
        db.close()


def test_a_downgrade_from_0014_gives_0013_its_full_index_and_one_mark_and_an_upgrade_again_each_range_its_own(tmp_path, clock):
    path = tmp_path / "ranges.db"
    db = sqsqlite.connect(path, clock=clock)
    first, second = db.create_queue("first"), db.create_queue("second")
    first.send_message("old")
    second.send_message("old")
    db.close()
    now = clock.now_ms()
    with sqlite3.connect(path) as conn:
        ids = {name: i for i, name in conn.execute("SELECT id, name FROM queues")}
        assert (ids["first"], ids["second"]) == (1, 2)
        # The old ones as an older sqsqlite gave them out: ids below every range.
        conn.execute("UPDATE messages SET id = queue_id")
        new_style = [  # (id, queue, receive_count, visible_at, group): as 0014's sends and claims leave them
            (_RANGE + 1, 1, 0, now, None),  # fresh
            (_RANGE + 2, 1, 1, now + 30_000, None),  # in flight
            (_RANGE + 3, 1, 0, now + 60_000, None),  # delayed
            (_RANGE + 4, 1, 0, now, "tenant"),  # a fair queue's group
            (_RANGE + 8, 1, 0, now, None),  # fresh, its range's highest row, above the range's mark
            (2 * _RANGE + 1, 2, 0, now, None),  # fresh
            (2 * _RANGE + 5, 1, 0, now, None),  # sent to queue 2 and moved into queue 1 by 0013 after a downgrade, keeping its id
        ]
        conn.executemany(
            "INSERT INTO messages (id, queue_id, message_id, body, sender_id, sent_at, visible_at, receive_count, group_id) "
            "VALUES (?, ?, 'm' || ?, 'new', '000000000000', ?, ?, ?, ?)",
            [(i, q, i, now, visible_at, received, group) for i, q, received, visible_at, group in new_style],
        )
        conn.execute("DELETE FROM message_positions")
        conn.executemany("INSERT INTO message_positions VALUES (?, ?)", [(1, _RANGE + 7), (2, 2 * _RANGE + 9)])
        rows = _messages(conn)
    fresh = {_RANGE + 1, _RANGE + 8, 2 * _RANGE + 1}
    assert _visible_index(path) == _indexed_ones(path) == {r[0] for r in rows} - fresh
    assert _moved_from(path) == ({}, True)

    _migrate(path, "0013")
    with sqlite3.connect(path) as conn:
        (index_sql,) = conn.execute("SELECT sql FROM sqlite_master WHERE name = 'ix_messages_visible'").fetchone()
        assert index_sql == "CREATE INDEX ix_messages_visible ON messages (queue_id, visible_at, sent_at, receive_count, group_id)"
        # Every row, read from the index alone.
        assert {i for (i,) in conn.execute("SELECT id FROM messages INDEXED BY ix_messages_visible")} == {r[0] for r in rows}
        assert "fresh_from" not in _columns(conn, "queues")
        assert "moved_from" not in _columns(conn, "messages")
        assert conn.execute("SELECT name FROM sqlite_master WHERE name = 'ix_messages_moved_from'").fetchall() == []
        assert conn.execute("SELECT * FROM messages ORDER BY id").fetchall() == rows
        # 0013's one mark, row 1: the highest id given out. Range 2's row stays, range 1's is kept
        # in row 0, raised to its highest row: 0013 marks no deletion below the table's top.
        assert _marks(path) == [(0, _RANGE + 8), (1, 2 * _RANGE + 9), (2, 2 * _RANGE + 9)]
        # What 0013 does meanwhile: a send above every id given out, deleted again (its mark raised).
        sent = _send_as_0013(conn, 1, "between", now)
        assert sent == 2 * _RANGE + 10
        conn.execute("DELETE FROM messages WHERE id = ?", (sent,))
        conn.execute("UPDATE message_positions SET highest_removed = ? WHERE id = 1", (sent,))
        # And a deletion of range 1's highest row, below the table's top: 0013 writes no mark.
        conn.execute("DELETE FROM messages WHERE id = ?", (_RANGE + 8,))
    rows = [r for r in rows if r[0] != _RANGE + 8]

    _migrate(path)
    assert _diff(path) == []
    with sqlite3.connect(path) as conn:
        assert _messages(conn) == rows
        assert conn.execute("SELECT count(moved_from) FROM messages").fetchone() == (0,)
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    assert _moved_from(path) == ({}, True)
    assert _queues(path, ["fresh_from"])[1] == [(0,), (0,)]
    # Range 1's mark back, past the row 0013 deleted; the id 0013 gave out and took back is
    # range 2's: neither is given out again.
    assert _marks(path) == [(1, _RANGE + 8), (2, sent)]
    assert _visible_index(path) == _indexed_ones(path) == {r[0] for r in rows} - fresh
    db, sends = sqsqlite.connect(path, clock=clock), {}
    try:
        for name in ("first", "second"):
            before = {p for p, _ in db.queue(name).message_records()}
            db.queue(name).send_message("next")
            sends[name] = {p for p, _ in db.queue(name).message_records()} - before
        assert sends == {"first": {_RANGE + 9}, "second": {sent + 1}}
    finally:
        db.close()


def test_a_downgrade_past_0015_drops_the_moves_without_force_and_a_handle_from_before_two_moves_then_acts_as_a_deleted_ones(
    tmp_path, clock
):
    path = str(tmp_path / "moves.db")
    db = sqsqlite.connect(path, clock=clock)
    dlq = db.create_queue("dlq")
    src = db.create_queue("src", redrive_policy={"deadLetterTargetArn": dlq.arn, "maxReceiveCount": 1})
    src.send_message("poison")
    [first] = src.receive_message(visibility_timeout=0)
    assert src.receive_message() == []  # dead-lettered
    db.run_message_move_task(db.start_message_move_task(dlq.arn, background=False))  # and back
    db.close()
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT count(*) FROM message_moves").fetchone() == (1,)
    _migrate(path, "0014")  # refused if it would drop rows that count as data
    _migrate(path)
    db = sqsqlite.connect(path, clock=clock)
    try:
        src = db.queue("src")
        src.delete_message(first.receipt_handle)  # the id it had before its first move is known no more
        assert [m.body for m in src.peek("all")] == ["poison"]
    finally:
        db.close()


def _archive_state(path):
    """The archive's rows (queue, body, how), its queues' settings, and its meta copy."""
    with sqlite3.connect(path) as conn:
        rows = conn.execute("SELECT queue_name, body, how FROM message_archive ORDER BY id").fetchall()
        settings = conn.execute("SELECT name, archive_retention FROM queues ORDER BY name").fetchall()
        meta = conn.execute("SELECT value FROM meta WHERE key = 'archive_queues'").fetchall()
    return rows, settings, meta


def test_0016_adds_the_archive_and_a_downgrade_drops_it_only_when_forced_and_an_upgrade_starts_it_off(tmp_path, clock):
    path = str(tmp_path / "archive.db")
    db = sqsqlite.connect(path, clock=clock)
    q = db.create_queue("jobs")
    db.set_archive(q.url, 3600)
    q.send_message("kept")
    q.send_message("live")
    [m, _] = q.receive_message(max_number_of_messages=10)
    m.delete()
    db.close()
    rows, settings, meta = _archive_state(path)
    assert (rows, settings) == ([("jobs", "kept", "delete")], [("jobs", 3_600_000)])
    assert json.loads(meta[0][0]) == {"1": 3_600_000}
    with pytest.raises(migrate.WouldDropData, match="message_archive"):
        _migrate(path, "0015")
    assert _archive_state(path)[0] == rows  # refused: nothing changed
    store = Store(path)
    try:
        migrate.downgrade(store, "0015", force=True)
        assert migrate.current(store) == "0015"
    finally:
        store.close()
    with sqlite3.connect(path) as conn:
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        columns = {r[1] for r in conn.execute("PRAGMA table_info(queues)")}
        assert conn.execute("SELECT count(*) FROM meta WHERE key = 'archive_queues'").fetchone() == (0,)
    assert not {"message_archive", "replay_runs"} & tables and "archive_retention" not in columns
    _migrate(path)
    assert _diff(path) == []
    db = sqsqlite.connect(path, clock=clock)
    try:
        assert db.archive_retention("jobs") is None  # off again: the setting went with the column
        [live] = db.queue("jobs").peek("all")
        assert live.body == "live"  # the queue's messages kept both ways
    finally:
        db.close()
    assert _archive_state(path)[0] == []
