"""What a message's position costs the send path: the engine on its own schema, where messages.id
is a plain INTEGER PRIMARY KEY and a send takes the next id above the highest row and the
high-water mark of ids taken from the top (message_positions, raised only after a deletion of
the highest row), next to the same engine on the same file with the table rebuilt AUTOINCREMENT, as
it was before migration 0013 (SQLite then writes the table's sqlite_sequence row in every send's
commit). The same code, in one process, the two layouts in turn on fresh files each round; per
workload the best of the rounds, in CPU microseconds per message (user and system time, so the
WAL's writes count) and in messages per wall-clock second.

    python -m benchmarks.positions              # the table
    python -m benchmarks.positions --rounds 5   # quicker (default 9)
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sqlite3
import tempfile
import time

from .systems import Engine, body_of

WORKLOADS = {
    # name: (calls, messages per call, body bytes)
    "send 1/call 200B": (2000, 1, 200),
    "send batch10 200B": (500, 10, 200),
    "send 1/call 64KiB": (500, 1, 65536),
}


class Autoincrement(Engine):
    """The engine on a file whose messages table is AUTOINCREMENT (the layout before 0013)."""

    name = "sqsqlite, AUTOINCREMENT"
    _templates: dict[str, str] = {}

    @classmethod
    def _template(cls, directory: str) -> str:
        path = cls._templates.get(directory)
        if path is None or not os.path.exists(path):
            import sqsqlite

            path = os.path.join(directory, "template-autoincrement.db")
            if os.path.exists(path):
                os.remove(path)
            sqsqlite.connect(path).close()
            # Closed explicitly, so that its changes reach the file itself before the file is
            # copied (the copies take the main file alone): a connection left to the garbage
            # collector keeps them in the WAL, and the copies had the migrated table.
            with contextlib.closing(sqlite3.connect(path, isolation_level=None)) as c:
                c.execute("BEGIN")
                table = _messages_table(c)
                indexes = [
                    r[0]
                    for r in c.execute("SELECT sql FROM sqlite_master WHERE type = 'index' AND tbl_name = 'messages' AND sql IS NOT NULL")
                ]
                assert "AUTOINCREMENT" not in table, table
                c.execute("DROP TABLE messages")
                autoincrement = table.replace("(\n    id INTEGER NOT NULL,", "(\n    id INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,", 1)
                c.execute(autoincrement.replace(",\n    PRIMARY KEY (id)", ""))
                for sql in indexes:
                    c.execute(sql)
                c.execute("COMMIT")
            if os.path.exists(path + "-wal"):
                raise RuntimeError("the template's changes are still in its WAL")
            cls._templates[directory] = path
        return path

    def __init__(self, path: str, **kwargs) -> None:
        super().__init__(path, **kwargs)
        with contextlib.closing(sqlite3.connect(path)) as c:
            table = _messages_table(c)
        if "AUTOINCREMENT" not in table:
            raise RuntimeError("the AUTOINCREMENT layout's copy has a plain rowid")


def _messages_table(c: sqlite3.Connection) -> str:
    """The messages table's CREATE statement."""
    return c.execute("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'messages'").fetchone()[0]


def _one(system, calls: int, batch: int, size: int, work: str) -> tuple[float, float]:
    """(CPU seconds per message, messages per second) for one round on a fresh file."""
    s = system(os.path.join(work, f"{system.name.replace(' ', '-').replace(',', '')}.db"))
    try:
        cpu = time.process_time()
        run = s.send(calls, batch, body_of(size))
        return (time.process_time() - cpu) / run.messages, run.rate
    finally:
        s.close()


def measure(rounds: int, workloads=WORKLOADS) -> dict:
    """Per workload and system: (best CPU seconds per message, best messages per second)."""
    out: dict = {}
    with tempfile.TemporaryDirectory(prefix="sqsqlite-positions-") as work:
        for name, (calls, batch, size) in workloads.items():
            best = {s.name: (float("inf"), 0.0) for s in (Engine, Autoincrement)}
            for _ in range(rounds):
                for s in (Engine, Autoincrement):
                    cpu, rate = _one(s, calls, batch, size, work)
                    best[s.name] = (min(best[s.name][0], cpu), max(best[s.name][1], rate))
            out[name] = best
    return out


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.positions")
    ap.add_argument("--rounds", type=int, default=9)
    args = ap.parse_args(argv)
    print(f"load average {os.getloadavg()}")
    res = measure(args.rounds)
    print(
        f"{'workload':20s} {'CPU us/msg: high-water':>23s} {'AUTOINCREMENT':>14s} {'ratio':>6s} {'msgs/s: high-water':>19s} {'AUTOINCR.':>10s} {'ratio':>6s}"
    )
    for name, r in res.items():
        (cpu_h, rate_h), (cpu_a, rate_a) = r[Engine.name], r[Autoincrement.name]
        print(
            f"{name:20s} {cpu_h * 1e6:23.1f} {cpu_a * 1e6:14.1f} {cpu_h / cpu_a:6.3f} {rate_h:19,.0f} {rate_a:10,.0f} {rate_h / rate_a:6.3f}"
        )
    print(f"load average {os.getloadavg()}")


if __name__ == "__main__":
    main()
