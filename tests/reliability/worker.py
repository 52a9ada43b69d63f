"""Soak workers: one producer or consumer process, run as ``python -m tests.reliability.worker``.

Every worker writes what it is about to do and what happened to its own append-only log, one
JSON line per event, fsynced before it acts on the result. A SIGKILL can therefore lose only
the outcome of the single step in progress, and the checker knows which step that was: a send
whose "intent" line has no "ack" line, a receive whose claim committed but whose "recv" line
was never written, a delete whose "del_intent" line has no "del" line.

Each process also arms a SQLite progress handler that, with a small probability, SIGKILLs the
process from inside a running statement: a kill in the middle of a transaction, which a kill
sent from outside only hits by luck.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import signal
import sys
import time

import sqsqlite
from sqsqlite import errors

# Outcomes a correct engine gives a consumer that was slow: its message was received again
# (ReceiptHandleIsInvalid) or its visibility had ended (MessageNotInflight).
EXPECTED_DELETE_ERRORS = {"ReceiptHandleIsInvalid"}
EXPECTED_CHANGE_ERRORS = {"ReceiptHandleIsInvalid", "MessageNotInflight"}
# A slow consumer's change after the newest holder deleted the message: the row is gone, so the
# engine can only say the message does not exist any more.
EXPECTED_CHANGE_ERRORS.add("InvalidParameterValue")


def now_ms() -> int:
    # The same clock the engine's SystemClock reads, so log times and row times compare.
    return time.time_ns() // 1_000_000


class Log:
    """An append-only, fsynced JSON-lines log owned by one process incarnation."""

    def __init__(self, path: str):
        self.fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)

    def write(self, ev: str, **fields) -> None:
        fields["ev"] = ev
        fields.setdefault("t", now_ms())
        os.write(self.fd, (json.dumps(fields, separators=(",", ":")) + "\n").encode())
        os.fsync(self.fd)


def arm_self_kill(db: sqsqlite.Database, log: Log, rate: float, rng: random.Random) -> None:
    if rate <= 0:
        return
    conn = db.store.connection()

    def maybe_die() -> int:
        if rng.random() < rate:
            log.write("selfkill", in_tx=conn.in_transaction)
            os.kill(os.getpid(), signal.SIGKILL)
        return 0

    # Called every 50 SQLite VM instructions, i.e. inside statements, inside transactions.
    conn.set_progress_handler(maybe_die, 50)


class GapKiller:
    """Kills the process between a call's commit and the log line that records its outcome:
    the one moment where the log and the database disagree, which the checker must handle."""

    def __init__(self, log: Log, rate: float, rng: random.Random):
        self.log, self.rate, self.rng = log, rate, rng

    def __call__(self, where: str) -> None:
        if self.rng.random() < self.rate:
            self.log.write("selfkill", in_tx=False, where=where)
            os.kill(os.getpid(), signal.SIGKILL)


def handle_digest(handle: str) -> str:
    return hashlib.sha256(handle.encode()).hexdigest()[:16]


def producer(args, db, log: Log, rng: random.Random, gap: GapKiller) -> None:
    q = db.queue(args.queue)
    seq = 0
    stop = os.path.join(args.workdir, "stop-producers")

    def body(uid: str) -> str:
        poison = rng.random() < args.poison_rate
        pad = "x" * rng.choice((0, 10, 100, 1000))
        return json.dumps({"uid": uid, "poison": poison, "pad": pad})

    while not os.path.exists(stop):
        if rng.random() < 0.3:
            uids = [f"{args.id}-{seq + i}" for i in range(rng.randint(2, 10))]
            seq += len(uids)
            entries = [{"Id": f"e{i}", "MessageBody": body(u)} for i, u in enumerate(uids)]
            log.write("intent", uids=uids)
            result = q.send_message_batch(entries)
            gap("after send_message_batch returned")
            by_entry = {f"e{i}": u for i, u in enumerate(uids)}
            log.write("ack", items=[[by_entry[r.id], r.message_id] for r in result.successful])
            for f in result.failed:
                log.write("unexpected", op="send_batch", code=f.code, message=f.message)
        else:
            uid = f"{args.id}-{seq}"
            seq += 1
            log.write("intent", uids=[uid])
            r = q.send_message(body(uid))
            gap("after send_message returned")
            log.write("ack", items=[[uid, r.message_id]])
        time.sleep(rng.uniform(0, args.pace))


def consumer(args, db, log: Log, rng: random.Random, gap: GapKiller) -> None:
    q = db.queue(args.queue)
    vt = args.visibility
    stop = os.path.join(args.workdir, "stop")
    while not os.path.exists(stop):
        msgs = q.receive_message(max_number_of_messages=rng.randint(1, 10), visibility_timeout=vt, wait_time_seconds=1)
        if msgs:
            gap("after receive_message returned")
        # Log the whole batch before acting on any of it.
        for m in msgs:
            data = json.loads(m.body)
            log.write(
                "recv",
                uid=data["uid"],
                poison=data["poison"],
                mid=m.message_id,
                rc=m.receive_count,
                claim=m.visible_at - vt * 1000,
                lease=m.visible_at,
                h=handle_digest(m.receipt_handle),
            )
        slow_done = False  # at most one slow message per batch, so the consumers keep up
        for m in msgs:
            data = json.loads(m.body)
            uid, rc = data["uid"], m.receive_count
            if data["poison"]:
                continue  # never deleted: it must end in the dead-letter queue
            roll = rng.random()
            if roll < 0.05:
                continue  # abandoned: redelivered once the visibility timeout ends
            if roll < 0.10:
                change(q, log, m, uid, rc, 0)  # released at once
                continue
            if roll < 0.17:
                change(q, log, m, uid, rc, vt * 3)  # needs more time
            elif roll < 0.20 and not slow_done:
                slow_done = True
                time.sleep(vt + rng.uniform(0.05, 0.5))  # too slow: the visibility ends first
            log.write("del_intent", uid=uid, rc=rc)
            try:
                m.delete()
                gap("after delete returned")
                log.write("del", uid=uid, rc=rc, ok=True)
            except errors.SQSError as exc:
                log.write("del", uid=uid, rc=rc, ok=False, code=exc.code)
                if exc.code not in EXPECTED_DELETE_ERRORS:
                    log.write("unexpected", op="delete", code=exc.code, message=exc.message)


def change(q, log: Log, m, uid: str, rc: int, seconds: int) -> None:
    log.write("vis_intent", uid=uid, rc=rc, to=seconds)
    try:
        m.change_visibility(seconds)
        log.write("vis", uid=uid, rc=rc, ok=True)
    except errors.SQSError as exc:
        log.write("vis", uid=uid, rc=rc, ok=False, code=exc.code)
        if exc.code not in EXPECTED_CHANGE_ERRORS:
            log.write("unexpected", op="change_visibility", code=exc.code, message=exc.message)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("role", choices=("producer", "consumer"))
    ap.add_argument("--id", required=True)
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--queue", default="soak")
    ap.add_argument("--visibility", type=int, default=1)
    ap.add_argument("--poison-rate", type=float, default=0.02)
    ap.add_argument("--pace", type=float, default=0.1)
    ap.add_argument("--self-kill-rate", type=float, default=0.0)
    ap.add_argument("--gap-kill-rate", type=float, default=0.0)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    rng = random.Random(args.seed)
    log = Log(os.path.join(args.workdir, "logs", f"{args.id}.log"))
    log.write("start", pid=os.getpid())
    db = sqsqlite.connect(os.path.join(args.workdir, "soak.db"))
    arm_self_kill(db, log, args.self_kill_rate, rng)
    gap = GapKiller(log, args.gap_kill_rate, rng)
    (producer if args.role == "producer" else consumer)(args, db, log, rng, gap)
    log.write("stop")
    db.close()


if __name__ == "__main__":
    sys.exit(main())
