"""sqsqlite.aio's calls on the event loop while another connection writes, on the system clock: a
call that finds the writers' lock taken (sqsqlite's, or SQLite's own, held by a program that writes
with SQLite alone) goes to the pool and waits there, and the loop goes on meanwhile. Real time,
bounded; what is asserted is counted (ticks of the loop while a lock was held, calls between two
of another task's turns, the statements a connection ran), never a duration."""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
import threading
import types
from collections.abc import AsyncIterator, Callable

import pytest

import sqsqlite
import sqsqlite.aio
from sqsqlite import aio
from sqsqlite import defaults as D
from tests.aio.helpers import threads_of_each_call

pytestmark = pytest.mark.slow

BOUND = 10.0  # seconds anything below may take
HELD = 0.3  # seconds the other connection holds its lock while the send waits


@contextlib.asynccontextmanager
async def loop_ticks(while_: Callable[[], bool], every: float = 0.005) -> AsyncIterator[list[int]]:
    """[n]: how many times a timer (every ``every`` seconds) ran on the loop while ``while_()``
    held, during the block. A loop stopped for all of that time counts none."""
    ticks = [0]

    async def ticking() -> None:
        while True:
            await asyncio.sleep(every)
            if while_():
                ticks[0] += 1

    ticker = asyncio.ensure_future(ticking())
    try:
        yield ticks
    finally:
        ticker.cancel()


def hold_sqsqlites_lock(path: str, holding: threading.Event, release: threading.Event) -> None:
    db = sqsqlite.connect(path)
    with db.store.write():
        holding.set()
        release.wait(BOUND)
    db.close()


def hold_sqlites_lock(path: str, holding: threading.Event, release: threading.Event) -> None:
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("BEGIN IMMEDIATE")
    holding.set()
    release.wait(BOUND)
    conn.execute("ROLLBACK")
    conn.close()


@pytest.mark.parametrize("hold", [hold_sqsqlites_lock, hold_sqlites_lock], ids=["sqsqlite's writers' lock", "SQLite's own lock"])
def test_a_send_while_another_connection_writes_waits_on_the_pool_while_the_loop_goes_on(tmp_path, monkeypatch, hold):
    path = str(tmp_path / "aio.db")

    async def scenario():
        async with sqsqlite.aio.client(path) as sqs:
            url = (await sqs.create_queue(QueueName="orders"))["QueueUrl"]
            where = threads_of_each_call(sqs, monkeypatch)
            holding, release = threading.Event(), threading.Event()
            holder = threading.Thread(target=hold, args=(path, holding, release))
            holder.start()
            await asyncio.to_thread(holding.wait, BOUND)
            send = asyncio.ensure_future(where(sqs.send_message(QueueUrl=url, MessageBody="waited")))
            async with loop_ticks(lambda: not send.done()) as ticks:
                await asyncio.sleep(HELD)
                waiting = not send.done()
                release.set()
                places = await asyncio.wait_for(send, BOUND)
            await asyncio.to_thread(holder.join, BOUND)
            after = await where(sqs.send_message(QueueUrl=url, MessageBody="after"))
            got = await sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10)
            return waiting, places, after, ticks[0], sorted(m["Body"] for m in got["Messages"])

    waiting, places, after, ticks, bodies = asyncio.run(scenario())
    assert waiting and "pool" in places  # it tried on the loop, wrote nothing, and waited on the pool
    # The loop's 5 ms timer ran while the send waited (about 60 times in the 0.3 s; a loop stopped
    # until the lock was free runs it not once while the send is pending).
    assert ticks >= 2
    assert after == {"loop"}  # the lock free again: on the loop
    assert bodies == ["after", "waited"]


def test_a_task_sending_in_a_loop_lets_other_tasks_and_timeouts_run(tmp_path):
    """Calls on the loop don't suspend their task: a producer awaiting them one after another
    still gives the loop a turn every millisecond or so, so a heartbeat ticks and wait_for fires."""

    async def scenario():
        async with sqsqlite.aio.client(str(tmp_path / "aio.db")) as sqs:
            url = (await sqs.create_queue(QueueName="orders"))["QueueUrl"]
            beats = 0

            async def heartbeat() -> None:
                nonlocal beats
                while True:
                    await asyncio.sleep(0.01)
                    beats += 1

            sent = 0

            async def produce() -> None:
                nonlocal sent
                for _ in range(100_000):  # far more than 0.5 s of sends; bounded, should they never yield
                    await sqs.send_message(QueueUrl=url, MessageBody="x")
                    sent += 1

            beating = asyncio.ensure_future(heartbeat())
            with pytest.raises(asyncio.TimeoutError):
                await asyncio.wait_for(produce(), 0.5)
            beating.cancel()
            return sent, beats

    sent, beats = asyncio.run(scenario())
    assert sent < 100_000  # the timeout ended the producer, which did not end of itself first
    assert beats >= 5  # about 50 in 0.5 s; a producer that never yields lets none run


class _LockingClock(sqsqlite.ManualClock):
    """A test clock whose first sleep (a long poll's wait, moving the clock) has another
    connection take SQLite's lock and hold it for HELD seconds."""

    def __init__(self, path: str):
        super().__init__()
        self.path, self.holder = path, None

    held = False  # while the other connection holds SQLite's lock

    def sleep(self, seconds: float) -> None:
        if self.holder is None:
            holding, release = threading.Event(), threading.Event()
            self.holder = threading.Thread(target=hold_sqlites_lock, args=(self.path, holding, release))
            self.holder.start()
            holding.wait(BOUND)
            self.held = True

            def let_go() -> None:
                self.held = False
                release.set()

            threading.Timer(HELD, let_go).start()
        super().sleep(seconds)


def test_a_long_poll_on_an_injected_clock_runs_on_the_pool_and_waits_its_time_once(tmp_path):
    """Where a clock is injected nothing parks: the poll's wait moves the clock, and the receive
    claims again in the same call, which may meet another connection's lock. So the receive runs
    on the pool: the loop goes on meanwhile, and the poll waits its 20 s once (a claim given up
    on the loop after the wait, then run again whole, had waited them twice, long enough for a
    message in flight for 30 s to come back)."""
    path = str(tmp_path / "aio.db")
    clock = _LockingClock(path)

    async def scenario():
        async with sqsqlite.aio.client(path, clock=clock) as sqs:
            url = (await sqs.create_queue(QueueName="orders"))["QueueUrl"]
            await sqs.send_message(QueueUrl=url, MessageBody="job")
            await sqs.receive_message(QueueUrl=url, VisibilityTimeout=30)  # in flight for 30 s
            started = clock.now_ms()
            async with loop_ticks(lambda: clock.held) as ticks:
                answer = await asyncio.wait_for(sqs.receive_message(QueueUrl=url, WaitTimeSeconds=20), BOUND)
            return answer, clock.now_ms() - started, ticks[0]

    answer, waited_ms, ticks = asyncio.run(scenario())
    clock.holder.join(BOUND)
    assert "Messages" not in answer and waited_ms == 20_000
    # The loop's 5 ms timer ran while the other connection held its lock (about 60 times in the
    # 0.3 s): the loop never waited it out.
    assert ticks >= 2


class _TickingCounter:
    """A stand-in for time.perf_counter that moves STEP seconds each time it is read: the slices
    sqsqlite.aio gives calls on the loop end after a number of calls, however fast the machine."""

    STEP = 0.00025

    def __init__(self):
        self.now = 0.0

    def __call__(self) -> float:
        self.now += self.STEP
        return self.now


def test_many_tasks_sending_on_one_loop_share_its_turns(tmp_path, monkeypatch):
    """Tasks of one client or of several, each sending back to back, all give the loop up within
    about a slice: between two turns of another task on the loop, each sending task makes about
    one call and one of them a slice's worth, not a slice each. Counted, on a clock that moves
    as calls are made (a slice being four reads of it)."""
    monkeypatch.setattr(aio, "time", types.SimpleNamespace(perf_counter=_TickingCounter()))
    tasks, each = 32, 40

    async def scenario():
        async with sqsqlite.aio.client(str(tmp_path / "a.db")) as one, sqsqlite.aio.client(str(tmp_path / "b.db")) as other:
            urls = [(await sqs.create_queue(QueueName="orders"))["QueueUrl"] for sqs in (one, other)]
            sent, between = [0], []

            async def produce(sqs, url: str) -> None:
                for _ in range(each):
                    await sqs.send_message(QueueUrl=url, MessageBody="x")
                    sent[0] += 1

            async def other_task() -> None:
                last = 0
                while True:
                    await asyncio.sleep(0)
                    between.append(sent[0] - last)
                    last = sent[0]

            watching = asyncio.ensure_future(other_task())
            await asyncio.gather(*(produce(sqs, url) for _ in range(tasks // 2) for sqs, url in zip((one, other), urls)))
            watching.cancel()
            return sent[0], between

    sent, between = asyncio.run(scenario())
    assert sent == tasks * each
    # A slice is four calls here: all 32 tasks taking a slice each would be 128 calls between two
    # of the other task's turns; sharing one, about 32 + 4.
    assert max(between) <= tasks + 8, sorted(between)[-5:]


def test_behind_sqlites_own_lock_a_call_gives_up_on_the_loop_after_aios_short_wait(tmp_path):
    """A program writing with SQLite alone holds SQLite's lock, not sqsqlite's: the call's BEGIN on
    the loop waits for it AIO_WAIT_FREE_SECONDS (SQLite's busy timeout, 1 ms), as for sqsqlite's
    lock, not the endpoint's 5 ms; then it goes to the pool. Read from the statements the loop's
    connection ran."""
    path = str(tmp_path / "aio.db")

    async def scenario():
        async with sqsqlite.aio.client(path) as sqs:
            url = (await sqs.create_queue(QueueName="orders"))["QueueUrl"]
            statements: list[str] = []
            sqs.sync.db.store.connection().set_trace_callback(statements.append)  # the loop thread's
            await sqs.send_message(QueueUrl=url, MessageBody="first")
            tried = len(statements)
            holding, release = threading.Event(), threading.Event()
            holder = threading.Thread(target=hold_sqlites_lock, args=(path, holding, release))
            holder.start()
            await asyncio.to_thread(holding.wait, BOUND)
            send = asyncio.ensure_future(sqs.send_message(QueueUrl=url, MessageBody="second"))
            while len(statements) == tried:  # its try on the loop, then the pool, where it waits
                await asyncio.sleep(0.01)
            await asyncio.sleep(0.01)
            release.set()
            await asyncio.wait_for(send, BOUND)
            await asyncio.to_thread(holder.join, BOUND)
            got = await sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10)
            return statements, sorted(m["Body"] for m in got["Messages"])

    statements, bodies = asyncio.run(scenario())
    # The only busy timeout the loop's connection ever had; its try behind the lock a BEGIN it ran.
    assert [s for s in statements if s.startswith("PRAGMA busy_timeout")] == [
        f"PRAGMA busy_timeout={round(D.AIO_WAIT_FREE_SECONDS * 1000)}"
    ]
    assert statements.count("BEGIN IMMEDIATE") >= 2
    assert bodies == ["first", "second"]


def test_a_call_on_the_loop_whose_lock_cannot_be_taken_raises_the_clients_own_error(tmp_path):
    # The lock is taken before the sync client's method runs, outside its answer: its error is
    # still raised as boto3 raises one (a ClientError of the client's exceptions).
    async def main() -> None:
        async with aio.client(str(tmp_path / "ro.db")) as c:
            url = (await c.create_queue(QueueName="q"))["QueueUrl"]
            await c.send_message(QueueUrl=url, MessageBody="warm")
            c.sync.db.store.connection().execute("PRAGMA query_only=1")  # the loop thread's: BEGIN IMMEDIATE fails
            with pytest.raises(c.exceptions.ClientError):
                await c.send_message(QueueUrl=url, MessageBody="refused")

    asyncio.run(main())
