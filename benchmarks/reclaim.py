"""A drained queue giving its space back: the file's size over time, the write lock each reclaim
step holds, and a steady workload's latency while it runs against the same workload without it.

    python -m benchmarks.reclaim                   # fill to 256 MiB
    python -m benchmarks.reclaim --mb 1024         # fill to 1 GiB
    python -m benchmarks.reclaim --replicate       # with `sqsqlite replicate` to a directory

One process fills a queue with batches of ten 4 KB messages until the database holds ``--mb``
MiB, then drains it (receive ten, delete them, until empty). Meanwhile another process runs a
steady workload on a second queue: ``--rate`` times a second a send, then a receive and a
delete of what it got, timing each send and receive. After the drain the draining process's
reclaim is held off (thresholds raised) for ``--window`` seconds: the floor, the workload beside
a large file full of free pages and nothing returning them. Then the default thresholds are put
back and one commit wakes the checkpoint thread: the database file's size (and its WAL's) is
sampled every 100 ms until the file is under a tenth of the peak, or for 60 s, and the workload's latency in
that window is set against the floor's. Each reclaim step's lock hold is read from the
``sqsqlite.space`` logger, and whether it ended early for a writer waiting. For the slowest 1%
of sends and of receives in each window it says how many started the WAL again (a commit after
a checkpoint copied the whole WAL syncs its header) and how many met a reclaim step. With ``--replicate``, Litestream ships the file throughout, and the
replica is restored at the end and its messages and size checked.
"""

from __future__ import annotations

import argparse
import bisect
import json
import logging
import multiprocessing as mp
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import sqsqlite
from sqsqlite import defaults as D
from sqsqlite import space

BODY = "x" * 4000
MB = 1 << 20
SQSQLITE = [sys.executable, str(Path(sys.executable).with_name("sqsqlite"))]


def workload(db_path: str, rate: float, stop_at: str, out: str) -> None:
    """Send, receive and delete ``rate`` times a second until ``stop_at`` exists: each op's
    (monotonic start, kind, seconds, whether its commit started the WAL again) written to
    ``out``. Its own checkpoint thread returns no pages: the draining process's does, in the
    window measured."""
    D.RECLAIM_MIN_FREE_BYTES = 1 << 50
    db = sqsqlite.connect(db_path)
    q = db.queue("steady")
    samples = []
    period = 1 / rate
    next_at = time.monotonic()
    wal = os.open(db_path + "-wal", os.O_RDONLY)

    def restarts() -> bytes:
        # The WAL header's checkpoint sequence number: a commit that starts the log again after
        # a checkpoint copied all of it changes it, and syncs the header (an fsync in that commit).
        return os.pread(wal, 4, 12)

    while not os.path.exists(stop_at):
        now = time.monotonic()
        if now < next_at:
            time.sleep(next_at - now)
        next_at += period
        before = restarts()
        t0 = time.monotonic()
        q.send_message("tick")
        t1 = time.monotonic()
        sent = restarts()
        t2 = time.monotonic()
        got = q.receive_message(max_number_of_messages=1)
        t3 = time.monotonic()
        received = restarts()
        for m in got:
            m.delete()
        samples.append((t0, "send", t1 - t0, sent != before))
        samples.append((t2, "receive", t3 - t2, received != sent))
    os.close(wal)
    db.close()
    Path(out).write_text(json.dumps(samples))


def slowest(samples: list, kind: str, a: float, b: float, steps: list[tuple[float, float]]) -> dict[str, int | float]:
    """What the slowest 1% of one kind's ops in [a, b) met: a start of the WAL (its fsync), a
    reclaim step (one holding the lock when the op began, or taking it while the op ran); and
    the share of all of them that met a step. ``steps``: (start, end) on the monotonic clock."""
    ops = [(t, s, restarted) for t, k, s, restarted in samples if k == kind and a <= t < b]
    if len(ops) < 100:
        return {}
    starts = [start for start, _ in steps]

    def met_step(t: float, s: float) -> bool:
        i = bisect.bisect_right(starts, t + s)  # steps that began before the op ended
        return i > 0 and steps[i - 1][1] >= t  # the latest of them still held the lock when it began

    cut = sorted(s for _, s, _ in ops)[-(len(ops) // 100) :][0]
    worst = [(t, s, restarted) for t, s, restarted in ops if s >= cut]
    return {
        "slowest_1pct": len(worst),
        "of_which_started_the_wal": sum(restarted for _, _, restarted in worst),
        "of_which_met_a_step": sum(met_step(t, s) for t, s, _ in worst),
        "share_of_all_that_met_a_step": round(sum(met_step(t, s) for t, s, _ in ops) / len(ops), 4),
    }


def percentiles(values: list[float]) -> dict[str, float]:
    if len(values) < 2:
        return {"n": len(values)}
    q = statistics.quantiles(values, n=100, method="inclusive")
    return {"n": len(values), "p50_ms": round(q[49] * 1000, 3), "p99_ms": round(q[98] * 1000, 3), "max_ms": round(max(values) * 1000, 3)}


def sizes(db_path: str) -> tuple[int, int]:
    def size(p: str) -> int:
        try:
            return os.path.getsize(p)
        except OSError:
            return 0

    return size(db_path), size(db_path + "-wal")


class Holds(logging.Handler):
    """Each reclaim step's lock hold, from the sqsqlite.space logger's debug line."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.holds: list[tuple[float, float]] = []
        self.lines: list[tuple[float, float, str]] = []

    def emit(self, record: logging.LogRecord) -> None:
        m = re.search(r"lock held ([0-9.]+) ms", record.getMessage())
        if m:
            self.holds.append((time.monotonic(), float(m.group(1))))
            self.lines.append((time.monotonic(), float(m.group(1)), record.getMessage()))


def run(args: argparse.Namespace, folder: Path) -> dict:
    db_path = str(folder / "reclaim.db")
    stop_at = str(folder / "stop")
    out = str(folder / "workload.json")
    holds = Holds()
    log = logging.getLogger("sqsqlite.space")
    log.setLevel(logging.DEBUG)
    log.addHandler(holds)
    D.RECLAIM_MIN_FREE_BYTES, default_min = 1 << 50, D.RECLAIM_MIN_FREE_BYTES  # held off until the reclaim window
    # --interleave: each step waits while this is clear (before the writers' lock).
    steps_allowed = threading.Event()
    steps_allowed.set()
    step = space.Reclaimer.step

    def gated(self: space.Reclaimer, *args: Any, **kwargs: Any) -> int:
        steps_allowed.wait()
        return step(self, *args, **kwargs)

    space.Reclaimer.step = gated  # type: ignore[method-assign]
    db = sqsqlite.connect(db_path)
    q = db.create_queue("bulk")
    db.create_queue("steady")
    replication = None
    if args.replicate:
        replication = subprocess.Popen(
            [*SQSQLITE, "replicate", "--db", db_path, "--to", str(folder / "replica")],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
    steady = mp.get_context("spawn").Process(target=workload, args=(db_path, args.rate, stop_at, out))
    steady.start()
    result: dict = {"mb": args.mb, "rate": args.rate, "replicate": args.replicate, "interleave": args.interleave}
    result["load_average_at_start"] = round(os.getloadavg()[0], 2)
    started = time.monotonic()
    sent = 0
    while True:
        f = space.measure(db.store.connection(), db_path)
        if f.pages * f.page_size >= args.mb * MB:
            break
        for _ in range(50):
            q.send_message_batch([{"Id": str(j), "MessageBody": BODY} for j in range(10)])
        sent += 500
    result["fill_seconds"] = round(time.monotonic() - started, 1)
    result["messages"] = sent
    drain_started = time.monotonic()
    while True:
        got = q.receive_message(max_number_of_messages=10)
        if not got:
            break
        q.delete_message_batch([{"Id": str(n), "ReceiptHandle": m.receipt_handle} for n, m in enumerate(got)])
    drained = time.monotonic()
    result["drain_seconds"] = round(drained - drain_started, 1)
    peak_pages = space.measure(db.store.connection(), db_path)
    peak = peak_pages.pages * peak_pages.page_size
    result["peak_bytes"] = peak
    result["peak_file_and_wal_bytes"] = sum(sizes(db_path))
    result["free_pages_after_drain"] = peak_pages.free_pages
    # The floor: the same workload beside the drained file, nothing returning its pages.
    floor = (time.monotonic(), time.monotonic() + args.window)
    time.sleep(args.window)
    # Reclaim as at the default settings: woken by a commit, as the drain's last one would.
    D.RECLAIM_MIN_FREE_BYTES = default_min
    db.queue("bulk").send_message("wake")
    for m in db.queue("bulk").receive_message():
        m.delete()
    reclaim_started = time.monotonic()
    timeline = []
    under = None
    periods: list[tuple[float, float, bool]] = []  # --interleave: (start, end, steps allowed)
    switched, allowed = reclaim_started, True
    while time.monotonic() - reclaim_started < 60 * (2 if args.interleave else 1):
        file_bytes, wal_bytes = sizes(db_path)
        now = time.monotonic()
        t = now - reclaim_started
        timeline.append((round(t, 2), file_bytes, wal_bytes))
        if under is None and file_bytes < peak / 10:
            under = t
        if under is not None and t > under + 1:
            break
        if args.interleave and now - switched >= args.interleave:
            periods.append((switched, now, allowed))
            switched, allowed = now, not allowed
            (steps_allowed.set if allowed else steps_allowed.clear)()
        time.sleep(0.1)
    steps_allowed.set()
    reclaim_ended = reclaim_started + (under if under is not None else 60)
    result["seconds_to_under_a_tenth"] = None if under is None else round(under, 2)
    if args.interleave:
        periods.append((switched, reclaim_ended, allowed))
        result["seconds_of_steps_to_under_a_tenth"] = round(
            sum(min(b, reclaim_ended) - a for a, b, on in periods if on and a < reclaim_ended), 2
        )
    result["timeline"] = [row for i, row in enumerate(timeline) if i % 5 == 0 or row is timeline[-1]]
    result["after"] = space.measure(db.store.connection(), db_path).as_dict()
    result["wal_bytes_at_the_end"] = sizes(db_path)[1]
    result["load_average_at_the_end"] = round(os.getloadavg()[0], 2)  # the last minute's, the steps' included
    Path(stop_at).touch()
    steady.join(60)
    samples = json.loads(Path(out).read_text())
    # Each step's lock hold as (start, end): its log line comes just after it let the lock go.
    intervals = [(t - h / 1000, t) for t, h in holds.holds]
    for name, (a, b) in (("floor", floor), ("reclaim", (reclaim_started, reclaim_ended))):
        for kind in ("send", "receive"):
            result[f"{name}_{kind}"] = percentiles([s for t, k, s, _ in samples if k == kind and a <= t < b])
            result[f"{name}_{kind}"].update(slowest(samples, kind, a, b, intervals))
    steps = [h for t, h in holds.holds if t >= reclaim_started]
    result["steps"] = len(steps)
    result["steps_ended_early_for_a_writer"] = sum("ended early" in line for t, _, line in holds.lines if t >= reclaim_started)
    result["longest_steps"] = [line for _, _, line in sorted((x for x in holds.lines if x[0] >= reclaim_started), key=lambda x: -x[1])[:5]]
    result["median_hold_ms"] = round(statistics.median(steps), 3) if steps else None
    result["longest_hold_ms"] = round(max(steps), 3) if steps else None
    result["p99_hold_ms"] = round(statistics.quantiles(steps, n=100, method="inclusive")[98], 3) if len(steps) >= 2 else None
    for kind in ("send", "receive"):
        f_p99 = result[f"floor_{kind}"].get("p99_ms")
        r_p99 = result[f"reclaim_{kind}"].get("p99_ms")
        result[f"p99_ratio_{kind}"] = round(r_p99 / f_p99, 2) if f_p99 and r_p99 else None
    if args.interleave:
        # Ops that began in a period with steps held off against those in one with steps, the
        # periods taking turns, so both see the same machine; each period's first 20 ms left
        # out (a step, and the checkpoint after it, may still be finishing).
        for kind in ("send", "receive"):
            for on, name in ((False, "held_off"), (True, "steps")):
                values = [
                    sec
                    for t, k, sec, _ in samples
                    if k == kind and any(a + 0.02 <= t < b for a, b, o in periods if o == on and b <= reclaim_ended + 1e-9)
                ]
                result[f"interleaved_{name}_{kind}"] = percentiles(values)
            f_p99 = result[f"interleaved_held_off_{kind}"].get("p99_ms")
            r_p99 = result[f"interleaved_steps_{kind}"].get("p99_ms")
            result[f"p99_ratio_interleaved_{kind}"] = round(r_p99 / f_p99, 2) if f_p99 and r_p99 else None
    db.close()
    if replication is not None:
        time.sleep(2)  # a sync interval and more
        os.killpg(replication.pid, 15)
        replication.wait(60)
        restored = str(folder / "restored.db")
        done = subprocess.run(
            [*SQSQLITE, "restore", "--db", restored, "--from", str(folder / "replica")],
            capture_output=True,
            text=True,
        )
        result["restore"] = done.stdout.strip() or done.stderr.strip()
        with sqsqlite.connect(restored) as copy:
            result["restored_bulk_messages"] = len(copy.queue("bulk").peek("all", 1000))
            result["restored_integrity"] = copy.integrity_check()
        result["restored_bytes"] = os.path.getsize(restored)
        result["replica_bytes"] = sum(f.stat().st_size for f in (folder / "replica").rglob("*") if f.is_file())
    return result


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, default=256, help="fill the database to this many MiB")
    parser.add_argument("--rate", type=float, default=200, help="the steady workload's send+receive pairs a second")
    parser.add_argument("--window", type=float, default=10, help="seconds of the floor window")
    parser.add_argument("--replicate", action="store_true", help="with `sqsqlite replicate` to a directory")
    parser.add_argument(
        "--interleave",
        type=float,
        default=0,
        help="hold the steps off every other this many seconds, and set the ops of the two kinds of period against each other",
    )
    parser.add_argument("--dir", help="work here (default: a temporary folder, removed after)")
    parser.add_argument("--json", help="also write the result here")
    args = parser.parse_args(argv)
    folder = Path(args.dir) if args.dir else Path(tempfile.mkdtemp(prefix="sqsqlite-reclaim-"))
    folder.mkdir(parents=True, exist_ok=True)
    try:
        result = run(args, folder)
    finally:
        if not args.dir:
            shutil.rmtree(folder, ignore_errors=True)
    text = json.dumps(result, indent=1)
    print(text)
    if args.json:
        Path(args.json).write_text(text + "\n")


if __name__ == "__main__":
    main()
