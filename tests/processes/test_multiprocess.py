"""Many processes, one file: real subprocesses, real time, every run bounded.

Children report through JSON files rather than pipes, so a crash in one shows up as a missing
or error report instead of a hang.
"""

import contextlib
import json
import multiprocessing as mp
import os
import signal
import time
import traceback

import pytest

import sqsqlite

pytestmark = pytest.mark.slow

CTX = mp.get_context("spawn")
PRODUCERS = 4
CONSUMERS = 4
PER_PRODUCER = 200
DEADLINE = 20.0  # seconds for a whole scenario; a hang fails instead of stalling CI


def _report(path, data):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(data, f)
    os.replace(tmp, path)


def _producer(db_path, out, index):
    try:
        db = sqsqlite.connect(db_path)
        q = db.queue("shared")
        ids = []
        k = 0
        while k < PER_PRODUCER:
            if k % 20 == 0:  # mix single sends and batches
                entries = [{"Id": f"e{j}", "MessageBody": f"p{index}-{k + j}"} for j in range(10)]
                result = q.send_message_batch(entries)
                assert not result.failed, result.failed
                ids += [s.message_id for s in result.successful]
                k += 10
            else:
                ids.append(q.send_message(f"p{index}-{k}").message_id)
                k += 1
        db.close()
        _report(out, {"sent": ids})
    except BaseException:
        _report(out, {"error": traceback.format_exc()})


def _consumer(db_path, out, done, visibility_timeout, abandon_below):
    """Receive and delete until the producers are done and the queue is drained.

    A message received fewer than ``abandon_below`` times is dropped without deleting, so
    its visibility timeout ends and another consumer gets it: that exercises re-delivery.
    """
    try:
        db = sqsqlite.connect(db_path)
        q = db.queue("shared")
        receives, deleted = [], []
        stop = time.monotonic() + DEADLINE
        while time.monotonic() < stop:
            got = q.receive_message(max_number_of_messages=10, wait_time_seconds=1, visibility_timeout=visibility_timeout)
            if not got:
                if done.is_set():
                    attrs = q.get_queue_attributes(["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"])
                    if attrs == {"ApproximateNumberOfMessages": "0", "ApproximateNumberOfMessagesNotVisible": "0"}:
                        break
                continue
            keep = []
            for m in got:
                receives.append([m.message_id, m.receive_count, m.visible_at, m.receipt_handle])
                if m.receive_count >= abandon_below:
                    keep.append(m)
            if len(keep) > 1 and len(deleted) % 2 == 0:
                result = q.delete_message_batch([{"Id": f"d{i}", "ReceiptHandle": m.receipt_handle} for i, m in enumerate(keep)])
                assert not result.failed, result.failed
            else:
                for m in keep:
                    m.delete()
            deleted += [m.message_id for m in keep]
        db.close()
        _report(out, {"receives": receives, "deleted": deleted})
    except BaseException:
        _report(out, {"error": traceback.format_exc()})


def _run(tmp_path, *, visibility_timeout, abandon_below, preload=0):
    db_path = str(tmp_path / "shared.db")
    db = sqsqlite.connect(db_path)
    q = db.create_queue("shared")
    preloaded = [q.send_message(f"pre-{i}").message_id for i in range(preload)]
    db.close()
    done = CTX.Event()
    producers = [CTX.Process(target=_producer, args=(db_path, str(tmp_path / f"p{i}.json"), i)) for i in range(PRODUCERS)]
    consumers = [
        CTX.Process(target=_consumer, args=(db_path, str(tmp_path / f"c{i}.json"), done, visibility_timeout, abandon_below))
        for i in range(CONSUMERS)
    ]
    for p in consumers + producers:
        p.start()
    try:
        for p in producers:
            p.join(DEADLINE)
        done.set()
        for p in consumers:
            p.join(DEADLINE + 5)
    finally:
        for p in producers + consumers:
            if p.is_alive():
                p.kill()
                p.join()
    reports = {}
    for name in [f"p{i}" for i in range(PRODUCERS)] + [f"c{i}" for i in range(CONSUMERS)]:
        with open(tmp_path / f"{name}.json") as f:
            reports[name] = json.load(f)
    errors = {k: v["error"] for k, v in reports.items() if "error" in v}
    assert not errors, errors  # includes any "database is locked"
    sent = preloaded + [i for k, v in reports.items() if k.startswith("p") for i in v["sent"]]
    receives = [r for k, v in reports.items() if k.startswith("c") for r in v["receives"]]
    deleted = [i for k, v in reports.items() if k.startswith("c") for i in v["deleted"]]
    return db_path, sent, receives, deleted


def _assert_never_held_twice(receives, visibility_timeout):
    """Per message, each receive starts no earlier than the previous lease ended, and no two
    receives share a receive count (the same claim handed to two consumers)."""
    by_message = {}
    for message_id, count, visible_at, _ in receives:
        by_message.setdefault(message_id, []).append((count, visible_at))
    for message_id, leases in by_message.items():
        counts = [c for c, _ in leases]
        assert len(counts) == len(set(counts)), (message_id, leases)
        leases.sort()
        for (_, prev_end), (_, end) in zip(leases, leases[1:]):
            start = end - visibility_timeout * 1000
            assert start >= prev_end, (message_id, leases)


def test_four_producers_and_four_consumers_deliver_every_message_exactly_once(tmp_path):
    db_path, sent, receives, deleted = _run(tmp_path, visibility_timeout=60, abandon_below=0)
    assert len(sent) == PRODUCERS * PER_PRODUCER == len(set(sent))
    # Consumers delete well within 60 s, so nothing is delivered twice and all is deleted once.
    assert sorted(deleted) == sorted(sent)
    assert len(receives) == len(sent)
    _assert_never_held_twice(receives, 60)
    db = sqsqlite.connect(db_path)
    try:
        assert db.queue("shared").peek() == []
    finally:
        db.close()


def test_redelivered_messages_are_never_held_by_two_consumers_at_once(tmp_path):
    # Every message is abandoned on its first receive and deleted on its second, so each one
    # changes hands once across the four consumers after a 1 s visibility timeout.
    db_path, sent, receives, deleted = _run(tmp_path, visibility_timeout=1, abandon_below=2, preload=100)
    assert sorted(deleted) == sorted(sent)
    assert len(receives) == 2 * len(sent)
    _assert_never_held_twice(receives, 1)


def _keep_sending(db_path, out):
    db = sqsqlite.connect(db_path)
    q = db.queue("durable")
    with open(out, "a") as f:
        i = 0
        while True:
            result = q.send_message(f"m{i}")
            # Written only after send_message returned: every listed id was acknowledged.
            f.write(result.message_id + "\n")
            f.flush()
            i += 1


def test_a_message_whose_send_returned_survives_sigkill_of_the_sender(tmp_path):
    db_path = str(tmp_path / "durable.db")
    out = str(tmp_path / "acked.txt")
    db = sqsqlite.connect(db_path)
    db.create_queue("durable")
    db.close()
    proc = CTX.Process(target=_keep_sending, args=(db_path, out))
    proc.start()
    stop = time.monotonic() + DEADLINE
    try:
        while time.monotonic() < stop:
            if os.path.exists(out) and sum(1 for _ in open(out)) >= 200:
                break
            time.sleep(0.05)
        os.kill(proc.pid, signal.SIGKILL)  # mid-send, most likely inside a transaction
        proc.join(10)
    finally:
        if proc.is_alive():
            proc.kill()
    assert proc.exitcode == -signal.SIGKILL
    with open(out) as f:
        acked = [line.strip() for line in f if line.endswith("\n")]
    assert len(acked) >= 200
    db = sqsqlite.connect(db_path)
    try:
        stored = {r["MessageId"] for r in db.queue("durable").export_messages()}
        assert set(acked) <= stored
        # The file is healthy: the queue still takes and gives messages.
        q = db.queue("durable")
        q.send_message("after the crash")
        assert q.receive_message(max_number_of_messages=10)
    finally:
        db.close()


def _wait_for(path):
    deadline = time.monotonic() + DEADLINE
    while not os.path.exists(path) and time.monotonic() < deadline:
        time.sleep(0.005)
    assert os.path.exists(path), f"timed out waiting for {path}"


def test_a_forked_child_uses_its_own_writer_lock_and_queues_behind_its_parent(tmp_path):
    # flock belongs to the open file: a child that kept the parent's descriptor of the writers'
    # lock file would "hold" the lock whenever the parent did, and skip the queue.
    import fcntl

    db = sqsqlite.connect(str(tmp_path / "fork.db"))
    q = db.create_queue("forked")
    q.send_message("from the parent")  # the parent's connection opens its lock descriptor
    ready, go, out = (str(tmp_path / n) for n in ("ready", "go", "child.json"))
    pid = os.fork()
    if pid == 0:
        try:
            q.send_message("from the child")  # a new connection in the child, and its own lock
            _report(ready, {})
            _wait_for(go)
            try:
                fcntl.flock(db.store._local.lockfd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                _report(out, {"blocked": False})
            except BlockingIOError:
                _report(out, {"blocked": True})
        except BaseException:
            _report(out, {"error": traceback.format_exc()})
        finally:
            os._exit(0)
    _wait_for(ready)
    with db.store.write():
        _report(go, {})
        _wait_for(out)
    os.waitpid(pid, 0)
    with open(out) as f:
        report = json.load(f)
    assert report == {"blocked": True}
    assert sorted(m.body for m in q.receive_message(max_number_of_messages=10)) == ["from the child", "from the parent"]
    db.close()


_DIES_HOLDING_THE_LOCK = r"""
import os, signal, sys, threading, time
import sqsqlite

db = sqsqlite.connect(sys.argv[1])
q = db.queue("orphan")
inside = threading.Event()

def hold():
    with db.store.write():
        inside.set()
        time.sleep(60)

threading.Thread(target=hold, daemon=True).start()
inside.wait(10)
if os.fork() == 0:  # a child that outlives its parent and never writes
    with open(sys.argv[2] + ".child", "w") as f:
        f.write(str(os.getpid()))
    time.sleep(30)
    os._exit(0)
with open(sys.argv[2], "w") as f:
    f.write("forked")
os.kill(os.getpid(), signal.SIGKILL)  # dies inside the other thread's write transaction
"""


def test_a_process_killed_inside_a_write_frees_the_file_for_others_even_while_its_forked_child_lives(tmp_path):
    import subprocess
    import sys

    path = str(tmp_path / "orphan.db")
    db = sqsqlite.connect(path)
    q = db.create_queue("orphan")
    marker = str(tmp_path / "forked")
    proc = subprocess.Popen([sys.executable, "-c", _DIES_HOLDING_THE_LOCK, path, marker])
    try:
        proc.wait(timeout=DEADLINE)
        assert os.path.exists(marker), "the helper did not get as far as forking"
        start = time.monotonic()
        q.send_message("after the crash")  # must not wait for the orphaned child to exit
        waited = time.monotonic() - start
    finally:
        with contextlib.suppress(OSError, ValueError):
            with open(marker + ".child") as f:
                os.kill(int(f.read()), signal.SIGKILL)
    assert waited < 5, f"the send waited {waited:.1f} s for a lock its dead holder's child kept"
    assert [m.body for m in q.receive_message()] == ["after the crash"]
    db.close()


def test_senders_waiting_for_the_writers_lock_line_up_one_at_a_time_at_the_senders_gate(tmp_path):
    # flock wakes its waiters in no order: were every waiting sender in line for the writers'
    # lock, N producers would take N turns for each consumer's one. Behind the gate only one is.
    import fcntl
    import threading

    path = str(tmp_path / "gate.db")
    db = sqsqlite.connect(path)
    q = db.create_queue("gated")
    q.send_message("uncontended")
    assert not os.path.exists(path + "-sendlock")  # a free writers' lock is taken at once

    writer = os.open(path + "-lock", os.O_RDWR)
    fcntl.flock(writer, fcntl.LOCK_EX)  # another writer is mid-transaction
    try:
        senders = [threading.Thread(target=q.send_message, args=(f"waiting {i}",)) for i in range(3)]
        for t in senders:
            t.start()
        deadline = time.monotonic() + DEADLINE
        gate_held = False
        while not gate_held and time.monotonic() < deadline:
            if os.path.exists(path + "-sendlock"):
                gate = os.open(path + "-sendlock", os.O_RDWR)
                try:
                    fcntl.flock(gate, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    fcntl.flock(gate, fcntl.LOCK_UN)
                except BlockingIOError:
                    gate_held = True  # by the one sender now waiting for the writers' lock
                finally:
                    os.close(gate)
            time.sleep(0.01)
        assert gate_held
        assert all(t.is_alive() for t in senders)  # nobody wrote past the held lock
        if os.path.exists("/proc/locks"):
            # The kernel's own view: one sender waits for the writers' lock, two at the gate.
            lock_inode, gate_inode = os.stat(path + "-lock").st_ino, os.stat(path + "-sendlock").st_ino
            waiting = {}
            while time.monotonic() < deadline:
                waiting = _flock_waiters({lock_inode: "lock", gate_inode: "gate"})
                if waiting == {"lock": 1, "gate": 2}:
                    break
                time.sleep(0.01)
            assert waiting == {"lock": 1, "gate": 2}
    finally:
        fcntl.flock(writer, fcntl.LOCK_UN)
        os.close(writer)
    for t in senders:
        t.join(DEADLINE)
    bodies = sorted(m.body for m in q.receive_message(max_number_of_messages=10))
    assert bodies == ["uncontended", "waiting 0", "waiting 1", "waiting 2"]
    db.close()


def _flock_waiters(names_by_inode: dict) -> dict:
    """Blocked flock requests per watched file, from /proc/locks ("N: -> FLOCK ..." lines)."""
    counts: dict = {}
    with open("/proc/locks") as f:
        for line in f:
            fields = line.split()
            if len(fields) < 7 or fields[1] != "->" or fields[2] != "FLOCK":
                continue
            inode = int(fields[6].rsplit(":", 1)[1])
            name = names_by_inode.get(inode)
            if name is not None:
                counts[name] = counts.get(name, 0) + 1
    return counts
