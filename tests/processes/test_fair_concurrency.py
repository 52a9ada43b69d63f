"""Fair queues with concurrent consumers: real processes, real time, bounded.

Each receive decides which groups are noisy and claims inside one UPDATE ... RETURNING under the
writers' lock, so however the processes' receives interleave, the outcome is the same: the
claims that run once the noisy group holds its minimum in flight take every quiet message
before any more of the noisy group's."""

import json
import multiprocessing as mp
import os
import traceback

import pytest

import sqsqlite
from sqsqlite import defaults as D

pytestmark = pytest.mark.slow

CTX = mp.get_context("spawn")
CONSUMERS = 4
RECEIVES = 3  # each, of 10 messages, never deleted: 120 claimed in all
QUIET = 40
DEADLINE = 20.0


def _consumer(db_path, out):
    try:
        db = sqsqlite.connect(db_path)
        q = db.queue("tenants")
        got = []
        for _ in range(RECEIVES):
            got.append([m.message_group_id for m in q.receive_message(max_number_of_messages=10, visibility_timeout=600)])
        db.close()
        result = {"batches": got}
    except BaseException:
        result = {"error": traceback.format_exc()}
    with open(out + ".tmp", "w") as f:
        json.dump(result, f)
    os.replace(out + ".tmp", out)


def test_concurrent_consumers_take_every_quiet_message_once_the_noisy_group_holds_its_share(tmp_path):
    path = str(tmp_path / "fair.db")
    db = sqsqlite.connect(path)
    q = db.create_queue("tenants")
    for start in range(0, 1000, 10):
        q.send_message_batch([{"Id": str(i), "MessageBody": f"n{start + i}", "MessageGroupId": "noisy"} for i in range(10)])
    for start in range(0, QUIET, 10):
        q.send_message_batch([{"Id": str(i), "MessageBody": "q", "MessageGroupId": f"tenant-{start + i}"} for i in range(10)])
    outs = [str(tmp_path / f"c{i}.json") for i in range(CONSUMERS)]
    procs = [CTX.Process(target=_consumer, args=(path, out)) for out in outs]
    for p in procs:
        p.start()
    for p in procs:
        p.join(DEADLINE)
        assert p.exitcode == 0, "a consumer hung or crashed"
    reports = [json.load(open(out)) for out in outs]
    assert all("error" not in r for r in reports), reports
    groups = [g for r in reports for batch in r["batches"] for g in batch]
    assert all(len(batch) == 10 for r in reports for batch in r["batches"])
    # 12 claims of 10: the first three take the noisy group's oldest 30 (plain order, nothing is
    # noisy yet); the next four take the 40 quiet messages; the rest the noisy group's.
    assert groups.count("noisy") == CONSUMERS * RECEIVES * 10 - QUIET
    assert sorted(g for g in groups if g != "noisy") == sorted(f"tenant-{i}" for i in range(QUIET))
    s = db.stats()[0]
    assert (s.noisy_groups, s.in_flight_in_quiet_groups, s.in_flight) == (1, QUIET, 120)
    assert D.FAIR_NOISY_MIN_IN_FLIGHT == 30  # the arithmetic above
    db.close()
