"""Schema and migrations: alembic alone builds the schema, and it matches the metadata."""

import sqlite3

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import create_engine

import sqsqlite
from sqsqlite import migrate
from sqsqlite.schema import metadata
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


def _high_water(path):
    with sqlite3.connect(path) as conn:
        return conn.execute("SELECT highest_removed FROM message_positions").fetchall()


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
    indexes_before = {i for i in _indexes(path) if i[1] == "messages"}

    _migrate(path)
    assert _diff(path) == []
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT * FROM messages ORDER BY id").fetchall() == rows_before
    assert _high_water(path) == [(rows_before[-1][0],)]  # 0008's sequence, carried by 0013
    assert {i for i in _indexes(path) if i[1] == "messages"} == indexes_before
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
    deleted, so the highest id given out is above every row. The ids of the deleted ones."""
    db = sqsqlite.connect(path, clock=clock)
    dlq = db.create_queue("dead")
    redrive = f'{{"deadLetterTargetArn": "{dlq.arn}", "maxReceiveCount": 1}}'
    q = db.create_queue("jobs", visibility_timeout=30, attributes={"RedrivePolicy": redrive})
    fifo = db.create_queue("jobs.fifo", attributes={"FifoQueue": "true"})
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
        return {
            t: conn.execute(f"SELECT * FROM {t} ORDER BY 1, 2").fetchall() for t in ("messages", "move_tasks", "receive_attempts", "meta")
        }


def test_0013_drops_autoincrement_keeping_every_row_and_no_id_is_given_out_twice_either_way(tmp_path, clock):
    path = tmp_path / "states.db"
    held, highest = _every_state(path, clock)
    rows = _rows(path)
    assert max(r[0] for r in rows["messages"]) < highest  # the newest two were deleted
    assert _high_water(path) == [(highest,)]
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
    assert _high_water(path) == [(highest,)]
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
        got = {m.body: m for m in q.receive_message(max_number_of_messages=10)}
        got["m0"].delete()
        got["m2"].delete()
        assert _high_water(path) == [(0,)]  # rows above them remain: no write
        got["m4"].delete()
        assert _high_water(path) == [(ids[4],)]
        got["m3"].delete()  # the highest row again, below the mark
        assert _high_water(path) == [(ids[4],)]
        q.send_message_batch([{"Id": str(i), "MessageBody": f"n{i}"} for i in range(3)])
        fifo = db.create_queue("f.fifo", attributes={"FifoQueue": "true"})
        fifo.send_message("f", message_group_id="g", message_deduplication_id="d")
        q.purge_queue()
        assert [p for p, _ in fifo.message_records()] == [ids[4] + 4]
        fifo.purge_queue()
        q.send_message("last")
        assert [p for p, _ in q.message_records()] == [ids[4] + 5]
        assert _high_water(path) == [(ids[4] + 4,)]
    finally:
        db.close()
