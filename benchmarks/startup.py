"""Start-up time of whole commands, against Python's own start-up as the floor.

    python -m benchmarks.startup            # median of 7 runs of each command
    python -m benchmarks.startup --runs 11

Each command runs as a fresh process (what a shell script or a cron job pays), one after the
other in turn so load from elsewhere falls on all of them alike. The database is a temporary file
with one queue, created before timing, so the figures are a command's start and its one
transaction, not a first-run migration. Beside them: the aws CLI sending the same message to a
running `sqsqlite serve` (where the dev extra or PATH has it), and `sqsqlite serve` from its
start to its first answered request.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from sqsqlite.testing import wait_until_ready

SERVE = "sqsqlite serve, to its first answer"


def sqsqlite_script() -> str:
    """The console script pip installed beside this Python (what a user types)."""
    return str(Path(sys.executable).parent / "sqsqlite")


def aws_script() -> str | None:
    """The aws CLI beside this Python (the dev extra installs it), else on PATH."""
    beside = Path(sys.executable).parent / "aws"
    return str(beside) if beside.exists() else shutil.which("aws")


def serve_ready(db: str) -> float:
    """Seconds from starting `sqsqlite serve` to its first answered request."""
    start = time.perf_counter()
    proc = subprocess.Popen([sqsqlite_script(), "--db", db, "serve", "--port", "0"], stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()  # "sqsqlite serving DB at http://127.0.0.1:PORT (...)"
        url = line.split(" at ", 1)[1].split()[0]
        wait_until_ready(url)  # it listens first and answers 503 while it migrates the file
        request = urllib.request.Request(url, data=b"Action=ListQueues", headers={"Content-Type": "application/x-www-form-urlencoded"})
        urllib.request.urlopen(request, timeout=30).read()
        return time.perf_counter() - start
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)


def commands(db: str, endpoint: str) -> list[tuple[str, list[str]]]:
    py = sys.executable
    cli = [sqsqlite_script(), "--db", db]
    aws = aws_script()
    peers = []
    if aws:
        # The aws CLI against `sqsqlite serve`: what the same one-line script costs with it.
        peers.append(
            (
                "aws sqs send-message (to sqsqlite serve)",
                [
                    aws,
                    "--endpoint-url",
                    endpoint,
                    "sqs",
                    "send-message",
                    "--queue-url",
                    f"{endpoint}/000000000000/q",
                    "--message-body",
                    "x",
                ],
            )
        )
    return [
        ("python -c 'import sqlite3' (floor)", [py, "-c", "import sqlite3"]),
        ("python -c 'import sqsqlite'", [py, "-c", "import sqsqlite"]),
        ("python -c 'import sqsqlite; sqsqlite.connect(db)'", [py, "-c", f"import sqsqlite; sqsqlite.connect({db!r}).close()"]),
        ("sqsqlite --help", [*cli, "--help"]),
        ("sqsqlite send-message", [*cli, "send-message", "--queue-url", "q", "--message-body", "x"]),
        ("sqsqlite receive-message", [*cli, "receive-message", "--queue-url", "q"]),
        *peers,
    ]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        db = str(Path(tmp) / "startup.db")
        subprocess.run([sqsqlite_script(), "--db", db, "create-queue", "--queue-name", "q"], check=True, capture_output=True)
        server = subprocess.Popen([sqsqlite_script(), "--db", db, "serve", "--port", "0"], stderr=subprocess.PIPE, text=True)
        assert server.stderr is not None
        endpoint = server.stderr.readline().split(" at ", 1)[1].split()[0]
        wait_until_ready(endpoint)
        table = commands(db, endpoint)
        times: dict[str, list[float]] = {name: [] for name, _ in table}
        times[SERVE] = []
        env = {
            **os.environ,
            "PYTHONDONTWRITEBYTECODE": "",
            "AWS_ACCESS_KEY_ID": "x",
            "AWS_SECRET_ACCESS_KEY": "x",
            "AWS_DEFAULT_REGION": "us-east-1",
        }
        try:
            for _ in range(args.runs + 1):  # the first round warms the caches and is dropped
                for name, argv_ in table:
                    start = time.perf_counter()
                    subprocess.run(argv_, check=True, capture_output=True, env=env)
                    times[name].append(time.perf_counter() - start)
                times[SERVE].append(serve_ready(str(Path(tmp) / "serve.db")))
        finally:
            server.send_signal(signal.SIGTERM)
            server.wait(timeout=30)
    floor = statistics.median(times[table[0][0]][1:])
    print("| command | median s | over the floor s |")
    print("| --- | ---: | ---: |")
    for name in times:
        median = statistics.median(times[name][1:])
        print(f"| `{name}` | {median:.3f} | {median - floor:+.3f} |")


if __name__ == "__main__":
    main()
