"""A replay SIGKILLed mid-run, between its transactions and inside one, then run again to the end:
every archived message is sent exactly once, in send order. Real processes; each kill lands at a
point the test chose (the process kills itself there), so no run depends on timing."""

import itertools
import signal

import sqsqlite
from sqsqlite.core import replay
from tests.processes.killed import die, run

MESSAGES = 300


def _replay(path: str, after_sent: int | None = None, inside_batch: int | None = None) -> None:
    """Replay "orders" to "fixed", killed once this run has committed ``after_sent`` messages, or
    inside the transaction of this run's batch number ``inside_batch``, after its send, before its
    commit."""
    if inside_batch is not None:
        send, calls = replay.sending.send_message_batch, itertools.count(1)

        def send_then_die(*args, **kwargs):
            out = send(*args, **kwargs)
            if next(calls) == inside_batch:
                die()
            return out

        replay.sending.send_message_batch = send_then_die

    def progress(sent: int, total: int) -> None:  # sent: by this run
        if after_sent is not None and sent >= after_sent:
            die()

    db = sqsqlite.connect(path)
    db.replay("orders", to="fixed", progress=progress)
    db.close()


def _run(path: str, **kill) -> int:
    return run(_replay, path, timeout=600, **kill)  # 300 messages take a second or two


def _sent_before(path: str) -> int:
    db = sqsqlite.connect(path)
    try:
        return db.replay("orders", to="fixed", dry_run=True).sent_before
    finally:
        db.close()


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

    # Killed between transactions (after 40 committed), inside its fourth transaction (three
    # committed; the fourth's batch sent, not committed: the next run sends it again), and between
    # transactions once more (at 200 in all).
    assert _run(path, after_sent=40) == -signal.SIGKILL
    assert _sent_before(path) == 40
    assert _run(path, inside_batch=4) == -signal.SIGKILL
    assert _sent_before(path) == 70
    assert _run(path, after_sent=130) == -signal.SIGKILL
    assert _sent_before(path) == 200
    assert _run(path) == 0

    db = sqsqlite.connect(path)
    try:
        fixed = db.queue("fixed")
        again = []
        while got := fixed.receive_message(max_number_of_messages=10, message_attribute_names=["All"]):
            again += got
            fixed.delete_message_batch([{"Id": str(i), "ReceiptHandle": m.receipt_handle} for i, m in enumerate(got)])
        bodies = [m.body for m in again]
        assert len(bodies) == MESSAGES  # no duplicate, none missing
        assert sorted(bodies) == sorted(originals) and len(set(bodies)) == MESSAGES
        assert {m.message_attributes["sqsqlite.OriginalMessageId"].string_value for m in again} == set(originals.values())
        assert bodies == sorted(bodies)  # in the order they were first sent
        finished = db.replay("orders", to="fixed")  # the same replay once more: it finished, so it sends nothing
        assert (finished.finished_before, finished.sent_before, finished.sent) == (True, MESSAGES, 0)
    finally:
        db.close()
