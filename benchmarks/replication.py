"""How far a Litestream replica trails the database: the durability window of `sqsqlite replicate`.

    python -m benchmarks.replication                       # sync interval 1s, 20 sends
    python -m benchmarks.replication --sync-interval 100ms --sends 50

Replicates a fresh database to a directory, then sends one message at a time and measures how
long each committed send takes to reach the replica: from the send's return to the moment a new
transaction file appears in the replica's level-0 folder (polled every millisecond). Each send
waits a random part of the sync interval first, so the sends fall at random moments of
Litestream's ticker, as a program's do (sent as soon as the last one arrived, every send would
fall just after a tick and wait the whole interval). A disk lost at any instant loses the
transactions of at most the max.
"""

from __future__ import annotations

import argparse
import os
import random
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import sqsqlite


def transaction_files(replica: Path) -> set[str]:
    """The names in the replica's level-0 folder: a send has arrived when a name not there
    before appears (Litestream also deletes old ones, so a count could stand still or fall)."""
    level0 = replica / "ltx" / "0"
    return set(os.listdir(level0)) if level0.exists() else set()


def seconds(interval: str) -> float:
    """A Litestream duration as ``--sync-interval`` takes it ("1s", "100ms", "1m") in seconds."""
    m = re.fullmatch(r"(\d+(?:\.\d+)?)(ms|s|m)", interval)
    if m is None:
        raise SystemExit(f"--sync-interval {interval!r}: give a number and ms, s or m, e.g. 100ms")
    return float(m.group(1)) * {"ms": 0.001, "s": 1.0, "m": 60.0}[m.group(2)]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sync-interval", default="1s")
    parser.add_argument("--sends", type=int, default=20)
    args = parser.parse_args(argv)
    interval = seconds(args.sync_interval)
    script = str(Path(sys.executable).with_name("sqsqlite"))
    with tempfile.TemporaryDirectory() as tmp:
        db_path, replica = Path(tmp) / "q.db", Path(tmp) / "replica"
        with sqsqlite.connect(str(db_path)) as db:
            db.create_queue("q")
        proc = subprocess.Popen(
            [sys.executable, script, "replicate", "--db", str(db_path), "--to", str(replica), "--sync-interval", args.sync_interval],
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        lags = []
        try:
            deadline = time.monotonic() + 30
            while not transaction_files(replica) and time.monotonic() < deadline:
                time.sleep(0.01)  # the first snapshot
            with sqsqlite.connect(str(db_path)) as db:
                queue = db.queue("q")
                for i in range(args.sends):
                    time.sleep(random.uniform(0, interval))
                    before = transaction_files(replica)
                    queue.send_message(f"m{i}")
                    sent = time.monotonic()
                    while transaction_files(replica) <= before:
                        if time.monotonic() - sent > 10 * interval + 30:
                            raise SystemExit(f"send {i} never reached the replica")
                        time.sleep(0.001)
                    lags.append(time.monotonic() - sent)
        finally:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=30)
    lags.sort()
    print(
        f"sync interval {args.sync_interval}, {len(lags)} sends: lag to the replica p50 {statistics.median(lags) * 1000:.0f} ms, max {lags[-1] * 1000:.0f} ms"
    )


if __name__ == "__main__":
    main()
