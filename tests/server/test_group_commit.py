"""The engine calls of one turn of the endpoint's event loop made as one write transaction (the
first alone, the rest grouped): each answer leaves only after the commit that holds its work, a
call that fails is undone alone, and polls wake once the group's messages are there."""

from __future__ import annotations

import asyncio
import fcntl
import logging
import os
import threading
import time

import pytest

import sqsqlite
from benchmarks.rawsqs import Connection, SQSError
from sqsqlite.errors import DatabaseError
from sqsqlite.server import BackgroundServer, endpoint

pytestmark = pytest.mark.slow


def _visible(path: str, queue: str) -> int:
    with sqsqlite.connect(path) as other:  # another connection: it sees committed work only
        return int(other.queue(queue).get_queue_attributes(["ApproximateNumberOfMessages"])["ApproximateNumberOfMessages"])


def _around_commits(monkeypatch, server: BackgroundServer, before=None, after=None) -> None:
    """Run ``before()`` just ahead of each group's commit in ``server``, ``after()`` just behind it."""
    store = server.db.store
    end_group = store.end_group

    def wrapped(group):
        if before is not None:
            before()
        end_group(group)
        if after is not None:
            after()

    monkeypatch.setattr(store, "end_group", wrapped)


def _slow() -> None:
    time.sleep(0.3)  # bounded: an answer or wake-up sent before the commit would arrive in this window


def _loop(server: BackgroundServer):
    """The server's event loop, once its thread has attached it (as it starts)."""
    for _ in range(500):
        if server.server.loop is not None:
            break
        threading.Event().wait(0.01)
    assert server.server.loop is not None
    return server.server.loop


def _hold(server: BackgroundServer) -> threading.Event:
    """Block the server's loop until the returned event is set: requests sent meanwhile are all
    read in its next turn. Bounded: the loop goes on by itself after 10 seconds."""
    release, held = threading.Event(), threading.Event()

    def hold() -> None:
        held.set()
        release.wait(10)

    _loop(server).call_soon_threadsafe(hold)
    assert held.wait(5)
    return release


async def _in_one_turn(server: BackgroundServer, requests: list[tuple[str, dict]]) -> list[Connection]:
    """One connection per request, opened first; the requests sent while the loop is held."""
    conns = [await Connection(server.url).open() for _ in requests]
    for c in conns:  # each accepted and read from by the server before the turn (one at a time: none grouped)
        await c.call("ListQueues", {})
    release = _hold(server)
    try:
        for c, (action, members) in zip(conns, requests, strict=True):
            c.write(action, members)
            assert c.writer is not None
            await c.writer.drain()
    finally:
        release.set()
    return conns


async def _answers(conns: list[Connection]) -> list[dict | SQSError]:
    async def one(c: Connection) -> dict | SQSError:
        try:
            return await c.read()
        except SQSError as err:
            return err
        finally:
            c.close()

    return await asyncio.wait_for(asyncio.gather(*(one(c) for c in conns)), 30)


def test_requests_read_in_one_turn_of_the_loop_are_committed_as_one_group_and_each_answer_follows_its_commit(tmp_path, monkeypatch):
    path = str(tmp_path / "group.db")
    with BackgroundServer(path) as server:
        url = server.db.create_queue("orders").url
        committed: list[float] = []
        _around_commits(monkeypatch, server, before=_slow, after=lambda: committed.append(time.monotonic()))

        async def scenario():
            conns = await _in_one_turn(server, [("SendMessage", {"QueueUrl": url, "MessageBody": str(i)}) for i in range(16)])

            async def arrival(c: Connection) -> float:
                await c.read()
                c.close()
                return time.monotonic()

            return await asyncio.gather(*(arrival(c) for c in conns))

        arrived = asyncio.run(scenario())
        app = server.server.app
        assert (app.groups, app.grouped) == (1, 15)  # the turn's first answered alone, the other 15 after one commit
    [commit] = committed
    assert sum(t < commit - 0.2 for t in arrived) == 1  # the first, alone: answered without waiting for the group
    assert sum(t >= commit for t in arrived) == 15
    assert _visible(path, "orders") == 16


def test_a_call_answered_with_an_error_in_a_group_leaves_the_others_kept(tmp_path):
    # A forged handle is refused before anything is written; a write undone alone inside a
    # group (its savepoint rolled back) is tests/unit/test_store_groups.py's.
    path = str(tmp_path / "mixed.db")
    with BackgroundServer(path) as server:
        url = server.db.create_queue("orders").url
        requests = []
        for i in range(8):
            requests.append(("SendMessage", {"QueueUrl": url, "MessageBody": f"kept {i}"}))
            requests.append(("DeleteMessage", {"QueueUrl": url, "ReceiptHandle": f"forged-{i}"}))

        async def scenario():
            return await _answers(await _in_one_turn(server, requests))

        answers = asyncio.run(scenario())
        assert server.server.app.groups == 1
    sent, refused = answers[0::2], answers[1::2]
    assert all(isinstance(a, dict) and "MessageId" in a for a in sent)
    assert all(isinstance(a, SQSError) and a.status == 404 and "ReceiptHandleIsInvalid" in a.body["__type"] for a in refused)
    assert _visible(path, "orders") == 8


def test_grouped_calls_that_wait_for_another_writer_on_the_pool_answer_what_they_did_there(tmp_path):
    # Another process holds the writers' lock longer than a wait-free write waits: the turn's
    # calls run again on the pool, one by one, and each answers what it did there (a send its
    # MessageId, a receive its messages), never InternalError for work that was committed.
    path = str(tmp_path / "waited.db")
    with BackgroundServer(path) as server:
        sends, receives = server.db.create_queue("sends").url, server.db.create_queue("receives").url
        server.db.queue("receives").send_message_batch([{"Id": str(i), "MessageBody": f"m{i}"} for i in range(8)])
        fd = os.open(path + "-lock", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)  # another sqsqlite process's long write
            threading.Timer(0.5, fcntl.flock, (fd, fcntl.LOCK_UN)).start()
            requests = [("SendMessage", {"QueueUrl": sends, "MessageBody": str(i)}) for i in range(4)]
            requests += [("ReceiveMessage", {"QueueUrl": receives, "MaxNumberOfMessages": 2}) for _ in range(4)]

            async def scenario():
                return await _answers(await _in_one_turn(server, requests))

            answers = asyncio.run(scenario())
        finally:
            os.close(fd)
    assert [type(a) for a in answers] == [dict] * 8, answers
    assert all("MessageId" in a for a in answers[:4]) and _visible(path, "sends") == 4
    received = [m["Body"] for a in answers[4:] for m in a["Messages"]]
    assert sorted(received) == [f"m{i}" for i in range(8)]


def test_calls_still_waiting_on_the_pool_when_a_stop_gives_up_waiting_answer_what_they_stored(tmp_path, monkeypatch):
    # The turn's first call waits on the pool alone, the rest run again there from their group;
    # the stop waits 0.3 s for them, the lock is let go at 1 s. Each answers its MessageId: a bare
    # error would be sent again by an SDK, and the message stored twice.
    monkeypatch.setattr(endpoint, "GRACEFUL_STOP_SECONDS", 0.3)
    path = str(tmp_path / "late.db")
    server = BackgroundServer(path)
    sends = server.db.create_queue("sends").url
    fd = os.open(path + "-lock", os.O_RDWR | os.O_CREAT, 0o600)
    stopped: list[bool] = []
    stopper = threading.Thread(target=lambda: stopped.append(server.stop(timeout=30)))
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # another sqsqlite process's long write
        requests = [("SendMessage", {"QueueUrl": sends, "MessageBody": str(i)}) for i in range(4)]

        async def scenario():
            conns = await _in_one_turn(server, requests)
            await asyncio.sleep(0.2)  # read, tried on the loop, and handed to the pool
            stopper.start()
            threading.Timer(1.0, fcntl.flock, (fd, fcntl.LOCK_UN)).start()
            return await _answers(conns)

        answers = asyncio.run(scenario())
        stopper.join(60)
    finally:
        os.close(fd)
        if not stopper.is_alive() and not stopped:
            server.stop()
    assert [type(a) for a in answers] == [dict] * 4, answers
    assert stopped == [False]  # requests outlived the stop's wait: not a clean stop
    with sqsqlite.connect(path) as db:
        stored = sorted(m.message_id for m in db.queue("sends").peek("all"))
    assert stored == sorted(a["MessageId"] for a in answers)


def test_when_a_group_cannot_commit_each_of_its_calls_answers_the_commits_database_error_and_none_of_them_happened(tmp_path, monkeypatch):
    path = str(tmp_path / "failed.db")
    with BackgroundServer(path) as server:
        url = server.db.create_queue("orders").url
        # As SQLite may undo a transaction on a full disk or an I/O error (on the loop's connection).
        _around_commits(monkeypatch, server, before=lambda: server.db.store.connection().execute("ROLLBACK"))

        async def scenario():
            return await _answers(await _in_one_turn(server, [("SendMessage", {"QueueUrl": url, "MessageBody": str(i)}) for i in range(6)]))

        answers = asyncio.run(scenario())
    alone = [a for a in answers if isinstance(a, dict)]
    grouped = [a for a in answers if isinstance(a, SQSError)]
    assert len(alone) == 1 and "MessageId" in alone[0]  # the turn's first committed on its own
    assert len(grouped) == 5
    assert {(a.status, a.body["__type"], a.body["message"]) for a in grouped} == {
        (500, "com.amazonaws.sqs#DatabaseError", "The grouped writes were undone: a statement of one of them failed the transaction.")
    }
    assert _visible(path, "orders") == 1


def _on_loop(server: BackgroundServer, fn):
    """fn() on the server's loop thread (with its SQLite connection), the loop held meanwhile."""
    out: list = []
    ran = threading.Event()

    def run() -> None:
        try:
            out.append(fn())
        finally:
            ran.set()

    _loop(server).call_soon_threadsafe(run)
    assert ran.wait(5)
    return out[0]


def test_on_a_full_disk_every_call_of_a_turn_grouped_or_alone_answers_the_same_database_error_logged_in_one_line(tmp_path, caplog):
    path = str(tmp_path / "full.db")
    with BackgroundServer(path, engine_threads=0) as server:  # every call on the loop's connection
        url = server.db.create_queue("orders").url

        def disk_full() -> None:  # the file may grow no more: SQLite fails a write as on a full disk
            conn = server.db.store.connection()
            conn.execute(f"PRAGMA max_page_count={conn.execute('PRAGMA page_count').fetchone()[0]}")

        _on_loop(server, disk_full)

        async def scenario():
            requests = [("SendMessage", {"QueueUrl": url, "MessageBody": str(i) * 20_000}) for i in range(6)]
            return await _answers(await _in_one_turn(server, requests))

        answers = asyncio.run(scenario())
        assert (server.server.app.groups, server.server.app.grouped) == (1, 5)
    assert all(isinstance(a, SQSError) for a in answers)
    said = {(a.status, a.body["__type"], a.body["message"]) for a in answers if isinstance(a, SQSError)}
    assert said == {
        (
            500,
            "com.amazonaws.sqs#DatabaseError",
            f"The disk holding {path!r} is full; the operation changed nothing (SQLite said: database or disk is full).",
        )
    }
    logged = [r for r in caplog.records if r.name == "sqsqlite.server" and r.levelno >= logging.WARNING]
    assert [(r.getMessage(), r.exc_info) for r in logged] == [
        (f"a group of 5 engine calls could not be committed: DatabaseError: {next(iter(said))[2]}", None)
    ]
    assert _visible(path, "orders") == 0


class _Interrupt(BaseException):
    """Not an error: as an interrupt reaches a call."""


def test_a_group_interrupted_mid_way_undoes_its_calls_lets_go_of_the_lock_and_answers_each_internal_error(tmp_path, monkeypatch):
    path = str(tmp_path / "interrupted.db")
    with BackgroundServer(path) as server:
        url = server.db.create_queue("orders").url
        attempt = server.server.dispatcher.attempt

        def interrupted(call, *args):
            if call.request.get("MessageBody") == "3":
                raise _Interrupt
            return attempt(call, *args)

        monkeypatch.setattr(server.server.dispatcher, "attempt", interrupted)

        async def scenario():
            return await _answers(await _in_one_turn(server, [("SendMessage", {"QueueUrl": url, "MessageBody": str(i)}) for i in range(6)]))

        answers = asyncio.run(scenario())
        assert _visible(path, "orders") == 1  # the turn's first, alone; the group's sends were undone
        with sqsqlite.connect(path) as other:  # the lock was let go
            other.queue("orders").send_message("after")
        monkeypatch.setattr(server.server.dispatcher, "attempt", attempt)
        again = asyncio.run(scenario())  # the loop goes on serving, grouping as before
        assert all(isinstance(a, dict) for a in again)
    grouped = [a for a in answers if isinstance(a, SQSError)]
    assert len(grouped) == 5 and all(a.status == 500 and a.body["__type"].endswith("InternalError") for a in grouped)


def test_grouped_receives_each_claim_different_messages(tmp_path):
    path = str(tmp_path / "receives.db")
    with BackgroundServer(path) as server:
        q = server.db.create_queue("orders")
        q.send_message_batch([{"Id": str(i), "MessageBody": str(i)} for i in range(8)])

        async def scenario():
            requests = [("ReceiveMessage", {"QueueUrl": q.url, "VisibilityTimeout": 600}) for _ in range(8)]
            return await _answers(await _in_one_turn(server, requests))

        answers = asyncio.run(scenario())
        assert server.server.app.grouped == 7
    bodies = [m["Body"] for a in answers for m in a["Messages"]]  # type: ignore[index]
    assert sorted(bodies) == [str(i) for i in range(8)]


def test_polls_parked_before_a_group_are_woken_by_its_sends_once_it_commits(tmp_path):
    path = str(tmp_path / "woken.db")
    with BackgroundServer(path) as server:
        url = server.db.create_queue("orders").url

        async def scenario():
            polls = [await Connection(server.url).open() for _ in range(10)]
            for c in polls:
                c.write("ReceiveMessage", {"QueueUrl": url, "WaitTimeSeconds": 20, "VisibilityTimeout": 600})
            while server.db.wakeups.parked("orders") < 10:
                await asyncio.sleep(0.005)
            sends = await _in_one_turn(server, [("SendMessage", {"QueueUrl": url, "MessageBody": str(i)}) for i in range(10)])
            await _answers(sends)
            return await _answers(polls)

        answers = asyncio.run(scenario())
        assert server.server.app.groups >= 1
    bodies = [m["Body"] for a in answers for m in a["Messages"]]  # type: ignore[index]
    assert sorted(bodies) == sorted(str(i) for i in range(10))  # each poll one message, none twice


def test_polls_in_another_server_are_woken_only_once_the_group_that_sent_their_messages_has_committed(tmp_path, monkeypatch):
    # The data_version watcher would also notice the commit: silence it, so only the wake-up
    # sent between the servers can answer the polls before their deadline. A wake-up sent before
    # the (slowed) commit would find nothing, and its polls would wait out the 20 s.
    monkeypatch.setattr("sqsqlite.longpoll.wakeups.WATCH_MIN_GAP", 3600.0)
    path = str(tmp_path / "peers.db")
    sqsqlite.connect(path).close()
    with BackgroundServer(path) as a, BackgroundServer(path) as b:
        url = b.db.create_queue("across").url
        _around_commits(monkeypatch, b, before=_slow)

        async def scenario():
            polls = [await Connection(a.url).open() for _ in range(5)]
            for c in polls:
                c.write("ReceiveMessage", {"QueueUrl": url, "WaitTimeSeconds": 20})
            while a.db.wakeups.parked("across") < 5:
                await asyncio.sleep(0.005)
            started = time.monotonic()
            await _answers(await _in_one_turn(b, [("SendMessage", {"QueueUrl": url, "MessageBody": str(i)}) for i in range(5)]))
            answers = await _answers(polls)
            return answers, time.monotonic() - started

        answers, took = asyncio.run(scenario())
        assert b.server.app.grouped == 4
    assert sorted(m["Body"] for a in answers for m in a["Messages"]) == ["0", "1", "2", "3", "4"]  # type: ignore[index]
    assert took < 15  # woken, not answered at the 20-second deadline


def test_a_group_whose_lock_could_not_be_taken_up_front_answers_each_call_with_why_and_runs_none(tmp_path, monkeypatch):
    path = str(tmp_path / "take-failed.db")
    with BackgroundServer(path) as server:
        url = server.db.create_queue("orders").url
        store = server.db.store
        taking = store.lock_group

        def failing(within, lone=False):
            if within is not None and not lone:  # the turn's group's up-front take, not a lone call's
                raise DatabaseError("the file could not be locked")
            return taking(within, lone)

        monkeypatch.setattr(store, "lock_group", failing)

        async def scenario() -> list[dict | SQSError]:
            return await _answers(await _in_one_turn(server, [("SendMessage", {"QueueUrl": url, "MessageBody": str(i)}) for i in range(4)]))

        answers = asyncio.run(scenario())
        refused = [a for a in answers if isinstance(a, SQSError)]
        assert len(refused) == 3 and all(a.body["__type"].endswith("DatabaseError") for a in refused), answers  # the group's
        assert _visible(path, "orders") == 1  # the turn's first, alone, took its own lock


def test_a_result_that_fails_to_be_shaped_is_answered_internal_error_not_the_http_servers_500(tmp_path, monkeypatch):
    path = str(tmp_path / "shape.db")
    with BackgroundServer(path) as server:
        url = server.db.create_queue("orders").url
        d = server.server.dispatcher
        success = d.success

        def failing(call, result):
            if call.action == "SendMessage":
                raise RuntimeError("a bug shaping the answer")
            return success(call, result)

        monkeypatch.setattr(d, "success", failing)

        async def scenario() -> list[dict | SQSError]:
            return await _answers(await _in_one_turn(server, [("SendMessage", {"QueueUrl": url, "MessageBody": "x"})]))

        [answer] = asyncio.run(scenario())
        assert isinstance(answer, SQSError) and answer.status == 500 and answer.body["__type"].endswith("InternalError")
