"""sqsqlite.aio's calls on the event loop while another connection writes, on the system clock: a
call that finds the writers' lock taken (sqsqlite's, or SQLite's own, held by a program that writes
with SQLite alone) goes to the pool and waits there, and the loop goes on meanwhile. Real time,
bounded."""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
import threading
import time
from collections.abc import AsyncIterator

import pytest

import sqsqlite
import sqsqlite.aio
from tests.aio.helpers import threads_of_each_call

pytestmark = pytest.mark.slow

BOUND = 10.0  # seconds anything below may take
HELD = 0.3  # seconds the other connection holds its lock while the send waits


@contextlib.asynccontextmanager
async def loop_pauses(every: float = 0.005) -> AsyncIterator[list[float]]:
    """The gaps between a timer's ticks (``every`` seconds) on the loop while the block runs: a
    loop stopped meanwhile shows as one long gap."""
    gaps: list[float] = []

    async def ticking() -> None:
        last = time.monotonic()
        while True:
            await asyncio.sleep(every)
            now = time.monotonic()
            gaps.append(now - last)
            last = now

    ticker = asyncio.ensure_future(ticking())
    await asyncio.sleep(0.02)  # ticking
    try:
        yield gaps
    finally:
        await asyncio.sleep(0.02)  # the last gap noted, should the loop have stopped
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
            async with loop_pauses() as gaps:
                send = asyncio.ensure_future(where(sqs.send_message(QueueUrl=url, MessageBody="waited")))
                await asyncio.sleep(HELD)
                waiting = not send.done()
                release.set()
                places = await asyncio.wait_for(send, BOUND)
            await asyncio.to_thread(holder.join, BOUND)
            after = await where(sqs.send_message(QueueUrl=url, MessageBody="after"))
            got = await sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10)
            return waiting, places, after, max(gaps), sorted(m["Body"] for m in got["Messages"])

    waiting, places, after, longest_gap, bodies = asyncio.run(scenario())
    assert waiting and "pool" in places  # it tried on the loop, wrote nothing, and waited on the pool
    assert longest_gap < 0.1  # the loop's 5 ms ticks went on (a stalled loop would show the 0.3 s)
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

            async def produce() -> None:
                for _ in range(100_000):  # more than 0.5 s of sends; bounded, should they never yield
                    await sqs.send_message(QueueUrl=url, MessageBody="x")

            beating = asyncio.ensure_future(heartbeat())
            started = time.monotonic()
            with pytest.raises(asyncio.TimeoutError):
                await asyncio.wait_for(produce(), 0.5)
            took = time.monotonic() - started
            beating.cancel()
            return took, beats

    took, beats = asyncio.run(scenario())
    assert took < 0.5 + 0.25  # the timeout fired on time, not when the producer happened to stop
    assert beats >= 10  # about 50 in 0.5 s; never none


class _LockingClock(sqsqlite.ManualClock):
    """A test clock whose first sleep (a long poll's wait, moving the clock) has another
    connection take SQLite's lock and hold it for HELD seconds."""

    def __init__(self, path: str):
        super().__init__()
        self.path, self.holder = path, None

    def sleep(self, seconds: float) -> None:
        if self.holder is None:
            holding, release = threading.Event(), threading.Event()
            self.holder = threading.Thread(target=hold_sqlites_lock, args=(self.path, holding, release))
            self.holder.start()
            holding.wait(BOUND)
            threading.Timer(HELD, release.set).start()
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
            async with loop_pauses() as gaps:
                answer = await asyncio.wait_for(sqs.receive_message(QueueUrl=url, WaitTimeSeconds=20), BOUND)
            return answer, clock.now_ms() - started, max(gaps, default=0.0)

    answer, waited_ms, longest_gap = asyncio.run(scenario())
    clock.holder.join(BOUND)
    assert "Messages" not in answer and waited_ms == 20_000
    assert longest_gap < HELD / 2  # the loop never waited out the other connection's lock


def test_many_tasks_sending_on_one_loop_share_its_turns(tmp_path):
    """Tasks of one client or of several, each sending back to back, all give the loop up within
    about a slice: the loop's other callbacks (a 1 ms timer here) wait a few milliseconds, not a
    slice for every task."""

    async def scenario():
        async with sqsqlite.aio.client(str(tmp_path / "a.db")) as one, sqsqlite.aio.client(str(tmp_path / "b.db")) as other:
            urls = [(await sqs.create_queue(QueueName="orders"))["QueueUrl"] for sqs in (one, other)]

            async def produce(sqs, url: str) -> None:
                ends = time.monotonic() + 0.5
                while time.monotonic() < ends:
                    await sqs.send_message(QueueUrl=url, MessageBody="x")

            async with loop_pauses(every=0.001) as gaps:
                await asyncio.gather(*(produce(sqs, url) for _ in range(16) for sqs, url in zip((one, other), urls)))
            return sorted(gaps)[len(gaps) * 9 // 10]

    # The 90th percentile of the gaps (a process descheduled now and then on a loaded machine
    # leaves a few long ones): about 8 ms; 32 tasks taking a slice each made a tenth of them 100 ms.
    assert asyncio.run(scenario()) < 0.04


def test_behind_sqlites_own_lock_a_call_gives_up_on_the_loop_within_about_a_millisecond(tmp_path):
    """A program writing with SQLite alone holds SQLite's lock, not sqsqlite's: the call's BEGIN on
    the loop waits for it AIO_WAIT_FREE_SECONDS, as for sqsqlite's lock, not the endpoint's 5 ms."""
    path = str(tmp_path / "aio.db")

    async def scenario():
        async with sqsqlite.aio.client(path) as sqs:
            url = (await sqs.create_queue(QueueName="orders"))["QueueUrl"]
            on_loop, spent = sqs._on_loop, []

            def timed(*args, **kwargs):
                started = time.monotonic()
                try:
                    return on_loop(*args, **kwargs)
                finally:
                    spent.append(time.monotonic() - started)

            sqs._on_loop = timed
            tries = []
            for i in range(7):
                holding, release = threading.Event(), threading.Event()
                holder = threading.Thread(target=hold_sqlites_lock, args=(path, holding, release))
                holder.start()
                await asyncio.to_thread(holding.wait, BOUND)
                spent.clear()
                send = asyncio.ensure_future(sqs.send_message(QueueUrl=url, MessageBody=str(i)))
                await asyncio.sleep(0.01)  # its try on the loop, then the pool, where it waits
                tries.append(spent[0])
                release.set()
                await asyncio.wait_for(send, BOUND)
                await asyncio.to_thread(holder.join, BOUND)
            return sorted(tries)

    tries = asyncio.run(scenario())
    assert tries[len(tries) // 2] < 0.004  # about 1 ms; SQLite's own busy timeout had kept the loop 5 ms
