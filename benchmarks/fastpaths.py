"""Each fast path beside the general path it shortcuts, in one process, in turn: CPU
microseconds a call (``time.process_time``, best of several rounds, the two ways alternating
round by round) and their ratio. A fast path earns its place only where the ratio says so.

    python -m benchmarks.fastpaths            # the table
    python -m benchmarks.fastpaths --calls 500 --rounds 3

The general way is reached with the same request made not to qualify, with nothing else
changed: the client's with its plain test switched off, a batch's with a per-message option
that changes nothing (DelaySeconds 0 on a queue of delay 0), a delete's with handles another
Database on the file received (this one issued none of them, so it reads the queue's row).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import tempfile
import time
from collections.abc import Callable, Iterator

import sqsqlite
from sqsqlite.actions import Actions

CLIENT = importlib.import_module("sqsqlite.client")
BODY = "x" * 200


@contextlib.contextmanager
def _client_general() -> Iterator[None]:
    # The client's own switch, as its property tests use it: no request is plain.
    plain = CLIENT._plain_request
    CLIENT._plain_request = lambda action, params: None
    try:
        yield
    finally:
        CLIENT._plain_request = plain


def _workloads(
    directory: str,
) -> tuple[dict[str, tuple[Callable[[int], float | None], Callable[[int], float | None]]], Callable[[str, int], None]]:
    """name -> (fast, general), each running n calls; every layer on a queue of its own. And
    fill(name, n): n messages waiting for name's receives."""
    db = sqsqlite.connect(f"{directory}/fast.db")
    sqs = CLIENT.SQSClient(db)
    actions = Actions(db)
    out: dict[str, tuple[Callable[[int], float | None], Callable[[int], float | None]]] = {}

    def queue(name: str):
        q = db.create_queue(name)
        return q, q.url

    q_client, url_client = queue("client")

    def client_send(n: int) -> None:
        for _ in range(n):
            sqs.send_message(QueueUrl=url_client, MessageBody=BODY)

    def client_send_general(n: int) -> None:
        with _client_general():
            client_send(n)

    out["client send_message"] = (client_send, client_send_general)

    def client_recv_delete(n: int) -> None:
        for _ in range(n):
            [m] = sqs.receive_message(QueueUrl=url_client, MaxNumberOfMessages=1)["Messages"]
            sqs.delete_message(QueueUrl=url_client, ReceiptHandle=m["ReceiptHandle"])

    def client_recv_delete_general(n: int) -> None:
        with _client_general():
            client_recv_delete(n)

    out["client receive+delete"] = (client_recv_delete, client_recv_delete_general)

    entries = [{"Id": str(i), "MessageBody": BODY} for i in range(10)]

    def client_batch(n: int) -> None:
        for _ in range(n // 10):
            sqs.send_message_batch(QueueUrl=url_client, Entries=entries)

    def client_batch_general(n: int) -> None:
        with _client_general():
            client_batch(n)

    out["client send_message_batch (a message)"] = (client_batch, client_batch_general)

    _, url_actions = queue("actions")
    general_entries = [{**e, "DelaySeconds": 0} for e in entries]
    out["Actions.SendMessageBatch (a message)"] = (
        _batches(lambda: actions.SendMessageBatch({"QueueUrl": url_actions, "Entries": entries})),
        _batches(lambda: actions.SendMessageBatch({"QueueUrl": url_actions, "Entries": general_entries})),
    )
    q_core, _ = queue("core")
    out["Queue.send_message_batch (a message)"] = (
        _batches(lambda: q_core.send_message_batch(entries)),
        _batches(lambda: q_core.send_message_batch(general_entries)),
    )

    # Deletes of handles this Database issued, or (the exact path) that another Database on the
    # same file received: the receives untimed, the deletes timed.
    other = sqsqlite.connect(f"{directory}/fast.db")
    q_mine, _ = queue("deletes")
    q_theirs = other.queue("deletes")

    def deletes(receiver, batch: bool) -> Callable[[int], float]:
        def run(n: int) -> float:
            for _ in range(n // 10 + 1):
                q_mine.send_message_batch(entries)
            got = []
            for _ in range(n // 10):
                got += receiver.receive_message(max_number_of_messages=10)
            handles = [m.receipt_handle for m in got[:n]]
            start = time.process_time()
            if batch:
                for at in range(0, len(handles), 10):
                    q_mine.delete_message_batch([{"Id": str(i), "ReceiptHandle": h} for i, h in enumerate(handles[at : at + 10])])
            else:
                for h in handles:
                    q_mine.delete_message(h)
            return time.process_time() - start

        return run

    out["Queue.delete_message"] = (deletes(q_mine, False), deletes(q_theirs, False))
    out["Queue.delete_message_batch (a message)"] = (deletes(q_mine, True), deletes(q_theirs, True))

    # The receives above need messages waiting: fill(name, n) sends them, untimed.
    def fill(name: str, n: int) -> None:
        for _ in range(n // 10 + 1):
            q_client.send_message_batch(entries)

    return out, fill


def _batches(call: Callable[[], object]) -> Callable[[int], None]:
    """n messages sent by calls of 10."""

    def run(n: int) -> None:
        for _ in range(n // 10):
            call()

    return run


def _cpu_per_call(run: Callable[[int], float | None], calls: int) -> float:
    """CPU µs a call: of the whole run, or of the part it timed itself (its answer)."""
    start = time.process_time()
    timed = run(calls)
    return ((time.process_time() - start) if timed is None else timed) / calls * 1e6


def measure(calls: int = 1000, rounds: int = 5) -> dict[str, tuple[float, float]]:
    with tempfile.TemporaryDirectory() as directory:
        workloads, fill = _workloads(directory)
        best = {name: [float("inf"), float("inf")] for name in workloads}
        for r in range(rounds):
            for name, (fast, general) in workloads.items():
                if "receive" in name:
                    fill(name, 2 * calls)
                # Which way goes first alternates, so neither always meets the fuller file.
                for way in (0, 1) if r % 2 == 0 else (1, 0):
                    best[name][way] = min(best[name][way], _cpu_per_call((fast, general)[way], calls))
    return {name: (fast, general) for name, (fast, general) in best.items()}


def main(argv=None) -> None:
    p = argparse.ArgumentParser(prog="python -m benchmarks.fastpaths", description=__doc__.split("\n\n")[0])
    p.add_argument("--calls", type=int, default=1000)
    p.add_argument("--rounds", type=int, default=5)
    args = p.parse_args(argv)
    figures = measure(args.calls, args.rounds)
    print(f"{'workload':42} {'fast µs':>9} {'general µs':>11} {'general/fast':>13}")
    for name, (fast, general) in figures.items():
        print(f"{name:42} {fast:9.2f} {general:11.2f} {general / fast:13.3f}")


if __name__ == "__main__":
    main()
