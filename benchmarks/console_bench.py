"""The web console and /metrics on a big database: what a scrape and a page cost.

    python -m benchmarks.console_bench                   # 1,000,000 messages, median of 11
    python -m benchmarks.console_bench --messages 100000 --runs 5

The database: "orders" with 90% of the messages (1,000 of them in flight), its dead-letter queue
"orders-dlq" with 1%, and "emails" with 9%, sent in batches of 10 before timing. Each figure is
the median of --runs requests over HTTP to a BackgroundServer in this process, one after the
other in turn, so load from elsewhere falls on all of them alike. The floors, measured in the
same run: a GET of the console's style sheet (the HTTP round trip and nothing else), and
SQLite's plain `SELECT count(*) FROM messages` (one walk of the smallest index, every queue's
rows in one number). "per-queue reads" is what stats ran before it read every queue with one
statement: four statements per queue and the dead-letter queue counted again.
"""

from __future__ import annotations

import argparse
import contextlib
import sqlite3
import statistics
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path

import sqsqlite
from sqsqlite import queries as Q
from sqsqlite.server import BackgroundServer


def build(path: str, messages: int) -> None:
    with sqsqlite.connect(path) as db:
        dlq = db.create_queue("orders-dlq")
        orders = db.create_queue("orders", RedrivePolicy={"deadLetterTargetArn": dlq.arn, "maxReceiveCount": 3})
        emails = db.create_queue("emails")
        for queue, share in ((orders, 0.90), (emails, 0.09), (dlq, 0.01)):
            for i in range(0, int(messages * share), 10):
                queue.send_message_batch([{"Id": str(j), "MessageBody": f"message {i + j} " + "x" * 100} for j in range(10)])
        for _ in range(100):
            orders.receive_message(max_number_of_messages=10, visibility_timeout=3600)


def per_queue_reads(conn: sqlite3.Connection) -> None:
    """The reads stats made before one statement read them all (for comparison), on a kept
    connection, as stats reads on the server's."""
    now = int(time.time() * 1000)
    queues = conn.execute("SELECT id, name, retention_period, dead_letter_target FROM queues").fetchall()
    by_name = {q[1]: q for q in queues}
    for qid, _name, retention, dlq in queues:
        params = {"queue_id": qid, "now": now, "cutoff": now - retention * 1000}
        for sql in (Q.count_visible, Q.count_in_flight, Q.count_delayed, Q.oldest_sent):
            conn.execute(sql, sql.bind(params)).fetchall()
        if dlq in by_name:
            target = {**params, "queue_id": by_name[dlq][0]}
            for sql in (Q.count_visible, Q.count_in_flight, Q.count_delayed):
                conn.execute(sql, sql.bind(target)).fetchall()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=11)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        path = str(Path(tmp) / "console.db")
        started = time.perf_counter()
        build(path, args.messages)
        print(f"built {args.messages:,} messages in {time.perf_counter() - started:.0f} s", file=sys.stderr)
        with BackgroundServer(path) as server, contextlib.ExitStack() as stack:
            db = server.db
            # A cursor halfway down orders (the cursor is "visible_at.row id"): the page a reader
            # reaches after thousands of clicks costs what the first does.
            half = int(args.messages * 0.45)
            with contextlib.closing(sqlite3.connect(path)) as conn:
                visible_at, row = conn.execute(
                    "SELECT visible_at, id FROM messages WHERE queue_id = 2 ORDER BY visible_at, id LIMIT 1 OFFSET ?", (half,)
                ).fetchone()
            deep_cursor = f"{visible_at}.{row}"

            def get(p: str) -> Callable[[], None]:
                return lambda: urllib.request.urlopen(server.url + p).read()

            # The SQLite floors read on one connection kept open, as Database.stats reads on
            # the server's: a connection opened per call would add its opening to every read.
            floor = stack.enter_context(contextlib.closing(sqlite3.connect(path)))

            def read_all() -> None:
                floor.execute("SELECT count(*) FROM messages").fetchall()

            table: list[tuple[str, Callable[[], None]]] = [
                ("GET /console/static/console.css (floor: HTTP)", get("/console/static/console.css")),
                ("SELECT count(*) FROM messages (floor: SQLite)", read_all),
                ("Database.stats(): one statement", db.stats),
                ("per-queue reads (stats before)", lambda: per_queue_reads(floor)),
                ("GET /metrics (a scrape)", get("/metrics")),
                ("GET /console (queue list)", get("/console")),
                ("GET /console/api/stats (the queue list's poll)", get("/console/api/stats")),
                ("GET /console/api/stats?queue=emails (a queue page's poll)", get("/console/api/stats?queue=emails")),
                ("GET /console/queues/orders (first page)", get("/console/queues/orders")),
                ("GET /console/queues/emails (first page)", get("/console/queues/emails")),
                ("GET /console/queues/orders?state=in-flight", get("/console/queues/orders?state=in-flight")),
                (
                    f"GET /console/queues/orders?after=... ({half:,} messages down)",
                    get(f"/console/queues/orders?state=visible&after={deep_cursor}"),
                ),
                ("Queue.peek_page: a page of 50 alone", lambda: db.queue("orders").peek_page("all", 50)),
            ]
            times: dict[str, list[float]] = {name: [] for name, _ in table}
            for _ in range(args.runs + 1):  # the first round warms the caches and is dropped
                for name, call in table:
                    t = time.perf_counter()
                    call()
                    times[name].append(time.perf_counter() - t)
    print(f"| {args.messages:,} messages | median ms | min ms | max ms |")
    print("| --- | ---: | ---: | ---: |")
    for name, _ in table:
        kept = times[name][1:]
        print(f"| {name} | {statistics.median(kept) * 1000:.1f} | {min(kept) * 1000:.1f} | {max(kept) * 1000:.1f} |")


if __name__ == "__main__":
    main()
