"""How large the WAL grows while `sqsqlite replicate` runs, against the same load without it.

    python -m benchmarks.replication_wal                     # 150,000 sends of 4 KB
    python -m benchmarks.replication_wal --batches 5000

One process sends batches of ten 4 KB messages as fast as it can; past the first ``--held``
batches it also receives and deletes ten messages after each batch, so the database holds about
``--held`` x 10 messages and stays the same size. The WAL's size is sampled every 200 ms. Run
once on a database nothing replicates, once on one `sqsqlite replicate` ships to a directory.
Without replication sqsqlite's checkpoints keep the WAL near 64 MiB (its journal_size_limit);
with it, Litestream's read transaction holds the log back until it has shipped it, and its own
truncating checkpoint (past about 500 MB) is what brings it back. Needs several GB of free disk.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import sqsqlite

BODY = "x" * 4000


def load(db_path: Path, batches: int, held: int) -> str:
    wal = Path(f"{db_path}-wal")
    peak = [0]
    done = threading.Event()

    def sample() -> None:
        while not done.wait(0.2):
            try:
                peak[0] = max(peak[0], wal.stat().st_size)
            except OSError:
                pass

    threading.Thread(target=sample, daemon=True).start()
    with sqsqlite.connect(str(db_path)) as db:
        queue = db.create_queue("bulk")
        started = time.monotonic()
        for i in range(batches):
            queue.send_message_batch([{"Id": str(j), "MessageBody": BODY} for j in range(10)])
            if i >= held:
                got = queue.receive_message(max_number_of_messages=10)
                queue.delete_message_batch([{"Id": str(n), "ReceiptHandle": m.receipt_handle} for n, m in enumerate(got)])
        elapsed = time.monotonic() - started
        done.set()
        left = wal.stat().st_size
    mb = 1 << 20
    return (
        f"{batches * 10} sends in {elapsed:.0f} s ({batches * 10 / elapsed:,.0f}/s); database {db_path.stat().st_size // mb} MB; "
        f"WAL peak {peak[0] // mb} MB, {left // mb} MB after"
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", type=int, default=15_000)
    parser.add_argument("--held", type=int, default=3_500)
    args = parser.parse_args(argv)
    script = str(Path(sys.executable).with_name("sqsqlite"))
    with tempfile.TemporaryDirectory() as tmp:
        print("without replicate:", load(Path(tmp) / "plain.db", args.batches, args.held), flush=True)
        db_path = Path(tmp) / "replicated.db"
        sqsqlite.connect(str(db_path)).close()
        proc = subprocess.Popen(
            [sys.executable, script, "replicate", "--db", str(db_path), "--to", str(Path(tmp) / "replica")],
            stdout=subprocess.DEVNULL,  # Litestream's log
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        try:
            time.sleep(2)  # Litestream's first snapshot
            print("with replicate:   ", load(db_path, args.batches, args.held), flush=True)
        finally:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=60)


if __name__ == "__main__":
    main()
