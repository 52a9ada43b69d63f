"""sqsqlite.aio beside the sync client, in one run, on one machine.

    python -m benchmarks.aio                 # 2,000 calls per figure, best of 3
    python -m benchmarks.aio --calls 5000 --runs 5

Figures (calls a second, each on a fresh temporary file with one queue):

- send: one ``send_message`` per call, one call at a time (the sync client; sqsqlite.aio
  awaited in turn), then sqsqlite.aio with 16 tasks sending at once; both again with
  ``inline=False``, every call handed to the client's pool (what a call costs when another
  connection holds the lock, and the way every call went before calls ran on the loop).
- receive+delete: one ``receive_message`` of one message and its ``delete_message`` per
  message (two calls), the same five ways, from a queue filled beforehand.

Then wake-ups: a send to one parked poll of the same client, from the send's start to the poll's
answer, beside its floor in the same run (the sync client's long poll on a thread of the process,
woken by the condition its commits notify), and 100 parked polls sent 10 batches of 10.

Then the memory of the process (VmRSS, Linux) and its threads with the aio client open and
idle, and with 1,000 twenty-second long polls parked on an empty queue.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import subprocess
import sys
import tempfile
import threading
import time

import sqsqlite
import sqsqlite.aio

CONCURRENCY = 16
PARKED = 1000
WAKE_POLLS = 100


def _fresh(directory: str, name: str) -> str:
    return os.path.join(directory, f"{name}-{time.monotonic_ns()}.db")


def sync_figures(directory: str, calls: int) -> tuple[float, float]:
    with sqsqlite.client(_fresh(directory, "sync")) as sqs:
        url = sqs.create_queue(QueueName="bench")["QueueUrl"]
        started = time.perf_counter()
        for i in range(calls):
            sqs.send_message(QueueUrl=url, MessageBody=f"m{i}")
        send = calls / (time.perf_counter() - started)
        started = time.perf_counter()
        for _ in range(calls):
            m = sqs.receive_message(QueueUrl=url)["Messages"][0]
            sqs.delete_message(QueueUrl=url, ReceiptHandle=m["ReceiptHandle"])
        receive = 2 * calls / (time.perf_counter() - started)
    return send, receive


async def aio_figures(directory: str, calls: int, tasks: int, inline: bool) -> tuple[float, float]:
    async with sqsqlite.aio.client(_fresh(directory, "aio"), inline=inline) as sqs:
        url = (await sqs.create_queue(QueueName="bench"))["QueueUrl"]

        async def sends(n: int) -> None:
            for i in range(n):
                await sqs.send_message(QueueUrl=url, MessageBody=f"m{i}")

        async def consume(n: int) -> None:
            for _ in range(n):
                m = (await sqs.receive_message(QueueUrl=url))["Messages"][0]
                await sqs.delete_message(QueueUrl=url, ReceiptHandle=m["ReceiptHandle"])

        share = calls // tasks
        started = time.perf_counter()
        await asyncio.gather(*(sends(share) for _ in range(tasks)))
        send = share * tasks / (time.perf_counter() - started)
        started = time.perf_counter()
        await asyncio.gather(*(consume(share) for _ in range(tasks)))
        receive = 2 * share * tasks / (time.perf_counter() - started)
    return send, receive


def sync_wake(directory: str, samples: int) -> list[float]:
    """The floor of a wake-up: the sync client's long poll on a thread of this process (woken by
    the condition its commits notify), sent to from this thread: seconds from the send's start
    to the poll's answer."""
    with sqsqlite.client(_fresh(directory, "sync-wake")) as sqs:
        url = sqs.create_queue(QueueName="wake")["QueueUrl"]
        times = []
        for _ in range(samples):
            answered: list[float] = []

            def poll(answered: list[float] = answered) -> None:
                m = sqs.receive_message(QueueUrl=url, WaitTimeSeconds=20)["Messages"][0]
                answered.append(time.perf_counter())
                sqs.delete_message(QueueUrl=url, ReceiptHandle=m["ReceiptHandle"])

            thread = threading.Thread(target=poll)
            thread.start()
            time.sleep(0.02)  # its claim came back empty: it waits (the sync client tells no count of waiting polls)
            started = time.perf_counter()
            sqs.send_message(QueueUrl=url, MessageBody="wake")
            thread.join()
            times.append(answered[0] - started)
    return times


async def aio_wake(directory: str, samples: int) -> tuple[list[float], float]:
    """sqsqlite.aio's wake-ups: one parked poll and a send of the same client, seconds from the
    send's start to the poll's answer, ``samples`` times; then WAKE_POLLS parked polls and
    WAKE_POLLS / 10 batches of 10 sent one after the other: seconds until every poll answered."""
    async with sqsqlite.aio.client(_fresh(directory, "aio-wake")) as sqs:
        url = (await sqs.create_queue(QueueName="wake"))["QueueUrl"]
        times = []
        for _ in range(samples):
            poll = asyncio.ensure_future(sqs.receive_message(QueueUrl=url, WaitTimeSeconds=20))
            while sqs.wakeups.parked("wake") < 1:
                await asyncio.sleep(0)
            started = time.perf_counter()
            await sqs.send_message(QueueUrl=url, MessageBody="wake")
            m = (await poll)["Messages"][0]
            times.append(time.perf_counter() - started)
            await sqs.delete_message(QueueUrl=url, ReceiptHandle=m["ReceiptHandle"])
        polls = [asyncio.ensure_future(sqs.receive_message(QueueUrl=url, WaitTimeSeconds=20)) for _ in range(WAKE_POLLS)]
        while sqs.wakeups.parked("wake") < WAKE_POLLS:
            await asyncio.sleep(0.001)
        started = time.perf_counter()
        for _ in range(WAKE_POLLS // 10):
            await sqs.send_message_batch(QueueUrl=url, Entries=[{"Id": str(i), "MessageBody": "wake"} for i in range(10)])
        answers = await asyncio.gather(*polls)
        many = time.perf_counter() - started
        if sum(len(a.get("Messages", ())) for a in answers) != WAKE_POLLS:
            raise RuntimeError("a parked poll answered without its message")
    return times, many


def _ms(seconds: list[float], p: float) -> float:
    ordered = sorted(seconds)
    return ordered[min(len(ordered) - 1, int(p * len(ordered)))] * 1000


def _status() -> tuple[float, int]:
    """This process's resident memory (MiB) and threads, from /proc."""
    with open("/proc/self/status") as f:
        text = f.read()
    rss = int(re.search(r"VmRSS:\s+(\d+)", text).group(1)) / 1024  # type: ignore[union-attr]
    threads = int(re.search(r"Threads:\s+(\d+)", text).group(1))  # type: ignore[union-attr]
    return rss, threads


async def parked_memory(path: str) -> dict:
    async with sqsqlite.aio.client(path) as sqs:
        url = (await sqs.create_queue(QueueName="bench"))["QueueUrl"]
        for _ in range(8):  # every pool thread started and connected, as under load
            await asyncio.gather(*(sqs.list_queues() for _ in range(8)))
        idle_rss, idle_threads = _status()
        polls = [asyncio.ensure_future(sqs.receive_message(QueueUrl=url, WaitTimeSeconds=20)) for _ in range(PARKED)]
        deadline = time.monotonic() + 60
        while sqs.wakeups.parked("bench") < PARKED:
            if time.monotonic() > deadline:
                raise RuntimeError("the polls did not all park within 60 s")
            await asyncio.sleep(0.01)
        parked_rss, parked_threads = _status()
        await sqs.close()  # ends the polls, empty
        await asyncio.gather(*polls)
    return {
        "idle_rss_mib": round(idle_rss, 1),
        "idle_threads": idle_threads,
        "parked_rss_mib": round(parked_rss, 1),
        "parked_threads": parked_threads,
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.aio", description=__doc__.split("\n\n")[1])
    p.add_argument("--calls", type=int, default=2000, help="calls per figure (default 2,000)")
    p.add_argument("--runs", type=int, default=3, help="runs of each figure; the best is shown (default 3)")
    p.add_argument("--wakes", type=int, default=100, help="wake-ups timed per run (default 100)")
    p.add_argument("--memory-child", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.memory_child:
        print(asyncio.run(parked_memory(args.memory_child)))
        return 0
    with tempfile.TemporaryDirectory(prefix="sqsqlite-aio-bench-") as directory:
        ways = {  # name: (tasks, inline)
            "sqsqlite.aio, 1 task": (1, True),
            f"sqsqlite.aio, {CONCURRENCY} tasks": (CONCURRENCY, True),
            "sqsqlite.aio, inline=False, 1 task": (1, False),
            f"sqsqlite.aio, inline=False, {CONCURRENCY} tasks": (CONCURRENCY, False),
        }
        rows: dict[str, list[tuple[float, float]]] = {"sync client": [], **{name: [] for name in ways}}
        for _ in range(args.runs):  # in turn, so load from elsewhere falls on all alike
            rows["sync client"].append(sync_figures(directory, args.calls))
            for name, (tasks, inline) in ways.items():
                rows[name].append(asyncio.run(aio_figures(directory, args.calls, tasks, inline)))
        print(f"{'':40} {'send/s':>10} {'receive+delete calls/s':>24}")
        for name, runs in rows.items():
            print(f"{name:40} {max(r[0] for r in runs):>10,.0f} {max(r[1] for r in runs):>24,.0f}")
        # Wake-ups, in turn with the floor's: the sync client's poll on a thread of this process.
        floor: list[float] = []
        woken: list[float] = []
        many: list[float] = []
        for _ in range(args.runs):
            floor += sync_wake(directory, args.wakes)
            times, all_answered = asyncio.run(aio_wake(directory, args.wakes))
            woken += times
            many.append(all_answered)
        p50, p99 = _ms(woken, 0.5), _ms(woken, 0.99)
        print(f"wake-up, send to the parked poll's answer: sqsqlite.aio p50 {p50:.3f} ms, p99 {p99:.3f} ms; ", end="")
        print(f"sync client on a thread (the floor) p50 {_ms(floor, 0.5):.3f} ms; p50 / floor {p50 / _ms(floor, 0.5):.2f}")
        print(f"{WAKE_POLLS} parked polls, {WAKE_POLLS // 10} batches of 10 sent: all answered in {min(many) * 1000:.1f} ms (best)")
        # A process of its own: the figures above would have grown this one's heap.
        child = subprocess.run(
            [sys.executable, "-m", "benchmarks.aio", "--memory-child", os.path.join(directory, "memory.db")],
            capture_output=True,
            text=True,
            timeout=300,
            check=True,
        )
        print(f"memory, {PARKED:,} parked long polls: {child.stdout.strip()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
