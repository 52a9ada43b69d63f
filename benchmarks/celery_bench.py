"""Celery tasks per second on three brokers that need no broker server of their own, same run.

    python -m benchmarks.celery_bench [--tasks 2000] [--rounds 3] [--pool solo] [--concurrency 2]

- ``sqsqlite://``: sqsqlite's Kombu transport on a file.
- ``sqla+sqlite://``: Kombu's SQLAlchemy transport on an SQLite file.
- ``sqs:// via sqsqlite serve``: Kombu's SQS transport (boto3, and pycurl in the worker) talking to
  ``sqsqlite serve`` on the loopback, a separate process over its own file.

Each round, for each broker in turn (interleaved, so machine noise hits all alike), in a fresh
directory: the benchmark process publishes N tasks with ``app.send_task`` over one producer
(the **publish** rate), then starts ``celery worker`` (results ignored; ``--without-mingle
--without-gossip --without-heartbeat``) on the backlog. The task appends its time.time() to a
file and does nothing else; the **worker** rate is (N - 1) / (last task's time - first task's),
so the worker's start-up is left out. Each figure is the median of the rounds. Results go to
benchmarks/results/celery_bench.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import socket
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

from benchmarks.harness import commit
from sqsqlite.testing import wait_until_ready

RESULTS = Path(__file__).resolve().parent / "results" / "celery_bench.json"
TASKS = textwrap.dedent(
    """
    import json
    import os
    import time

    from celery import Celery

    app = Celery("bench_tasks", broker=os.environ["BENCH_BROKER"])
    app.conf.broker_transport_options = json.loads(os.environ["BENCH_OPTIONS"])
    app.conf.task_ignore_result = True
    _log = os.open(os.environ["BENCH_LOG"], os.O_WRONLY | os.O_APPEND | os.O_CREAT)


    @app.task
    def noop(n):
        os.write(_log, b"%.6f\\n" % time.time())
    """
)
SQS_OPTIONS = {"region": "us-east-1", "is_secure": False}
BROKERS = ("sqsqlite://", "sqla+sqlite://", "sqs:// via sqsqlite serve")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Broker:
    """One broker's URL and options in a directory, and the server it needs (if any)."""

    def __init__(self, name: str, workdir: Path):
        self.name, self.server = name, None
        if name == "sqsqlite://":
            self.url, self.options = f"sqsqlite:///{workdir}/broker.db", {}
        elif name == "sqla+sqlite://":
            self.url, self.options = f"sqla+sqlite:///{workdir}/kombu.db", {}
        else:
            port = _free_port()
            serve = [str(Path(sys.executable).with_name("sqsqlite")), "serve", "--db", str(workdir / "serve.db"), "--port", str(port)]
            self.server = subprocess.Popen(serve, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            try:  # /health 200, not an open port: serve answers 503 while it starts
                wait_until_ready(f"http://127.0.0.1:{port}", process=self.server)
            except (RuntimeError, TimeoutError):
                self.server.kill()
                raise
            self.url, self.options = f"sqs://bench:bench@127.0.0.1:{port}", dict(SQS_OPTIONS)

    def close(self) -> None:
        if self.server is not None:
            self.server.terminate()
            self.server.wait(timeout=15)


def _publish(broker: Broker, n: int) -> float:
    """Publish n tasks over one producer; returns tasks per second."""
    from celery import Celery

    app = Celery("bench_producer", broker=broker.url)
    app.conf.broker_transport_options = broker.options
    app.conf.task_ignore_result = True
    with app.producer_or_acquire() as producer:
        app.send_task("bench_tasks.noop", args=(-1,), producer=producer)  # declares the queue; not timed
        started = time.perf_counter()
        for i in range(n - 1):
            app.send_task("bench_tasks.noop", args=(i,), producer=producer)
        elapsed = time.perf_counter() - started
    app.close()
    return (n - 1) / elapsed


def _consume(broker: Broker, n: int, workdir: Path, pool: str, concurrency: int, timeout: float) -> dict:
    log = workdir / "done.log"
    env = {
        **os.environ,
        # The caller's PYTHONPATH after the task module's folder: the worker runs this sqsqlite.
        "PYTHONPATH": os.pathsep.join(p for p in (str(workdir), os.environ.get("PYTHONPATH", "")) if p),
        "BENCH_BROKER": broker.url,
        "BENCH_OPTIONS": json.dumps(broker.options),
        "BENCH_LOG": str(log),
    }
    command = [sys.executable, "-m", "celery", "-A", "bench_tasks", "worker", "-P", pool, "-l", "warning"]
    command += ["--without-mingle", "--without-gossip", "--without-heartbeat"]
    if pool != "solo":
        command += ["-c", str(concurrency)]
    started = time.monotonic()
    worker = subprocess.Popen(command, cwd=workdir, env=env, stdout=subprocess.DEVNULL, stderr=open(workdir / "worker.err", "w"))
    try:
        while time.monotonic() - started < timeout:
            if log.exists() and log.read_bytes().count(b"\n") >= n:
                break
            time.sleep(0.05)
        else:
            done = log.read_bytes().count(b"\n") if log.exists() else 0
            raise RuntimeError(f"{broker.name}: the worker ran {done} of {n} tasks in {timeout} s")
        wall = time.monotonic() - started
    finally:
        worker.terminate()
        try:
            worker.wait(timeout=20)
        except subprocess.TimeoutExpired:
            worker.kill()
            worker.wait()
    times = sorted(float(line) for line in log.read_text().split())
    return {"worker_tasks_per_second": (len(times) - 1) / (times[-1] - times[0]), "wall_seconds_with_startup": wall}


def run(tasks: int = 2000, rounds: int = 3, pool: str = "solo", concurrency: int = 2, brokers=BROKERS, timeout: float = 300) -> dict:
    samples: dict[str, dict[str, list[float]]] = {b: {"publish": [], "worker": [], "wall": []} for b in brokers}
    for _ in range(rounds):
        for name in brokers:
            with tempfile.TemporaryDirectory() as tmp:
                workdir = Path(tmp)
                (workdir / "bench_tasks.py").write_text(TASKS)
                broker = Broker(name, workdir)
                try:
                    samples[name]["publish"].append(_publish(broker, tasks))
                    consumed = _consume(broker, tasks, workdir, pool, concurrency, timeout)
                finally:
                    broker.close()
                samples[name]["worker"].append(consumed["worker_tasks_per_second"])
                samples[name]["wall"].append(consumed["wall_seconds_with_startup"])
    figures = {
        name: {
            "publish_tasks_per_second": round(statistics.median(s["publish"])),
            "worker_tasks_per_second": round(statistics.median(s["worker"])),
            "publish_range": [round(min(s["publish"])), round(max(s["publish"]))],
            "worker_range": [round(min(s["worker"])), round(max(s["worker"]))],
            "wall_seconds_with_startup_median": round(statistics.median(s["wall"]), 2),
        }
        for name, s in samples.items()
    }
    ratios = {}
    if "sqsqlite://" in figures:
        ours = figures["sqsqlite://"]
        for name in brokers:
            if name != "sqsqlite://":
                ratios[f"sqsqlite vs {name}"] = {
                    kind: round(ours[f"{kind}_tasks_per_second"] / figures[name][f"{kind}_tasks_per_second"], 2)
                    for kind in ("publish", "worker")
                }
    return {"figures": figures, "ratios": ratios, "samples": samples}


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--pool", default="solo", choices=["solo", "prefork", "threads"])
    parser.add_argument("--concurrency", type=int, default=2)
    parser.add_argument("--brokers", nargs="*", default=list(BROKERS), choices=list(BROKERS))
    parser.add_argument("--out", default=str(RESULTS))
    args = parser.parse_args(argv)
    import celery
    import kombu

    load_at_start = os.getloadavg()
    result = run(args.tasks, args.rounds, args.pool, args.concurrency, tuple(args.brokers))
    document = {
        "benchmark": "celery_bench",
        "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "commit": commit(),
        "machine": {
            "python": platform.python_version(),
            "cpus": os.cpu_count(),
            "loadavg_at_start": load_at_start,
            "loadavg_at_end": os.getloadavg(),
        },
        "versions": {"celery": celery.__version__, "kombu": kombu.__version__},
        "workload": f"{args.tasks} no-op tasks published, then one worker ({args.pool} pool) drains them; results ignored",
        "rounds": args.rounds,
        "pool": args.pool,
        **{k: v for k, v in result.items() if k != "samples"},
        "samples": result["samples"],
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(document, indent=2) + "\n")
    json.dump({"figures": result["figures"], "ratios": result["ratios"]}, sys.stdout, indent=2)
    print(f"\nwritten to {args.out}")
    return document


if __name__ == "__main__":
    main()
