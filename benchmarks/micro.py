"""CPU microseconds per message, sqsqlite next to the floor, in one process: the figures behind
docs/performance.md's findings. CPU time (``time.process_time``) rather than wall clock, best of
several rounds, systems in turn, so a loaded machine disturbs the comparison least.

    python -m benchmarks.micro               # the table
    python -m benchmarks.micro --profile recv1   # cProfile of one workload, top functions
    python -m benchmarks.micro --profile send10 --client   # the same through sqsqlite.client()
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import tempfile
import time

from .systems import ClientEngine, Engine, Floor, FloorOnLayout, body_of

WORKLOADS = {
    # name: (kind, batch, messages per round)
    "send1": ("send", 1, 2000),
    "send10": ("send", 10, 5000),
    "recv1": ("recv", 1, 2000),
    "recv10": ("recv", 10, 5000),
}


def _one(system, kind: str, batch: int, n: int, work: str) -> float:
    """CPU seconds per message for one round on a fresh file."""
    s = system(os.path.join(work, f"micro-{system.name.replace(' ', '-')}.db"))
    body = body_of(200)
    try:
        if kind == "send":
            t = time.process_time()
            s.send(n // batch, batch, body)
        else:
            s.fill(n, body)
            t = time.process_time()
            s.receive_delete(n, batch)
        return (time.process_time() - t) / n
    finally:
        s.close()


def measure(rounds: int = 5, systems=(Engine, ClientEngine, Floor, FloorOnLayout), workloads=WORKLOADS) -> dict:
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
            e.fill(n, body)
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
    args = ap.parse_args(argv)
    if args.profile:
        profile(args.profile, system=ClientEngine if args.client else Engine)
        return
    print(f"load average {os.getloadavg()}")
    res = measure(args.rounds)
    print(f"{'CPU us/msg':10s} {'sqsqlite':>9s} {'client':>9s} {'floor':>9s} {'floor@layout':>13s} {'/floor':>7s} {'client/floor':>13s}")
    for name, r in res.items():
        c = r["sqsqlite client"]
        print(
            f"{name:10s} {r['sqsqlite']:9.1f} {c:9.1f} {r['floor']:9.1f} {r['floor@layout']:13.1f} "
            f"{r['floor'] / r['sqsqlite']:7.2f} {r['floor'] / c:13.2f}"
        )
    print(f"load average {os.getloadavg()}")


if __name__ == "__main__":
    main()
