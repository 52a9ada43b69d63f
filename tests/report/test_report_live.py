"""The report reads a database while producer and consumer processes keep working: it never
blocks them and never sees torn state."""

from __future__ import annotations

import json
import multiprocessing
import time

import pytest

import sqsqlite
from sqsqlite.report import figures, snapshot, synthetic
from sqsqlite.report import spark as sj

pytestmark = [
    pytest.mark.spark,
    pytest.mark.slow,
    pytest.mark.filterwarnings("ignore:PySpark does not yet fully support pandas:FutureWarning"),
]

BATCH = 10
DEADLINE_SECONDS = 120  # every worker stops by itself after this, whatever the test does


def produce(path: str, stop, batches, receives) -> None:
    """Send batches of 10 in one transaction each; count a batch once it is committed. Stay
    behind the consumer (3 receives per batch), so messages get received again and move."""
    db = sqsqlite.connect(path)
    q = db.queue("live")
    end = time.monotonic() + DEADLINE_SECONDS
    k = 0
    while not stop.is_set() and time.monotonic() < end:
        if receives.value < 3 * batches.value:
            time.sleep(0.001)
            continue
        q.send_message_batch([{"Id": str(i), "MessageBody": f"batch {k} #{i}"} for i in range(BATCH)])
        k += 1
        with batches.get_lock():
            batches.value += 1
    db.close()


def consume(path: str, stop, receives) -> None:
    """Receive without deleting: messages go in flight, come back, and after 2 receives move
    to the dead-letter queue inside the receive's own transaction. Nothing is lost or added."""
    db = sqsqlite.connect(path)
    q = db.queue("live")
    end = time.monotonic() + DEADLINE_SECONDS
    k = 0
    while not stop.is_set() and time.monotonic() < end:
        q.receive_message(max_number_of_messages=10, visibility_timeout=0 if k % 3 else 30)
        k += 1
        with receives.get_lock():
            receives.value += 1
        time.sleep(0.002)
    db.close()


@pytest.fixture
def live_db(tmp_path):
    path = str(tmp_path / "live.db")
    # Bulk (50k messages) so the snapshot and the Spark job take a while; the figures of the
    # two live queues are what the invariant checks.
    synthetic.build(path, 50_000, sqsqlite.SystemClock().now_ms())
    db = sqsqlite.connect(path)
    db.create_queue("live-dlq")
    db.create_queue(
        "live", attributes={"RedrivePolicy": json.dumps({"deadLetterTargetArn": db.queue_arn("live-dlq"), "maxReceiveCount": 2})}
    )
    # Some dead-lettered messages before the load starts, whatever the workers' pace.
    live = db.queue("live")
    live.send_message_batch([{"Id": str(i), "MessageBody": f"seed {i}"} for i in range(BATCH)])
    for _ in range(3):
        live.receive_message(max_number_of_messages=10, visibility_timeout=0)
    db.close()
    ctx = multiprocessing.get_context("spawn")  # the parent runs a JVM: don't fork it
    stop = ctx.Event()
    batches, receives = ctx.Value("q", 0), ctx.Value("q", 0)
    procs = [ctx.Process(target=produce, args=(path, stop, batches, receives)), ctx.Process(target=consume, args=(path, stop, receives))]
    for p in procs:
        p.start()
    try:
        deadline = time.monotonic() + 60
        while (batches.value < 20 or receives.value < 20) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert batches.value >= 20 and receives.value >= 20, "workers did not start"
        yield path, batches, receives
    finally:
        stop.set()
        for p in procs:
            p.join(DEADLINE_SECONDS + 30)
        assert [p.exitcode for p in procs] == [0, 0], "a worker failed (busy or error)"


def _live_total(report) -> tuple[int, int]:
    q = {f.queue: f for f in report.queues}
    return q["live"].backlog, q["live-dlq"].backlog


def test_the_report_under_live_load_sees_one_consistent_state_and_blocks_no_one(spark, live_db, tmp_path):
    path, batches, receives = live_db
    seen = {}

    def writers_carry_on():
        # Inside the snapshot's read transaction: producers and the consumer still commit.
        b, r = batches.value, receives.value
        end = time.monotonic() + 60
        while (batches.value < b + 3 or receives.value < r + 3) and time.monotonic() < end:
            time.sleep(0.01)
        seen["progress"] = (batches.value - b, receives.value - r)

    before = batches.value + 1  # the seed batch
    snap = snapshot.take(path, str(tmp_path / "snap.db"), while_open=writers_carry_on)
    after = batches.value + 1
    assert seen["progress"][0] >= 3 and seen["progress"][1] >= 3

    during = receives.value
    report = sj.compute(spark, snap, top=3, partitions=8, database=path)  # 8 id ranges, one by one
    assert receives.value > during  # still working while Spark reads

    # One state: every batch of 10 is wholly in or wholly out, and no message is counted twice
    # or lost between the queue and its dead-letter queue (moves are single transactions).
    live, dead = _live_total(report)
    assert (live + dead) % BATCH == 0
    # The copy holds at least the batches committed before it began, at most those
    # committed by its end.
    assert before * BATCH <= live + dead <= after * BATCH
    assert dead > 0
    # And the figures are the oracle's on that same snapshot, at the same instant.
    oracle = figures.compute(snap.path, snap.as_of_ms, top=3)
    oracle.database = path
    assert report.to_dict() == oracle.to_dict()
