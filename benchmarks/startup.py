"""Start-up time of whole commands, against Python's own start-up as the floor.

    python -m benchmarks.startup            # median of 7 runs of each command
    python -m benchmarks.startup --runs 11

Each command runs as a fresh process (what a shell script or a cron job pays), one after the
other in turn so load from elsewhere falls on all of them alike. The database is a temporary file
with one queue, created before timing, so the figures are a command's start and its one
transaction, not a first-run migration.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def sqsqlite_script() -> str:
    """The console script pip installed beside this Python (what a user types)."""
    return str(Path(sys.executable).parent / "sqsqlite")


def commands(db: str) -> list[tuple[str, list[str]]]:
    py = sys.executable
    cli = [sqsqlite_script(), "--db", db]
    return [
        ("python -c 'import sqlite3' (floor)", [py, "-c", "import sqlite3"]),
        ("python -c 'import sqsqlite'", [py, "-c", "import sqsqlite"]),
        ("python -c 'import sqsqlite; sqsqlite.connect(db)'", [py, "-c", f"import sqsqlite; sqsqlite.connect({db!r}).close()"]),
        ("sqsqlite --help", [*cli, "--help"]),
        ("sqsqlite send-message", [*cli, "send-message", "--queue-url", "q", "--message-body", "x"]),
        ("sqsqlite receive-message", [*cli, "receive-message", "--queue-url", "q"]),
    ]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        db = str(Path(tmp) / "startup.db")
        subprocess.run([sqsqlite_script(), "--db", db, "create-queue", "--queue-name", "q"], check=True, capture_output=True)
        table = commands(db)
        times: dict[str, list[float]] = {name: [] for name, _ in table}
        env = {**os.environ, "PYTHONDONTWRITEBYTECODE": ""}
        for _ in range(args.runs + 1):  # the first round warms the caches and is dropped
            for name, argv_ in table:
                start = time.perf_counter()
                subprocess.run(argv_, check=True, capture_output=True, env=env)
                times[name].append(time.perf_counter() - start)
    floor = statistics.median(times[table[0][0]][1:])
    print("| command | median s | over the floor s |")
    print("| --- | ---: | ---: |")
    for name, _ in table:
        median = statistics.median(times[name][1:])
        print(f"| `{name}` | {median:.3f} | {median - floor:+.3f} |")


if __name__ == "__main__":
    main()
