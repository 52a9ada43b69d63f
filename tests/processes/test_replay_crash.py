"""A replay SIGKILLed mid-run, at points of the parent's choosing, then run again to the end: every
archived message is sent exactly once, in send order. Real processes and real time, bounded."""

import multiprocessing as mp
import os
import signal
import sqlite3
import time

import pytest

import sqsqlite

FORK = mp.get_context("fork")
MESSAGES = 300


def _replay(path: str) -> None:
    db = sqsqlite.connect(path)
    # A pause after each transaction of ten, so that the kills land while it runs.
    db.replay("orders", to="fixed", progress=lambda sent, total: time.sleep(0.005))
    db.close()


def _sent_so_far(path: str) -> int:
    with sqlite3.connect(path, timeout=10) as conn:
        row = conn.execute("SELECT sent FROM replay_runs").fetchone()
    return 0 if row is None else row[0]


def test_a_replay_killed_mid_run_and_run_again_sends_every_message_once_in_order(tmp_path):
    path = str(tmp_path / "replay.db")
    db = sqsqlite.connect(path)
    orders = db.create_queue("orders")
    db.create_queue("fixed")
    db.set_archive(orders.url, 86_400)
    for start in range(0, MESSAGES, 10):
        orders.send_message_batch([{"Id": str(i), "MessageBody": f"m{start + i:03}"} for i in range(10)])
    originals = {}
    while got := orders.receive_message(max_number_of_messages=10):
        for m in got:
            originals[m.body] = m.message_id
            m.delete()
    db.close()
    assert len(originals) == MESSAGES

    kills = 0
    for threshold in (40, 120, 200):
        child = FORK.Process(target=_replay, args=(path,))
        child.start()
        # A guard against a hang, not a pace: it fails only after 10 minutes without one more
        # transaction of the replay.
        last, stalled_since = -1, time.monotonic()
        while (sent := _sent_so_far(path)) < threshold and child.is_alive():
            if sent != last:
                last, stalled_since = sent, time.monotonic()
            elif time.monotonic() - stalled_since > 600:
                child.kill()
                pytest.fail(f"the replay sent nothing more for 10 minutes, stuck at {sent}")
            time.sleep(0.002)
        if child.is_alive():
            os.kill(child.pid, signal.SIGKILL)
            kills += 1
        child.join(timeout=600)
        assert child.exitcode is not None
    assert kills >= 2  # it was cut short mid-run, more than once

    child = FORK.Process(target=_replay, args=(path,))
    child.start()
    child.join(timeout=600)  # a guard against a hang: 300 messages take a second or two
    assert child.exitcode == 0

    db = sqsqlite.connect(path)
    try:
        fixed = db.queue("fixed")
        again = []
        while got := fixed.receive_message(max_number_of_messages=10, message_attribute_names=["All"]):
            again += got
            fixed.delete_message_batch([{"Id": str(i), "ReceiptHandle": m.receipt_handle} for i, m in enumerate(got)])
    finally:
        db.close()
    bodies = [m.body for m in again]
    assert len(bodies) == MESSAGES  # no duplicate, none missing
    assert sorted(bodies) == sorted(originals) and len(set(bodies)) == MESSAGES
    assert {m.message_attributes["sqsqlite.OriginalMessageId"].string_value for m in again} == set(originals.values())
    assert bodies == sorted(bodies)  # in the order they were first sent
    assert _sent_so_far(path) == MESSAGES
