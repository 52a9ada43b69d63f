"""The suites: which workloads, at what sizes, and the targets they are judged by."""

from __future__ import annotations

import datetime as dt
import os
import tempfile
import time
from dataclasses import dataclass

from . import scenarios as S
from .harness import Row, loadavg, machine, summarize, table, write_json
from .systems import (
    LARGE_BODY,
    SMALL_BODY,
    BufferedEngine,
    ClientEngine,
    CommitCeiling,
    Engine,
    EngineByHandle,
    EngineWithArchive,
    Floor,
    FloorOnLayout,
    LiteQueue,
    PersistQueue,
    ResponseAlone,
    body_of,
    filled,
    settle,
)

HERE = os.path.dirname(os.path.abspath(__file__))


@dataclass
class Sizes:
    name: str
    runs: int
    send1: int  # calls
    send10: int  # calls of 10
    send1_large: int
    send10_large: int
    recv: int  # messages per receive + delete run
    peers: int  # messages per peer run
    full_sync_calls: int  # calls per run with synchronous=FULL
    backlog_small: int
    backlog_large: int
    backlog_in_flight: int
    backlog_recv: int
    proc_seconds: float
    proc_pairs: tuple
    long_poll_samples: int
    idle_seconds: int
    churn: int
    fifo: int


QUICK = Sizes("quick", 3, 1500, 300, 150, 30, 2000, 1000, 150, 1000, 100_000, 10_000, 400, 2.0, (1, 2, 4), 60, 3, 1000, 2000)
FULL = Sizes("full", 5, 5000, 1000, 500, 100, 10_000, 3000, 400, 1000, 1_000_000, 100_000, 800, 5.0, (1, 2, 4), 200, 20, 5000, 10000)
TINY = Sizes("tiny", 1, 20, 3, 3, 2, 30, 20, 5, 100, 300, 30, 20, 0.5, (1, 2), 3, 1, 30, 60)

DEFAULT = "WAL, synchronous=NORMAL"
# The client's rows, each judged against the Queue API (0.85) and these against the floor too.
CLIENT_WORKLOADS = {
    "send batch10 200B": 0.7,
    "recv+delete batch10": 0.6,
    "send 1/call 200B": None,
    "recv+delete 1": None,
    "send batch10 64KiB": None,
    "send 1/call 64KiB": None,
}
STRICT = "WAL, synchronous=FULL"


def _log(msg: str) -> None:
    print(msg, flush=True)


def _interleaved(systems, runs: int, one_run) -> dict:
    """Run each system in turn, run after run, so load from elsewhere on the machine falls on
    all of them alike. A first untimed pass of each warms imports and caches."""
    out = {s: [] for s in systems}
    for i in range(runs + 1):
        for s in systems:
            r = one_run(s)
            if i:
                out[s].append(r)
    return out


def throughput(sizes: Sizes, work: str, rows: list[Row], systems, synchronous: str = "NORMAL", only=None, prefix: str = "") -> None:
    settings = STRICT if synchronous == "FULL" else DEFAULT
    full = synchronous == "FULL"
    workloads = [
        ("send 1/call 200B", "send", sizes.full_sync_calls if full else sizes.send1, 1, SMALL_BODY),
        ("send batch10 200B", "send", sizes.full_sync_calls // 5 if full else sizes.send10, 10, SMALL_BODY),
        ("send 1/call 64KiB", "send", sizes.full_sync_calls // 2 if full else sizes.send1_large, 1, LARGE_BODY),
        ("send batch10 64KiB", "send", sizes.full_sync_calls // 10 if full else sizes.send10_large, 10, LARGE_BODY),
        ("recv+delete 1", "recv", sizes.full_sync_calls if full else sizes.recv, 1, SMALL_BODY),
        ("recv+delete batch10", "recv", sizes.full_sync_calls * 2 if full else sizes.recv, 10, SMALL_BODY),
    ]
    for label, kind, count, batch, size in workloads:
        if only and label not in only:
            continue
        label = prefix + label
        count = max(count, 1)
        body = body_of(size)
        chosen = [s for s in systems if batch == 1 or s not in (PersistQueue, LiteQueue, CommitCeiling)]
        if kind == "send":
            chosen = [s for s in chosen if s not in (BufferedEngine, EngineByHandle)]  # they send as Engine does
        if size == LARGE_BODY:
            chosen = [s for s in chosen if s not in (PersistQueue, LiteQueue, CommitCeiling)]

        def one_run(system, kind=kind, count=count, batch=batch, body=body):
            path = os.path.join(work, f"{system.name.replace('@', '-')}.db")
            inst = system(path, synchronous=synchronous)
            try:
                if kind != "send":
                    filled(inst, count, body)
                cpu = time.process_time()
                r = inst.send(count, batch, body) if kind == "send" else inst.receive_delete(count, batch)
                # This process's CPU seconds: on a machine others load too, messages per CPU
                # second compare systems more steadily than wall-clock rates can.
                r.cpu_seconds = time.process_time() - cpu
                return r
            finally:
                inst.close()

        # Nearly twice the usual runs: the targets are ratios of these rows, and a run of 10,000
        # messages takes a tenth of a second, so a median of five moved by 5% between full runs.
        results = _interleaved(chosen, 2 * sizes.runs - 1, one_run)
        for system in chosen:
            rows.append(summarize(label, system.name, settings, results[system]))
            _log(f"  {label:22s} {system.name:14s} {settings}: {rows[-1].rate_median:,.0f} msgs/s")


def archive(sizes: Sizes, work: str, rows: list[Row]) -> None:
    """Deletes alone, one a call and DeleteMessageBatch of 10, on a queue whose archive is off
    (the default) and on, and the floor's deletes: each run fills, receives (untimed) and
    settles its file, then times the deletes of what it received."""
    systems = (Engine, EngineWithArchive, Floor)
    for label, batch in (("archive: delete 1", 1), ("archive: delete batch10", 10)):
        count = max(sizes.recv, 10)

        def one_run(system, batch=batch, count=count):
            path = os.path.join(work, f"{system.name.replace(' ', '-')}.db")
            inst = system(path)
            try:
                filled(inst, count, body_of(SMALL_BODY))
                held = inst.received(count)
                settle(inst.path)  # the receives' pages too: the timed run copies none of them
                cpu = time.process_time()
                r = inst.delete(held, batch)
                r.cpu_seconds = time.process_time() - cpu
                return r
            finally:
                inst.close()

        results = _interleaved(systems, 2 * sizes.runs - 1, one_run)
        for system in systems:
            rows.append(summarize(label, system.name, DEFAULT, results[system]))
            _log(f"  {label:24s} {system.name:20s}: {rows[-1].rate_median:,.0f} msgs/s")


def backlog(sizes: Sizes, work: str, rows: list[Row], cache: str) -> None:
    """Receive + delete on a small and a large backlog, run after run in turn (as _interleaved
    does for systems), so the machine's slow and fast spells fall on both sizes alike."""
    small_size, large_size = (sizes.backlog_small, sizes.backlog_small // 10), (sizes.backlog_large, sizes.backlog_in_flight)
    for batch in (1, 10):
        # The large file is copied once per batch size and drained a little by every run; the
        # small one would drain, so each of its runs starts from a fresh copy.
        large, built = S.backlog_file(cache, work, *large_size)
        if built:
            _log(f"  built a backlog of {large_size[0]:,} with raw inserts in {built:.1f}s (cached in {cache})")
        runs: dict = {small_size: [], large_size: []}
        # A run here is short (the small backlog holds only 900 messages to receive), so take
        # three times the usual number of runs for a steady median.
        for i in range(3 * sizes.runs + 1):
            for size in (small_size, large_size):
                path = S.backlog_file(cache, work, *size)[0] if size is small_size else large
                e = S.BacklogEngine(path)
                cpu = time.process_time()
                r = e.receive_delete(sizes.backlog_recv, batch)
                r.cpu_seconds = time.process_time() - cpu
                e.db.close()
                if i:
                    runs[size].append(r)
        label = f"backlog recv+delete {'1' if batch == 1 else 'batch10'}"
        for stored, in_flight in (small_size, large_size):
            rows.append(summarize(label, "sqsqlite", DEFAULT, runs[(stored, in_flight)], {"stored": stored, "in_flight": in_flight}))
            _log(f"  {label} stored={stored:,}: {rows[-1].rate_median:,.0f} msgs/s")
        S.remove_files(large)


def processes(sizes: Sizes, work: str, rows: list[Row]) -> None:
    for pairs in sizes.proc_pairs:
        runs = [S.processes(work, pairs, sizes.proc_seconds) for _ in range(max(1, sizes.runs - 1))]
        label = f"procs {pairs}P+{pairs}C batch10"
        rows.append(summarize(label, "sqsqlite", DEFAULT, runs, {"lock_errors": sum(r.extra["lock_errors"] for r in runs)}))
        _log(f"  {label}: {rows[-1].rate_median:,.0f} delivered msgs/s, lock errors {rows[-1].extra['lock_errors']}")


def long_poll(sizes: Sizes, work: str, rows: list[Row]) -> None:
    r = S.long_poll(work, sizes.long_poll_samples, sizes.idle_seconds)
    rows.append(summarize("long-poll wake-up (cross-process)", "sqsqlite", DEFAULT, [r]))
    _log(f"  long poll: p50 {rows[-1].p50_ms:.1f} ms, p99 {rows[-1].p99_ms:.1f} ms, idle CPU {r.extra['idle_cpu_percent']}% of a core")


def churn(sizes: Sizes, work: str, rows: list[Row]) -> None:
    runs = [S.churn(work, sizes.churn) for _ in range(sizes.runs)]
    rows.append(summarize("churn: redeliver x3 then DLQ", "sqsqlite", DEFAULT, runs))
    _log(f"  churn: {rows[-1].rate_median:,.0f} deliveries+moves/s")


def fifo(sizes: Sizes, work: str, rows: list[Row]) -> None:
    for groups, attributes in ((None, None), (1, None), (1000, None), (None, S.ATTRIBUTES)):
        sends, recvs = [], []
        for i in range(sizes.runs + 1):
            s, r = S.fifo(work, sizes.fifo, groups, attributes)
            if i:
                sends.append(s)
                recvs.append(r)
        system = "sqsqlite" if groups is None else "sqsqlite FIFO"
        extra: dict = {"groups": groups if groups is not None else "standard"}
        if attributes:
            extra["attributes"] = len(attributes)
        rows.append(summarize("fifo send batch10", system, DEFAULT, sends, extra))
        rows.append(summarize("fifo recv+delete batch10", system, DEFAULT, recvs, extra))
        shape = ", ".join(f"{k}={v}" for k, v in extra.items())
        _log(f"  fifo {shape}: send {rows[-2].rate_median:,.0f}, recv+delete {rows[-1].rate_median:,.0f} msgs/s")


# ---------------------------------------------------------------------- targets


def _find(rows, workload, system, settings=DEFAULT, **extra) -> Row | None:
    for r in rows:
        if r.workload == workload and r.system == system and r.settings == settings and all(r.extra.get(k) == v for k, v in extra.items()):
            return r
    return None


def targets(rows: list[Row], sizes: Sizes) -> list[dict]:
    out = []

    def ratio(name, a: Row | None, b: Row | None, goal: float):
        if a and b and b.rate_median:
            value = a.rate_median / b.rate_median
            entry = {"target": name, "value": round(value, 3), "goal": f">= {goal}", "met": value >= goal}
            if a.cpu_rate_median and b.cpu_rate_median:
                entry["cpu_ratio"] = round(a.cpu_rate_median / b.cpu_rate_median, 3)
            out.append(entry)

    for settings in (DEFAULT, STRICT):
        tag = "" if settings == DEFAULT else " [FULL]"
        for wl, goal in (
            ("send batch10 200B", 0.7),
            ("send batch10 64KiB", 0.7),
            ("recv+delete batch10", 0.7),
            ("send 1/call 200B", 0.6),
            ("send 1/call 64KiB", 0.6),
            ("recv+delete 1", 0.6),
        ):
            ratio(f"{wl} / floor{tag}", _find(rows, wl, "sqsqlite", settings), _find(rows, wl, "floor", settings), goal)
    # sqsqlite.client(), the boto3-shaped client, on the same work: against the floor, and
    # against the Queue API it sits on (at most 15% below it).
    for wl, goal in CLIENT_WORKLOADS.items():
        client = _find(rows, wl, ClientEngine.name)
        if goal is not None:
            ratio(f"client {wl} / floor", client, _find(rows, wl, "floor"), goal)
        ratio(f"client {wl} / Queue API", client, _find(rows, wl, "sqsqlite"), 0.85)
    # One message per call on both sides: sqsqlite's plain calls (a transaction each, bounded
    # by the floor's own rate, about 3x the peers here) and its BufferedQueue (claims and
    # deletes of ten under the same calls), each against the peers' get + ack.
    for system in ("sqsqlite", "sqsqlite buffered"):
        mine = _find(rows, "peers: recv+delete 1", system)
        for peer in ("persist-queue", "litequeue"):
            name = "recv+delete 1" if system == "sqsqlite" else "recv+delete 1 buffered"
            ratio(f"{name} / {peer} get+ack", mine, _find(rows, "peers: recv+delete 1", peer), 10)
    for wl in ("backlog recv+delete 1", "backlog recv+delete batch10"):
        big = _find(rows, wl, "sqsqlite", stored=sizes.backlog_large)
        small = _find(rows, wl, "sqsqlite", stored=sizes.backlog_small)
        ratio(f"{wl}: {sizes.backlog_large:,} / {sizes.backlog_small:,} stored", big, small, 0.9)
    # The archive's cost: its deletes against the same deletes with it off, in the same run
    # (each against the floor is among the ratios, as every sqsqlite row is). On, a delete
    # writes the message's row again, into the archive and its index, before deleting it:
    # the goal is that this at most doubles a delete's cost.
    for wl in ("archive: delete 1", "archive: delete batch10"):
        ratio(f"{wl}: archive on / off", _find(rows, wl, EngineWithArchive.name), _find(rows, wl, "sqsqlite"), 0.5)
    p1 = _find(rows, "procs 1P+1C batch10", "sqsqlite")
    p4 = _find(rows, "procs 4P+4C batch10", "sqsqlite")
    ratio("procs 4P+4C / 1P+1C aggregate", p4, p1, 1.0)
    errors = sum(r.extra.get("lock_errors", 0) for r in rows if r.workload.startswith("procs"))
    if p1:
        out.append({"target": "lock errors across process runs", "value": errors, "goal": "== 0", "met": errors == 0})
    lp = _find(rows, "long-poll wake-up (cross-process)", "sqsqlite")
    if lp:
        out.append({"target": "long-poll wake-up p99 (ms)", "value": round(lp.p99_ms, 2), "goal": "< 50", "met": lp.p99_ms < 50})
        cpu = lp.extra["idle_cpu_percent"]
        out.append({"target": "idle long-poll CPU (% of one core)", "value": cpu, "goal": "< 2", "met": cpu < 2})
    return out


def bounds(rows: list[Row]) -> list[dict]:
    """Not targets: what no design can pass, measured in the same run. The 2-commit ceiling
    against each peer's get + ack: plain one-per-call receive + delete commits twice a message,
    so it cannot pass this multiple; below 10, the peers target is out of reach for any queue
    that commits each call. And ``response alone`` against the Queue API, for each of the
    client's rows: the Queue API's calls and the response SQS's answer carries, with nothing
    between; a client's ratio cannot pass it."""
    out = []
    ceiling = _find(rows, "peers: recv+delete 1", CommitCeiling.name)
    for peer in ("persist-queue", "litequeue"):
        other = _find(rows, "peers: recv+delete 1", peer)
        if ceiling and other and other.rate_median:
            out.append(
                {
                    "bound": f"recv+delete 1: {CommitCeiling.name} / {peer} get+ack",
                    "value": round(ceiling.rate_median / other.rate_median, 3),
                    "means": "the most plain calls can reach",
                }
            )
    for wl in CLIENT_WORKLOADS:
        alone, queue_api = _find(rows, wl, ResponseAlone.name), _find(rows, wl, "sqsqlite")
        if alone and queue_api and queue_api.rate_median:
            cpu = None
            if alone.cpu_rate_median and queue_api.cpu_rate_median:
                cpu = round(alone.cpu_rate_median / queue_api.cpu_rate_median, 3)
            out.append(
                {
                    "bound": f"client {wl}: {ResponseAlone.name} / Queue API",
                    "value": round(alone.rate_median / queue_api.rate_median, 3),
                    "cpu_value": cpu,
                    "means": "the most a client answering as SQS does can reach",
                }
            )
    return out


def ratios(rows: list[Row]) -> list[dict]:
    """sqsqlite / floor and sqsqlite / each peer, for every workload both ran: by wall-clock
    rate, and by messages per CPU second (steadier when the machine is shared)."""
    out = []
    for r in rows:
        if r.system != "sqsqlite":
            continue
        for other in rows:
            if (
                other.workload == r.workload
                and other.settings == r.settings
                and other.system
                not in ("sqsqlite", "sqsqlite FIFO", "sqsqlite buffered", EngineByHandle.name, ClientEngine.name, ResponseAlone.name)
                and other.rate_median
            ):
                cpu = None
                if r.cpu_rate_median and other.cpu_rate_median:
                    cpu = round(r.cpu_rate_median / other.cpu_rate_median, 3)
                out.append(
                    {
                        "workload": r.workload,
                        "settings": r.settings,
                        "versus": other.system,
                        "ratio": round(r.rate_median / other.rate_median, 3),
                        "cpu_ratio": cpu,
                    }
                )
    return out


GROUP_HELP = {
    "throughput": "send and receive + delete, 1 and 10 a call, 200 B and 64 KiB: the Queue API, the client, the floor",
    "durability": "the same at synchronous=FULL, sqsqlite and the floor",
    "peers": "one message a call against persist-queue and litequeue (and the buffered consumer)",
    "backlog": "receive + delete with a small and a large backlog stored",
    "archive": "deletes alone, 1 and 10 a call, with the queue's archive off and on, and the floor's",
    "processes": "1, 2 and 4 producer and consumer processes on one file; lock errors counted",
    "long-poll": "a send waking a long poll in another process; an idle poll's CPU",
    "churn": "redelivery three times, then the dead-letter queue",
    "fifo": "FIFO batches with 1 and 1,000 groups, and message attributes",
}
GROUPS = tuple(GROUP_HELP)


def run(
    sizes: Sizes, out_dir: str | None, groups=GROUPS, work: str | None = None, cache: str | None = None, label: str | None = None
) -> dict:
    cache = cache or os.path.join(HERE, ".cache")
    owned = work is None
    work = work or tempfile.mkdtemp(prefix="sqsqlite-bench-")
    started = time.time()
    info = machine(work)
    _log(
        f"sqsqlite benchmarks, {sizes.name} suite: {info['cores']} cores, Python {info['python']}, SQLite {info['sqlite']}, load {info['loadavg_at_start']}"
    )
    rows: list[Row] = []
    try:
        if "throughput" in groups:
            _log("throughput (default durability: WAL, synchronous=NORMAL)")
            throughput(sizes, work, rows, (Engine, EngineByHandle, ClientEngine, ResponseAlone, Floor, FloorOnLayout))
        if "durability" in groups:
            _log("durability: WAL, synchronous=FULL (fsync at every commit)")
            throughput(sizes, work, rows, (Engine, Floor), synchronous="FULL")
        if "peers" in groups:
            _log("peers: one at a time, send and receive + acknowledge")
            sub = Sizes(**{**sizes.__dict__, "send1": sizes.peers, "recv": sizes.peers})
            throughput(
                sub,
                work,
                rows,
                (Engine, BufferedEngine, Floor, PersistQueue, LiteQueue, CommitCeiling),
                only=["send 1/call 200B", "recv+delete 1"],
                prefix="peers: ",
            )
        if "backlog" in groups:
            _log("backlog scaling")
            backlog(sizes, work, rows, cache)
        if "archive" in groups:
            _log("archive: deletes with the archive off and on")
            archive(sizes, work, rows)
        if "processes" in groups:
            _log("processes on one file")
            processes(sizes, work, rows)
        if "long-poll" in groups:
            _log("long-poll wake-up across processes")
            long_poll(sizes, work, rows)
        if "churn" in groups:
            _log("churn")
            churn(sizes, work, rows)
        if "fifo" in groups:
            _log("FIFO")
            fifo(sizes, work, rows)
    finally:
        if owned:
            import shutil

            shutil.rmtree(work, ignore_errors=True)
    info["loadavg_at_end"] = loadavg()
    info["durability"] = {
        "default": "journal_mode=WAL, synchronous=NORMAL (sqsqlite.connect(path)); checkpoints on a background thread",
        "strict": 'journal_mode=WAL, synchronous=FULL (sqsqlite.connect(path, synchronous="FULL")); checkpoints inside COMMIT',
        "floor": "the same pragmas as sqsqlite, BEGIN IMMEDIATE ... COMMIT per operation; checkpoints inside COMMIT (SQLite's default)",
        "persist-queue": "WAL and autocommit per statement (its own), synchronous set to the row's by the harness (NORMAL in the peers group)",
        "litequeue": "WAL, synchronous=NORMAL and autocommit per statement (its own), synchronous checked by the harness",
    }
    result = {
        "suite": sizes.name,
        "label": label,
        "started": dt.datetime.fromtimestamp(started, dt.timezone.utc).isoformat(timespec="seconds"),
        "seconds": round(time.time() - started, 1),
        "machine": info,
        "sizes": sizes.__dict__,
        "rows": rows,
        "ratios": ratios(rows),
        "targets": targets(rows, sizes),
        "bounds": bounds(rows),
    }
    print()
    print(table(rows))
    print()
    for t in result["targets"]:
        cpu = f"; per CPU second {t['cpu_ratio']}" if t.get("cpu_ratio") is not None else ""
        print(f"{'MET   ' if t['met'] else 'MISSED'} {t['target']}: {t['value']} (goal {t['goal']}){cpu}")
    for b in result["bounds"]:
        cpu = f"; per CPU second {b['cpu_value']}" if b.get("cpu_value") is not None else ""
        print(f"BOUND  {b['bound']}: {b['value']}{cpu} ({b['means']})")
    if out_dir:
        stamp = dt.datetime.fromtimestamp(started, dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
        path = os.path.join(out_dir, f"{sizes.name}-{stamp}.json")
        write_json(path, result)
        write_json(os.path.join(out_dir, f"latest-{sizes.name}.json"), result)
        print(f"\nwrote {path}")
        result["path"] = path
    return result
