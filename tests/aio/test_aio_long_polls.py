"""sqsqlite.aio's long polls as waits on the event loop, on the system clock: woken by a send in
this process or another, many at once with no message answered twice, never starving the pool
the waking send needs, and leaving the loop free meanwhile. Real time, each bounded."""

from __future__ import annotations

import asyncio
import sys
import time

import pytest

import sqsqlite.aio

pytestmark = pytest.mark.slow

BOUND = 10.0  # seconds any wake-up below may take, far under the polls' 20-second waits


async def until(predicate, seconds: float = BOUND) -> None:
    deadline = time.monotonic() + seconds
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.005)


async def parked(sqs, url: str, n: int, **receive) -> list[asyncio.Future]:
    """n twenty-second polls of the queue "orders", once all of them wait in its line."""
    before = sqs.wakeups.parked("orders")
    polls = [asyncio.ensure_future(sqs.receive_message(QueueUrl=url, WaitTimeSeconds=20, **receive)) for _ in range(n)]
    await until(lambda: sqs.wakeups.parked("orders") == before + n)
    return polls


def test_a_parked_poll_is_woken_by_a_send_in_the_same_process_within_the_bound(tmp_path):
    async def scenario():
        async with sqsqlite.aio.client(str(tmp_path / "aio.db")) as sqs:
            url = (await sqs.create_queue(QueueName="orders"))["QueueUrl"]
            [poll] = await parked(sqs, url, 1)
            started = time.monotonic()
            await sqs.send_message(QueueUrl=url, MessageBody="hi")
            got = await asyncio.wait_for(poll, BOUND)
            return got, time.monotonic() - started

    got, took = asyncio.run(scenario())
    assert got["Messages"][0]["Body"] == "hi" and took < BOUND


def test_a_parked_poll_is_woken_by_a_send_from_another_process_on_the_same_file(tmp_path):
    path = str(tmp_path / "aio.db")
    send = f"import sqsqlite; c = sqsqlite.client({path!r}); c.send_message(QueueUrl='orders', MessageBody='from afar'); c.close()"

    async def scenario():
        async with sqsqlite.aio.client(path) as sqs:
            url = (await sqs.create_queue(QueueName="orders"))["QueueUrl"]
            [poll] = await parked(sqs, url, 1)
            started = time.monotonic()
            other = await asyncio.create_subprocess_exec(sys.executable, "-c", send)
            assert await asyncio.wait_for(other.wait(), 60) == 0
            got = await asyncio.wait_for(poll, BOUND)
            return got, time.monotonic() - started

    got, took = asyncio.run(scenario())
    assert got["Messages"][0]["Body"] == "from afar" and took < BOUND


def test_two_hundred_parked_polls_are_all_woken_by_two_hundred_messages_none_answered_twice(tmp_path):
    async def scenario():
        async with sqsqlite.aio.client(str(tmp_path / "aio.db")) as sqs:
            url = (await sqs.create_queue(QueueName="orders"))["QueueUrl"]
            waiting = await parked(sqs, url, 200)
            sent = []
            for batch in range(20):
                entries = [{"Id": str(i), "MessageBody": f"{batch}-{i}"} for i in range(10)]
                answer = await sqs.send_message_batch(QueueUrl=url, Entries=entries)
                sent += [e["MessageId"] for e in answer["Successful"]]
            answers = await asyncio.wait_for(asyncio.gather(*waiting), 30)
            return sent, answers

    sent, answers = asyncio.run(scenario())
    received = [m["MessageId"] for a in answers for m in a.get("Messages", [])]
    assert len(received) == len(set(received)) == 200
    assert sorted(received) == sorted(sent)
    assert all(len(a["Messages"]) == 1 for a in answers)


def test_more_parked_polls_than_pool_threads_do_not_starve_the_send_that_wakes_them(tmp_path):
    async def scenario():
        async with sqsqlite.aio.client(str(tmp_path / "aio.db"), threads=2) as sqs:
            url = (await sqs.create_queue(QueueName="orders"))["QueueUrl"]
            waiting = await parked(sqs, url, 10, MaxNumberOfMessages=1)
            await asyncio.wait_for(
                sqs.send_message_batch(QueueUrl=url, Entries=[{"Id": str(i), "MessageBody": str(i)} for i in range(10)]), BOUND
            )
            return await asyncio.wait_for(asyncio.gather(*waiting), BOUND)

    answers = asyncio.run(scenario())
    assert sorted(m["Body"] for a in answers for m in a["Messages"]) == [str(i) for i in range(10)]


def test_the_event_loop_keeps_running_while_a_long_poll_waits(tmp_path):
    async def scenario():
        async with sqsqlite.aio.client(str(tmp_path / "aio.db"), threads=1) as sqs:
            url = (await sqs.create_queue(QueueName="orders"))["QueueUrl"]
            ticks = 0

            async def ticking():
                nonlocal ticks
                while True:
                    await asyncio.sleep(0.01)
                    ticks += 1

            ticker = asyncio.ensure_future(ticking())
            started = time.monotonic()
            empty = await sqs.receive_message(QueueUrl=url, WaitTimeSeconds=1)
            waited = time.monotonic() - started
            ticker.cancel()
            # The pool's one thread is free while the poll waits: another call goes through.
            return empty, waited, ticks

    empty, waited, ticks = asyncio.run(scenario())
    # The poll's deadline is on the clock's whole milliseconds, which can end it up to 1 ms
    # short of a second on the monotonic clock (0.9998 s in a CI run).
    assert "Messages" not in empty and 0.998 <= waited < BOUND
    # About 100 in the second; a loop blocked by the poll would tick at most once. A loaded
    # machine has given as few as 20, so the bound is well under that.
    assert ticks >= 5


def test_a_call_goes_through_at_once_while_a_poll_waits_on_a_client_of_one_thread(tmp_path):
    async def scenario():
        async with sqsqlite.aio.client(str(tmp_path / "aio.db"), threads=1) as sqs:
            url = (await sqs.create_queue(QueueName="orders"))["QueueUrl"]
            [poll] = await parked(sqs, url, 1)
            listed = await asyncio.wait_for(sqs.list_queues(), BOUND)
            poll.cancel()
            return listed

    assert asyncio.run(scenario())["QueueUrls"] == ["http://localhost:9324/000000000000/orders"]


def test_a_poll_woken_and_cancelled_before_it_claims_hands_its_wake_up_to_the_next_poll(tmp_path):
    async def scenario():
        async with sqsqlite.aio.client(str(tmp_path / "aio.db")) as sqs:
            url = (await sqs.create_queue(QueueName="orders"))["QueueUrl"]
            [first] = await parked(sqs, url, 1)
            [second] = await parked(sqs, url, 1)  # behind the first in the queue's line
            # A send on the loop's own thread wakes the first poll at once (its commit is this
            # thread's own, so the data_version watcher sees nothing to wake anyone for), and the
            # first poll is cancelled before it runs again.
            sqs.sync.send_message(QueueUrl=url, MessageBody="hi")
            first.cancel()
            with pytest.raises(asyncio.CancelledError):
                await first
            return await asyncio.wait_for(second, BOUND)

    assert asyncio.run(scenario())["Messages"][0]["Body"] == "hi"


def test_a_poll_cancelled_by_wait_for_while_parked_leaves_the_next_send_to_the_polls_still_waiting(tmp_path):
    async def scenario():
        async with sqsqlite.aio.client(str(tmp_path / "aio.db")) as sqs:
            url = (await sqs.create_queue(QueueName="orders"))["QueueUrl"]
            with pytest.raises(asyncio.TimeoutError):
                await asyncio.wait_for(sqs.receive_message(QueueUrl=url, WaitTimeSeconds=20), 0.2)
            assert sqs.wakeups.parked("orders") == 0
            [poll] = await parked(sqs, url, 1)
            await sqs.send_message(QueueUrl=url, MessageBody="hi")
            return await asyncio.wait_for(poll, BOUND)

    assert asyncio.run(scenario())["Messages"][0]["Body"] == "hi"


def test_closing_the_client_ends_its_parked_polls_with_no_messages_at_once(tmp_path):
    async def scenario():
        sqs = sqsqlite.aio.client(str(tmp_path / "aio.db"))
        url = (await sqs.create_queue(QueueName="orders"))["QueueUrl"]
        waiting = await parked(sqs, url, 3)
        started = time.monotonic()
        await sqs.close()
        answers = await asyncio.wait_for(asyncio.gather(*waiting), BOUND)
        return answers, time.monotonic() - started

    answers, took = asyncio.run(scenario())
    assert all("Messages" not in a and a["ResponseMetadata"]["HTTPStatusCode"] == 200 for a in answers)
    assert took < BOUND


def test_a_poll_cancelled_after_its_wake_up_hands_the_wake_up_to_the_next_poll(tmp_path):
    # Woken by a send, then cancelled before its claim ran: the next parked poll must look now,
    # not at its own deadline. The cancel lands at each of the first turns of the loop after the
    # send; a poll that claimed the message before it (no cancel) proves nothing here.
    async def scenario(turns: int) -> tuple[bool, float, int]:
        async with sqsqlite.aio.client(str(tmp_path / f"handon{turns}.db")) as sqs:
            url = (await sqs.create_queue(QueueName="orders"))["QueueUrl"]
            first = asyncio.ensure_future(sqs.receive_message(QueueUrl=url, WaitTimeSeconds=5))
            await asyncio.sleep(0.05)
            second = asyncio.ensure_future(sqs.receive_message(QueueUrl=url, WaitTimeSeconds=5))
            await asyncio.sleep(0.05)
            await sqs.send_message(QueueUrl=url, MessageBody="m")
            time.sleep(0.002)  # the loop busy for a moment, as with other work: the woken claim yields first
            for _ in range(turns):
                await asyncio.sleep(0)
            first.cancel()
            [outcome] = await asyncio.gather(first, return_exceptions=True)
            started = time.monotonic()
            answer = await second
            return isinstance(outcome, asyncio.CancelledError), time.monotonic() - started, len(answer.get("Messages", []))

    for turns in range(3):
        cancelled, waited, got = asyncio.run(scenario(turns))
        if cancelled:
            assert got == 1 and waited < 2.0, (turns, waited)
