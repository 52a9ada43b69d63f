"""Fair queues: quiet tenants' dwell time behind a noisy one, and what fairness costs a claim.

    python -m benchmarks.fair            # quick: dwell runs of 60 s simulated, claims on 100,000 / 1,000 groups
    python -m benchmarks.fair --full     # dwell runs of 120 s simulated, claims on 1,000,000 / 10,000 groups
    python -m benchmarks.fair --tiny     # a smoke run (what the test suite runs)

**Dwell** (send to first receive) is a simulation on the engine itself, driven by a
ManualClock, so it measures the delivery order, not the machine: 50 quiet tenants send 10% of
the traffic and one noisy tenant 90%, 150 messages a simulated second in all, to consumers that
handle 100 a second (100 workers, each message takes 0.5 to 1.5 s, 1 s on average, then it is
deleted; not all alike, or the workers would free up in waves); every 50 ms the
free workers receive (batches of 10). Sends are spread over each 50 ms, so a message waits for
the next poll at least. Three runs: *fair* (every message carries its tenant as MessageGroupId),
*plain order* (the same traffic without group ids: today's order), and *no noisy tenant* (the
quiet tenants alone, fair). Dwell is read from each message's SentTimestamp and
ApproximateFirstReceiveTimestamp.

**Claims** time the claim statement alone in CPU seconds (sqlite3, one transaction per claim of 10, the
claimed rows released again so every claim sees the same file) on a backlog of visible
messages in as many groups, against the claim statement before fair queues (the oldest visible
rows, no group test) on the same file, run after run in turn. Then the same with one noisy
group: its 100 oldest messages in flight and a flood of its messages (10% of the backlog)
visible ahead of everyone else's, the worst case: the claim looks through its oldest and
newest windows (defaults.FAIR_WINDOW) before it finds quiet messages.
"""

from __future__ import annotations

import argparse
import os
import random
import sqlite3
import statistics
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass

import sqsqlite

from .harness import commit
from .systems import remove_files

TICK_MS = 50
WORKERS = 100
WORK_MS = 1000
QUIET_TENANTS = 50


@dataclass(frozen=True)
class Sizes:
    name: str
    seconds: int  # simulated, per dwell run
    stored: int  # claim benchmark backlog
    groups: int
    noisy_ahead: int
    claims: int  # per timed run
    runs: int


TINY = Sizes("tiny", 3, 3000, 30, 500, 50, 1)
QUICK = Sizes("quick", 60, 100_000, 1_000, 10_000, 2000, 5)
FULL = Sizes("full", 120, 1_000_000, 10_000, 100_000, 2000, 7)


def percentile(values: list[int], p: float) -> int:
    """Nearest rank."""
    ordered = sorted(values)
    return ordered[max(0, -(-int(p * 100) * len(ordered) // 100) - 1)]


# ---------------------------------------------------------------------- dwell


def dwell(path: str, seconds: int, noisy: bool, grouped: bool, seed: int = 7) -> dict:
    """One simulated run; the quiet tenants' dwell times (ms) and the noisy tenant's."""
    clock = sqsqlite.ManualClock(1_700_000_000_000)
    db = sqsqlite.connect(path, clock=clock)
    q = db.create_queue("tenants", visibility_timeout=30)
    rng = random.Random(seed)
    quiet_rate = 15.0  # messages a second, all quiet tenants together
    noisy_rate = 135.0 if noisy else 0.0
    per_tick = (quiet_rate + noisy_rate) * TICK_MS / 1000
    busy: list[tuple[int, object]] = []  # (done at, message)
    waits: dict[str, list[int]] = {"quiet": [], "noisy": []}
    start = clock.now_ms()
    end = start + seconds * 1000
    carry = 0.0
    while clock.now_ms() < end:
        tick_start = clock.now_ms()
        carry += per_tick
        n, carry = int(carry), carry - int(carry)
        offsets = sorted(rng.randrange(TICK_MS) for _ in range(n))
        for off in offsets:
            clock.advance((tick_start + off - clock.now_ms()) / 1000)
            if rng.random() < noisy_rate / (quiet_rate + noisy_rate):
                tenant = "noisy"
            else:
                tenant = f"tenant-{rng.randrange(QUIET_TENANTS)}"
            q.send_message(tenant, message_group_id=tenant if grouped else None)
        clock.advance((tick_start + TICK_MS - clock.now_ms()) / 1000)
        now = clock.now_ms()
        done = [m for at, m in busy if at <= now]
        busy = [(at, m) for at, m in busy if at > now]
        for i in range(0, len(done), 10):
            q.delete_message_batch([{"Id": str(k), "ReceiptHandle": m.receipt_handle} for k, m in enumerate(done[i : i + 10])])
        free = WORKERS - len(busy)
        while free > 0:
            got = q.receive_message(max_number_of_messages=min(10, free))
            if not got:
                break
            for m in got:
                if m.receive_count == 1:
                    waits["noisy" if m.body == "noisy" else "quiet"].append(m.first_receive_timestamp - m.sent_timestamp)
                busy.append((now + rng.randrange(WORK_MS // 2, WORK_MS * 3 // 2), m))
            free -= len(got)
    db.close()
    return waits


def dwell_runs(sizes: Sizes, work: str) -> list[dict]:
    rows = []
    for label, noisy, grouped in (("fair", True, True), ("plain order", True, False), ("no noisy tenant", False, True)):
        path = os.path.join(work, f"dwell-{label.replace(' ', '-')}.db")
        waits = dwell(path, sizes.seconds, noisy, grouped)
        q = waits["quiet"]
        row = {"run": label, "quiet": len(q), "quiet p50 ms": percentile(q, 0.5), "quiet p99 ms": percentile(q, 0.99)}
        if waits["noisy"]:
            row["noisy p50 ms"] = percentile(waits["noisy"], 0.5)
        rows.append(row)
    return rows


# ---------------------------------------------------------------------- claims

# The claim before fair queues: the oldest visible rows, nothing else.
CLAIM_BEFORE = (
    "UPDATE messages SET visible_at=?1, receive_count=(messages.receive_count + 1), "
    "first_received_at=coalesce(messages.first_received_at, ?2), received_at=?2, receipt_token=?3 "
    "WHERE messages.id IN (SELECT messages.id FROM messages WHERE messages.queue_id = ?4 AND "
    "messages.visible_at <= ?2 AND messages.sent_at > ?5 ORDER BY messages.visible_at LIMIT ?6 OFFSET 0) "
    "RETURNING id, message_id, body, attributes, sender_id, sent_at, receive_count, first_received_at, "
    "dead_letter_source_arn, coalesce(dedup_id, sequence_number, char(1) || group_id)"
)


def build(path: str, stored: int, groups: int, noisy_ahead: int) -> int:
    """A queue of ``stored`` visible messages round-robin over ``groups`` groups; with
    ``noisy_ahead``, that many older messages of group 'noisy' first, 100 of them in flight."""
    db = sqsqlite.connect(path)
    db.create_queue("bench")
    queue_id = db.store.connection().execute("SELECT id FROM queues WHERE name = 'bench'").fetchone()[0]
    sender = db.sender_id
    db.close()
    c = sqlite3.connect(path, isolation_level=None)
    c.execute("PRAGMA synchronous=OFF")
    c.execute("BEGIN IMMEDIATE")
    now = int(time.time() * 1000)
    start = now - 3_600_000
    total = stored + noisy_ahead
    far = now + 12 * 3_600_000

    def rows():
        for i in range(total):
            sent = start + (i * 3_000_000) // total
            noisy = i < noisy_ahead
            flying = noisy and i < 100
            yield (
                queue_id,
                str(uuid.uuid4()),
                "x" * 200,
                sender,
                sent,
                far if flying else sent,
                1 if flying else 0,
                "noisy" if noisy else (f"g{i % groups}" if groups else None),
            )

    c.executemany(
        "INSERT INTO messages (queue_id, message_id, body, sender_id, sent_at, visible_at, receive_count, group_id) VALUES (?,?,?,?,?,?,?,?)",
        rows(),
    )
    c.execute("COMMIT")
    c.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    c.close()
    return queue_id


def time_claims(path: str, queue_id: int, sql: str, claims: int) -> tuple[float, float]:
    """Messages claimed a CPU second (claims of 10), by the claim statement alone and by its
    whole transaction: each claims and releases in one transaction (the release puts the rows
    back as they were, so the file is the same for every claim), and the release and COMMIT,
    the same for both statements, are left out of the first figure."""
    c = sqlite3.connect(path, isolation_level=None)
    c.execute("PRAGMA journal_mode=WAL")
    c.execute("PRAGMA synchronous=NORMAL")
    now = int(time.time() * 1000)
    token = os.urandom(16)
    cpu = time.process_time  # CPU time: the claim is CPU-bound, and CPU time shrugs off other load
    named = {"lease_end": now + 30_000, "now": now, "token": token, "queue_id": queue_id, "cutoff": now - 4 * 86_400_000, "n": 10}
    # The engine's statement binds these by name; the one before fair queues by number, in this order.
    params: dict | tuple = named if ":lease_end" in sql else tuple(named.values())
    statement = 0.0
    t = cpu()
    for _ in range(claims):
        c.execute("BEGIN IMMEDIATE")
        s = cpu()
        rows = c.execute(sql, params).fetchall()
        statement += cpu() - s
        c.executemany("UPDATE messages SET visible_at = sent_at, receive_count = 0 WHERE id = ?", [(r[0],) for r in rows])
        c.execute("COMMIT")
    elapsed = cpu() - t
    c.close()
    return claims * 10 / statement, claims * 10 / elapsed


def claim_runs(sizes: Sizes, work: str) -> list[dict]:
    from sqsqlite import queries as Q

    rows = []
    cases = (
        (f"{sizes.stored:,} visible, {sizes.groups:,} groups", sizes.groups, 0),
        (f"{sizes.stored:,} visible, no group ids", 0, 0),
        (f"{sizes.stored:,} visible, {sizes.groups:,} groups, noisy group's {sizes.noisy_ahead:,} ahead", sizes.groups, sizes.noisy_ahead),
    )
    for label, groups, ahead in cases:
        path = os.path.join(work, "claims.db")
        remove_files(path)
        queue_id = build(path, sizes.stored, groups, ahead)
        before, fair = [], []
        for i in range(sizes.runs + 1):  # the first run of each warms the cache
            b = time_claims(path, queue_id, CLAIM_BEFORE, sizes.claims)
            f = time_claims(path, queue_id, str(Q.claim_standard), sizes.claims)
            if i:
                before.append(b)
                fair.append(f)
        mb, mf = (statistics.median(r[0] for r in runs) for runs in (before, fair))
        tb, tf = (statistics.median(r[1] for r in runs) for runs in (before, fair))
        rows.append(
            {
                "backlog": label,
                "before (msgs/s)": round(mb),
                "fair (msgs/s)": round(mf),
                "fair / before": round(mf / mb, 3),
                "transaction: fair / before": round(tf / tb, 3),
                "fair's transaction (ms per claim)": round(10_000 / tf, 3),
            }
        )
    return rows


def run(sizes: Sizes, work: str | None = None) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        work = work or tmp
        return {
            "sizes": sizes.name,
            "commit": commit(),
            "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            "dwell": dwell_runs(sizes, work),
            "claims": claim_runs(sizes, work),
        }


def _table(rows: list[dict]) -> str:
    keys = list(dict.fromkeys(k for r in rows for k in r))
    lines = ["| " + " | ".join(keys) + " |", "| " + " | ".join("---" for _ in keys) + " |"]
    lines += ["| " + " | ".join(f"{r.get(k, ''):,}" if isinstance(r.get(k), int) else str(r.get(k, "")) for k in keys) + " |" for r in rows]
    return "\n".join(lines)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.fair")
    p.add_argument("--full", action="store_true", help="1,000,000 messages in 10,000 groups; 120 s simulated")
    p.add_argument("--tiny", action="store_true", help="a smoke run")
    args = p.parse_args(argv)
    sizes = TINY if args.tiny else FULL if args.full else QUICK
    result = run(sizes)
    print(f"fair queues, {result['sizes']} sizes, commit {result['commit']}, {result['date']}")
    print(_table(result["dwell"]))
    print()
    print(_table(result["claims"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
