"""The HTTP endpoint against moto's server: the same boto3 workload, the same run.

    python -m benchmarks.server_bench [--seconds 3] [--rounds 3] [--quick]

Workload: one boto3 client, one thread, repeating send_message -> receive_message -> delete_message
on a queue that holds a backlog of N waiting messages (1,000 / 10,000 / 100,000). Each cycle
sends one and deletes one, so the backlog stays at N. Throughput is requests per second.
Levels are measured in interleaved rounds (1k, 10k, 100k, 1k, ...) so machine noise hits every
level alike; each level's figure is the median of its rounds.

Where the time goes: sqsqlite reports its own time per request (``Server-Timing`` header);
moto's WSGI app is wrapped with the same stopwatch. Client time = wall time of the boto3 call
minus the server's (botocore serialising, signing, parsing, plus the loopback round trip).

Also measured: the same cycle while 100 long polls wait on another queue, and how long a send
takes to wake a waiting poll. Results go to benchmarks/results/server_bench.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results" / "server_bench.json"
CREDS = {"aws_access_key_id": "bench", "aws_secret_access_key": "bench", "region_name": "us-east-1"}


def _client(url: str, pool: int = 10):
    import boto3
    from botocore.config import Config

    return boto3.client("sqs", endpoint_url=url, config=Config(max_pool_connections=pool, retries={"total_max_attempts": 1}), **CREDS)


class _Stopwatch:
    """Per-operation wall time of boto3 calls and the server's share (from a header or a hook)."""

    def __init__(self, client, header: str | None):
        self.total: dict[str, list[float]] = {}
        self.server: dict[str, list[float]] = {}
        self._header = header
        self._last_server = 0.0
        if header:
            client.meta.events.register("after-call.sqs", self._after_call)

    def _after_call(self, http_response=None, **_):
        value = http_response.headers.get(self._header, "") if http_response is not None else ""
        self._last_server = float(value.split("dur=")[1]) / 1000 if "dur=" in value else 0.0

    def call(self, op: str, fn, **kwargs):
        t = time.perf_counter()
        out = fn(**kwargs)
        self.total.setdefault(op, []).append(time.perf_counter() - t)
        if self._header:
            self.server.setdefault(op, []).append(self._last_server)
        return out


def _cycles(client, url: str, seconds: float, watch: _Stopwatch) -> float:
    """Requests per second of send -> receive -> delete for ``seconds``."""
    n = 0
    start = time.perf_counter()
    end = start + seconds
    while time.perf_counter() < end:
        watch.call("SendMessage", client.send_message, QueueUrl=url, MessageBody="benchmark message body " * 4)
        msgs = watch.call("ReceiveMessage", client.receive_message, QueueUrl=url, MaxNumberOfMessages=1).get("Messages", [])
        for m in msgs:
            watch.call("DeleteMessage", client.delete_message, QueueUrl=url, ReceiptHandle=m["ReceiptHandle"])
        n += 1 + 1 + len(msgs)
    return n / (time.perf_counter() - start)


def _breakdown(watch: _Stopwatch) -> dict:
    out = {}
    for op, totals in watch.total.items():
        entry = {"calls": len(totals), "total_ms_median": round(statistics.median(totals) * 1000, 3)}
        server = watch.server.get(op)
        if server:
            s, t = sum(server), sum(totals)
            entry["server_ms_median"] = round(statistics.median(server) * 1000, 3)
            entry["server_share"] = round(s / t, 3)
            entry["client_and_transport_ms_median"] = round(statistics.median(a - b for a, b in zip(totals, server)) * 1000, 3)
        out[op] = entry
    return out


# ---------------------------------------------------------------------- sqsqlite


def _fill_sqsqlite(db, name: str, n: int) -> None:
    q = db.create_queue(name)
    body = "waiting message body " * 4
    for start in range(0, n, 10):
        q.send_message_batch([{"Id": str(i), "MessageBody": body} for i in range(min(10, n - start))])


def bench_sqsqlite(levels, seconds, rounds, workdir) -> dict:
    import sqsqlite
    from sqsqlite.server import BackgroundServer

    path = os.path.join(workdir, "bench.db")
    db = sqsqlite.connect(path)
    fill = {}
    for n in levels:
        t = time.perf_counter()
        _fill_sqsqlite(db, f"backlog-{n}", n)
        fill[n] = round(time.perf_counter() - t, 1)
    db.close()
    out = {"fill_seconds": fill, "levels": {}}
    with BackgroundServer(path) as server:
        client = _client(server.url)
        watches = {n: _Stopwatch(client, "server-timing") for n in levels}
        urls = {n: client.get_queue_url(QueueName=f"backlog-{n}")["QueueUrl"] for n in levels}
        _cycles(client, urls[levels[0]], 0.5, _Stopwatch(client, None))  # warm up
        rates: dict[int, list[float]] = {n: [] for n in levels}
        for _ in range(rounds):
            for n in levels:
                rates[n].append(_cycles(client, urls[n], seconds, watches[n]))
        for n in levels:
            waiting = int(
                client.get_queue_attributes(QueueUrl=urls[n], AttributeNames=["ApproximateNumberOfMessages"])["Attributes"][
                    "ApproximateNumberOfMessages"
                ]
            )
            out["levels"][n] = {
                "requests_per_second": round(statistics.median(rates[n]), 1),
                "rounds": [round(r, 1) for r in rates[n]],
                "waiting_after": waiting,
                "operations": _breakdown(watches[n]),
            }
        out["long_polls"] = _long_polls(server, client, seconds)
    return out


def _long_polls(server, client, seconds) -> dict:
    """The cycle rate on one queue with and without 100 polls waiting on another, and the time
    from a send to the waiting poll's answer."""
    work = client.create_queue(QueueName="lp-work")["QueueUrl"]
    idle = client.create_queue(QueueName="lp-idle")["QueueUrl"]
    without = statistics.median(_cycles(client, work, seconds, _Stopwatch(client, None)) for _ in range(3))
    pollers_client = _client(server.url, pool=128)
    stop = threading.Event()

    def poll():
        while not stop.is_set():
            pollers_client.receive_message(QueueUrl=idle, WaitTimeSeconds=20)

    threads = [threading.Thread(target=poll, daemon=True) for _ in range(100)]
    for t in threads:
        t.start()
    deadline = time.monotonic() + 30
    while server.db.wakeups.parked("lp-idle") < 100 and time.monotonic() < deadline:
        time.sleep(0.01)
    waiting = server.db.wakeups.parked("lp-idle")
    with_polls = statistics.median(_cycles(client, work, seconds, _Stopwatch(client, None)) for _ in range(3))
    stop.set()
    for _ in range(len(threads) // 10):
        client.send_message_batch(QueueUrl=idle, Entries=[{"Id": str(i), "MessageBody": "bye"} for i in range(10)])
    # Wake latency: one poll waits, another thread sends; time from the send's start to the answer.
    wakes = []
    wake_client = _client(server.url)
    wake_q = client.create_queue(QueueName="lp-wake")["QueueUrl"]
    for _ in range(20):
        got = threading.Event()
        answered = []

        def waiter(answered=answered, got=got):
            wake_client.receive_message(QueueUrl=wake_q, WaitTimeSeconds=20)
            answered.append(time.perf_counter())
            got.set()

        t = threading.Thread(target=waiter)
        t.start()
        deadline = time.monotonic() + 10
        while not server.db.wakeups.parked("lp-wake") and time.monotonic() < deadline:
            time.sleep(0.001)
        sent = time.perf_counter()
        client.send_message(QueueUrl=wake_q, MessageBody="wake")
        got.wait(20)
        t.join()
        wakes.append(answered[0] - sent)
        for m in client.receive_message(QueueUrl=wake_q, MaxNumberOfMessages=10).get("Messages", []):
            client.delete_message(QueueUrl=wake_q, ReceiptHandle=m["ReceiptHandle"])
    return {
        "polls_waiting": waiting,
        "cycle_requests_per_second_without_polls": round(without, 1),
        "cycle_requests_per_second_with_100_polls": round(with_polls, 1),
        "send_to_poll_answer_ms_median": round(statistics.median(wakes) * 1000, 2),
        "send_to_poll_answer_ms_max": round(max(wakes) * 1000, 2),
    }


# ---------------------------------------------------------------------- moto


class _TimedApp:
    """moto's WSGI app with a stopwatch, so its server time is measured as sqsqlite's is."""

    def __init__(self, app, sink):
        self.app, self.sink = app, sink

    def __call__(self, environ, start_response):
        t = time.perf_counter()
        body = list(self.app(environ, start_response))
        self.sink.append(time.perf_counter() - t)
        return body


def bench_moto(levels, seconds, rounds) -> dict:
    from moto.server import ThreadedMotoServer
    from moto.sqs.models import Message, sqs_backends

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    url = f"http://{host}:{port}"
    times: list[float] = []
    server._server.app = _TimedApp(server._server.app, times)
    out = {"fill_seconds": {}, "levels": {}}
    try:
        client = _client(url)
        backend = sqs_backends["123456789012"]["us-east-1"]
        urls = {}
        for n in levels:
            urls[n] = client.create_queue(QueueName=f"backlog-{n}")["QueueUrl"]
            t = time.perf_counter()
            # Straight into moto's memory: its own send computes every queue attribute over all
            # messages, so filling through it grows quadratically.
            queue = backend.get_queue(f"backlog-{n}")
            for _ in range(n):
                m = Message(str(uuid.uuid4()), "waiting message body " * 4)
                m.mark_sent(delay_seconds=0)
                queue._messages.append(m)
            out["fill_seconds"][n] = round(time.perf_counter() - t, 1)
        rates: dict[int, list[float]] = {n: [] for n in levels}
        server_share: dict[int, list[float]] = {n: [] for n in levels}
        watches = {n: _Stopwatch(client, None) for n in levels}
        for _ in range(rounds):
            for n in levels:
                times.clear()
                before = sum(sum(v) for v in watches[n].total.values())
                rates[n].append(_cycles(client, urls[n], seconds, watches[n]))
                spent = sum(sum(v) for v in watches[n].total.values()) - before
                server_share[n].append(sum(times) / spent if spent else 0.0)
        for n in levels:
            out["levels"][n] = {
                "requests_per_second": round(statistics.median(rates[n]), 2),
                "rounds": [round(r, 2) for r in rates[n]],
                "server_share": round(statistics.median(server_share[n]), 3),
                "operations": _breakdown(watches[n]),
            }
    finally:
        server.stop()
    return out


# ---------------------------------------------------------------------- main


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seconds", type=float, default=1.5, help="seconds per measurement")
    p.add_argument("--rounds", type=int, default=7, help="interleaved rounds per backlog level")
    p.add_argument("--quick", action="store_true", help="small backlogs, short rounds (a smoke run)")
    p.add_argument("--label", default="", help="a note stored with the results")
    p.add_argument("--out", default=str(RESULTS))
    args = p.parse_args(argv)
    levels = (100, 1000) if args.quick else (1000, 10_000, 100_000)
    moto_levels = (100, 1000) if args.quick else (1000, 10_000)
    if args.quick:
        args.seconds, args.rounds = 0.5, 1
    with tempfile.TemporaryDirectory() as workdir:
        sq = bench_sqsqlite(levels, args.seconds, args.rounds, workdir)
    mo = bench_moto(moto_levels, args.seconds, min(args.rounds, 3))  # moto at 10,000 takes seconds per cycle
    mid = moto_levels[-1]
    low, high = levels[0], levels[-1]
    checks = {
        f"sqsqlite_vs_moto_at_{mid}": round(sq["levels"][mid]["requests_per_second"] / mo["levels"][mid]["requests_per_second"], 1),
        f"sqsqlite_{high}_vs_{low}": round(sq["levels"][high]["requests_per_second"] / sq["levels"][low]["requests_per_second"], 3),
    }
    # The server's own time per request is the figure machine noise (other processes taking the
    # CPU from the client) can't move much: compare it across backlogs too.
    for op in ("SendMessage", "ReceiveMessage", "DeleteMessage"):
        checks[f"server_ms_{op}_{high}_vs_{low}"] = round(
            sq["levels"][high]["operations"][op]["server_ms_median"] / sq["levels"][low]["operations"][op]["server_ms_median"], 3
        )
    checks["target_10x_moto_met"] = checks[f"sqsqlite_vs_moto_at_{mid}"] >= 10
    checks["target_flat_within_10pct_met"] = checks[f"sqsqlite_{high}_vs_{low}"] >= 0.9
    checks["server_time_flat_within_10pct"] = all(v <= 1.1 for k, v in checks.items() if k.startswith("server_ms_"))
    result = {
        "benchmark": "server_bench",
        "label": args.label,
        "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count(), "loadavg_at_end": os.getloadavg()},
        "workload": "one boto3 client, one thread: send_message, receive_message(1), delete_message; backlog held at N",
        "seconds_per_measurement": args.seconds,
        "rounds": args.rounds,
        "sqsqlite": sq,
        "moto": mo,
        "checks": checks,
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    json.dump(
        {
            "sqsqlite": {n: v["requests_per_second"] for n, v in sq["levels"].items()},
            "moto": {n: v["requests_per_second"] for n, v in mo["levels"].items()},
            "long_polls": sq["long_polls"],
            "checks": checks,
        },
        sys.stdout,
        indent=2,
    )
    print(f"\nwritten to {args.out}")
    return result


if __name__ == "__main__":
    main()
