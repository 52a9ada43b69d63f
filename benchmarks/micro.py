"""CPU microseconds per message, sqsqlite next to the floor, in one process: the figures behind
docs/explanation/performance.md's findings. CPU time (``time.process_time``) rather than wall clock, best of
several rounds, systems in turn, so a loaded machine disturbs the comparison least.

    python -m benchmarks.micro               # the table
    python -m benchmarks.micro --profile recv1   # cProfile of one workload, top functions
    python -m benchmarks.micro --profile send10 --client   # the same through sqsqlite.client()
    python -m benchmarks.micro --buffered    # queue.buffered()'s receive + delete, and its SQL
    python -m benchmarks.micro --buffered --prefetch 50    # the same with a prefetch of 50
    python -m benchmarks.micro --history     # the Queue API with the per-minute history off and on

The "its SQL" column (EngineSql) splits sqsqlite's figure into what SQLite spends and what the
library's Python spends: every statement the engine ran for the workload, with its values,
recorded on its own connection, then replayed through sqlite3 alone on a copy of the file as it
was before the workload. The "response" column (``response alone``) is the Queue API's calls
followed by the response a boto3-shaped client must return, with nothing between: bound/API, its
ratio to the Queue API, is the most any client answering as SQS does can reach, beside the
client's own (client/API).
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import os
import pstats
import sqlite3
import tempfile
import threading
import time

from sqsqlite import defaults as D
from sqsqlite.store import Store

from .systems import (
    BufferedEngine,
    ClientEngine,
    Engine,
    EngineWithHistory,
    Floor,
    FloorOnLayout,
    ResponseAlone,
    body_of,
    filled,
    remove_files,
)

WORKLOADS = {
    # name: (kind, batch, messages per round)
    "send1": ("send", 1, 2000),
    "send10": ("send", 10, 5000),
    "recv1": ("recv", 1, 2000),
    "recv10": ("recv", 10, 5000),
}


class _RecordingCursor(sqlite3.Cursor):
    def execute(self, sql, parameters=()):
        self.connection.log.append((sql, parameters, False))
        return super().execute(sql, parameters)

    def executemany(self, sql, seq_of_parameters):
        rows = list(seq_of_parameters)
        self.connection.log.append((sql, rows, True))
        return super().executemany(sql, rows)


class _RecordingConnection(sqlite3.Connection):
    """Notes each statement run on it or on its cursors, with its values, in ``log``."""

    log: list

    def cursor(self, factory=_RecordingCursor):  # type: ignore[override]
        return super().cursor(factory)

    def execute(self, sql, parameters=()):  # type: ignore[override]
        return self.cursor().execute(sql, parameters)

    def executemany(self, sql, seq_of_parameters):  # type: ignore[override]
        return self.cursor().executemany(sql, seq_of_parameters)


@contextlib.contextmanager
def _recorded(log: list):
    """Connections this thread opens meanwhile record into log; the checkpoint thread's do not
    (the replay checkpoints as SQLite does by default, inside a COMMIT)."""
    real, main = sqlite3.connect, threading.get_ident()

    def connect(*args, **kwargs):
        if threading.get_ident() != main:
            return real(*args, **kwargs)
        conn = real(*args, factory=_RecordingConnection, **kwargs)
        conn.log = log
        return conn

    sqlite3.connect = connect  # type: ignore[assignment]
    try:
        yield
    finally:
        sqlite3.connect = real  # type: ignore[assignment]


class EngineSql:
    """Not a queue: the statements sqsqlite ran for a workload (BEGIN, PRAGMA data_version, the
    claim, COMMIT, ...), replayed with their recorded values through sqlite3 alone, on a copy
    of the file as the engine had it before the workload, with the engine's pragmas. Its CPU
    is what SQLite spends of sqsqlite's; the rest is the library's Python (and the checkpoint
    thread's passes, which the replay makes inside its COMMITs, as SQLite does by default)."""

    name = "its SQL"
    engine: type[Engine] = Engine  # whose statements

    @classmethod
    def cpu_per_message(cls, kind: str, batch: int, n: int, body: str, work: str) -> float:
        path, copy = os.path.join(work, "micro-engine-sql.db"), os.path.join(work, "micro-engine-sql-replay.db")
        log: list = []
        with _recorded(log):
            e = cls.open_engine(path)  # its connection, opened here, records from now on
        try:
            if kind == "recv":
                filled(e, n, body)
            with contextlib.closing(sqlite3.connect(path)) as src, contextlib.closing(sqlite3.connect(copy)) as dst:
                src.backup(dst)  # the file as the engine has it, its WAL included
            del log[:]
            if kind == "send":
                e.send(n // batch, batch, body)
            else:
                e.receive_delete(n, batch)
            left = _messages_state(path)
        finally:
            e.close()
        try:
            # A connection as the engine opens its own (pragmas, statement cache), without the
            # kept connection's checkpoint settings: SQLite checkpoints the replay itself.
            c = Store(copy, migrate=False).open_connection()
            try:
                cur = c.cursor()
                cur.row_factory = None
                t = time.process_time()
                for sql, values, many in log:
                    if many:
                        cur.executemany(sql, values)
                    else:
                        cur.execute(sql, values).fetchall()
                cpu = (time.process_time() - t) / n
            finally:
                c.close()
            replayed = _messages_state(copy)
        finally:
            remove_files(copy)
        # The replay must leave the rows the engine left, or it measured other work.
        if replayed != left:
            raise RuntimeError(f"replaying the engine's statements left {replayed[:3]}, the engine {left[:3]}")
        return cpu

    @classmethod
    def open_engine(cls, path: str) -> Engine:
        return cls.engine(path)


class BufferedSql(EngineSql):
    """The same for ``queue.buffered()``, one message per call (claims of up to 100, deletes
    committed together)."""

    engine = BufferedEngine

    @classmethod
    def open_engine(cls, path: str) -> Engine:
        e = cls.engine(path)
        # Its deletes' window at its longest: the buffer's flusher thread, which commits a batch
        # whose window passed with no claim, would commit it on a connection of its own, which
        # the recording does not see. At this pace every batch goes with the next claim anyway.
        e.max_batch_open_ms = D.BUFFER_MAX_BATCH_OPEN.high
        return e


def _messages_state(path: str) -> tuple:
    """What a run leaves in the messages table (counts, sizes, ids) and the highest id it gave."""
    with contextlib.closing(sqlite3.connect(path)) as c:
        rows = c.execute("SELECT count(*), total(receive_count), total(length(body)), group_concat(message_id) FROM messages").fetchone()
        highest = "SELECT max(coalesce((SELECT max(id) FROM messages), 0), (SELECT highest_removed FROM message_positions))"
        return rows + c.execute(highest).fetchone()


def _one(system, kind: str, batch: int, n: int, work: str) -> float:
    """CPU seconds per message for one round on a fresh file."""
    body = body_of(200)
    if isinstance(system, type) and issubclass(system, EngineSql):
        return system.cpu_per_message(kind, batch, n, body, work)
    s = system(os.path.join(work, f"micro-{system.name.replace(' ', '-')}.db"))
    try:
        if kind == "send":
            t = time.process_time()
            s.send(n // batch, batch, body)
        else:
            filled(s, n, body)
            t = time.process_time()
            s.receive_delete(n, batch)
        return (time.process_time() - t) / n
    finally:
        s.close()


def measure(rounds: int = 5, systems=(Engine, ClientEngine, ResponseAlone, EngineSql, Floor, FloorOnLayout), workloads=WORKLOADS) -> dict:
    out: dict = {}
    with tempfile.TemporaryDirectory(prefix="sqsqlite-micro-") as work:
        for name, (kind, batch, n) in workloads.items():
            best = {s.name: float("inf") for s in systems}
            for _ in range(rounds):
                for s in systems:
                    best[s.name] = min(best[s.name], _one(s, kind, batch, n, work))
            out[name] = {k: v * 1e6 for k, v in best.items()}
    return out


def profile(name: str, top: int = 25, system=Engine) -> None:
    kind, batch, n = WORKLOADS[name]
    with tempfile.TemporaryDirectory(prefix="sqsqlite-micro-") as work:
        e = system(os.path.join(work, "p.db"))
        body = body_of(200)
        if kind == "recv":
            filled(e, n, body)
        prof = cProfile.Profile()
        prof.enable()
        if kind == "send":
            e.send(n // batch, batch, body)
        else:
            e.receive_delete(n, batch)
        prof.disable()
        e.close()
    pstats.Stats(prof).sort_stats("tottime").print_stats(top)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.micro")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--profile", choices=sorted(WORKLOADS))
    ap.add_argument("--client", action="store_true", help="profile through sqsqlite.client() instead of the Queue API")
    ap.add_argument("--buffered", action="store_true", help="receive + delete one at a time through queue.buffered(), and its SQL")
    ap.add_argument("--prefetch", type=int, help="with --buffered: the buffer's prefetch (default: its own, 100)")
    ap.add_argument("--history", action="store_true", help="the engine with the per-minute history off (default) and on, and the floor")
    args = ap.parse_args(argv)
    if args.prefetch is not None:
        r = D.BUFFER_PREFETCH
        if not args.buffered:
            ap.error("--prefetch is for --buffered")
        if not r.low <= args.prefetch <= r.high:
            ap.error(f"--prefetch: the buffer takes {r.low} to {r.high}")
    if args.profile:
        profile(args.profile, system=ClientEngine if args.client else Engine)
        return
    print(f"load average {os.getloadavg()}")
    if args.buffered:
        engine = BufferedEngine if args.prefetch is None else BufferedEngine.with_prefetch(args.prefetch)
        sql = type("BufferedSql", (BufferedSql,), {"engine": engine})
        r = measure(args.rounds, systems=(engine, sql), workloads={"recv1": ("recv", 1, 20000)})["recv1"]
        print(f"CPU us/msg, receive + delete one at a time: {engine.name} {r[engine.name]:.1f}, its SQL {r['its SQL']:.1f}")
        print(f"load average {os.getloadavg()}")
        return
    if args.history:
        res = measure(args.rounds, systems=(Engine, EngineWithHistory, Floor))
        print(f"{'CPU us/msg':10s} {'off':>9s} {'on':>9s} {'on/off':>7s} {'floor':>9s}")
        for name, r in res.items():
            off, on = r[Engine.name], r[EngineWithHistory.name]
            print(f"{name:10s} {off:9.1f} {on:9.1f} {on / off:7.3f} {r['floor']:9.1f}")
        print(f"load average {os.getloadavg()}")
        return
    res = measure(args.rounds)
    print(
        f"{'CPU us/msg':10s} {'sqsqlite':>9s} {'its SQL':>8s} {'client':>9s} {'response':>9s} {'floor':>9s} {'floor@layout':>13s} "
        f"{'/floor':>7s} {'client/floor':>13s} {'client/API':>11s} {'bound/API':>10s}"
    )
    for name, r in res.items():
        e, c, bound = r["sqsqlite"], r["sqsqlite client"], r["response alone"]
        print(
            f"{name:10s} {e:9.1f} {r['its SQL']:8.1f} {c:9.1f} {bound:9.1f} {r['floor']:9.1f} {r['floor@layout']:13.1f} "
            f"{r['floor'] / e:7.2f} {r['floor'] / c:13.2f} {e / c:11.3f} {e / bound:10.3f}"
        )
    print(f"load average {os.getloadavg()}")


if __name__ == "__main__":
    main()
