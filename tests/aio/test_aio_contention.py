"""sqsqlite.aio's calls on the event loop while another connection writes, on the system clock: a
call that finds the writers' lock taken (sqsqlite's, or SQLite's own, held by a program that writes
with SQLite alone) goes to the pool and waits there, and the loop goes on meanwhile. Real time,
bounded."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
import time

import pytest

import sqsqlite
import sqsqlite.aio
from tests.aio.helpers import threads_of_each_call

pytestmark = pytest.mark.slow

BOUND = 10.0  # seconds anything below may take
HELD = 0.3  # seconds the other connection holds its lock while the send waits


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
            gaps: list[float] = []

            async def ticking() -> None:
                last = time.monotonic()
                while True:
                    await asyncio.sleep(0.005)
                    now = time.monotonic()
                    gaps.append(now - last)
                    last = now

            ticker = asyncio.ensure_future(ticking())
            send = asyncio.ensure_future(where(sqs.send_message(QueueUrl=url, MessageBody="waited")))
            await asyncio.sleep(HELD)
            waiting = not send.done()
            release.set()
            places = await asyncio.wait_for(send, BOUND)
            ticker.cancel()
            await asyncio.to_thread(holder.join, BOUND)
            after = await where(sqs.send_message(QueueUrl=url, MessageBody="after"))
            got = await sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10)
            return waiting, places, after, max(gaps), sorted(m["Body"] for m in got["Messages"])

    waiting, places, after, longest_gap, bodies = asyncio.run(scenario())
    assert waiting and "pool" in places  # it tried on the loop, wrote nothing, and waited on the pool
    assert longest_gap < 0.1  # the loop's 5 ms ticks went on (a stalled loop would show the 0.3 s)
    assert after == {"loop"}  # the lock free again: on the loop
    assert bodies == ["after", "waited"]
