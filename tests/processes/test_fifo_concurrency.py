"""Several consumer processes on one FIFO queue with many groups.

Each consumer holds a per-group lock file (created with O_EXCL) from the moment a receive hands
it messages of a group until just before it deletes the last of them. If the engine ever gave a
second consumer a message of a group whose earlier message is still in flight, that consumer
would find the lock taken and record a violation. While holding the lock a consumer appends the
bodies to the group's log, so each log is the order the group was processed in.

Run as a script, this file is the consumer.
"""

import json
import os
import random
import subprocess
import sys
import time

import sqsqlite

QUEUE = "work.fifo"
GROUPS = 40
PER_GROUP = 12
CONSUMERS = 4
BOUND_SECONDS = 20  # every consumer stops by then, whatever happens


def consume(path, workdir, index, max_n):
    rng = random.Random(index)
    db = sqsqlite.connect(path)
    q = db.queue(QUEUE)
    with open(os.path.join(workdir, f"ready-{index}"), "w"):
        pass
    deadline = time.monotonic() + BOUND_SECONDS
    while not os.path.exists(os.path.join(workdir, "go")) and time.monotonic() < deadline:
        time.sleep(0.005)
    handled = 0
    while time.monotonic() < deadline:
        msgs = q.receive_message(max_number_of_messages=max_n, visibility_timeout=60, wait_time_seconds=1)
        if not msgs:
            left = q.get_queue_attributes(["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"])
            if os.path.exists(os.path.join(workdir, "sent")) and not any(int(v) for v in left.values()):
                break
            continue
        groups = {}
        for m in msgs:
            groups.setdefault(m.message_group_id, []).append(m)
        locks = {}
        for group in groups:
            lock = os.path.join(workdir, f"{group}.lock")
            try:
                os.close(os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
                locks[group] = lock
            except FileExistsError:
                with open(os.path.join(workdir, "violations"), "a") as f:
                    f.write(f"consumer {index} got {[m.body for m in groups[group]]} while {group} was held\n")
        for group, held in groups.items():
            with open(os.path.join(workdir, f"{group}.log"), "a") as f:
                f.writelines(m.body + "\n" for m in held)
            time.sleep(rng.random() * 0.003)  # hold the group a moment, so others try to take it
            for m in held[:-1]:
                m.delete()
            if group in locks:
                os.unlink(locks[group])  # released before the last delete frees the group
            held[-1].delete()
            handled += len(held)
    db.close()
    print(json.dumps({"consumer": index, "handled": handled}))


def _send(q, groups, start, stop):
    for g in groups:
        q.send_message_batch(
            [
                {"Id": str(i), "MessageBody": f"g{g}:{i}", "MessageGroupId": f"g{g}", "MessageDeduplicationId": f"g{g}:{i}"}
                for i in range(start, stop)
            ]
        )


def test_consumer_processes_never_share_a_group_and_see_each_group_in_send_order(tmp_path):
    path = str(tmp_path / "fifo.db")
    workdir = tmp_path / "work"
    workdir.mkdir()
    db = sqsqlite.connect(path)
    q = db.create_queue(QUEUE, attributes={"FifoQueue": "true"})
    _send(q, range(GROUPS), 0, PER_GROUP // 2)
    # Half take up to 10 messages per receive (several of one group at once), half take one.
    procs = [
        subprocess.Popen(
            [sys.executable, __file__, path, str(workdir), str(i), str(10 if i % 2 == 0 else 1)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i in range(CONSUMERS)
    ]
    try:
        deadline = time.monotonic() + BOUND_SECONDS
        while len(list(workdir.glob("ready-*"))) < CONSUMERS and time.monotonic() < deadline:
            time.sleep(0.01)
        (workdir / "go").touch()
        _send(q, range(GROUPS), PER_GROUP // 2, PER_GROUP)  # while the consumers work
        (workdir / "sent").touch()
        results = []
        for p in procs:
            out, err = p.communicate(timeout=BOUND_SECONDS + 10)
            assert p.returncode == 0, err
            results.append(json.loads(out.strip().splitlines()[-1]))
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    assert not (workdir / "violations").exists(), (workdir / "violations").read_text()
    for g in range(GROUPS):
        log = (workdir / f"g{g}.log").read_text().split()
        assert log == [f"g{g}:{i}" for i in range(PER_GROUP)], f"group g{g} was seen as {log}"
    assert sum(r["handled"] for r in results) == GROUPS * PER_GROUP
    assert sum(1 for r in results if r["handled"]) > 1  # the consumers really shared the queue
    attrs = q.get_queue_attributes(["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"])
    assert attrs == {"ApproximateNumberOfMessages": "0", "ApproximateNumberOfMessagesNotVisible": "0"}
    db.close()


if __name__ == "__main__":
    consume(sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
