"""Timing, statistics, the machine's description, the table and the JSON file.

A *run* is one timed pass of a workload: it returns how many messages it moved, the wall time
it took and the latency of every call. A *row* is the median of several runs of one workload on
one system, with the min-max spread of the rate and the p50/p99 of all the calls' latencies.
"""

from __future__ import annotations

import json
import os
import platform
import sqlite3
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field


@dataclass
class Run:
    messages: int
    seconds: float
    latencies: list[float] = field(default_factory=list)  # seconds per call
    extra: dict = field(default_factory=dict)
    cpu_seconds: float | None = None

    @property
    def rate(self) -> float:
        return self.messages / self.seconds if self.seconds > 0 else 0.0


@dataclass
class Row:
    workload: str
    system: str  # sqsqlite, floor, persist-queue, litequeue
    settings: str  # durability and anything else that tells rows apart
    runs: int
    messages_per_run: int
    rate_median: float
    rate_min: float
    rate_max: float
    p50_ms: float | None
    p99_ms: float | None
    extra: dict = field(default_factory=dict)
    cpu_rate_median: float | None = None  # messages per CPU second of the measuring process

    def key(self) -> tuple[str, str, str]:
        return (self.workload, self.system, self.settings)


def percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    k = min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))
    return ordered[k]


def summarize(workload: str, system: str, settings: str, runs: list[Run], extra: dict | None = None) -> Row:
    rates = [r.rate for r in runs]
    lat = [x for r in runs for x in r.latencies]
    p50, p99 = percentile(lat, 0.50), percentile(lat, 0.99)
    merged: dict = {}
    for r in runs:
        for k, v in r.extra.items():
            merged.setdefault(k, []).append(v)
    merged = {k: (v[0] if len(set(map(repr, v))) == 1 else v) for k, v in merged.items()}
    merged.update(extra or {})
    cpu = [r.messages / r.cpu_seconds for r in runs if r.cpu_seconds]
    return Row(
        cpu_rate_median=statistics.median(cpu) if cpu else None,
        workload=workload,
        system=system,
        settings=settings,
        runs=len(runs),
        messages_per_run=runs[0].messages if runs else 0,
        rate_median=statistics.median(rates) if rates else 0.0,
        rate_min=min(rates) if rates else 0.0,
        rate_max=max(rates) if rates else 0.0,
        p50_ms=None if p50 is None else p50 * 1000,
        p99_ms=None if p99 is None else p99 * 1000,
        extra=merged,
    )


def repeat(make_run: Callable[[], Run], runs: int, warmup: bool = True) -> list[Run]:
    """Run a workload several times; the first, untimed pass warms caches and imports."""
    if warmup:
        make_run()
    return [make_run() for _ in range(runs)]


class Timer:
    """Per-call latencies and the total wall time of a loop of calls."""

    __slots__ = ("latencies", "start", "_t")

    def __init__(self):
        self.latencies: list[float] = []
        self.start = time.perf_counter()

    def elapsed(self) -> float:
        return time.perf_counter() - self.start


# ---------------------------------------------------------------------- machine


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def loadavg() -> list[float] | None:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None


def machine(tmpdir: str) -> dict:
    """What the figures were measured on, so they can be compared honestly."""
    fs = None
    try:
        with open("/proc/mounts") as f:
            mounts = [line.split() for line in f]
        best = ""
        real = os.path.realpath(tmpdir)
        for dev, mnt, kind, *_ in mounts:
            if real.startswith(mnt) and len(mnt) >= len(best):
                best, fs = mnt, f"{kind} on {dev} ({mnt})"
    except OSError:
        pass
    import sqlalchemy

    try:
        import sqsqlite

        version = sqsqlite.__version__
    except Exception:  # the harness still describes the machine if the engine won't import
        version = None
    return {
        "cores": os.cpu_count(),
        "cpu": _cpu_model(),
        "platform": platform.platform(),
        "python": sys.version.split()[0],
        "python_implementation": platform.python_implementation(),
        "sqlite": sqlite3.sqlite_version,
        "sqlalchemy": sqlalchemy.__version__,
        "sqsqlite": version,
        "commit": commit(),
        "filesystem": fs,
        "database_dir": tmpdir,
        "loadavg_at_start": loadavg(),
    }


def commit() -> str | None:
    """The checkout's commit, with "-dirty" when the tree has any change, new files included: the
    figures' commit, read from the results file rather than remembered. None outside a git
    checkout (or without git)."""
    import subprocess

    here = os.path.dirname(os.path.abspath(__file__))
    try:
        head = subprocess.run(["git", "rev-parse", "--short=7", "HEAD"], cwd=here, capture_output=True, text=True, timeout=10)
        # --no-optional-locks: reading the status must not refresh (write) the index under a user's git.
        status = subprocess.run(
            ["git", "--no-optional-locks", "status", "--porcelain"], cwd=here, capture_output=True, text=True, timeout=10
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if head.returncode != 0 or not head.stdout.strip():
        return None
    return head.stdout.strip() + ("-dirty" if status.returncode != 0 or status.stdout.strip() else "")


# ---------------------------------------------------------------------- output


def fmt_rate(x: float) -> str:
    if x >= 100:
        return f"{x:,.0f}"
    return f"{x:.1f}"


def fmt_ms(x: float | None) -> str:
    if x is None:
        return "-"
    if x >= 10:
        return f"{x:.0f}"
    if x >= 1:
        return f"{x:.1f}"
    return f"{x:.3f}"


def table(rows: list[Row]) -> str:
    head = ("workload", "system", "settings", "msgs/s", "spread", "p50 ms", "p99 ms", "msgs/cpu-s", "notes")
    lines = [head]
    for r in rows:
        notes = ", ".join(f"{k}={_short(v)}" for k, v in r.extra.items() if k in _CONSOLE_EXTRAS)
        lines.append(
            (
                r.workload,
                r.system,
                r.settings,
                fmt_rate(r.rate_median),
                f"{fmt_rate(r.rate_min)}-{fmt_rate(r.rate_max)}",
                fmt_ms(r.p50_ms),
                fmt_ms(r.p99_ms),
                "-" if r.cpu_rate_median is None else fmt_rate(r.cpu_rate_median),
                notes,
            )
        )
    widths = [max(len(str(line[i])) for line in lines) for i in range(len(head))]
    out = []
    for i, line in enumerate(lines):
        cells = [str(c).rjust(w) if 3 <= j <= 7 else str(c).ljust(w) for j, (c, w) in enumerate(zip(line, widths))]
        out.append("  ".join(cells).rstrip())
        if i == 0:
            out.append("  ".join("-" * w for w in widths))
    return "\n".join(out)


# The extras a results table shows in its notes (benchmarks.report's); the console's shows the
# processes' send rates and the startup ratios as well.
SHOWN_EXTRAS = ("stored", "in_flight", "lock_errors", "idle_cpu_percent", "groups", "attributes", "dead_lettered", "redelivered")
_CONSOLE_EXTRAS = SHOWN_EXTRAS + ("sent_per_s", "ratio")


def _short(v) -> str:
    if isinstance(v, float):
        return f"{v:.3g}"
    return str(v)


def write_json(path: str, payload: dict) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(payload, f, indent=1, sort_keys=False, default=_jsonable)
        f.write("\n")
    os.replace(tmp, path)


def _jsonable(o):
    if hasattr(o, "__dataclass_fields__"):
        return asdict(o)
    raise TypeError(type(o))
