"""The per-minute counters under real processes: every process's work is counted once, a
process killed inside a batch leaves the counters equal to what its committed work did, and the
file's switch made by one process is seen by the others' next write."""

import multiprocessing as mp
import os
import random
import signal
import time

import sqsqlite

FORK = mp.get_context("fork")


def _totals(path: str, name: str) -> dict:
    db = sqsqlite.connect(path)
    try:
        return db.history_totals().get(name, {})
    finally:
        db.close()


def _producer(path: str, n: int) -> None:
    q = sqsqlite.connect(path).queue("work")
    for i in range(n):
        q.send_message_batch([{"Id": str(k), "MessageBody": f"{i}-{k}"} for k in range(10)])


def _consumer(path: str, until: float) -> None:
    q = sqsqlite.connect(path).queue("work")
    while time.monotonic() < until:
        got = q.receive_message(max_number_of_messages=10, visibility_timeout=60)
        if got:
            q.delete_message_batch([{"Id": str(i), "ReceiptHandle": m.receipt_handle} for i, m in enumerate(got)])


def test_counters_equal_the_work_of_every_process(tmp_path):
    path = str(tmp_path / "p.db")
    db = sqsqlite.connect(path)
    db.set_history_retention(14 * 86_400)
    q = db.create_queue("work")
    until = time.monotonic() + 4
    procs = [FORK.Process(target=_producer, args=(path, 30)) for _ in range(2)]
    procs += [FORK.Process(target=_consumer, args=(path, until)) for _ in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    left = len(q.peek(limit=1000))
    t = _totals(path, "work")
    assert t["sent"] == 600
    assert t["received"] == t["deleted"] == 600 - left  # each received once (a 60 s lease), then deleted
    assert t.get("redelivered", 0) == 0
    db.close()


def _sender_killed_mid_batch(path: str, seed: int, sending) -> None:
    q = sqsqlite.connect(path).queue("work")
    rng = random.Random(seed)
    while True:
        q.send_message_batch([{"Id": str(k), "MessageBody": "x" * rng.randint(1, 50)} for k in range(10)])
        sending.set()  # one batch committed: the parent may kill it from here on


def _killed_inside_a_transaction(path: str) -> None:
    db = sqsqlite.connect(path)
    q = db.queue("work")
    with db.transaction():
        q.send_message_batch([{"Id": str(k), "MessageBody": "lost"} for k in range(10)])
        os.kill(os.getpid(), signal.SIGKILL)


def test_a_process_killed_mid_batch_leaves_the_counters_equal_to_the_messages_it_sent(tmp_path):
    path = str(tmp_path / "k.db")
    db = sqsqlite.connect(path)
    db.set_history_retention(14 * 86_400)
    q = db.create_queue("work")
    p = FORK.Process(target=_killed_inside_a_transaction, args=(path,))
    p.start()
    p.join(timeout=30)
    assert p.exitcode == -signal.SIGKILL
    assert _totals(path, "work") == {} and q.peek() == []
    for seed in range(6):  # killed at a random point of its sends, inside a batch or between two
        # Killed once it sends (a loaded machine may take longer to start it than any fixed
        # pause: killed before its first batch, it had sent nothing), then a random while later.
        sending = FORK.Event()
        p = FORK.Process(target=_sender_killed_mid_batch, args=(path, seed, sending))
        p.start()
        assert sending.wait(30)
        time.sleep(random.random() * 0.05)
        os.kill(p.pid, signal.SIGKILL)
        p.join(timeout=30)
    stored = q.peek(limit=1_000_000)
    t = _totals(path, "work")
    assert t["sent"] == len(stored) > 0
    assert t["bytes_sent"] == sum(len(m.body) for m in stored)
    db.close()


def _switch(path: str, seconds: int) -> None:
    sqsqlite.connect(path).set_history_retention(seconds)


def test_the_switch_made_by_another_process_is_seen_by_the_next_send(tmp_path):
    path = str(tmp_path / "p.db")
    db = sqsqlite.connect(path)
    q = db.create_queue("work")
    q.send_message("off: not counted")
    for seconds, expected in ((3600, {"sent": 1, "bytes_sent": 2}), (0, {})):
        p = FORK.Process(target=_switch, args=(path, seconds))
        p.start()
        p.join(timeout=60)
        assert p.exitcode == 0
        q.send_message("on")
        assert {k: v for k, v in _totals(path, "work").items() if v} == expected  # off again: nothing counted, the rows removed
    db.close()
