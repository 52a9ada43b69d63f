"""The report's history figures: the per-minute counters the file keeps (docs/howto/history.md), over
a window, per queue and step, with rates, trends, a drain forecast and spikes.

Both the Spark job and the oracle reduce the minute rows to the same integers (per queue and
step, and per queue over the window's last two hours); :func:`finish` then derives everything
else from those in plain Python, so the two agree exactly. Definitions, for a window
[``since``, ``until``) (epoch ms):

- The *step* is a minute for a window of up to 3 hours, else an hour. Steps start at ``since``
  rounded down to a whole step (so the first step is whole), and every minute row whose minute
  starts in [that, ``until``) counts in the step it starts in.
- Per step: the sums of sent, received (first receives), redelivered, deleted, dead-lettered,
  expired, purged, moved and moved in; and the *backlog* (visible + in flight + delayed) and
  *oldest age* (seconds) of the step's newest backlog sample (none when no minute of the step
  has one).
- *Arrivals* are sent + moved in; *completions* are deleted; *departures* are deleted +
  dead-lettered + expired + purged + moved (everything that leaves the backlog).
- *Last hour*: the minutes that start in [until - 1 h, until); *hour before*: in
  [until - 2 h, until - 1 h), whatever the window: a window shorter than two hours is read
  from until - 2 h for them (the rows before the window count in no step). The *trend* of arrivals (completions) is the last hour's minus
  the hour before's, a change per hour.
- *Drain forecast*, at the last hour's net rate: ``net = departures - arrivals`` of the last
  hour, ``backlog`` the newest sample of the window. No sample: unknown. Backlog 0: empty.
  ``net > 0``: drains in ``ceil(backlog * 60 / net)`` minutes. ``net = 0``: flat. ``net < 0``:
  grows by ``-net`` an hour.
- *Spikes*: for dead-lettered and redelivered, a step whose count is at least SPIKE_MIN and
  more than SPIKE_FACTOR times the queue's usual count, the lower median over all the window's
  steps (steps without a row count 0).
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field

from .. import defaults as D

MINUTE_MS = 60_000
HOUR_MS = 3_600_000
MINUTE_STEPS_UP_TO_MS = 3 * HOUR_MS  # a window this long or shorter is shown by minute
DEFAULT_WINDOW_MS = 24 * HOUR_MS
SPIKE_MIN = 10
SPIKE_FACTOR = 3

# The per-step sums, in the order of the table's columns.
STEP_COUNTERS = ("sent", "received", "redelivered", "deleted", "dead_lettered", "expired", "purged", "moved", "moved_in")
HISTORY_COLUMNS = "minute, queue_id, " + ", ".join(STEP_COUNTERS) + ", visible, in_flight, delayed, oldest_age"


@dataclass
class Step:
    start_ms: int
    sent: int = 0
    received: int = 0
    redelivered: int = 0
    deleted: int = 0
    dead_lettered: int = 0
    expired: int = 0
    purged: int = 0
    moved: int = 0
    moved_in: int = 0
    backlog: int | None = None
    oldest_age_s: int | None = None


@dataclass
class Spike:
    counter: str  # dead_lettered or redelivered
    step_ms: int
    count: int
    usual: int


@dataclass
class QueueHistory:
    queue: str
    arrivals: int = 0  # over the window
    completions: int = 0
    departures: int = 0
    arrivals_last_hour: int = 0
    completions_last_hour: int = 0
    departures_last_hour: int = 0
    arrivals_trend: int = 0  # the last hour's minus the hour before's
    completions_trend: int = 0
    backlog: int | None = None  # the newest sample of the window
    oldest_age_s: int | None = None
    forecast: str = "unknown"  # unknown, empty, drains, flat, grows
    drain_minutes: int | None = None
    growth_per_hour: int = 0
    spikes: list[Spike] = field(default_factory=list)
    steps: list[Step] = field(default_factory=list)


def step_for(since_ms: int, until_ms: int) -> int:
    return MINUTE_MS if until_ms - since_ms <= MINUTE_STEPS_UP_TO_MS else HOUR_MS


def first_step(since_ms: int, step_ms: int) -> int:
    return since_ms - since_ms % step_ms


def window_start(since_ms: int, until_ms: int) -> int:
    """Where the rows read begin: ``since`` rounded down to a whole step (never minute 0, the
    totals of pruned minutes)."""
    return max(first_step(since_ms, step_for(since_ms, until_ms)), 1)


def rows_start(since_ms: int, until_ms: int) -> int:
    """Where the rows read begin: the window's (window_start), or two hours before ``until`` if
    that is earlier, for the last hour's and the hour before's figures."""
    return max(min(window_start(since_ms, until_ms), until_ms - 2 * HOUR_MS), 1)


def forecast(backlog: int | None, net: int) -> tuple[str, int | None, int]:
    """(kind, minutes to drain, growth an hour) from the newest backlog and the last hour's net
    departures (departures - arrivals)."""
    if backlog is None:
        return "unknown", None, 0
    if backlog == 0:
        return "empty", None, 0
    if net > 0:
        return "drains", -(-backlog * 60 // net), 0
    if net == 0:
        return "flat", None, 0
    return "grows", None, -net


def spikes(counter: str, steps: list[Step]) -> list[Spike]:
    values = [getattr(s, counter) for s in steps]
    if not values:
        return []
    usual = sorted(values)[(len(values) - 1) // 2]
    return [Spike(counter, s.start_ms, v, usual) for s, v in zip(steps, values) if v >= SPIKE_MIN and v > SPIKE_FACTOR * usual]


def finish(
    names: dict[int, str],
    step_rows: list[tuple],
    hour_rows: list[tuple],
    since_ms: int,
    until_ms: int,
) -> list[QueueHistory]:
    """Every figure from the reduced rows: ``step_rows`` are (queue_id, step start, the
    STEP_COUNTERS' sums..., newest sample as (minute, backlog, oldest age) or None);
    ``hour_rows`` are (queue_id, arrivals, completions, departures of the last hour, arrivals
    and completions of the hour before). Queues with a row in the window only, by name."""
    step = step_for(since_ms, until_ms)
    start = first_step(since_ms, step)
    n = -(-(until_ms - start) // step)
    by_queue: dict[int, dict[int, tuple]] = {}
    for r in step_rows:
        by_queue.setdefault(r[0], {})[r[1]] = r
    hours = {r[0]: r for r in hour_rows}
    out = []
    for queue_id, rows in by_queue.items():
        if queue_id not in names:
            continue  # a queue deleted since
        h = QueueHistory(names[queue_id])
        newest = None
        for k in range(n):
            s = Step(start + k * step)
            found = rows.get(s.start_ms)
            if found is not None:
                for name, value in zip(STEP_COUNTERS, found[2 : 2 + len(STEP_COUNTERS)]):
                    setattr(s, name, int(value))
                sample = found[2 + len(STEP_COUNTERS)]
                if sample is not None:
                    s.backlog, s.oldest_age_s = int(sample[1]), None if sample[2] is None else int(sample[2])
                    newest = sample
            h.steps.append(s)
        h.arrivals = sum(s.sent + s.moved_in for s in h.steps)
        h.completions = sum(s.deleted for s in h.steps)
        h.departures = sum(s.deleted + s.dead_lettered + s.expired + s.purged + s.moved for s in h.steps)
        last = hours.get(queue_id, (queue_id, 0, 0, 0, 0, 0))
        h.arrivals_last_hour, h.completions_last_hour, h.departures_last_hour = int(last[1]), int(last[2]), int(last[3])
        h.arrivals_trend, h.completions_trend = h.arrivals_last_hour - int(last[4]), h.completions_last_hour - int(last[5])
        if newest is not None:
            h.backlog, h.oldest_age_s = int(newest[1]), None if newest[2] is None else int(newest[2])
        h.forecast, h.drain_minutes, h.growth_per_hour = forecast(h.backlog, h.departures_last_hour - h.arrivals_last_hour)
        h.spikes = spikes("dead_lettered", h.steps) + spikes("redelivered", h.steps)
        out.append(h)
    return sorted(out, key=lambda q: q.queue)


def reduce(rows: list[tuple], since_ms: int, until_ms: int) -> tuple[list[tuple], list[tuple]]:
    """The oracle's reduction of minute rows (HISTORY_COLUMNS, minute in [rows_start, until)) to
    finish's step rows and hour rows, in plain Python."""
    step = step_for(since_ms, until_ms)
    start = first_step(since_ms, step)
    low = window_start(since_ms, until_ms)
    k = len(STEP_COUNTERS)
    steps: dict[tuple[int, int], list] = {}
    hours: dict[int, list[int]] = {}
    for r in rows:
        minute, queue_id = r[0], r[1]
        if minute >= low:  # before the window: read for the hour figures only
            at = start + (minute - start) // step * step
            acc = steps.setdefault((queue_id, at), [0] * k + [None])
            for i in range(k):
                acc[i] += r[2 + i]
            if r[2 + k] is not None:
                sample = (minute, r[2 + k] + r[3 + k] + r[4 + k], r[5 + k])
                if acc[k] is None or sample > acc[k]:
                    acc[k] = sample
        c = dict(zip(STEP_COUNTERS, r[2 : 2 + k]))
        arrivals = c["sent"] + c["moved_in"]
        hour = hours.setdefault(queue_id, [0, 0, 0, 0, 0])
        if minute >= until_ms - HOUR_MS:
            hour[0] += arrivals
            hour[1] += c["deleted"]
            hour[2] += c["deleted"] + c["dead_lettered"] + c["expired"] + c["purged"] + c["moved"]
        elif minute >= until_ms - 2 * HOUR_MS:
            hour[3] += arrivals
            hour[4] += c["deleted"]
    step_rows = [(q, at, *acc[:k], acc[k]) for (q, at), acc in steps.items()]
    hour_rows = [(q, *v) for q, v in hours.items()]
    return step_rows, hour_rows


def read_rows(conn: sqlite3.Connection, since_ms: int, until_ms: int, table: str = "queue_history") -> list[tuple]:
    """The minute rows of the window, and of the two hours before ``until`` (rows_start);
    minute 0, the totals of pruned minutes, never."""
    low = rows_start(since_ms, until_ms)
    return conn.execute(f"SELECT {HISTORY_COLUMNS} FROM {table} WHERE minute >= ? AND minute < ?", (low, until_ms)).fetchall()


def oracle(conn: sqlite3.Connection, names: dict[int, str], since_ms: int, until_ms: int) -> list[QueueHistory]:
    step_rows, hour_rows = reduce(read_rows(conn, since_ms, until_ms), since_ms, until_ms)
    return finish(names, step_rows, hour_rows, since_ms, until_ms)


def spark_rows(F, frame, since_ms: int, until_ms: int) -> tuple[list[tuple], list[tuple]]:
    """Spark's reduction of the minute rows (a DataFrame of HISTORY_COLUMNS) to finish's rows."""
    step = step_for(since_ms, until_ms)
    start = first_step(since_ms, step)
    rows = frame.where((F.col("minute") >= rows_start(since_ms, until_ms)) & (F.col("minute") < until_ms))
    in_window = rows.where(F.col("minute") >= window_start(since_ms, until_ms))
    at = (F.lit(start) + F.floor((F.col("minute") - F.lit(start)) / F.lit(step)).cast("long") * F.lit(step)).alias("at")
    backlog = F.col("visible") + F.col("in_flight") + F.col("delayed")
    sample = F.when(F.col("visible").isNotNull(), F.struct(F.col("minute"), backlog.alias("backlog"), F.col("oldest_age")))
    aggs = [F.sum(c).alias(c) for c in STEP_COUNTERS] + [F.max(sample).alias("sample")]
    step_rows = [
        (r["queue_id"], r["at"], *(r[c] for c in STEP_COUNTERS), None if r["sample"] is None else tuple(r["sample"]))
        for r in in_window.groupBy("queue_id", at).agg(*aggs).collect()
    ]
    arrivals = F.col("sent") + F.col("moved_in")
    departures = F.col("deleted") + F.col("dead_lettered") + F.col("expired") + F.col("purged") + F.col("moved")
    last = F.col("minute") >= F.lit(until_ms - HOUR_MS)
    before = (~last) & (F.col("minute") >= F.lit(until_ms - 2 * HOUR_MS))

    def total(cond, value):
        return F.sum(F.when(cond, value).otherwise(F.lit(0)))

    hour_rows = [
        tuple(r)
        for r in rows.groupBy("queue_id")
        .agg(
            total(last, arrivals),
            total(last, F.col("deleted")),
            total(last, departures),
            total(before, arrivals),
            total(before, F.col("deleted")),
        )
        .collect()
    ]
    return step_rows, hour_rows


def history_retention(conn: sqlite3.Connection, schema: str = "") -> int:
    """The file's history retention in seconds from its meta table (``schema``: "src." when
    attached); 0 when the history is off (no setting), as the engine reads it."""
    master = f"{schema}sqlite_master"
    if conn.execute(f"SELECT 1 FROM {master} WHERE type = 'table' AND name = 'meta'").fetchone() is None:
        return 0  # a snapshot of the queues and messages alone: no setting, no history
    row = conn.execute(f"SELECT CAST(value AS INTEGER) FROM {schema}meta WHERE key = ?", (D.HISTORY_RETENTION_META_KEY,)).fetchone()
    return 0 if row is None or row[0] is None else max(0, int(row[0]))
