"""Security: unguessable receipt handles bound to queue, message and receive; owner-only files;
no SQL built from what callers pass in."""

import hmac
import os
import secrets
import sqlite3
import stat

import pytest

import sqsqlite
from sqsqlite import defaults as D
from sqsqlite import queries as Q
from sqsqlite.core import handles as core_handles
from sqsqlite.errors import ReceiptHandleIsInvalid
from tests.reliability.snapshots import snapshot


def raw(handle: str) -> bytes:
    return bytes.fromhex(handle)


def encode(data: bytes) -> str:
    return data.hex()


# ------------------------------------------------------------------ receipt handles


def test_receipt_handles_of_one_message_differ_in_at_least_128_bits_between_receives(queue):
    queue.send_message("same message, same clock")
    handles = []
    for _ in range(256):
        [m] = queue.receive_message(visibility_timeout=0)  # visible again at once
        handles.append(m.receipt_handle)
    assert len(set(handles)) == 256

    # Queue, row, message and time are all the same here: whatever varies is the random part.
    # Ignore the MAC (it varies with anything); 256 samples leave a truly random bit constant
    # with probability 2**-255, a counter would vary in 8 bits.
    bodies = [raw(h)[: core_handles.HANDLE_LAYOUT.size] for h in handles]
    width = len(bodies[0]) * 8
    as_ints = [int.from_bytes(b, "big") for b in bodies]
    varying = sum(1 for bit in range(width) if len({(x >> bit) & 1 for x in as_ints}) == 2)
    assert varying >= 128


def test_a_handle_from_queue_a_cannot_delete_or_change_a_message_on_queue_b(db, db_path):
    a, b = db.create_queue("alpha"), db.create_queue("beta")
    a.send_message("in alpha")
    b.send_message("in beta")
    [ma] = a.receive_message()
    [mb] = b.receive_message()
    before = snapshot(db_path)

    with pytest.raises(ReceiptHandleIsInvalid):
        b.delete_message(ma.receipt_handle)
    with pytest.raises(ReceiptHandleIsInvalid):
        b.change_message_visibility(ma.receipt_handle, 0)
    result = b.delete_message_batch([{"Id": "x", "ReceiptHandle": ma.receipt_handle}])
    assert [f.code for f in result.failed] == ["ReceiptHandleIsInvalid"]

    assert snapshot(db_path) == before
    mb.delete()  # the right handle still works


def test_a_handle_issued_by_another_database_with_the_same_layout_does_not_work(tmp_path, clock):
    one = sqsqlite.connect(str(tmp_path / "one.db"), clock=clock)
    two = sqsqlite.connect(str(tmp_path / "two.db"), clock=clock)
    q1, q2 = one.create_queue("orders"), two.create_queue("orders")
    q1.send_message("one")
    q2.send_message("two")
    [m1] = q1.receive_message()
    q2.receive_message()

    with pytest.raises(ReceiptHandleIsInvalid, match="not issued by this database"):
        q2.delete_message(m1.receipt_handle)
    assert q2.get_queue_attributes(["ApproximateNumberOfMessagesNotVisible"])["ApproximateNumberOfMessagesNotVisible"] == "1"
    one.close()
    two.close()


def test_a_superseded_handle_never_touches_the_message_its_new_holder_has(queue, clock, db_path):
    queue.send_message("work")
    [first] = queue.receive_message(visibility_timeout=10)
    clock.advance(11)
    [second] = queue.receive_message(visibility_timeout=10)
    before = snapshot(db_path)

    with pytest.raises(ReceiptHandleIsInvalid, match="received again"):
        first.delete()
    with pytest.raises(ReceiptHandleIsInvalid):
        first.change_visibility(0)

    assert snapshot(db_path) == before
    second.delete()


def test_flipping_any_single_bit_of_a_handle_makes_it_invalid(queue, db_path):
    queue.send_message("target")
    [m] = queue.receive_message()
    data = raw(m.receipt_handle)
    before = snapshot(db_path)
    for i in range(len(data) * 8):
        forged = bytearray(data)
        forged[i // 8] ^= 1 << (i % 8)
        with pytest.raises(ReceiptHandleIsInvalid):
            queue.change_message_visibility(encode(bytes(forged)), 0)
    assert snapshot(db_path) == before
    m.delete()


def test_a_handle_in_the_version_1_form_base64_still_deletes_its_message(db, queue):
    # Handles were urlsafe base64 of version 1 fields before they were hex (version 2): one
    # received before an upgrade must still work after it.
    queue.send_message("received before the upgrade")
    [m] = queue.receive_message()
    h = core_handles.decode_handle(db.handles.macs, m.receipt_handle)
    body = core_handles.HANDLE_LAYOUT.pack(1, h.queue_id, h.row_id, h.message_uuid, bytes(h.token))
    old = core_handles.b64(body + db.handles.macs[2][0](body))
    assert len(old) == 87 and len(m.receipt_handle) == 130
    queue.change_message_visibility(old, 60)
    queue.delete_message(old)
    assert queue.peek(limit=10) == []
    with pytest.raises(ReceiptHandleIsInvalid):  # base64 only ever held version 1
        queue.delete_message(core_handles.b64(b"\x02" + body[1:] + db.handles.macs[2][0](body)))


def test_a_version_1_handle_signed_with_hmac_sha256_as_the_first_sqsqlite_did_still_deletes_its_message(db, queue):
    # The first sqsqlite signed version 1 handles with HMAC-SHA256 cut to 16 bytes; later ones
    # with BLAKE2b under the same version byte. A message in flight across the upgrade must be
    # deletable with the handle received before it, or it is delivered again.
    queue.send_message("received by the first sqsqlite")
    [m] = queue.receive_message()
    h = core_handles.decode_handle(db.handles.macs, m.receipt_handle)
    body = core_handles.HANDLE_LAYOUT.pack(1, h.queue_id, h.row_id, h.message_uuid, bytes(h.token))
    secret = core_handles.receipt_secret(db.store)
    first = core_handles.b64(body + hmac.digest(secret, body, "sha256")[:16])
    queue.change_message_visibility(first, 60)
    queue.delete_message(first)
    assert queue.peek(limit=10) == []
    forged = core_handles.b64(body + hmac.digest(b"another database's secret".ljust(32), body, "sha256")[:16])
    with pytest.raises(ReceiptHandleIsInvalid, match="not a valid receipt handle"):
        queue.delete_message(forged)


@pytest.fixture
def fips_like(monkeypatch):
    """hashlib as where OpenSSL runs in FIPS mode: BLAKE2b only for non-security uses."""
    import hashlib

    real = hashlib.blake2b

    def blake2b(*args, usedforsecurity=True, **kwargs):
        if usedforsecurity:
            raise ValueError("[digital envelope routines] unsupported")
        return real(*args, usedforsecurity=usedforsecurity, **kwargs)

    monkeypatch.setattr(hashlib, "blake2b", blake2b)


def test_where_blake2b_is_refused_handles_are_version_3_and_any_process_checks_them(db, queue, fips_like, monkeypatch):
    fips = core_handles.Handles(core_handles.receipt_secret(db.store))
    queue.send_message("m")
    row = db.store.connection().execute("SELECT id, message_id FROM messages").fetchone()
    token = os.urandom(16)
    handle = fips.text(core_handles.Handle(1, row[0], None, token, row[1]))
    assert bytes.fromhex(handle)[0] == 3 and len(handle) == 130  # as long as version 2's
    assert (
        core_handles.decode_handle(core_handles.Handles(core_handles.receipt_secret(db.store)).macs, handle).row_id == row[0]
    )  # a fresh FIPS process
    monkeypatch.undo()  # a process with BLAKE2b checks it too
    assert core_handles.decode_handle(core_handles.Handles(core_handles.receipt_secret(db.store)).macs, handle).message_id == row[1]
    forged = bytearray(bytes.fromhex(handle))
    forged[12] ^= 1  # the row id
    with pytest.raises(ReceiptHandleIsInvalid):
        core_handles.decode_handle(core_handles.Handles(core_handles.receipt_secret(db.store)).macs, forged.hex())


def test_where_blake2b_is_refused_a_blake2b_handle_is_refused_saying_why(db, queue, fips_like):
    queue.send_message("m")
    [m] = queue.receive_message()  # db's own Handles was made before BLAKE2b was refused: version 2
    with pytest.raises(ReceiptHandleIsInvalid, match="not a valid receipt handle") as info:
        core_handles.decode_handle(core_handles.Handles(core_handles.receipt_secret(db.store)).macs, m.receipt_handle)
    assert "FIPS" in info.value.hint


def test_a_legacy_message_id_received_without_blake2_at_all_is_deleted_by_a_process_with_it(db_path, monkeypatch):
    import hashlib

    def no_blake2(*args, **kwargs):
        raise ValueError("unsupported hash type blake2b")

    monkeypatch.setattr(hashlib, "blake2b", no_blake2)
    with sqsqlite.connect(db_path) as without:
        q = without.create_queue("legacy")
        q.send_message("imported long ago")
        with sqlite3.connect(db_path) as raw:  # an id from before ids had to be uuids
            raw.execute("UPDATE messages SET message_id = 'legacy-import-id'")
        [m] = q.receive_message()
        assert bytes.fromhex(m.receipt_handle)[0] == 3
    monkeypatch.undo()
    with sqsqlite.connect(db_path) as with_blake2:
        q = with_blake2.queue("legacy")
        q.delete_message(m.receipt_handle)
        assert q.peek(limit=10) == []


def test_a_key_blake2b_refuses_is_an_error_not_a_reason_to_leave_blake2b(db):
    with pytest.raises(ValueError):
        core_handles.Handles(b"k" * 65)  # BLAKE2b keys are at most 64 bytes


def test_random_guesses_shaped_like_real_handles_never_work(queue, db_path):
    queue.send_message("target")
    [m] = queue.receive_message()
    size = len(raw(m.receipt_handle))
    before = snapshot(db_path)
    for _ in range(300):
        guess = raw(m.receipt_handle)[:33] + secrets.token_bytes(size - 33)  # right version, queue, row, message
        with pytest.raises(ReceiptHandleIsInvalid):
            queue.delete_message(encode(guess))
    assert snapshot(db_path) == before


def test_a_handle_the_database_remembers_issuing_gets_the_same_answers_as_one_checked_in_full(db, db_path, clock):
    """Handles this Database issued skip the MAC check on their way back; another Database on
    the same file remembers none of them. Both must answer alike, refusals included."""
    a = db.create_queue("alpha")
    db.create_queue("beta")
    for body in ("one", "two", "three"):
        a.send_message(body)
    first, second, third = a.receive_message(max_number_of_messages=3, visibility_timeout=0)
    [again] = a.receive_message()  # one of them again: its first handle is superseded
    stale = next(m for m in (first, second, third) if m.message_id == again.message_id)
    fresh = next(m for m in (first, second, third) if m.message_id != again.message_id)
    assert stale.receipt_handle in db.handles._issued and again.receipt_handle in db.handles._issued

    other = sqsqlite.connect(db_path, clock=clock)
    try:
        assert not other.handles._issued
        for database in (db, other):
            before = snapshot(db_path)
            for queue, handle, words in (
                (database.queue("beta"), fresh.receipt_handle, "another queue"),
                (database.queue("alpha"), stale.receipt_handle, "received again"),
            ):
                with pytest.raises(ReceiptHandleIsInvalid, match=words):
                    queue.delete_message(handle)
                result = queue.delete_message_batch([{"Id": "x", "ReceiptHandle": handle}])
                assert [f.code for f in result.failed] == ["ReceiptHandleIsInvalid"]
            assert snapshot(db_path) == before
        other.queue("alpha").delete_message(again.receipt_handle)  # in full: not remembered there
        a.delete_message(fresh.receipt_handle)  # in full too: the refused deletes above took it
        assert counts_of(a) == 1
    finally:
        other.close()


def test_a_delete_takes_its_handle_from_the_memory_and_deleting_again_still_succeeds(queue, db):
    for body in ("one", "two", "three"):
        queue.send_message(body)
    one, two, three = queue.receive_message(max_number_of_messages=3)
    queue.change_message_visibility(three.receipt_handle, 60)  # not a delete: the handle stays
    assert {m.receipt_handle for m in (one, two, three)} <= db.handles._issued.keys()
    queue.delete_message(one.receipt_handle)
    result = queue.delete_message_batch(
        [{"Id": "2", "ReceiptHandle": two.receipt_handle}, {"Id": "3", "ReceiptHandle": three.receipt_handle}]
    )
    assert len(result.successful) == 2 and not result.failed
    assert not db.handles._issued  # every handle deleted: nothing kept
    # Deleting again with the same handles is checked in full, and succeeds as SQS's does.
    queue.delete_message(one.receipt_handle)
    again = queue.delete_message_batch([{"Id": "1", "ReceiptHandle": one.receipt_handle}, {"Id": "2", "ReceiptHandle": two.receipt_handle}])
    assert len(again.successful) == 2 and not again.failed
    assert counts_of(queue) == 0


def test_a_handle_repeated_in_one_batch_delete_is_taken_once_and_both_entries_succeed(queue, db):
    queue.send_message("one")
    [m] = queue.receive_message()
    result = queue.delete_message_batch([{"Id": "a", "ReceiptHandle": m.receipt_handle}, {"Id": "b", "ReceiptHandle": m.receipt_handle}])
    assert sorted(r["Id"] for r in result.successful) == ["a", "b"] and not result.failed
    assert counts_of(queue) == 0


def test_the_remembered_handles_are_bounded_and_a_forgotten_one_is_checked_in_full(queue, db, monkeypatch):
    monkeypatch.setattr(core_handles.D, "ISSUED_HANDLES_KEPT", 3)
    for i in range(7):
        queue.send_message(f"m{i}")
    received = [queue.receive_message()[0] for _ in range(7)]
    handles = [m.receipt_handle for m in received]  # a handle's text is made, and remembered, when read
    assert len(db.handles._issued) <= 3
    forgotten = handles[0]
    assert forgotten not in db.handles._issued
    data = bytearray(raw(forgotten))
    data[-1] ^= 1
    with pytest.raises(ReceiptHandleIsInvalid):
        queue.delete_message(encode(bytes(data)))
    result = queue.delete_message_batch([{"Id": str(i), "ReceiptHandle": m.receipt_handle} for i, m in enumerate(received)])
    assert len(result.successful) == 7 and not result.failed


@pytest.mark.parametrize(
    "stem",
    [
        "not-a-uuid-",
        "abc",  # short hex: read as hex, it would give 2 bytes where a handle holds 16
        "0123456789abcdef0123456789abcdef012",  # 36 hex digits, no dashes: 18 bytes as hex
        "01234567-89ab-cdef-0123-456789abcde",  # a uuid's shape, one digit short of one
    ],
)
def test_a_message_stored_with_an_id_that_is_not_a_uuid_can_still_be_received_changed_and_deleted(db, db_path, clock, stem):
    # Imports accepted any MessageId before they refused non-uuid ones: files holding such
    # messages must keep working, whether a handle comes back to the Database that issued it or
    # to another one that checks it in full.
    q = db.create_queue("legacy")
    for body in ("remembered", "checked in full"):
        q.send_message(body)
    with sqlite3.connect(db_path) as c:
        c.execute("UPDATE messages SET message_id = ? || (id - (queue_id << 36))", (stem,))  # its place in its queue
    c.close()
    other = sqsqlite.connect(db_path, clock=clock)
    try:
        received = q.receive_message(max_number_of_messages=2)
        assert sorted(m.message_id for m in received) == [stem + "1", stem + "2"]
        mine = next(m for m in received if m.body == "remembered")
        theirs = next(m for m in received if m.body == "checked in full")
        q.change_message_visibility(mine.receipt_handle, 60)
        other.queue("legacy").change_message_visibility(theirs.receipt_handle, 60)
        q.delete_message(mine.receipt_handle)
        result = other.queue("legacy").delete_message_batch([{"Id": "a", "ReceiptHandle": theirs.receipt_handle}])
        assert not result.failed
        assert counts_of(q) == 0
    finally:
        other.close()


def test_a_superseded_handle_of_a_message_with_a_legacy_id_is_refused(db, db_path, clock):
    q = db.create_queue("legacy")
    q.send_message("m")
    with sqlite3.connect(db_path) as c:
        c.execute("UPDATE messages SET message_id = 'imported-1'")
    c.close()
    [first] = q.receive_message(visibility_timeout=0)
    [second] = q.receive_message()
    other = sqsqlite.connect(db_path, clock=clock)
    try:
        for queue in (q, other.queue("legacy")):
            with pytest.raises(ReceiptHandleIsInvalid, match="received again"):
                queue.delete_message(first.receipt_handle)
        other.queue("legacy").delete_message(second.receipt_handle)
        assert counts_of(q) == 0
    finally:
        other.close()


def counts_of(q) -> int:
    return sum(int(v) for v in q.get_queue_attributes(["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"]).values())


# ------------------------------------------------------------------ file permissions


def test_the_database_file_and_its_wal_shm_and_lock_files_are_readable_by_their_owner_only(tmp_path):
    path = str(tmp_path / "private.db")
    old = os.umask(0)  # even a careless umask must not widen them
    try:
        db = sqsqlite.connect(path)
        q = db.create_queue("q")
        q.send_message("secret")
        _send_while_the_writers_lock_is_held(q, path)  # a contended send opens the senders' gate
        suffixes = ("", "-wal", "-shm", "-lock", "-sendlock")
        modes = {suffix: stat.S_IMODE(os.stat(path + suffix).st_mode) for suffix in suffixes}
        db.close()
    finally:
        os.umask(old)
    assert modes == dict.fromkeys(suffixes, 0o600)


def _send_while_the_writers_lock_is_held(q, path) -> None:
    import fcntl
    import threading
    import time

    writer = os.open(path + "-lock", os.O_RDWR)
    fcntl.flock(writer, fcntl.LOCK_EX)
    sender = threading.Thread(target=q.send_message, args=("contended",))
    sender.start()
    deadline = time.monotonic() + 10
    while not os.path.exists(path + "-sendlock") and time.monotonic() < deadline:
        time.sleep(0.005)
    fcntl.flock(writer, fcntl.LOCK_UN)
    os.close(writer)
    sender.join(10)
    assert not sender.is_alive()
    assert "contended" in {m.body for m in q.peek("all", 10)}


# ------------------------------------------------------------------ no SQL from user input

SEEN: list[str] = []


class RecordingCursor(sqlite3.Cursor):
    def execute(self, sql, *args):
        SEEN.append(sql)
        return super().execute(sql, *args)

    def executemany(self, sql, *args):
        SEEN.append(sql)
        return super().executemany(sql, *args)


class RecordingConnection(sqlite3.Connection):
    def cursor(self, factory=RecordingCursor):
        return super().cursor(factory)

    def execute(self, sql, *args):
        SEEN.append(sql)
        return super().execute(sql, *args)

    def executemany(self, sql, *args):
        SEEN.append(sql)
        return super().executemany(sql, *args)

    def executescript(self, sql):
        SEEN.append(sql)
        return super().executescript(sql)


# The only statements that are not in sqsqlite.queries: transaction control, fixed pragmas and
# the schema-version probes, all literal text in sqsqlite/store.py.
FIXED = {
    "BEGIN IMMEDIATE",
    "BEGIN DEFERRED",
    "COMMIT",
    "ROLLBACK",
    "PRAGMA journal_mode",
    "PRAGMA journal_mode=WAL",
    "PRAGMA foreign_keys=OFF",
    "PRAGMA temp_store=MEMORY",
    "PRAGMA journal_size_limit=67108864",
    f"PRAGMA wal_autocheckpoint={D.WAL_BACKSTOP_PAGES}",
    "PRAGMA data_version",
    "PRAGMA wal_checkpoint(PASSIVE)",
    # Disk space (sqsqlite.space): a new file made incremental, the checkpoint thread's looks at
    # the free pages and its steps' settings.
    "PRAGMA page_count",
    "PRAGMA auto_vacuum=INCREMENTAL",
    "PRAGMA auto_vacuum",
    "PRAGMA freelist_count",
    "PRAGMA page_size",
    "PRAGMA wal_autocheckpoint=0",
    f"PRAGMA busy_timeout={int(D.RECLAIM_BUSY_SECONDS * 1000)}",
    "PRAGMA synchronous=OFF",
    "PRAGMA synchronous=NORMAL",
    "PRAGMA synchronous=FULL",
    "PRAGMA synchronous=EXTRA",
    "SELECT name FROM sqlite_master WHERE type='table' AND name='alembic_version'",
    "SELECT name FROM sqlite_master WHERE type='table'",
    "SELECT version_num FROM alembic_version",
}
_ALL_SQL = [v for v in vars(Q).values() if isinstance(v, Q.Sql)] + [
    s
    for v in vars(Q).values()
    if isinstance(v, tuple)
    for s in v
    if isinstance(s, Q.Sql)  # INSERT_STANDARD_ROWS
]
# Each as written and as it runs (its names numbered, Sql.runs).
COMPILED = {str(s) for s in _ALL_SQL} | {s.runs for s in _ALL_SQL}
HOSTILE = "x'); DROP TABLE messages; --"
# Tags allow only letters, digits, spaces and _ . : / = + - @ (as AWS), so their SQL-looking
# text is made of those.
HOSTILE_TAG = "1 = 1 OR name = name -- DROP TABLE messages"


def test_every_statement_the_store_runs_is_a_compiled_query_or_a_fixed_pragma(db_path, clock, monkeypatch):
    sqsqlite.connect(db_path, clock=clock).close()  # migrations run once, on creation, from alembic
    real_connect = sqlite3.connect
    monkeypatch.setattr(sqlite3, "connect", lambda *a, **k: real_connect(*a, factory=RecordingConnection, **k))
    SEEN.clear()

    db = sqsqlite.connect(db_path, clock=clock)
    dlq = db.create_queue("dead", tags={"owner": HOSTILE_TAG})
    q = db.create_queue(
        "work",
        redrive_policy={"deadLetterTargetArn": dlq.arn, "maxReceiveCount": 1},
        Policy='{{"Statement": "{}"}}'.format(HOSTILE.replace('"', "")),
    )
    fifo = db.create_queue("work.fifo", FifoQueue="true")
    q.send_message(HOSTILE, message_attributes={"sql": HOSTILE, "n": {"DataType": "Number", "StringValue": "1"}})
    q.send_message_batch([{"Id": "a", "MessageBody": HOSTILE + " %s ? :name"}, {"Id": "b", "MessageBody": '"quoted"'}])
    fifo.send_message(HOSTILE, message_group_id="g'--", message_deduplication_id="d';--")
    fifo.receive_message(receive_request_attempt_id="a';DROP--")
    msgs = q.receive_message(max_number_of_messages=10, visibility_timeout=5, message_attribute_names=["All"])
    assert {m.body for m in msgs} == {HOSTILE, HOSTILE + " %s ? :name", '"quoted"'}  # verbatim, as values
    msgs[0].change_visibility(0)
    q.change_message_visibility_batch([{"Id": "c", "ReceiptHandle": msgs[1].receipt_handle, "VisibilityTimeout": 9}])
    q.delete_message_batch([{"Id": "d", "ReceiptHandle": msgs[1].receipt_handle}])
    with pytest.raises(ReceiptHandleIsInvalid):
        q.delete_message(HOSTILE)
    clock.advance(10)
    q.receive_message(max_number_of_messages=10)  # past maxReceiveCount: moves to the dead-letter queue
    q.get_queue_attributes(["All"])
    q.set_queue_attributes({"DelaySeconds": "1"})
    q.tag_queue({HOSTILE_TAG: HOSTILE_TAG})
    q.untag_queue([HOSTILE_TAG])
    q.list_queue_tags()
    dlq.list_dead_letter_source_queues()
    db.list_queues(queue_name_prefix="%' OR '1'='1")
    db.list_queues(queue_name_prefix="w_")
    db.stats()
    q.peek("all", 10)
    task = db.start_message_move_task(dlq.arn, background=False)
    db.run_message_move_task(task)
    db.list_message_move_tasks(dlq.arn)
    exported = list(q.export_messages())
    q.purge_queue()
    q.import_messages(exported)
    db.prune()
    db.delete_queue(fifo.url)
    db.close()

    assert SEEN, "the recording connection saw nothing: the test is not wired in"
    stray = sorted({s for s in SEEN if s not in COMPILED and s not in FIXED})
    assert stray == []
    assert not [s for s in SEEN if "DROP" in s or "'1'='1" in s or "owner" in s]

    conn = real_connect(db_path)
    bodies = {r[0] for r in conn.execute("SELECT body FROM messages")}
    conn.close()
    assert HOSTILE in bodies  # and the messages table is still there
