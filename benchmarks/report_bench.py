"""Benchmark of `sqsqlite report`: seconds and peak memory on databases of 1 and 10 million
messages.

    python benchmarks/report_bench.py                   # 1M and 10M messages
    python benchmarks/report_bench.py --sizes 1000000 --data /tmp/bench
    python benchmarks/report_bench.py --master 'local-cluster[2,1,2048]' --snapshot-dir /tmp/shared   # a cluster
    python benchmarks/report_bench.py --parquet-only --sizes 10000000     # the snapshot and its Parquet copy alone
    python benchmarks/report_bench.py --history 14x100    # 14 days of minutes of 100 queues, the report over all of it
    python benchmarks/report_bench.py --archive 7x100     # 7 days of archived deletes of 100 queues (1,000 a queue-hour)

Databases are built once by raw inserts (sqsqlite.report.synthetic) and kept in --data.
Each report runs in a fresh process, exactly as the command does (new JVM, snapshot, Spark job,
outputs); this script samples the resident memory of that process and its JVM every 0.1 s
and records the peak of their sum.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable

AS_OF = 1_750_000_000_000

CHILD = r"""
import json, os, sys, tempfile, time, warnings
warnings.filterwarnings("ignore")
from sqsqlite.report import render, snapshot
from sqsqlite.report import spark as sj
path, as_of, master, out, shared = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
t = {}
t0 = time.perf_counter()
spark, _ = sj.get_session(master, None if shared else sj.resolve_jar(None), driver_memory=os.environ.get("BENCH_DRIVER_MEMORY", "2g"), jdbc=not shared)
t["spark_start"] = time.perf_counter() - t0
with tempfile.TemporaryDirectory(dir=os.environ.get("BENCH_TMP")) as tmp:
    t1 = time.perf_counter()
    since = os.environ.get("BENCH_HISTORY_SINCE")
    snap = snapshot.take(path, os.path.join(tmp, "s.db"), as_of, None, int(since) if since else None)
    t["snapshot"] = time.perf_counter() - t1
    t["history_rows"] = snap.history_rows
    t["archive_rows"] = snap.archive_rows
    t["parquet"] = 0.0
    if shared:
        t1 = time.perf_counter()
        snap = snapshot.to_parquet(snap, shared)
        t["parquet"] = time.perf_counter() - t1
    t1 = time.perf_counter()
    report = sj.compute(spark, snap, top=5)
    t["spark_job"] = time.perf_counter() - t1
    t["partitions"] = sj.default_partitions(snap)
t1 = time.perf_counter()
render.table(report)
render.write(report, out, parquet=True)
t["outputs"] = time.perf_counter() - t1
t["total"] = time.perf_counter() - t0
t["messages_live"] = sum(q.backlog for q in report.queues)
spark.stop()
print(json.dumps(t))
"""


# --parquet-only: the snapshot and its Parquet copy alone, no Spark: the Python process's own
# peak memory while it writes (with Spark, the JVMs' memory hides it).
PARQUET_CHILD = r"""
import json, os, sys, tempfile, time
from sqsqlite.report import snapshot
path, as_of, shared = sys.argv[1], int(sys.argv[2]), sys.argv[3]
t = {"spark_start": 0.0, "spark_job": 0.0, "outputs": 0.0}
t0 = time.perf_counter()
with tempfile.TemporaryDirectory(dir=os.environ.get("BENCH_TMP")) as tmp:
    snap = snapshot.take(path, os.path.join(tmp, "s.db"), as_of)
    t["snapshot"] = time.perf_counter() - t0
    t1 = time.perf_counter()
    snapshot.to_parquet(snap, shared)
    t["parquet"] = time.perf_counter() - t1
t["total"] = time.perf_counter() - t0
print(json.dumps(t))
"""


def _tree(pid: int) -> list[int]:
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        try:
            for task in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{task}/children") as f:
                    todo += [int(c) for c in f.read().split()]
        except OSError:
            pass
    return out


def _rss(pid: int) -> int:
    total = 0
    for p in _tree(pid):
        try:
            with open(f"/proc/{p}/status") as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1]) * 1024
        except OSError:
            pass
    return total


def run_report(path: str, master: str, snapshot_dir: str = "", parquet_only: bool = False) -> dict:
    with tempfile.TemporaryDirectory() as out, tempfile.TemporaryDirectory(dir=snapshot_dir or None) as shared:
        t0 = time.perf_counter()
        argv = (
            [PARQUET_CHILD, path, str(AS_OF), shared]
            if parquet_only
            else [CHILD, path, str(AS_OF), master, out, shared if snapshot_dir else ""]
        )
        proc = subprocess.Popen(
            [sys.executable, "-c", *argv],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        peak = 0
        done = threading.Event()

        def sample():
            nonlocal peak
            while not done.is_set():
                peak = max(peak, _rss(proc.pid))
                time.sleep(0.1)

        th = threading.Thread(target=sample, daemon=True)
        th.start()
        stdout, _ = proc.communicate()
        done.set()
        th.join()
        wall = time.perf_counter() - t0
    if proc.returncode:
        raise SystemExit(f"report failed on {path} (exit {proc.returncode})")
    result = json.loads(stdout.strip().splitlines()[-1])
    result.update(wall=wall, peak_rss_mb=peak / 2**20)
    return result


def _one_file(args: argparse.Namespace, path: str, days: int, kind: str, label: str, build_file: Callable[[], None]) -> None:
    """The report over ``days`` of a file of ``kind`` rows (history or archive), built first by
    ``build_file`` unless it exists; its JSON line and a table row."""
    build = None
    if not os.path.exists(path):
        t0 = time.perf_counter()
        build_file()
        build = time.perf_counter() - t0
    os.environ["BENCH_HISTORY_SINCE"] = str(AS_OF - days * 86_400_000)
    r = run_report(path, args.master, args.snapshot_dir)
    r.update(db_mb=os.path.getsize(path) / 2**20, build_seconds=build)
    print(json.dumps(r), flush=True)
    print(f"\n{platform.node()}: {os.cpu_count()} cores, master {args.master}\n")
    print(f"| {label} | db size | report total | JVM start | snapshot | Parquet | Spark job | outputs | peak RSS (Python + JVM) |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    print(
        f"| {r[kind + '_rows']:,} | {r['db_mb']:,.0f} MB | {r['wall']:.1f} s | {r['spark_start']:.1f} s | {r['snapshot']:.1f} s "
        f"| {r['parquet']:.1f} s | {r['spark_job']:.1f} s | {r['outputs']:.1f} s | {r['peak_rss_mb']:,.0f} MB |"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="1000000,10000000")
    ap.add_argument("--data", default=os.path.join(tempfile.gettempdir(), "sqsqlite-report-bench"))
    ap.add_argument("--master", default="local[*]")
    ap.add_argument("--snapshot-dir", default="", help="Write the snapshot as Parquet here and read that (as on a cluster).")
    ap.add_argument("--parquet-only", action="store_true", help="Only the snapshot and its Parquet copy (no Spark): their time and memory.")
    ap.add_argument("--json", help="Also write the results here.")
    ap.add_argument("--history", metavar="DAYSxQUEUES", help="Instead: a history of DAYS days of minutes of QUEUES queues, reported whole.")
    ap.add_argument(
        "--archive",
        metavar="DAYSxQUEUES[xPER_HOUR]",
        help="Instead: DAYS days of archived deletes of QUEUES queues (PER_HOUR a queue-hour, default 1000), reported whole.",
    )
    args = ap.parse_args()
    from sqsqlite.report import synthetic

    os.makedirs(args.data, exist_ok=True)
    if args.snapshot_dir:
        os.makedirs(args.snapshot_dir, exist_ok=True)
    results = []
    if args.archive:
        days, queues, *rest = (int(x) for x in args.archive.lower().split("x"))
        per_hour = rest[0] if rest else 1000
        path = os.path.join(args.data, f"archive-{days}x{queues}x{per_hour}.db")
        _one_file(args, path, days, "archive", "archived rows", lambda: synthetic.build_archive(path, queues, days * 24, per_hour, AS_OF))
        return
    if args.history:
        days, queues = (int(x) for x in args.history.lower().split("x"))
        path = os.path.join(args.data, f"history-{days}x{queues}.db")
        _one_file(args, path, days, "history", "history rows", lambda: synthetic.build_history(path, queues, days * 1440, AS_OF))
        return
    for n in (int(s) for s in args.sizes.split(",")):
        path = os.path.join(args.data, f"messages-{n}.db")
        build = None
        if not os.path.exists(path):
            t0 = time.perf_counter()
            synthetic.build(path, n, AS_OF)
            build = time.perf_counter() - t0
        r = run_report(path, args.master, args.snapshot_dir, args.parquet_only)
        r.update(messages=n, db_mb=os.path.getsize(path) / 2**20, build_seconds=build)
        results.append(r)
        print(json.dumps(r), flush=True)
    print(f"\n{platform.node()}: {os.cpu_count()} cores, master {args.master}\n")
    print("| messages | db size | report total | JVM start | snapshot | Parquet | Spark job | outputs | peak RSS (Python + JVM) |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for r in results:
        print(
            f"| {r['messages']:,} | {r['db_mb']:,.0f} MB | {r['wall']:.1f} s | {r['spark_start']:.1f} s | {r['snapshot']:.1f} s "
            f"| {r['parquet']:.1f} s | {r['spark_job']:.1f} s | {r['outputs']:.1f} s | {r['peak_rss_mb']:,.0f} MB |"
        )
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)


if __name__ == "__main__":
    main()
